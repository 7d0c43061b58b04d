"""tessel.trace and tessel.ops: the modules they build, their errors, and numerics against numpy."""

import inspect
import math

import numpy as np
import pytest

import tessel
from tessel import ops
from tessel.testing import fuzz

try:
    import ml_dtypes

    BF16 = [np.dtype(ml_dtypes.bfloat16)]
except ImportError:
    BF16 = []

F32, F16, I32, I64, BOOL = (np.dtype(t) for t in (np.float32, np.float16, np.int32, np.int64, np.bool_))
# Every float dtype tessel computes in; numpy references run in float64.
FLOATS = (F32, F16, *BF16)


def _body(module):
    return list(module.body.operations[0].entry_block.operations)


def _signature(module) -> str:
    return str(module.body.operations[0].type)


def _line(fn) -> int:
    return fn.__code__.co_firstlineno


def _id(value) -> str:
    return " ".join(repr(value).split())


# Module construction ----------------------------------------------------------


def test_signature_comes_from_the_examples_not_their_values():
    module = tessel.trace(
        lambda x, b: (x + b, x), np.ones((2, 3), np.float32), tessel.TensorSpec((3,), "float32"), name="f"
    )
    assert module.body.operations[0].name.value == "f"
    assert _signature(module) == "(tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)"
    assert "graph.constant" not in str(module)


@pytest.mark.parametrize("dtype", [F32, F16, I32, I64, BOOL] + BF16, ids=str)
def test_every_dtype_traces(dtype):
    seen = {}

    def f(x):
        seen["dtype"] = x.dtype
        return x.reshape(-1)

    module = tessel.trace(f, tessel.TensorSpec((2, 1), dtype))
    element = {"float32": "f32", "float16": "f16", "int32": "i32", "int64": "i64", "bool": "i1", "bfloat16": "bf16"}
    assert _signature(module) == f"(tensor<2x1x{element[dtype.name]}>) -> tensor<2x{element[dtype.name]}>"
    assert seen["dtype"] == dtype


def test_tensor_properties():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, dtype=x.dtype, ndim=x.ndim, t=x.T.shape, repr=repr(x), len=len(x))
        return x

    tessel.trace(f, np.zeros((2, 3, 5), np.int64))
    assert seen == dict(shape=(2, 3, 5), dtype=I64, ndim=3, t=(5, 3, 2), repr="Tensor(int64[2, 3, 5])", len=2)


def test_list_result_and_repeated_results():
    module = tessel.trace(lambda x: [x, -x, x], np.zeros(3, np.float32))
    assert _signature(module) == "(tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)"


def test_every_op_is_located_at_the_users_line():
    def f(x):
        y = ops.relu(x) * 2.0
        return y[0]

    module = tessel.trace(f, np.ones((3, 4), np.float32))
    trace_line = inspect.currentframe().f_lineno - 1
    located = [(op.name, op.location.filename, op.location.start_line) for op in _body(module)]
    first = _line(f) + 1
    assert located == [
        ("graph.relu", __file__, first),
        ("graph.constant", __file__, first),
        ("graph.mul", __file__, first),
        ("graph.slice", __file__, first + 1),
        ("graph.reshape", __file__, first + 1),
        ("func.return", __file__, trace_line),
    ]
    # The column is the start of the expression that built the op (1-based).
    assert _body(module)[3].location.start_col == inspect.getsource(f).splitlines()[2].index("y[0]") + 1


def test_scalars_take_the_other_operands_dtype_and_arrays_keep_theirs():
    module = tessel.trace(
        lambda h, i: (h * 2 + np.float32(0.5), i + 1, 3 - i, i + np.array([1, 2], np.int32)),
        np.zeros((2,), np.float16),
        np.zeros((2,), np.int32),
    )
    text = str(module)
    assert "dense<2.000000e+00> : tensor<f16>" in text and "dense<5.000000e-01> : tensor<f16>" in text
    assert "dense<1> : tensor<i32>" in text and "dense<3> : tensor<i32>" in text
    assert "dense<[1, 2]> : tensor<2xi32>" in text
    assert _signature(module).endswith("-> (tensor<2xf16>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>)")


def test_numpy_arrays_on_the_left_defer_to_the_tensor():
    module = tessel.trace(lambda x: np.ones(3, np.float32) - x < np.zeros(3, np.float32), np.zeros(3, np.float32))
    ops_built = [op.name for op in _body(module)]
    assert ops_built == ["graph.constant", "graph.sub", "graph.constant", "graph.compare", "func.return"]
    assert "graph.compare lt" in str(module)


