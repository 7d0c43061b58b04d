"""tessel.from_torch: torch.nn models and per-op translations compiled for
the CPU and compared with eager PyTorch, errors that name the op and the
user's line, DLPack in and out, and the same models feeding the GPU path."""

import math

import numpy as np
import pytest

import tessel
from tessel.backends import cpu as cpu_backend
from tessel.backends.cpu import compile_cpu
from tessel.dtypes import BFLOAT16

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

# torch.export's own pytree code warns about its own deprecated API.
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")

torch.manual_seed(0)


def _outputs(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _check(model, *args, rtol=1e-5, atol=1e-5, **options):
    """Imports ``model``, compiles it for the CPU and compares every output with eager torch."""
    module = tessel.from_torch(model, args, **options)
    got = _outputs(tessel.compile(module, target="cpu")(*args))
    with torch.no_grad():
        expected = _outputs(model(*args))
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        e = e.view(torch.int16).numpy().view(BFLOAT16) if e.dtype == torch.bfloat16 else e.numpy()
        assert (g.dtype, g.shape) == (e.dtype, e.shape), f"output {i}"
        if e.dtype == BFLOAT16:
            g, e = g.astype(np.float32), e.astype(np.float32)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"output {i}")
    return module


# Models ---------------------------------------------------------------------

def _mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 8)).eval()


def test_mlp():
    module = _check(_mlp(), torch.randn(4, 16))
    assert "graph.linear" in str(module)


def test_mlp_with_params_as_arguments():
    model = _mlp()
    module = tessel.from_torch(model, (torch.randn(4, 16),), params_as_args=True)
    exe = tessel.compile(module, target="cpu")
    params = [p.detach() for p in model.parameters()]
    assert [s.shape for s in exe.inputs] == [tuple(p.shape) for p in params] + [(4, 16)]
    x = torch.randn(4, 16)
    np.testing.assert_allclose(exe(*params, x), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    # The same executable runs other weights: they are arguments, not constants.
    doubled = [p * 2 for p in params]
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(torch.nn.utils.parameters_to_vector(doubled), model.parameters())
    np.testing.assert_allclose(exe(*doubled, x), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.conv2, self.bn2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2), nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)
        for bn in (self.bn1, self.bn2):  # statistics as after training
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.5, 0.5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.avg_pool2d(F.silu(self.bn2(self.conv2(x))), 2)
        return F.log_softmax(self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1)), dim=-1)


def test_conv_net_with_batch_norm_and_pooling():
    _check(ConvNet().eval(), torch.randn(2, 3, 16, 16))


@pytest.mark.parametrize("batch_first", [True, False], ids=["batch_first", "seq_first"])
def test_transformer_encoder_layer(batch_first):
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=batch_first).eval()
    x = torch.randn(2, 8, 32) if batch_first else torch.randn(8, 2, 32)
    _check(layer, x, rtol=1e-4, atol=1e-5)


