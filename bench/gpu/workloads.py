"""The GPU check's workloads, shared by build.py (tessel, here) and run.py
(torch, on the GPU machine): each has its inputs (shapes, dtypes, a seed),
a tessel function to trace and a torch function as the reference and peer.

Only numpy is imported at module level: run.py loads this file on a machine
without tessel, build.py on one without torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

F16, BF16 = "float16", "bfloat16"


@dataclass(frozen=True)
class Workload:
    name: str
    inputs: tuple[tuple[tuple[int, ...], str], ...]
    tessel_fn: Callable[..., Any]  # traced with tessel.trace
    torch_fn: Callable[..., Any]  # (torch, *tensors) -> tensor: the reference and the eager peer
    flops: float = 0.0  # for TFLOP/s columns; 0 for memory-bound work
    bytes: float = 0.0  # minimum bytes moved, for GB/s columns
    # Largest error allowed against torch's float32 reference, relative to
    # the reference's largest magnitude.
    tolerance: float = 1e-2
    matmul: bool = False  # a plain 2-D a @ b: also timed against a Triton matmul

    def arrays(self, seed: int = 0) -> list[np.ndarray]:
        """The inputs, the same on every machine: normal(0, 1), cast."""
        if any(dtype == BF16 for _, dtype in self.inputs):
            import ml_dtypes  # noqa: F401 - gives numpy the bfloat16 dtype (JAX and tessel depend on it)
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(shape, dtype=np.float32).astype(dtype) for shape, dtype in self.inputs]


def _gemm(m: int, n: int, k: int, tag: str = "", dtype: str = F16) -> Workload:
    short = {F16: "f16", BF16: "bf16"}[dtype]
    return Workload(
        f"gemm_{short}_{m}x{n}x{k}{tag}", (((m, k), dtype), ((k, n), dtype)),
        lambda a, b: a @ b, lambda torch, a, b: a @ b,
        flops=2.0 * m * n * k, bytes=2.0 * (m * k + k * n + m * n), matmul=True)


def _gemm_bias_gelu(m: int, n: int, k: int) -> Workload:
    from_tessel = lambda a, b, bias: _ops().gelu(a @ b + bias, approximate="tanh")  # noqa: E731
    return Workload(
        f"gemm_bias_gelu_f16_{m}x{n}x{k}", (((m, k), F16), ((k, n), F16), ((n,), F16)),
        from_tessel,
        lambda torch, a, b, bias: torch.nn.functional.gelu(a @ b + bias, approximate="tanh"),
        flops=2.0 * m * n * k, bytes=2.0 * (m * k + k * n + m * n))


def _softmax(rows: int, cols: int) -> Workload:
    return Workload(
        f"softmax_f16_{rows}x{cols}", (((rows, cols), F16),),
        lambda x: _ops().softmax(x, axis=-1), lambda torch, x: torch.softmax(x, dim=-1),
        bytes=4.0 * rows * cols)


def _layer_norm(rows: int, cols: int) -> Workload:
    return Workload(
        f"layer_norm_f16_{rows}x{cols}", (((rows, cols), F16), ((cols,), F16), ((cols,), F16)),
        lambda x, w, b: _ops().layer_norm(x, w, b, eps=1e-5),
        lambda torch, x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5),
        bytes=4.0 * rows * cols)


def _chain(n: int) -> Workload:
    def chain(x):
        return _ops().relu(_ops().tanh(x * 1.5 + 0.25)) * x

    return Workload(
        f"elementwise_chain_f16_{n}", (((n,), F16),), chain,
        lambda torch, x: torch.relu(torch.tanh(x * 1.5 + 0.25)) * x, bytes=4.0 * n)


def _standardize(n: int) -> Workload:
    """A whole tensor scaled to mean 0 and variance 1: two reductions to a
    single value (loop.grid_reduce) and an elementwise pass reading them."""
    def standardize(x):
        t = _ops()
        centered = x - t.mean(x)
        return centered * t.rsqrt(t.mean(centered * centered) + 1e-5)

    return Workload(
        f"standardize_f32_{n}", (((n,), "float32"),), standardize,
        lambda torch, x: (x - x.mean()) * torch.rsqrt(x.var(unbiased=False) + 1e-5), bytes=8.0 * n)


def _conv(batch: int, channels: int, side: int, filters: int) -> Workload:
    """A 3x3 convolution, padding 1 (NCHW, f16): im2col patches on tensor
    cores against cuDNN."""
    return Workload(
        f"conv3x3_f16_{batch}x{channels}x{side}x{side}_to_{filters}",
        (((batch, channels, side, side), F16), ((filters, channels, 3, 3), F16)),
        lambda x, w: _ops().conv2d(x, w, padding=1),
        lambda torch, x, w: torch.nn.functional.conv2d(x, w, padding=1),
        flops=2.0 * batch * filters * side * side * channels * 9,
        bytes=2.0 * (batch * (channels + filters) * side * side + filters * channels * 9))


def _encoder_layer(batch: int, seq: int, d_model: int, heads: int, d_ff: int) -> Workload:
    """A pre-LayerNorm encoder layer (causal attention, tanh-GELU MLP) with
    its weights as arguments, so that the artifact stays small."""
    names = ("w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o", "w_up", "b_up", "w_down", "b_down",
             "ln1_w", "ln1_b", "ln2_w", "ln2_b")
    shapes = {"w_q": (d_model, d_model), "w_k": (d_model, d_model), "w_v": (d_model, d_model),
              "w_o": (d_model, d_model), "w_up": (d_model, d_ff), "w_down": (d_ff, d_model),
              "b_up": (d_ff,)}
    d_head = d_model // heads

    def layer(ops, where, causal_mask, x, p):
        b, s, d = x.shape

        def heads_of(t):
            return t.reshape(b, s, heads, d_head).transpose(0, 2, 1, 3)

        a = ops["layer_norm"](x, p["ln1_w"], p["ln1_b"])
        q, k, v = (heads_of(a @ p[f"w_{n}"] + p[f"b_{n}"]) for n in "qkv")
        scores = (q @ ops["swap"](k)) * (1 / math.sqrt(d_head))
        attn = ops["softmax"](where(causal_mask, scores), -1) @ v
        h = x + attn.transpose(0, 2, 1, 3).reshape(b, s, d) @ p["w_o"] + p["b_o"]
        m = ops["layer_norm"](h, p["ln2_w"], p["ln2_b"])
        return h + ops["gelu"](m @ p["w_up"] + p["b_up"]) @ p["w_down"] + p["b_down"]

    def with_tessel(x, *weights):
        t = _ops()
        mask = np.tril(np.ones((seq, seq), dtype=bool))
        ops = {"layer_norm": lambda v, w, bias: t.layer_norm(v, w, bias, eps=1e-5),
               "swap": lambda v: v.transpose(0, 1, 3, 2),
               "softmax": lambda v, axis: t.softmax(v, axis=axis),
               "gelu": lambda v: t.gelu(v, approximate="tanh")}
        return layer(ops, lambda m, v: t.where(m, v, float("-inf")), mask, x, dict(zip(names, weights)))

    def with_torch(torch, x, *weights):
        f = torch.nn.functional
        mask = torch.ones((seq, seq), dtype=torch.bool, device=x.device).tril()
        ops = {"layer_norm": lambda v, w, bias: f.layer_norm(v, (v.shape[-1],), w, bias, eps=1e-5),
               "swap": lambda v: v.transpose(-1, -2),
               "softmax": lambda v, axis: torch.softmax(v, dim=axis),
               "gelu": lambda v: f.gelu(v, approximate="tanh")}
        return layer(ops, lambda m, v: v.masked_fill(~m, float("-inf")), mask, x, dict(zip(names, weights)))

    flops = 2.0 * batch * seq * (4 * d_model * d_model + 2 * d_model * d_ff) + 4.0 * batch * seq * seq * d_model
    return Workload(
        f"encoder_layer_f16_b{batch}_s{seq}_d{d_model}", (((batch, seq, d_model), F16),) + tuple(
            (shapes.get(n, (d_model,)), F16) for n in names),
        with_tessel, with_torch, flops=flops, tolerance=3e-2)


def _ops():
    from tessel import ops  # build.py only

    return ops


def workloads(small: bool = False) -> list[Workload]:
    """The issue's workload set; ``small`` shrinks every shape (CI, dry runs)."""
    if small:
        return [_gemm(128, 128, 64), _gemm(256, 96, 64, "_t"), _gemm(128, 96, 64, dtype=BF16),
                _gemm_bias_gelu(128, 96, 64), _softmax(64, 300), _layer_norm(64, 256), _chain(1 << 12),
                _encoder_layer(2, 16, 64, 4, 128), _gemm(64, 64, 4096, "_splitk"), _conv(2, 16, 16, 32),
                _standardize(1 << 14)]
    gemms = ((4096, 4096, 4096), (8192, 8192, 8192), (8192, 3072, 768), (8192, 768, 3072))
    return [*(_gemm(*shape, dtype=dtype) for dtype in (F16, BF16) for shape in gemms),
            _gemm_bias_gelu(8192, 3072, 768), _softmax(8192, 8192), _layer_norm(8192, 8192),
            _chain(1 << 26), _encoder_layer(8, 1024, 768, 12, 3072),
            # Beyond the set: a long K over a small result (split K),
            # a ResNet-50 stage-1 convolution, and reductions of a whole
            # tensor.
            _gemm(256, 256, 65536, "_splitk"), _conv(32, 64, 56, 64), _standardize(1 << 26)]