@pytest.mark.parametrize(
    "fn,expected",
    [
        (lambda x: ops.layer_norm(x, np.ones((3, 4), np.float32)), "axis -2"),
        (lambda x: ops.layer_norm(x), "axis -1"),
        (lambda x: ops.rms_norm(x, np.ones((3, 3, 4), np.float32), axis=1), "axis 1 eps"),
        (lambda x: ops.gelu(x, approximate="tanh"), "approximate tanh"),
        (lambda x: ops.conv2d(x, np.ones((2, 3, 1, 1), np.float32), padding=1), "strides [1, 1] padding [1, 1, 1, 1]"),
        (lambda x: ops.conv2d(x, np.ones((2, 3, 1, 1), np.float32), padding=(1, 2), stride=(2, 1)),
         "strides [2, 1] padding [1, 2, 1, 2]"),
        (lambda x: ops.conv2d(x, np.ones((2, 3, 1, 1), np.float32), padding=(0, 1, 1, 0)), "padding [0, 1, 1, 0]"),
        (lambda x: ops.max_pool2d(x, 2), "max nchw %arg0 kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0]"),
        (lambda x: ops.avg_pool2d(x, (2, 1), 1, layout="NHWC"), "avg nhwc %arg0 kernel [2, 1] strides [1, 1]"),
        (lambda x: ops.avg_pool2d(x, 3, padding=1), "count_include_pad"),
        (lambda x: x.sum((0, -1), keepdims=True), "reduce sum %arg0 axes [0, -1] keepdims"),
        (lambda x: x.transpose(-1, 0, 1, 2), "[3, 0, 1, 2]"),
        (lambda x: x.astype("int32"), "to i32"),
    ],
)
def test_op_attributes(fn, expected):
    assert expected in str(tessel.trace(fn, np.zeros((2, 3, 3, 4), np.float32)))


# numpy's own result shapes are the reference for indexing and reshaping.
INDEX_KEYS = [
    0, -1, (1, 2), (2, -1, 0), slice(1, None), slice(-100, 100), (slice(None), slice(None, None, 2)),
    (slice(1, 3), slice(None), slice(4, 0, None)), (Ellipsis, 1), (None, 0), (slice(None), None, slice(1, 3)),
    (Ellipsis, None), (0, Ellipsis, None, 2), [0, 2], (slice(None), [3, 0, 3]), np.array([[1], [-1]]),
    (0, [1, 2]), (slice(None), 1, [4, 0]), (None, slice(1, 3), Ellipsis, [0, 1]),
]
EMPTY_AT_END = slice(5, 2)  # clamped to 3:3 on a dimension of size 3


@pytest.mark.parametrize("key", INDEX_KEYS + [EMPTY_AT_END], ids=_id)
def test_indexing_shapes_match_numpy(key):
    module = tessel.trace(lambda x: x[key], np.zeros((3, 4, 5), np.float32))
    shape = np.empty((3, 4, 5))[key].shape
    assert _signature(module).endswith("-> tensor<" + "".join(f"{d}x" for d in shape) + "f32>")


@pytest.mark.parametrize(
    "fn,ref",
    [
        (lambda x: ops.squeeze(x), lambda a: np.squeeze(a)),
        (lambda x: ops.squeeze(x, (0, -1)), lambda a: np.squeeze(a, (0, -1))),
        (lambda x: ops.unsqueeze(x, 0), lambda a: np.expand_dims(a, 0)),
        (lambda x: ops.unsqueeze(x, -1), lambda a: np.expand_dims(a, -1)),
        (lambda x: ops.flatten(x), lambda a: a.reshape(-1)),
        (lambda x: ops.flatten(x, 1, 2), lambda a: a.reshape(1, 21, 1)),
        (lambda x: ops.reshape(x, (7, -1)), lambda a: a.reshape(7, -1)),
        (lambda x: x.reshape(-1, 1, 3), lambda a: a.reshape(-1, 1, 3)),
        (lambda x: ops.transpose(x), lambda a: a.T),
        (lambda x: ops.broadcast_to(x, (2, 1, 3, 7, 1)), lambda a: np.broadcast_to(a, (2, 1, 3, 7, 1))),
        (lambda x: ops.take(x, [[0, 1]], axis=2), lambda a: np.take(a, [[0, 1]], axis=2)),
        (lambda x: ops.concatenate([x, x, np.zeros((1, 3, 2, 1), np.float32)], axis=-2),
         lambda a: np.concatenate([a, a, np.zeros((1, 3, 2, 1))], axis=-2)),
    ],
)
def test_shape_ops_match_numpy(fn, ref):
    module = tessel.trace(fn, np.zeros((1, 3, 7, 1), np.float32))
    shape = ref(np.zeros((1, 3, 7, 1))).shape
    assert _signature(module).endswith("-> tensor<" + "".join(f"{d}x" for d in shape) + "f32>")