class GPTBlock(nn.Module):
    """A GPT-2 block: causal self-attention through SDPA's is_causal or a
    masked_fill of a registered mask, and a tanh-GELU MLP."""

    def __init__(self, sdpa, d=32, heads=4, context=16):
        super().__init__()
        self.sdpa, self.heads = sdpa, heads
        self.ln1, self.qkv, self.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln2, self.fc, self.out = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(context, context, dtype=torch.bool)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            scores = scores.masked_fill(~self.mask[:t, :t], float("-inf"))
            y = F.softmax(scores, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


@pytest.mark.parametrize("sdpa", [True, False], ids=["sdpa_is_causal", "masked_fill"])
def test_gpt_block_with_causal_mask(sdpa):
    module = _check(GPTBlock(sdpa).eval(), torch.randn(2, 12, 32), rtol=1e-4, atol=1e-5)
    # The mask is known while importing: it is a constant, not run-time arithmetic.
    assert "graph.compare" not in str(module)


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


class LlamaBlock(nn.Module):
    """Llama: RMSNorm (hand-written and nn.RMSNorm), rotary embeddings,
    grouped-query causal attention, SwiGLU MLP, no biases."""

    def __init__(self, d=32, heads=4, kv_heads=2, hidden=64, context=16):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d // heads
        self.norm1, self.norm2 = RMSNorm(d), nn.RMSNorm(d, eps=1e-5)
        self.wq = nn.Linear(d, d, bias=False)
        self.wk, self.wv = (nn.Linear(d, kv_heads * self.head_dim, bias=False) for _ in range(2))
        self.wo = nn.Linear(d, d, bias=False)
        self.w1, self.w3 = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        angles = torch.outer(torch.arange(context).float(), inv)
        self.register_buffer("cos", torch.cat((angles, angles), -1).cos())
        self.register_buffer("sin", torch.cat((angles, angles), -1).sin())

    def forward(self, x):
        b, t, c = x.shape
        h = self.norm1(x)
        q = self.wq(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.cos[:t], self.sin[:t]
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        k, v = (z.repeat_interleave(self.heads // self.kv_heads, dim=1) for z in (k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        x = x + self.wo(y)
        h = self.norm2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def test_llama_block_with_rms_norm_and_swiglu():
    module = _check(LlamaBlock().eval(), torch.randn(2, 16, 32), rtol=1e-4, atol=1e-5)
    assert "graph.rms_norm" in str(module) and "graph.silu" in str(module)


# Per-op translations: each case is one function compiled once -------------

X, Y = torch.randn(3, 4), torch.randn(3, 4)
I, J = torch.randint(-5, 5, (3, 4)), torch.randint(1, 4, (3, 4))
X3 = torch.randn(3, 4, 5)
IMAGE = torch.randn(2, 3, 8, 8)
Q, K, V = torch.randn(2, 2, 4, 8), torch.randn(2, 2, 4, 8), torch.randn(2, 2, 4, 8)
MASK = torch.rand(4, 4) > 0.3
MASK[:, 0] = True
EMBEDDING = nn.Embedding(10, 6)
WEIGHTS = torch.randn(4, 3, 3, 3) * 0.2
STATS = torch.rand(4, 3)
SCALE = torch.rand(8, 8)

OP_CASES = {
    "arithmetic": (lambda x, y: (x + y, x - 2 * y, 3 - x, torch.rsub(x, y, alpha=2), x * 1.5, x / y, x / 2,
                                 torch.add(x, y, alpha=0.5), -x, 1 / x, x.reciprocal(), torch.maximum(x, y),
                                 torch.minimum(x, y)), (X, Y)),
    "integer_arithmetic": (lambda i, j: (i * 2, i + j, i - 1, i / j, i + 1.5, torch.div(i, j, rounding_mode="trunc"),
                                         torch.div(i, j, rounding_mode="floor"), i // -3, i.abs() ** 2,
                                         i.float().abs().sqrt()), (I, J)),
    "gather": (lambda x, j: (torch.gather(x, 1, j - 1), x.gather(0, (j - 1)[:2] % 3), x.gather(-1, (j - 1)[:, :2])),
               (X, J)),
    "ceil_mode_pools": (lambda x: (F.max_pool2d(x, 3, 2, ceil_mode=True),
                                   F.max_pool2d(x[:, :, :7], 2, 3, 1, ceil_mode=True),
                                   F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
                                   F.avg_pool2d(x[:, :, 1:], 2, 3, ceil_mode=True, count_include_pad=False)), (IMAGE,)),
    "transposed_convolution": (lambda x: (
        F.conv_transpose2d(x, WEIGHTS.transpose(0, 1)[:3], stride=2, padding=1, output_padding=1),
        F.conv_transpose2d(x, WEIGHTS[:3, :2], None, 1, 2, 0, 3, 2),  # 3 groups, dilation 2
        F.conv_transpose1d(x[:, :, 0], WEIGHTS[:3, :, 0] * 0.5, torch.ones(3), stride=3, padding=2)), (IMAGE,)),
    "rounding_remainders_argmax": (lambda x, y, i, j: (
        torch.floor(x * 3), torch.ceil(x * 3), torch.round(x * 3), torch.round(x, decimals=1), torch.trunc(x * 3),
        torch.fmod(x, y), torch.remainder(x, y), x % 0.3, torch.div(x, y, rounding_mode="floor"), x // 0.3,
        torch.div(x, y, rounding_mode="trunc"), torch.fmod(i, j), torch.remainder(i, j), i % -3, torch.floor(i),
        x.argmax(), x.argmin(-1), x.argmax(0, keepdim=True), x.max(-1).indices, *x.min(0)), (X, Y, I, J)),
    "float64_int8_int16": (lambda x, i: (x.double().exp() * 2, (x.double() @ x.double().T).softmax(-1),
                                         i.to(torch.int8) * 40, i.to(torch.int16) * 9000 + 7, x.double().half()),
                           (X, I)),
    "upsampling": (lambda x: (F.interpolate(x, scale_factor=2, mode="nearest"), F.interpolate(x, size=(5, 3)),
                              F.interpolate(x, size=(7, 3), mode="bilinear"),
                              F.interpolate(x, size=(1, 1), mode="bilinear"),
                              F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True),
                              F.interpolate(x, scale_factor=1.5, mode="bicubic"),
                              F.interpolate(x, size=(3, 2), mode="bicubic", align_corners=True)), (IMAGE,)),
    "pow_rsqrt": (lambda x: (x ** 2, x.pow(3), x.abs() ** 0.5, 2 ** x, x.abs().pow(x), (x.abs() + 0.1).rsqrt(),
                             x.abs().sqrt(), x.exp(), (x.abs() + 1).log(), x.abs()), (X,)),
    "activations": (lambda x: (F.relu(x), torch.sigmoid(x), torch.tanh(x), F.silu(x), F.gelu(x),
                               F.gelu(x, approximate="tanh"), x.clamp(-0.5, 0.5), x.clamp(min=0), F.hardtanh(x),
                               F.relu6(x), F.leaky_relu(x, 0.2), F.elu(x)), (X,)),
    "comparisons": (lambda x, y, i: (x > 0, x >= y, x == y, x != 0.5, x < y, x <= 0, i >= 1, i < x, i <= 2.5,
                                     i == 2), (X, Y, I)),
    "logic_where_masked_fill": (lambda x, y, i: ((x > y) & (y > 0), (x > 0) | (y > 0), ~(x > 0), (x > 0) ^ (y > 0),
                                                 torch.logical_not(i), torch.logical_and(x > 0, i),
                                                 torch.where(x > 0, x, y), torch.where(x > 0, x, 0.0),
                                                 x.masked_fill(x < 0, -1.0), x.tril(), x.triu(1)), (X, Y, I)),
    "reductions": (lambda x, i: (x.sum(), x.sum(0), x.sum(-1, keepdim=True), x.mean(), x.mean((0, 1)),
                                 x.mean(1, keepdim=True), x.amax(-1), x.amin(0), x.max(-1).values,
                                 x.min(0, keepdim=True)[0], i.sum(1), (x > 0).sum(), (x > 0).any(-1),
                                 (x > 0).all()), (X, I)),
    "statistics_and_softmax": (lambda x: (x.var(1), x.var(0, unbiased=False), x.std(1), x.norm(dim=-1),
                                          torch.logsumexp(x, 1), F.softmax(x, -1), F.log_softmax(x, 0)), (X,)),
    "views": (lambda x: (x.view(12, 5), x.reshape(-1), x.unsqueeze(1), x[:, :1].squeeze(1), x[None].squeeze(),
                         x.flatten(1), x.flatten()), (X3,)),
    "permute_transpose_expand": (lambda x: (x.permute(2, 0, 1), x.transpose(0, 2), x.mT, x.expand(2, 3, 4, 5),
                                            x[:, :1].expand(-1, 4, -1), x[0].t()), (X3,)),
    "cat_split_slice_select": (lambda x: (torch.cat([x, x * 2], 1), torch.stack([x, x], 0), *x.split(2, 1),
                                          *x.split([1, 4], -1), *x.chunk(2, 0), *x.unbind(1), x[1:, ::2, -2:],
                                          x[:, 1], x[..., -1], x.narrow(2, 1, 3)), (X3,)),
    "gather_embedding": (lambda x, idx, ids: (x[:, idx], x.index_select(2, idx), x[idx], x[..., idx],
                                              EMBEDDING(ids)),
                         (X3, torch.tensor([2, 0, 1, 1]), torch.tensor([[1, 2], [9, 0]]))),
    "pad_repeat": (lambda x: (x.repeat(1, 2, 1), x.repeat(2, 1, 1, 1), F.pad(x, (1, 2)),
                              F.pad(x, (0, 0, 1, 1), value=3.0), F.pad(x, (-1, 1))), (X3,)),
    "casts_and_copies": (lambda x, i: (x.to(torch.float16), x.int(), i.float(), x > 0, (x > 0).long(), x.contiguous(),
                                       x.clone(), x.detach(), i.type_as(x), x.to(torch.int64) + i), (X, I)),
    "constants": (lambda x: (torch.zeros_like(x), torch.ones_like(x) * x, torch.full_like(x, 2.5) + x,
                             x + torch.arange(4), x * torch.ones(4), x.new_zeros(4) + 1,
                             x + torch.triu(torch.full((3, 4), float("-inf")), 1)), (X,)),
    "convolution": (lambda img: (F.conv2d(img, WEIGHTS, padding=1), F.conv2d(img, WEIGHTS, torch.ones(4), stride=2,
                                                                           dilation=2),
                                 F.conv2d(img, WEIGHTS.reshape(12, 1, 3, 3), groups=3, padding=(0, 1)),
                                 F.conv1d(img[:, :, 0], WEIGHTS[:2, :, 0], stride=2, padding=1)), (IMAGE,)),
    "pooling": (lambda img: (F.max_pool2d(img, 2), F.max_pool2d(img, 3, 1, 1), F.avg_pool2d(img, 2),
                             F.avg_pool2d(img, 3, 2, 1), F.avg_pool2d(img, 3, 2, 1, count_include_pad=False),
                             F.adaptive_avg_pool2d(img, 2), F.adaptive_avg_pool2d(img, (1, 1))), (IMAGE,)),
    "normalizations": (lambda img: (F.batch_norm(img, STATS[0], STATS[1] + 0.5, STATS[2], STATS[3]),
                                    F.batch_norm(img, STATS[0], STATS[1] + 0.5), F.layer_norm(img, (8,)),
                                    F.layer_norm(img, (8, 8), SCALE), F.rms_norm(img, (8,)),
                                    F.rms_norm(img, (8, 8), SCALE, eps=1e-3), F.group_norm(img, 3, STATS[0], STATS[1]),
                                    F.instance_norm(img), F.batch_norm(img, None, None, STATS[0], STATS[1],
                                                                       training=True)), (IMAGE,)),
    "contractions": (lambda q, k: (q @ k.transpose(-1, -2), torch.bmm(q[0], k[0].transpose(1, 2)),
                                   torch.mm(q[0, 0], k[0, 0].T),
                                   torch.addmm(torch.ones(4), q[0, 0], k[0, 0].T, beta=0.5, alpha=2),
                                   torch.baddbmm(torch.ones(4), q[0], k[0].transpose(1, 2)),
                                   torch.matmul(q[0, 0, 0], k[0, 0].T), torch.matmul(q, k[0, 0, 0]),
                                   F.linear(q, k[0, 0]), F.linear(q[0, 0, 0], k[0, 0], k[0, 0, 0, :4])), (Q, K)),
    "attention": (lambda q, k, v, mask: (F.scaled_dot_product_attention(q, k, v),
                                         F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                         F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                                         F.scaled_dot_product_attention(q, k, v, attn_mask=mask.float() * -1e9,
                                                                        scale=0.3),
                                         F.scaled_dot_product_attention(q, k[:, :1], v[:, :1], enable_gqa=True),
                                         F.scaled_dot_product_attention(q[0], k[0], v[0])), (Q, K, V, MASK)),
    "float16": (lambda x, w: (F.softmax(x @ w, -1), (x * 2).sum(-1)), (X.half(), Y.T.contiguous().half())),
    "bfloat16": (lambda x, w: (F.softmax(x @ w, -1), F.gelu(x * 2).sum(-1), x.float()),
                 (X.bfloat16(), Y.T.contiguous().bfloat16())),
}


@pytest.mark.parametrize("case", sorted(OP_CASES))
def test_op_translations(case):
    fn, args = OP_CASES[case]
    tolerance = {"float16": 2e-3, "bfloat16": 2e-2}.get(case, 1e-5)
    _check(fn, *args, rtol=tolerance, atol=tolerance)


def test_results_of_known_values_are_folded_by_torch():
    # arange, full and the mask arithmetic all run while importing.
    def causal_scores(x):
        t = x.shape[-1]
        keep = torch.arange(t)[:, None] >= torch.arange(t)[None, :]
        return x.masked_fill(~keep, float("-inf")).softmax(-1)

    module = _check(causal_scores, torch.randn(2, 5, 5))
    text = str(module)
    assert "graph.compare" not in text and text.count("graph.constant") == 2


def test_large_results_of_known_values_are_built_as_graph_ops():
    # A constant broadcast over 2**20 elements stays a broadcast of a 1-D constant.
    def shifted(x):
        return x + torch.arange(1024.0).expand(1025, 1024) * 2

    module = _check(shifted, torch.randn(1025, 1024))
    assert "graph.broadcast_to" in str(module)


# Errors ---------------------------------------------------------------------

class Unsupported(nn.Module):
    def forward(self, x):
        y = x * 2
        return torch.special.bessel_j0(y)  # the failing line


def _line_of(text, fn):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_unsupported_op_names_the_op_the_node_and_the_source_line():
    with pytest.raises(tessel.UnsupportedError) as info:
        tessel.from_torch(Unsupported(), (torch.randn(3),))
    message = str(info.value)
    line = _line_of("the failing line", Unsupported.forward)
    assert message.startswith(f"torch node special_bessel_j0 (aten.special_bessel_j0.default) from "
                              f"{__file__}:{line} `return torch.special.bessel_j0(y)")
    assert "this op is not supported; supported: _adaptive_avg_pool2d, " in message  # none is near bessel_j0


def test_unsupported_op_in_a_function_names_its_line():
    def fn(x):
        return torch.cumsum(x, 0)

    with pytest.raises(tessel.UnsupportedError, match=rf"torch node cumsum \(aten.cumsum.default\) from "
                                                      rf"{__file__}:{_line_of('cumsum', fn)} .*not supported; "
                                                      r"nearest supported: aten.sum.default, aten.sum.dim_IntList"):
        tessel.from_torch(fn, (torch.randn(3),))


class _Box:
    """A result type torch.export cannot flatten."""

    def __init__(self, tensor):
        self.tensor = tensor


@pytest.mark.parametrize("fn, args, message", [
    (lambda x: x + torch.rand(4), (X,), r"aten.rand.default.*this op is not supported"),
    (lambda x: F.adaptive_avg_pool2d(x, 3), (IMAGE,), r"output size \[3, 3\] that does not divide"),
    (lambda x: x if x.sum() > 0 else -x, (X,), r"torch.export could not export the model: the model's control "
                                               r"flow depends on tensor values.*torch.where.*torch says: Guard"),
    (lambda x: _Box(x), (X,), r"the model returns a .*_Box, which torch.export cannot flatten.*register_pytree_node"),
], ids=["random", "uneven_adaptive_pool",
        "data_dependent_control_flow", "unflattenable_output"])
def test_unsupported_features_are_clear_errors(fn, args, message):
    with pytest.raises(tessel.UnsupportedError, match=message):
        tessel.from_torch(fn, args)


def test_training_mode_is_an_error():
    # dynamic_shapes: test_dynamic_frontends.py
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))  # training mode: updates the running statistics
    with pytest.raises(tessel.UnsupportedError, match=r"updates '1.running_mean' in place.*call model.eval\(\)"):
        tessel.from_torch(model, (torch.randn(2, 4),))


# DLPack -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def scale_exe():
    return tessel.compile(tessel.from_torch(lambda x, y: x * 2 + y, (X, Y)), target="cpu")


def test_contiguous_torch_tensors_are_passed_without_a_copy(scale_exe, monkeypatch):
    handed = []  # the data address of every argument given to the engine
    check = cpu_backend.CPUExecutable._check

    def recording(self, index, value):
        array, address = check(self, index, value)
        handed.append(address)
        return array, address

    monkeypatch.setattr(cpu_backend.CPUExecutable, "_check", recording)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    out = scale_exe(x, y)
    assert handed[:2] == [x.data_ptr(), y.data_ptr()]
    np.testing.assert_allclose(out, (x * 2 + y).numpy(), rtol=1e-6)
    # The result converts to torch without a copy too.
    result = torch.from_dlpack(out)
    assert result.data_ptr() == out.ctypes.data and torch.equal(result, torch.from_numpy(out))


def test_strided_torch_tensors_are_copied(scale_exe):
    x, y = torch.randn(4, 3).T, torch.randn(3, 8)[:, ::2]
    assert not x.is_contiguous() and not y.is_contiguous()
    np.testing.assert_allclose(scale_exe(x, y), (x * 2 + y).numpy(), rtol=1e-6)


def test_tensors_that_cannot_be_read_on_the_cpu_are_errors_naming_the_argument(scale_exe):
    class OnGPU:  # what a CUDA tensor's producer does when asked for CPU memory
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kwargs):
            raise BufferError("cannot export CUDA memory to the CPU")

    with pytest.raises(ValueError, match=r"argument 1 \(DLPack device \(2, 0\)\) cannot be read as CPU memory"):
        scale_exe(X, OnGPU())
    with pytest.raises(ValueError, match="argument 0 .* require gradient"):
        scale_exe(torch.randn(3, 4, requires_grad=True), Y)


