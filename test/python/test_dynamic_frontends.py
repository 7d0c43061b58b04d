"""Size symbols through the front ends (docs/dynamic-shapes.md, section 5):
torch models exported with ``dynamic_shapes`` and ONNX models whose inputs
have ``dim_param``s import with size symbols, compile once for the CPU and
match eager torch or onnxruntime at several sizes (1 and primes included);
a dim without a range, a size outside it and a symbolic use that a
converter cannot take are errors naming what."""

import io
import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import tessel  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from torch import nn  # noqa: E402
from torch.export import Dim  # noqa: E402
from torch.nn import functional as F  # noqa: E402

# Example sizes are 2 or more: torch.export specializes a size of 0 or 1.
DYNAMIC = {0: Dim("batch", min=1, max=8), 1: Dim("seq", min=1, max=64)}
SIZES = [(1, 1), (2, 7), (3, 13), (1, 31), (8, 64)]  # 1, primes, the maxima
VOCAB = 97


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up, self.down, self.norm = nn.Linear(16, 64), nn.Linear(64, 16), nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.down(F.gelu(self.up(x))))


class Attention(nn.Module):
    """Self-attention with heads split over the symbols: causal by SDPA's
    is_causal, or by a mask of ones' lower triangle, with rotary positions
    (cos and sin of an arange of the sequence) or without."""

    def __init__(self, d: int, heads: int, *, causal: str = "", rotary: bool = False) -> None:
        super().__init__()
        self.heads, self.causal, self.rotary = heads, causal, rotary
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def rotate(self, t: torch.Tensor) -> torch.Tensor:
        seq, half = t.shape[2], t.shape[3] // 2
        frequencies = 1.0 / (10000 ** (torch.arange(half, dtype=torch.float32) / half))
        angles = torch.arange(seq, dtype=torch.float32)[:, None] * frequencies[None, :]
        cos, sin = angles.cos().repeat(1, 2), angles.sin().repeat(1, 2)
        turned = torch.cat([-t[..., half:], t[..., :half]], dim=-1)
        return t * cos + turned * sin

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in self.qkv(x).split(d, -1))
        if self.rotary:
            q, k = self.rotate(q), self.rotate(k)
        if self.causal == "mask":
            keep = torch.ones(s, s, dtype=torch.bool).tril()
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
            y = scores.masked_fill(~keep, float("-inf")).softmax(-1) @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal == "sdpa")
        return self.proj(y.transpose(1, 2).reshape(b, s, d))


class Block(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4, **attention: object) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attention = Attention(d, heads, **attention)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Encoder(nn.Module):
    """A pre-norm encoder block, and its output pooled over the sequence."""

    def __init__(self) -> None:
        super().__init__()
        self.block = Block()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.block(x)
        return y, y.mean(1)


class GPT(nn.Module):
    """A GPT-style decoder: token and learned position embeddings, two
    causal blocks (SDPA's is_causal; a triangular mask and rotary
    positions), the logits and those of the last token."""

    def __init__(self, d: int = 32, positions: int = 64) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(VOCAB, d), nn.Embedding(positions, d)
        self.blocks = nn.ModuleList([Block(d, causal="sdpa"), Block(d, causal="mask", rotary=True)])
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, VOCAB, bias=False)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        return logits, logits[:, -1]


def _model(cls: type) -> nn.Module:
    torch.manual_seed(0)
    return cls().eval()


def _ids(batch: int, seq: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, seq))


def _check_at_sizes(exe, reference, make_input, atol: float) -> None:
    """The executable's results against ``reference``'s at every size of SIZES."""
    for batch, seq in SIZES:
        x = make_input(batch, seq)
        got = exe(x)
        want = reference(x)
        got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape, (batch, seq)
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol, err_msg=f"batch {batch}, seq {seq}")


def _eager(model: nn.Module):
    def run(x: np.ndarray):
        with torch.no_grad():
            out = model(torch.from_numpy(x))
        return tuple(t.numpy() for t in out) if isinstance(out, tuple) else out.numpy()
    return run


# torch ----------------------------------------------------------------------

@pytest.mark.parametrize("cls", [MLP, Encoder], ids=["mlp", "encoder"])
def test_torch_models_compile_once_for_every_batch_and_sequence(cls):
    model = _model(cls)
    width = 16 if cls is MLP else 32
    # torch.export's two spellings: by position, and by the parameter's name.
    dynamic = (DYNAMIC,) if cls is MLP else {"x": DYNAMIC}
    module = tessel.from_torch(model, (torch.randn(2, 5, width),), dynamic_shapes=dynamic)
    exe = tessel.compile(module, target="cpu")
    assert exe.inputs[0].shape == ("batch", "seq", width)
    _check_at_sizes(exe, _eager(model), lambda b, s: np.random.default_rng(b * s).standard_normal(
        (b, s, width)).astype(np.float32), atol=1e-4)