# Errors: (fn, example shapes, error type, message pattern). CompileErrors are
# located at the lambda's line.
ERRORS = [
    (lambda x, y: x @ y, [(3, 4), (5, 6)], tessel.CompileError, r"matmul contraction dimensions differ"),
    (lambda x, y: x + y, [(3, 4), (5,)], tessel.CompileError, r"operand shapes \[3, 4\] and \[5\] are not broadcast"),
    (lambda x, y: x * y.astype(np.int32), [(3,), (3,)], tessel.CompileError, r"different dtypes float32 and int32"),
    (lambda x, y: x.astype(np.int64) + 0.5, [(3,), (3,)], tessel.CompileError, r"float scalar 0.5 with a int64"),
    (lambda x, y: x + np.ones(3), [(3,), (3,)], tessel.CompileError,
     r"different dtypes float32 and float64; tessel does not promote types"),
    (lambda x, y: x + np.ones(3, np.uint8), [(3,), (3,)], tessel.UnsupportedError, r"dtype uint8 is not supported"),
    (lambda x, y: ops.exp(x.astype(np.int32)), [(3,), (3,)], tessel.CompileError, r"'graph.exp' op operand #0 must be"),
    (lambda x, y: x.mean().astype(np.int32).mean(), [(3,), (3,)], tessel.CompileError, r"mean needs a float tensor"),
    (lambda x, y: x[::-1], [(3,), (3,)], tessel.UnsupportedError, r"slice step -1 is negative"),
    (lambda x, y: x[x > 0], [(3,), (3,)], tessel.UnsupportedError, r"boolean mask"),
    (lambda x, y: x[[0], [1]], [(3, 3), (3,)], tessel.UnsupportedError, r"only one integer-array index"),
    (lambda x, y: x[0, :, [1]], [(3, 3, 3), (3,)], tessel.UnsupportedError, r"separated by a slice"),
    (lambda x, y: x[3], [(3,), (3,)], tessel.CompileError, r"index 3 is out of bounds for axis 0 with size 3"),
    (lambda x, y: x[0, 0], [(3,), (3,)], tessel.CompileError, r"too many indices for a tensor of rank 1: 2"),
    (lambda x, y: x[..., 0, ...], [(3,), (3,)], tessel.CompileError, r"single ellipsis"),
    (lambda x, y: x.reshape(4, 2), [(3, 3), (3,)], tessel.CompileError, r"cannot reshape 9 elements \[3, 3\] into 8"),
    (lambda x, y: x.reshape(2, -1), [(3, 3), (3,)], tessel.CompileError, r"cannot reshape \(3, 3\) \(9 elements\)"),
    (lambda x, y: x.reshape(-1, -1), [(3, 3), (3,)], tessel.CompileError, r"only one dimension can be -1"),
    (lambda x, y: ops.broadcast_to(x, (1, 3)), [(3, 3), (3,)], tessel.CompileError, r"cannot broadcast \[3, 3\] to"),
    (lambda x, y: ops.layer_norm(x, y), [(2, 4), (3,)], tessel.CompileError, r"weight must be 'tensor<4xf32>'"),
    (lambda x, y: ops.softmax(x, axis=2), [(2, 4), (3,)], tessel.CompileError, r"axis 2 is out of range for rank 2"),
    (lambda x, y: x.sum(axis=(0, -2)), [(2, 4), (3,)], tessel.CompileError, r"axis 0 is reduced twice"),
    (lambda x, y: x.transpose(0, 0), [(2, 4), (3,)], tessel.CompileError, r"perm \[0, 0\] is not a permutation"),
    (lambda x, y: ops.squeeze(x, 1), [(2, 4), (3,)], tessel.CompileError, r"cannot squeeze axis 1 of size 4"),
    (lambda x, y: ops.conv2d(x, y), [(1, 3, 4, 4), (2, 2, 1, 1)], tessel.CompileError, r"2 input channels per group"),
    (lambda x, y: ops.max_pool2d(x, 5), [(1, 3, 4, 4), (3,)], tessel.CompileError, r"window of 5 cells does not fit"),
    (lambda x, y: ops.concatenate([x, y]), [(2, 4), (3,)], tessel.CompileError, r"concat input #1"),
    (lambda x, y: ops.where(x, x, y), [(3,), (3,)], tessel.CompileError, r"operand #0 must be ranked tensor of 1-bit"),
    (lambda x, y: x if x > 0 else y, [(3,), (3,)], TypeError, r"no value; use tessel.ops.where"),
    (lambda x, y: 1.0, [(3,), (3,)], TypeError, r"must return a Tensor or a tuple/list of Tensors"),
    (lambda x, y: x[1.5], [(3,), (3,)], TypeError, r"invalid index 1.5"),
    (lambda x, y: ops.gelu(x, approximate="fast"), [(3,), (3,)], ValueError, r"approximate must be"),
    (lambda x, y: ops.conv2d(x, y, layout="CHWN"), [(3,), (3,)], ValueError, r"layout must be"),
]