# The GPU path -----------------------------------------------------------------

GPU_MODELS = {
    "mlp": lambda: (_mlp(), torch.randn(4, 16)),
    "conv_net": lambda: (ConvNet().eval(), torch.randn(2, 3, 16, 16)),
    "encoder_layer": lambda: (nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval(), torch.randn(2, 8, 32)),
    "gpt_block": lambda: (GPTBlock(sdpa=True).eval(), torch.randn(2, 8, 32)),
    "llama_block": lambda: (LlamaBlock().eval(), torch.randn(2, 16, 32)),
}


@pytest.mark.parametrize("name", GPU_MODELS)
def test_torch_models_compile_to_sm90_artifacts_that_run_on_the_emulator(name):
    model, x = GPU_MODELS[name]()
    module = tessel.from_torch(model, (x,))
    artifact = tessel.compile(module, target="cuda:sm_90")
    assert artifact.kernels and all(".target sm_90" in k.ptx for k in artifact.kernels)
    with torch.no_grad():
        expected = model(x).numpy()
    # The kernels, run on the emulator, compute what torch does; so do
    # their GPU schedules run on the CPU.
    np.testing.assert_allclose(torch.from_dlpack(artifact.emulate()(x)), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(compile_cpu(module, schedules="sm_90")(x), expected, rtol=1e-4, atol=1e-5)