@pytest.fixture(scope="module")
def gpt():
    return _model(GPT)


def test_a_gpt_decoder_from_torch_compiles_once_for_every_batch_and_sequence(gpt):
    exe = tessel.compile(tessel.from_torch(gpt, (_ids(2, 5),), dynamic_shapes=(DYNAMIC,)), target="cpu")
    assert [o.shape for o in exe.outputs] == [("batch", "seq", VOCAB), ("batch", VOCAB)]
    _check_at_sizes(exe, _eager(gpt), lambda b, s: _ids(b, s).numpy(), atol=1e-4)
    with pytest.raises(ValueError, match=r"argument 0 has 65 as dim 1 \(seq\), outside the range \[1, 64\]"):
        exe(_ids(2, 65).numpy())


def test_dims_are_named_after_torch_and_narrowed_by_its_guards():
    """Dim.AUTO dims take torch's symbol names; the range of a dim whose
    model slices a 64-row table by it is torch's guard, 2 to 64."""
    class Positions(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = nn.Parameter(torch.randn(64, 8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.table[:x.shape[1]]

    model = Positions()
    module = tessel.from_torch(model, (torch.randn(2, 5, 8),),
                               dynamic_shapes=({0: Dim("batch", min=1, max=4), 1: Dim.AUTO},))
    exe = tessel.compile(module, target="cpu")
    batch, seq, _ = exe.inputs[0].shape
    assert batch == "batch" and seq.startswith("s")
    for b, s in [(1, 2), (3, 7), (4, 64)]:
        x = torch.randn(b, s, 8)
        np.testing.assert_allclose(exe(x.numpy()), _eager(model)(x.numpy()), rtol=1e-6)
    with pytest.raises(ValueError, match=rf"1 as dim 1 \({seq}\), outside the range \[2, 64\]"):
        exe(np.zeros((1, 1, 8), np.float32))


def test_index_tensors_pick_a_row_of_each_batch():
    """``x[arange(batch), j]``: two index tensors, one over a symbolic dim."""
    def pick(x: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
        return x[torch.arange(x.shape[0]), j]

    batch = Dim("batch", min=1, max=8)
    exe = tessel.compile(tessel.from_torch(pick, (torch.randn(2, 6, 4), torch.tensor([5, 0])),
                                           dynamic_shapes=({0: batch}, {0: batch})), target="cpu")
    for b in (1, 5, 8):
        x, j = torch.randn(b, 6, 4), torch.randint(-6, 6, (b,))
        np.testing.assert_array_equal(exe(x.numpy(), j.numpy()), pick(x, j).numpy())


def test_a_derived_dim_declares_a_multiple_and_takes_tensor_cores():
    """``seq = 8 * Dim("k")``: the input dim is a symbol of its own,
    ``k_times_8``, declared a multiple of 8, and k alone (``seq // 8``) its
    quotient. The scores q @ k^T over it go to tensor cores on sm_90a, as
    ``tessel.trace``'s ``multiple_of`` makes them, and match on the CPU and
    on the emulator."""
    class Scores(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(32, 32, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q = self.q(x)
            return q @ q.transpose(1, 2) + x[:, :x.shape[1] // 8].sum(1, keepdim=True)[..., :1]

    model, seq = _model(Scores), 8 * Dim("k", min=1, max=8)
    dynamic = ({0: Dim("batch", min=1, max=4), 1: seq},)
    module = tessel.from_torch(model, (torch.randn(2, 16, 32),), dynamic_shapes=dynamic)
    assert "graph.dims = {batch = #graph.dim<1, 4>, k_times_8 = #graph.dim<8, 64, multiple_of 8>}" in str(module)
    exe = tessel.compile(module, target="cpu")
    for b, s in [(1, 8), (3, 24), (4, 64)]:
        x = np.random.default_rng(s).standard_normal((b, s, 32)).astype(np.float32)
        np.testing.assert_allclose(exe(x), _eager(model)(x), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match=r"12 as dim 1 \(k_times_8\), outside the range \[8, 64\], a multiple of 8"):
        exe(np.zeros((1, 12, 32), np.float32))

    half = _model(Scores).half()
    artifact = tessel.compile(tessel.from_torch(half, (torch.randn(2, 16, 32).half(),), dynamic_shapes=dynamic),
                              target="cuda:sm_90a")
    # The linear (N = 32) on mma.sync, the scores (N = k_times_8) on wgmma: off tensor cores without the multiple.
    assert [("mma.sync" in k.ptx, "wgmma.mma_async" in k.ptx) for k in artifact.kernels].count((False, True)) == 1
    assert sum("mma.sync" in k.ptx or "wgmma.mma_async" in k.ptx for k in artifact.kernels) == 2
    run = artifact.emulate()
    w = half.q.weight.detach().float().numpy()
    for b, s in [(1, 8), (2, 40)]:
        x = (np.random.default_rng(s).standard_normal((b, s, 32)) * 0.5).astype(np.float16)
        q = (x.astype(np.float32) @ w.T).astype(np.float16).astype(np.float32)
        want = q @ q.transpose(0, 2, 1) + x[:, :s // 8].astype(np.float32).sum(1, keepdims=True)[..., :1]
        np.testing.assert_allclose(run(x).astype(np.float32), want, rtol=3e-2, atol=3e-2)


def test_a_transformer_encoder_layer_over_batch_and_sequence():
    """nn.TransformerEncoderLayer (batch first: its attention runs on [seq,
    batch, E], flattened to seq * batch rows and grouped again) over a
    symbolic batch and sequence."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).eval()
    dynamic = ({0: Dim("batch", min=1, max=8), 1: Dim("seq", min=2, max=32)},)
    exe = tessel.compile(tessel.from_torch(layer, (torch.randn(2, 5, 32),), dynamic_shapes=dynamic), target="cpu")
    for b, s in [(1, 2), (3, 7), (8, 32)]:
        x = np.random.default_rng(s).standard_normal((b, s, 32)).astype(np.float32)
        np.testing.assert_allclose(exe(x), _eager(layer)(x), rtol=1e-4, atol=1e-4)


def test_a_view_by_the_quotient_of_a_declared_multiple():
    """``x.view(b, seq // 8, 8, d)`` and ``x.reshape(-1, 8, d)`` with seq a
    multiple of 8: the element counts agree through the exact quotient, on
    the CPU and on the emulator."""
    class Groups(nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            b, s, d = x.shape
            return x.view(b, s // 8, 8, d).sum(2) * 2, x.reshape(-1, 8, d).amax(1)

    model = Groups()
    module = tessel.from_torch(model, (torch.randn(2, 16, 4),),
                               dynamic_shapes=({0: Dim("batch", min=1, max=4), 1: 8 * Dim("k", min=1, max=16)},))
    assert "#graph.shape<[batch, k_times_8 floordiv 8, 8, 4]>" in str(module)
    exe, run = tessel.compile(module, target="cpu"), tessel.compile(module, target="cuda:sm_80").emulate()
    for call, sizes in ((exe, [(1, 8), (3, 24), (4, 128)]), (run, [(1, 8), (3, 24)])):
        for b, s in sizes:
            x = np.random.default_rng(s).standard_normal((b, s, 4)).astype(np.float32)
            for g, w in zip(call(x), model(torch.from_numpy(x))):
                np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


def test_derived_dims_tessel_cannot_bind_are_errors():
    """A derived dim whose root is another input's dim, and ``2 * k + 1``
    (a remainder tessel's sizes do not declare), are refused naming the
    input and dim."""
    k = Dim("k", min=2, max=8)
    with pytest.raises(tessel.UnsupportedError, match=r"torch input 'y' dim 0 is 8\*s\d+, an expression of size "
                                                      r"symbols that is not a derived Dim"):
        tessel.from_torch(lambda x, y: x.sum() + y.sum(), (torch.randn(3), torch.randn(24)),
                          dynamic_shapes=({0: k}, {0: 8 * k}))
    with pytest.raises(tessel.UnsupportedError, match=r"torch input 'x' dim 0 is 2\*s\d+ \+ 1"):
        tessel.from_torch(lambda x: x * 2, (torch.randn(7),), dynamic_shapes=({0: 2 * k + 1},))


def test_torch_dims_without_a_range_or_symbolic_uses_a_converter_lacks_are_errors():
    mlp = _model(MLP)
    with pytest.raises(tessel.UnsupportedError, match=r"torch input 'x' dim 0 \(batch\) has no upper bound: give it "
                                                      r"one, torch.export.Dim\('batch', min=\.\.\., max=\.\.\.\)"):
        tessel.from_torch(mlp, (torch.randn(2, 5, 16),), dynamic_shapes=({0: Dim("batch")},))
    with pytest.raises(tessel.UnsupportedError, match=r"torch input 'x' dim 1 \(s\d+\) has no upper bound"):
        tessel.from_torch(mlp, (torch.randn(2, 5, 16),), dynamic_shapes=({1: Dim.AUTO},))
    with pytest.raises(tessel.UnsupportedError, match=r"aten.upsample_nearest2d.vec\).*: this conversion does not take "
                                                      r"size symbols yet \(operand 0 \[n, 3, h, 8\]"):
        tessel.from_torch(lambda x: F.interpolate(x, scale_factor=2.0), (torch.randn(2, 3, 4, 8),),
                          dynamic_shapes=({0: Dim("n", max=4), 2: Dim("h", max=16)},))


# ONNX -------------------------------------------------------------------------

def _onnx_gpt(model: nn.Module) -> bytes:
    exported = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(model, (_ids(2, 5),), exported, input_names=["ids"], output_names=["logits", "last"],
                          dynamic_axes={"ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"},
                                        "last": {0: "batch"}}, opset_version=18, dynamo=False)
    return exported.getvalue()


def _onnxruntime(model: bytes):
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return lambda *xs: tuple(session.run(None, {i.name: x for i, x in zip(session.get_inputs(), xs)}))


def test_the_gpt_decoder_exported_to_onnx_with_dim_params_matches_onnxruntime(gpt):
    exported = _onnx_gpt(gpt)
    with pytest.raises(tessel.UnsupportedError, match=r"ONNX input 'ids' dim 1 is the dim_param 'seq', which needs a "
                                                      r"range: from_onnx\(\.\.\., dims=\{'seq': \(min, max\)\}\)"):
        tessel.from_onnx(onnx.load_from_string(exported), dims={"batch": (1, 8)})
    exe = tessel.compile(tessel.from_onnx(onnx.load_from_string(exported), dims={"batch": (1, 8), "seq": (1, 64)}),
                         target="cpu")
    assert exe.inputs[0].shape == ("batch", "seq")
    _check_at_sizes(exe, _onnxruntime(exported), lambda b, s: _ids(b, s).numpy(), atol=1e-4)


def _shape_arithmetic() -> onnx.ModelProto:
    """A graph that computes shapes from its input's (Shape, Gather,
    Unsqueeze, Concat, Reshape with -1, Range, ConstantOfShape, a Slice from
    the end), one of its dim_params not an identifier."""
    def ints(name, values, dims=None):
        return helper.make_tensor(name, TensorProto.INT64, [len(values)] if dims is None else dims, values)

    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),  # [batch, seq, 8]
        helper.make_node("Gather", ["shape", "one_scalar"], ["seq_scalar"], axis=0),
        helper.make_node("Unsqueeze", ["seq_scalar", "zero"], ["seq"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Concat", ["batch", "seq", "two", "minus_one"], ["split_shape"], axis=0),
        helper.make_node("Reshape", ["x", "split_shape"], ["split"]),  # [batch, seq, 2, 4]
        helper.make_node("ReduceSum", ["split", "three"], ["summed"], keepdims=0),  # [batch, seq, 2]
        helper.make_node("Range", ["zero_scalar", "seq_scalar", "one_scalar"], ["positions"]),  # [seq]
        helper.make_node("Cast", ["positions"], ["positions_float"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["positions_float", "one"], ["column"]),  # [seq, 1]
        helper.make_node("Add", ["summed", "column"], ["y"]),
        helper.make_node("Slice", ["x", "minus_one", "end", "one"], ["last"]),  # x[:, -1:]
        helper.make_node("Concat", ["batch", "seq"], ["ones_shape"], axis=0),
        helper.make_node("ConstantOfShape", ["ones_shape"], ["ones"],
                         value=helper.make_tensor("value", TensorProto.FLOAT, [1], [1.0])),
        helper.make_node("ReduceSum", ["x", "two"], ["row_sums"], keepdims=0),  # [batch, seq]
        helper.make_node("Add", ["ones", "row_sums"], ["shifted"]),
    ]
    initializers = [ints("zero", [0]), ints("one", [1]), ints("two", [2]), ints("three", [3]),
                    ints("minus_one", [-1]), ints("end", [2**62]), ints("zero_scalar", [0], []),
                    ints("one_scalar", [1], [])]
    graph = helper.make_graph(
        nodes, "shapes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch size", "seq", 8])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in
         (("y", ["batch size", "seq", 2]), ("last", ["batch size", 1, 8]), ("shifted", ["batch size", "seq"]))],
        initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_shape_arithmetic_over_dim_params_matches_onnxruntime():
    model = _shape_arithmetic()
    onnx.checker.check_model(model)
    exe = tessel.compile(tessel.from_onnx(model, dims={"batch size": (1, 8), "seq": (1, 64)}), target="cpu")
    assert exe.inputs[0].shape == ("batch_size", "seq", 8)
    _check_at_sizes(exe, _onnxruntime(model.SerializeToString()),
                    lambda b, s: np.random.default_rng(s).standard_normal((b, s, 8)).astype(np.float32), atol=1e-5)


def test_onnx_dims_without_a_range_or_bounds_that_depend_on_the_sizes_are_errors():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)

    def model(*nodes, initializers=()):
        return helper.make_model(helper.make_graph(list(nodes), "g", [x], [y], list(initializers)),
                                 opset_imports=[helper.make_opsetid("", 18)])

    relu = model(helper.make_node("Relu", ["x"], ["y"]))
    with pytest.raises(tessel.UnsupportedError, match=r"dims names 'sequence', which is no dim_param of the model's "
                                                      r"inputs \(they name 'batch', 'seq'\)"):
        tessel.from_onnx(relu, dims={"batch": (1, 8), "seq": (1, 8), "sequence": (1, 8)})
    # The first 4 of a dim of 1 to 64: 4 elements, or fewer at some sizes.
    prefix = model(helper.make_node("Slice", ["x", "zero", "four", "one"], ["y"]),
                   initializers=[helper.make_tensor(n, TensorProto.INT64, [1], [v])
                                 for n, v in (("zero", 0), ("four", 4), ("one", 1))])
    with pytest.raises(tessel.UnsupportedError, match=r"ONNX node #0 \(Slice\): the end 4 of axis 1, of size seq, is "
                                                      r"clamped to the axis at some sizes"):
        tessel.from_onnx(prefix, dims={"batch": (1, 8), "seq": (1, 64)})
    exe = tessel.compile(tessel.from_onnx(prefix, dims={"batch": (1, 8), "seq": (4, 64)}), target="cpu")
    data = np.arange(35, dtype=np.float32).reshape(5, 7)
    np.testing.assert_array_equal(exe(data), data[:, :4])
    # Whether seq is 1: decided where the range excludes it, else an error.
    is_one = model(helper.make_node("Shape", ["x"], ["shape"]),
                   helper.make_node("Gather", ["shape", "one"], ["seq"]),
                   helper.make_node("Equal", ["seq", "one"], ["single"]),
                   helper.make_node("Where", ["single", "x", "minus_x"], ["y"]),
                   helper.make_node("Neg", ["x"], ["minus_x"]),
                   initializers=[helper.make_tensor("one", TensorProto.INT64, [], [1])])
    is_one.graph.node.insert(3, is_one.graph.node.pop(4))  # Neg before Where: topological order
    with pytest.raises(tessel.UnsupportedError, match=r"ONNX node #2 \(Equal\): comparing the sizes seq and 1 \(eq\) "
                                                      r"depends on the size symbols' values at each call"):
        tessel.from_onnx(is_one, dims={"batch": (1, 8), "seq": (1, 64)})
    exe = tessel.compile(tessel.from_onnx(is_one, dims={"batch": (1, 8), "seq": (2, 64)}), target="cpu")
    np.testing.assert_array_equal(exe(data), -data)


@pytest.mark.parametrize("source", ["torch", "onnx"])
def test_the_gpt_decoder_compiles_once_for_sm_90_and_matches_on_the_emulator(gpt, source):
    # Issue 30's GPU half: one sm_90 artifact over batch and seq (manifest
    # version 4: shapes, grids and size arguments as expressions), run on the
    # PTX emulator at every size.
    if source == "torch":
        module, reference = tessel.from_torch(gpt, (_ids(2, 5),), dynamic_shapes=(DYNAMIC,)), _eager(gpt)
    else:
        exported = _onnx_gpt(gpt)
        module = tessel.from_onnx(onnx.load_from_string(exported), dims={"batch": (1, 8), "seq": (1, 64)})
        reference = _onnxruntime(exported)
    artifact = tessel.compile(module, target="cuda:sm_90")
    assert set(artifact.manifest()["dims"]) == {"batch", "seq"}
    exe = artifact.emulate()
    _check_at_sizes(lambda ids: tuple(np.asarray(r) for r in exe(ids)), reference,
                    lambda b, s: _ids(b, s).numpy(), atol=1e-4)