@pytest.mark.parametrize("fn,shapes,error,match", ERRORS, ids=[e[3].replace("\\", "") for e in ERRORS])
def test_errors(fn, shapes, error, match):
    with pytest.raises(error, match=match) as info:
        tessel.trace(fn, *(np.zeros(s, np.float32) for s in shapes))
    if issubclass(error, tessel.CompileError):
        assert f"{__file__}:{_line(fn)}:" in info.value.diagnostics[0].location


def test_examples_must_be_arrays_or_specs():
    with pytest.raises(TypeError, match="example 1 must be a numpy array or tessel.TensorSpec, got list"):
        tessel.trace(lambda x, y: x, np.zeros(2, np.float32), [1.0, 2.0])
    with pytest.raises(tessel.UnsupportedError, match="dtype complex128 is not supported"):
        tessel.trace(lambda x: x, np.zeros(2, np.complex128))


def test_public_api():
    import tessel.ops as imported

    assert imported is tessel.ops is ops
    assert {"trace", "Tensor", "ops"} <= set(tessel.__all__)
    assert all(callable(getattr(ops, name)) and getattr(ops, name).__doc__ for name in ops.__all__)


# Numerics against numpy ------------------------------------------------------
#
# Each case traces fn on its inputs, compiles for the CPU and compares with
# ref, a numpy function run on the inputs upcast to float64 (ints unchanged).

_rng = np.random.default_rng(0)


def _rand(shape, dtype=F32, positive=False):
    if np.issubdtype(dtype, np.integer):
        return _rng.integers(1 if positive else -20, 20, size=shape).astype(dtype)
    x = _rng.standard_normal(shape)
    return (np.abs(x) + 0.5 if positive else x).astype(dtype)


NUMERIC = []


def _case(id, fn, ref, *inputs):
    NUMERIC.append(pytest.param(fn, ref, inputs, id=id))


# Elementwise, through Python operators and ops functions.
BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "maximum": (ops.maximum, np.maximum),
    "minimum": (ops.minimum, np.minimum),
}
for name, (fn, ref) in BINARY.items():
    for dtype in (*FLOATS, I32):
        for shapes in (((1,), (1,)), ((7,), (1,)), ((3, 1, 5), (13, 1))):
            _case(f"{name}-{dtype}-{shapes}", fn, ref, *(_rand(s, dtype) for s in shapes))
for dtype in FLOATS:
    _case(f"div-{dtype}", lambda a, b: a / b, np.divide, _rand((3, 5), dtype), _rand((5,), dtype, positive=True))
_case("div-i32-truncates", lambda a, b: a / b, lambda a, b: np.trunc(a / b),
      np.array([7, -7, 7, -7, 0], np.int32), np.array([2, 2, -2, -2, 3], np.int32))
_case("i64-add", lambda a, b: a + b, np.add, _rand((2, 3), I64), _rand((3,), I64))

_arange = np.arange(5, dtype=np.float32)
_case("scalars", lambda x: 2 * x + 1, lambda x: 2 * x + 1, _rand((3, 5)))
_case("reflected-scalars", lambda x: 1 - x / 4, lambda x: 1 - x / 4, _rand((1,), F16))
_case("scalar-over-tensor", lambda x: 2.0 / x, lambda x: 2 / x, _rand((7,), positive=True))
_case("int-scalars", lambda x: x * 3 - 1, lambda x: x * 3 - 1, _rand((11,), I32))
_case("array-operands", lambda x: _arange - x * _arange, lambda x: _arange - x * _arange, _rand((2, 5)))

UNARY = {
    "relu": (ops.relu, lambda x: np.maximum(x, 0)),
    "neg": (ops.neg, np.negative),
    "minus": (lambda x: -x, np.negative),
    "abs": (abs, np.abs),
    "exp": (ops.exp, np.exp),
    "tanh": (ops.tanh, np.tanh),
    "sigmoid": (ops.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "silu": (ops.silu, lambda x: x / (1 + np.exp(-x))),
    "gelu": (ops.gelu, lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2)))),
    "gelu-tanh": (lambda x: ops.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))),
}
POSITIVE_UNARY = {"log": (ops.log, np.log), "sqrt": (ops.sqrt, np.sqrt), "rsqrt": (ops.rsqrt, lambda x: 1 / np.sqrt(x))}
for name, (fn, ref) in {**UNARY, **POSITIVE_UNARY}.items():
    for dtype in FLOATS:
        for shape in ((1,), (3, 11)):
            _case(f"{name}-{dtype}-{shape}", fn, ref, _rand(shape, dtype, positive=name in POSITIVE_UNARY))
for name in ("relu", "neg", "abs"):
    _case(f"{name}-i32", UNARY[name][0], UNARY[name][1], _rand((2, 7), I32))

for dtype in FLOATS:
    _case(f"pow-square-{dtype}", lambda x: x**2, np.square, _rand((3, 7), dtype))
    _case(f"pow-{dtype}", ops.pow, np.power, _rand((5, 1), dtype, positive=True), _rand((3,), dtype))
_case("rpow", lambda x: 2**x, lambda x: 2**x, _rand((13,)))

_cmp = (_rand((4, 5)), _rand((5,)))
for name, fn, ref in [("lt", lambda a, b: a < b, np.less), ("le", lambda a, b: a <= b, np.less_equal),
                      ("gt", lambda a, b: a > b, np.greater), ("ge", lambda a, b: a >= b, np.greater_equal),
                      ("eq", lambda a, b: a == b, np.equal), ("ne", lambda a, b: a != b, np.not_equal)]:
    _case(f"compare-{name}", fn, ref, _cmp[0], np.where(_rng.random(5) < 0.5, _cmp[0][0], _cmp[1]))
_case("compare-i32-scalar", lambda x: x >= 3, lambda x: x >= 3, _rand((7,), I32))
_case("where", lambda x, y: ops.where(x > 0, x, y), lambda x, y: np.where(x > 0, x, y), _rand((3, 4)), _rand((4,)))
_case("where-scalars", lambda c: ops.where(c, 1.0, -1.0), lambda c: np.where(c, 1.0, -1.0), _rand((5,)) > 0)

# Contractions.
for dtype in (*FLOATS, I32):
    for a, b in (((1, 1), (1, 1)), ((5, 7), (7, 3)), ((2, 6, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2))):
        _case(f"matmul-{dtype}-{a}@{b}", lambda x, y: x @ y, np.matmul, _rand(a, dtype), _rand(b, dtype))
_weight = _rand((7, 3))
_case("matmul-constant", lambda x: ops.matmul(x, _weight), lambda x: x @ _weight, _rand((5, 7)))
_case("rmatmul-constant", lambda x: _weight.T @ x, lambda x: _weight.T @ x, _rand((7, 1)))
for dtype in FLOATS:
    _case(f"linear-{dtype}", ops.linear, lambda x, w: x @ w.T, _rand((5, 7), dtype), _rand((3, 7), dtype))
    _case(f"linear-bias-{dtype}", ops.linear, lambda x, w, b: x @ w.T + b,
          _rand((2, 1, 7), dtype), _rand((13, 7), dtype), _rand((13,), dtype))


def _conv_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1, layout="NCHW"):
    """ops.conv2d's defaults over the fuzzer's direct convolution."""
    bias = () if b is None else (b,)
    return fuzz.conv2d_reference(x, w, *bias, stride=stride, padding=padding, dilation=dilation,
                                 groups=groups, layout=layout)


CONV = [
    ("plain", (1, 3, 5, 5), (2, 3, 3, 3), {}),
    ("stride2-pad1-bias", (2, 3, 7, 6), (4, 3, 3, 3), dict(stride=2, padding=1, bias=(4,))),
    ("dilation2-pairs", (1, 2, 9, 7), (3, 2, 2, 3), dict(stride=(1, 2), dilation=(2, 1), padding=(1, 0))),
    ("groups", (1, 4, 5, 5), (6, 2, 3, 1), dict(groups=2, padding=(0, 1, 2, 1))),
    # Depthwise (one channel per group): read through the padding by
    # cpu-vectorize-convolutions, at a stride, with dilation, with padding
    # on one side only, and wider than one vector of output columns (32).
    ("depthwise-stride2-bias", (1, 6, 11, 13), (6, 1, 3, 3), dict(groups=6, stride=2, padding=1, bias=(6,))),
    ("depthwise-dilated-one-sided", (2, 4, 9, 40), (4, 1, 3, 5), dict(groups=4, padding=(2, 0, 1, 3),
                                                                        dilation=(1, 2))),
    ("depthwise-nhwc", (1, 5, 5, 4), (3, 3, 1, 4), dict(layout="NHWC", groups=4, padding=1)),
    ("channel-multiplier-2", (1, 3, 6, 6), (6, 1, 3, 3), dict(groups=3, padding=1)),
    ("1x1-size1", (1, 1, 1, 1), (1, 1, 1, 1), {}),
    ("nhwc", (2, 6, 5, 3), (3, 3, 3, 4), dict(layout="NHWC", padding=1, bias=(4,))),
    # More output pixels than a default tile holds (128), in no multiple of
    # it: edge tiles of the matmul that linalg-im2col makes, whose patches
    # tiling must gather from the right input rows.
    ("edge-tiles", (1, 4, 12, 12), (8, 4, 3, 3), dict(padding=1, bias=(8,))),
    ("nhwc-edge-tiles", (1, 13, 11, 5), (3, 3, 5, 9), dict(layout="NHWC", padding=1)),
    ("dilation2-edge-tiles", (2, 3, 20, 17), (5, 3, 3, 3), dict(dilation=2, stride=(1, 1))),
]
for name, xs, ws, kw in CONV:
    for dtype in FLOATS:
        inputs = [_rand(xs, dtype), _rand(ws, dtype)] + ([_rand(kw["bias"], dtype)] if "bias" in kw else [])
        options = {k: v for k, v in kw.items() if k != "bias"}
        _case(f"conv2d-{name}-{dtype}", lambda x, w, *b, o=options: ops.conv2d(x, w, *b, **o),
              lambda x, w, *b, o=options: _conv_ref(x, w, *b, **o), *inputs)
_case("conv2d-i32", ops.conv2d, _conv_ref, _rand((1, 2, 4, 4), I32), _rand((3, 2, 2, 2), I32))
# A depthwise tile's epilogue (bias, ReLU6, a residual read along the
# columns), computed on its vectors by cpu-vectorize-convolutions; 37
# columns are a vector of 32 and one of 5.
_case("conv2d-depthwise-epilogue",
      lambda x, w, b: ops.minimum(ops.relu(ops.conv2d(x, w, b, padding=1, groups=5)), 6.0) + x * 0.5,
      lambda x, w, b: np.minimum(np.maximum(_conv_ref(x, w, b, padding=1, groups=5), 0), 6) + x * 0.5,
      _rand((2, 5, 9, 37)), _rand((5, 1, 3, 3)), _rand((5,)))


def _pool_ref(x, kind, kernel_size, stride=None, padding=0, count_include_pad=True, layout="NCHW"):
    """ops' pooling defaults over the fuzzer's reference, in float64."""
    return fuzz.pool2d_reference(x.astype(np.float64), kind, kernel_size, stride, padding, count_include_pad, layout)


POOL = [
    ("k2", (1, 2, 4, 6), dict(kernel_size=2)),
    ("k3-s1-pad1", (2, 3, 5, 7), dict(kernel_size=3, stride=1, padding=1)),
    ("k-pair-odd", (1, 1, 7, 5), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0))),
    ("size1", (1, 1, 1, 1), dict(kernel_size=1)),
    ("nhwc", (2, 5, 5, 3), dict(kernel_size=2, stride=1, padding=(0, 1, 1, 0), layout="NHWC")),
    # Tiles of whole rows, as vectors of up to 16 output columns (cpu-vectorize-convolutions): 35 columns.
    ("k3-s2-pad1-wide", (1, 4, 30, 70), dict(kernel_size=3, stride=2, padding=1)),
]
for name, shape, kw in POOL:
    for dtype in FLOATS:
        _case(f"max_pool2d-{name}-{dtype}", lambda x, o=kw: ops.max_pool2d(x, **o),
              lambda x, o=kw: _pool_ref(x, "max", **o), _rand(shape, dtype))
        _case(f"avg_pool2d-{name}-{dtype}", lambda x, o=kw: ops.avg_pool2d(x, **o),
              lambda x, o=kw: _pool_ref(x, "avg", **o), _rand(shape, dtype))
_case("avg_pool2d-exclude-pad", lambda x: ops.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
      lambda x: _pool_ref(x, "avg", 3, 2, 1, count_include_pad=False), _rand((1, 2, 6, 5)))
_NAN_IMAGE = _rand((1, 2, 12, 40))
_NAN_IMAGE[0, 0, 3, 5] = _NAN_IMAGE[0, 1, 0, 39] = np.nan
_case("max_pool2d-nan", lambda x: ops.max_pool2d(x, 3, 2, 1), lambda x: _pool_ref(x, "max", 3, 2, 1), _NAN_IMAGE)
_case("max_pool2d-i32", lambda x: ops.max_pool2d(x, 2), lambda x: _pool_ref(x, "max", 2), _rand((1, 1, 4, 4), I32))

# Reductions and normalizations.
REDUCTIONS = {"sum": (ops.sum, np.sum), "mean": (ops.mean, np.mean), "max": (ops.max, np.max), "min": (ops.min, np.min)}
for name, (fn, ref) in REDUCTIONS.items():
    for shape, axis, keepdims in (((1,), None, False), ((7,), 0, True), ((3, 5, 2), (0, 2), False),
                                  ((13, 3), -1, False)):
        _case(f"{name}-{shape}-{axis}-{keepdims}", lambda x, f=fn, a=axis, k=keepdims: f(x, a, k),
              lambda x, r=ref, a=axis, k=keepdims: r(x, axis=a, keepdims=k), _rand(shape))
    for dtype in (F16, *BF16) if name == "mean" else (F16, *BF16, I32, I64):
        _case(f"{name}-{dtype}", lambda x, m=name: getattr(x, m)(axis=1), lambda x, r=ref: r(x, axis=1),
              _rand((3, 5, 2), dtype))


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _normalized_axes(x, axis):
    return tuple(range(axis % x.ndim, x.ndim))


def _layer_norm(x, w=None, b=None, axis=-1, eps=1e-5):
    axes = _normalized_axes(x, axis)
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def _rms_norm(x, w=None, axis=-1, eps=1e-6):
    axes = _normalized_axes(x, axis)
    return x / np.sqrt((x**2).mean(axes, keepdims=True) + eps) * (1 if w is None else w)


def _batch_norm(x, mean, var, weight, bias, axis, eps=1e-5):
    def channel(v):
        return np.expand_dims(v, tuple(d for d in range(x.ndim) if d != axis % x.ndim))

    return (x - channel(mean)) / np.sqrt(channel(var) + eps) * channel(weight) + channel(bias)


for dtype in FLOATS:
    for shape, axis in (((1,), -1), ((3, 7), -1), ((2, 5, 3), 1)):
        _case(f"softmax-{dtype}-{shape}", lambda x, a=axis: ops.softmax(x, a), lambda x, a=axis: _softmax(x, a),
              _rand(shape, dtype))
        _case(f"log_softmax-{dtype}-{shape}", lambda x, a=axis: ops.log_softmax(x, a),
              lambda x, a=axis: np.log(_softmax(x, a)), _rand(shape, dtype))
    _case(f"layer_norm-{dtype}", ops.layer_norm, _layer_norm, _rand((4, 7), dtype))
    _case(f"layer_norm-affine-{dtype}", ops.layer_norm, _layer_norm, _rand((3, 1, 5), dtype),
          _rand((5,), dtype), _rand((5,), dtype))
    _case(f"layer_norm-bias-only-{dtype}", lambda x, b: ops.layer_norm(x, bias=b), lambda x, b: _layer_norm(x, b=b),
          _rand((2, 3), dtype), _rand((3,), dtype))
    _case(f"layer_norm-2d-weight-{dtype}", ops.layer_norm, lambda x, w: _layer_norm(x, w, axis=-2),
          _rand((2, 3, 5), dtype), _rand((3, 5), dtype))
    _case(f"layer_norm-axis-{dtype}", lambda x: ops.layer_norm(x, axis=1, eps=1e-3),
          lambda x: _layer_norm(x, axis=1, eps=1e-3), _rand((2, 3, 1), dtype))
    _case(f"rms_norm-{dtype}", ops.rms_norm, _rms_norm, _rand((4, 7), dtype))
    _case(f"rms_norm-weight-{dtype}", ops.rms_norm, _rms_norm, _rand((1, 13), dtype), _rand((13,), dtype))
    _case(f"rms_norm-2d-weight-{dtype}", ops.rms_norm, lambda x, w: _rms_norm(x, w, axis=-2),
          _rand((2, 3, 5), dtype), _rand((3, 5), dtype))
    for shape, axis in (((2, 3, 4, 5), 1), ((2, 4, 5, 3), -1), ((1, 1, 1, 1), 1)):
        c = shape[axis]
        _case(f"batch_norm-{dtype}-{shape}", lambda x, m, v, w, b, a=axis: ops.batch_norm(x, m, v, w, b, axis=a),
              lambda x, m, v, w, b, a=axis: _batch_norm(x, m, v, w, b, a),
              _rand(shape, dtype), _rand((c,), dtype), _rand((c,), dtype, positive=True), _rand((c,), dtype),
              _rand((c,), dtype))


# Data movement and casts.
for dtype in (F32, I32):
    _case(f"T-{dtype}", lambda x: x.T, lambda x: x.T, _rand((2, 3, 5), dtype))
    _case(f"transpose-perm-{dtype}", lambda x: ops.transpose(x, (1, 0, 2)), lambda x: x.transpose(1, 0, 2),
          _rand((3, 1, 7), dtype))
    _case(f"reshape-{dtype}", lambda x: x.reshape(5, -1), lambda x: x.reshape(5, -1), _rand((3, 5), dtype))
    _case(f"concatenate-{dtype}", lambda x, y: ops.concatenate([x, y, x], axis=-1),
          lambda x, y: np.concatenate([x, y, x], -1), _rand((2, 3), dtype), _rand((2, 1), dtype))
_case("transpose-negative", lambda x: x.transpose(-1, 0, 1), lambda x: x.transpose(2, 0, 1), _rand((2, 3, 5)))
_case("flatten-squeeze-unsqueeze", lambda x: ops.unsqueeze(ops.squeeze(ops.flatten(x, 1)), 0),
      lambda x: x.reshape(1, -1), _rand((1, 3, 5)))
_case("broadcast_to", lambda x: ops.broadcast_to(x, (2, 3, 4)), lambda x: np.broadcast_to(x, (2, 3, 4)),
      _rand((3, 1)))
_case("concatenate-constant", lambda x: ops.concatenate([x, _arange[None]]),
      lambda x: np.concatenate([x, _arange[None]]), _rand((1, 5)))
_case("take-list", lambda x: ops.take(x, [2, 0, 2]), lambda x: x[[2, 0, 2]], _rand((3, 4)))
_case("take-tensor-negative", lambda x, i: ops.take(x, i, axis=1), lambda x, i: np.take(x, i, axis=1),
      _rand((2, 7)), np.array([[-1, 0], [6, 3]], np.int32))
_case("take-embedding", lambda i, table: table[i], lambda i, table: table[i],
      np.array([[1, 0, 4]], np.int64), _rand((5, 3), F16))
for key in INDEX_KEYS:
    _case(f"index-{_id(key)}", lambda x, k=key: x[k], lambda x, k=key: x[k], _rand((3, 4, 5)))
_case("index-empty-at-end", lambda x: x[EMPTY_AT_END], lambda x: x[EMPTY_AT_END], _rand((3, 4, 5)))
for source, target in ((F32, I32), (F32, F16), (I32, F32), (F16, F32), (I64, I32), (I32, I64),
                       *((F32, b) for b in BF16), *((b, F32) for b in BF16), *((b, F16) for b in BF16)):
    _case(f"cast-{source}-{target}", lambda x, t=target: x.astype(t), lambda x, t=target: x.astype(t),
          _rand((3, 5), source) * (3 if source in FLOATS else 1))
_case("cast-to-bool", lambda x: ops.cast(x, bool), lambda x: x.astype(bool), np.array([0, 1.5, -2, 0], np.float32))

# Enough tolerance for one rounding of the result (f16, bf16) or a few f32 ulps.
TOLERANCE = {F32: 1e-5, F16: 4e-3, **{d: 3e-2 for d in BF16}}


@pytest.mark.parametrize("fn,ref,inputs", NUMERIC)
def test_numerics_match_numpy(fn, ref, inputs):
    got = tessel.compile(tessel.trace(fn, *inputs), target="cpu")(*inputs)
    expected = np.asarray(ref(*(a.astype(np.float64) if a.dtype in FLOATS else a for a in inputs)))
    assert got.shape == expected.shape
    tol = TOLERANCE.get(got.dtype, 0)
    scale = max(1.0, float(np.abs(expected).max(initial=0)))
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol, atol=tol * scale)
