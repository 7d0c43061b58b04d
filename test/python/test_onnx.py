"""tessel.from_onnx: models built with onnx.helper, checked against onnx's
reference evaluator, plus a selection of the onnx package's node tests (all
of them: bench/onnx_node_tests.py)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import tessel

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

RNG = np.random.default_rng(0)


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(a, n) for n, a in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check(model, *args, rtol=1e-5, atol=1e-5):
    expected = ReferenceEvaluator(model).run(None, dict(zip([i.name for i in model.graph.input], args)))
    got = tessel.compile(tessel.from_onnx(model), target="cpu")(*args)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def _f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def test_mlp_with_gemm_and_relu():
    w1, b1 = RNG.standard_normal((32, 16)).astype(np.float32), RNG.standard_normal(32).astype(np.float32)
    w2 = RNG.standard_normal((16, 8)).astype(np.float32)
    model = _model(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["y0"]),
         helper.make_node("Gelu", ["y0"], ["y"], approximate="tanh")],
        [_f32("x", [4, 16])], [_f32("y", [4, 8])],
        [("w1", w1), ("b1", b1), ("w2", np.concatenate([w2, w2]))], opset=20)
    _check(model, RNG.standard_normal((4, 16)).astype(np.float32), rtol=1e-4, atol=1e-4)


def test_conv_net_with_batch_norm_and_pools():
    w = RNG.standard_normal((8, 3, 3, 3)).astype(np.float32)
    stats = [RNG.standard_normal(8).astype(np.float32) for _ in range(3)] + [RNG.random(8).astype(np.float32) + 0.5]
    fc = RNG.standard_normal((8, 5)).astype(np.float32)
    model = _model(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], epsilon=1e-5),
         helper.make_node("Relu", ["n"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("GlobalAveragePool", ["p"], ["g"]),
         helper.make_node("Flatten", ["g"], ["f"]),
         helper.make_node("MatMul", ["f", "fc"], ["y"])],
        [_f32("x", [2, 3, 8, 8])], [_f32("y", [2, 5])],
        [("w", w), ("s", stats[0]), ("b", stats[1]), ("m", stats[2]), ("v", stats[3]), ("fc", fc)])
    _check(model, RNG.standard_normal((2, 3, 8, 8)).astype(np.float32), rtol=1e-4, atol=1e-4)


def test_shape_arithmetic_stays_static():
    # Reshape to (batch, heads, -1) with the shape computed by Shape/Gather/Concat:
    # all of it folds while importing, so the Reshape's shape is known.
    model = _model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
         helper.make_node("Concat", ["batch", "rest"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["r"]),
         helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
         helper.make_node("Softmax", ["t"], ["y"], axis=-1)],
        [_f32("x", [2, 6, 4])], [_f32("y", [2, 12, 2])],
        [("zero", np.array([0], np.int64)), ("rest", np.array([2, -1], np.int64))])
    _check(model, RNG.standard_normal((2, 6, 4)).astype(np.float32))


def test_models_of_opset_7_to_12_import_where_their_ops_mean_the_same():
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    model = _model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["s"]),
                    helper.make_node("Sigmoid", ["s"], ["y"])],
                   [_f32("x", [2, 3])], [_f32("y", [2, 3])], opset=7)
    _check(model, x)


def test_unsupported_ops_and_inputs_are_clear_errors(tmp_path):
    model = _model([helper.make_node("NonZero", ["x"], ["y"], name="mix")], [_f32("x", [6])], [_f32("y", [6])])
    with pytest.raises(tessel.UnsupportedError, match=r"ONNX node mix \(NonZero\): this op is not supported; "
                                                      r"supported: Abs, Add"):  # all of them: none is near
        tessel.from_onnx(model)
    unpool = _model([helper.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2, 2])],
                    [_f32("x", [1, 1, 2, 2]), helper.make_tensor_value_info("i", TensorProto.INT64, [1, 1, 2, 2])],
                    [_f32("y", [1, 1, 4, 4])])
    with pytest.raises(tessel.UnsupportedError, match=r"\(MaxUnpool\): this op is not supported; nearest supported: "
                                                      r"MaxPool \(tessel.frontends.onnx.SUPPORTED_OPS\)"):
        tessel.from_onnx(unpool)
    dynamic = _model([helper.make_node("Relu", ["x"], ["y"])], [_f32("x", ["batch", 3])], [_f32("y", ["batch", 3])])
    with pytest.raises(tessel.UnsupportedError, match=r"input 'x' dim 0 is the dim_param 'batch', which needs a "
                                                      r"range: from_onnx\(\.\.\., dims=\{'batch': \(min, max\)\}\)"):
        tessel.from_onnx(dynamic)  # ranges given: test_dynamic_frontends.py
    old = _model([helper.make_node("Relu", ["x"], ["y"])], [_f32("x", [3])], [_f32("y", [3])], opset=6)
    with pytest.raises(tessel.UnsupportedError, match="opset 6 is not supported; tessel reads opset 7 and newer"):
        tessel.from_onnx(old)
    # Softmax before opset 13 flattened its input to 2-D: another op than the converter's.
    old_softmax = _model([helper.make_node("Softmax", ["x"], ["y"])], [_f32("x", [2, 3])], [_f32("y", [2, 3])],
                         opset=11)
    with pytest.raises(tessel.UnsupportedError, match=r"\(Softmax\): its definition of opset 11 is not supported; "
                                                      r"tessel reads Softmax from opset 13: convert the model with "
                                                      r"onnx.version_converter"):
        tessel.from_onnx(old_softmax)
    (tmp_path / "bad.onnx").write_bytes(b"not protobuf")
    with pytest.raises(tessel.UnsupportedError, match="not a readable ONNX model"):
        tessel.from_onnx(tmp_path / "bad.onnx")
    runtime_shape = _model([helper.make_node("Reshape", ["x", "s"], ["y"])],
                           [_f32("x", [6]), helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
                           [_f32("y", [2, 3])])
    with pytest.raises(tessel.UnsupportedError, match=r"\(Reshape\): its shape \(input 1\) must be a constant"):
        tessel.from_onnx(runtime_shape)


def _node_tests():
    path = Path(__file__).resolve().parents[2] / "bench" / "onnx_node_tests.py"
    spec = importlib.util.spec_from_file_location("onnx_node_tests", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


NODE_TESTS = ["test_add_bcast", "test_matmul_4d", "test_gemm_all_attributes", "test_softmax_axis_1",
              "test_layer_normalization_3d_axis1_epsilon", "test_conv_with_strides_padding",
              "test_averagepool_2d_pads", "test_maxpool_2d_strides", "test_reduce_mean_keepdims_example",
              "test_slice_neg_steps", "test_gather_1", "test_flatten_negative_axis1", "test_where_example",
              "test_unsqueeze_two_axes", "test_batchnorm_example", "test_clip_default_min", "test_pow_types_int64_int64",
              "test_cast_FLOAT_to_FLOAT16", "test_einsum_sum",
              # Mod, rounding, gathers, losses, arg/top-k, windows, norms, opset 7, attention, resize.
              "test_mod_mixed_sign_int32", "test_mod_mixed_sign_float32", "test_round",
              "test_gather_elements_negative_indices", "test_nllloss_NCd1d2_with_weight_reduction_mean",
              "test_sce_mean_weight_ii_log_prob", "test_argmax_no_keepdims_random_select_last_index",
              "test_hardmax_axis_1", "test_top_k_smallest", "test_convtranspose_pads", "test_convtranspose_1d",
              "test_conv_with_autopad_same", "test_maxpool_1d_default", "test_lppool_2d_same_upper",
              "test_instancenorm_example", "test_group_normalization_example", "test_and_bcast4v3d",
              "test_rms_normalization_2d_axis_negative_1_expanded", "test_attention_3d_gqa_causal",
              "test_attention_4d_gqa_with_past_and_present", "test_attention_local_window_with_past",
              "test_attention_4d_causal_expanded", "test_resize_upsample_sizes_nearest",
              "test_resize_downsample_sizes_linear_pytorch_half_pixel", "test_resize_upsample_sizes_cubic",
              "test_resize_downsample_sizes_linear_antialias", "test_resize_tf_crop_and_resize",
              # float64, int8, int16; scans, products, rotary embeddings, crops, compress.
              "test_cast_DOUBLE_to_FLOAT16", "test_mod_mixed_sign_int8", "test_div_int16", "test_max_float64",
              "test_einsum_batch_diagonal", "test_cumsum_1d_reverse_exclusive", "test_cumprod_2d_axis_1",
              "test_reduce_prod_do_not_keepdims_random", "test_rotary_embedding_with_interleaved_rotary_dim",
              "test_rotary_embedding_3d_input", "test_center_crop_pad_crop_and_pad", "test_compress_1", "test_isnan",
              "test_scatter_elements_with_duplicate_indices", "test_scatternd_multiply",
              "test_gridsample_bicubic_align_corners_0_additional_1", "test_gridsample_volumetric_bilinear_align_corners_1"]


@pytest.fixture(scope="module")
def node_tests():
    return _node_tests()


@pytest.mark.parametrize("name", NODE_TESTS)
def test_onnx_node_test(name, node_tests):
    cases = node_tests._cases()
    outcome, message = node_tests.run_case(cases[name])
    # Never a wrong result or a crash; what is not supported says so.
    assert outcome in ("passed", "unsupported"), f"{name}: {outcome}: {message}"
    if name not in ("test_slice_neg_steps", "test_pow_types_int64_int64"):
        assert outcome == "passed", message


def test_resize_upsample_by_2_linear_and_nearest():
    x = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)
    for mode in ("linear", "nearest"):
        model = _model([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode)],
                       [_f32("x", [1, 2, 3, 4])], [_f32("y", [1, 2, 6, 8])],
                       [("scales", np.array([1, 1, 2, 2], np.float32))], opset=19)
        _check(model, x)


def test_a_long_triangle_is_index_arithmetic_not_a_rows_by_cols_constant():
    # 2049 x 2048 is above the 4M elements a triangle is stored as a constant.
    rows, cols = 2049, 2048
    model = _model([helper.make_node("Trilu", ["x", "k"], ["y"], upper=1)], [_f32("x", [rows, cols])],
                   [_f32("y", [rows, cols])], [("k", np.array(3, np.int64))])
    module = tessel.from_onnx(model)
    assert "graph.compare" in str(module)
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    np.testing.assert_array_equal(tessel.compile(module, target="cpu")(x), np.triu(x, 3))


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 8), (2, 3, 5, 8)]), ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]), ("ij->ji", [(3, 4)]), ("i,i", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]),
    ("ijk,ikl,lm->jm", [(2, 3, 4), (2, 4, 5), (5, 6)]), ("bii->bi", [(2, 3, 3)]), ("ij,ij->i", [(3, 4), (3, 4)]),
    ("...ij,jk->...ik", [(2, 3, 4), (4, 5)]), ("...ii->...i", [(2, 3, 3)]), ("...j,...j", [(2, 1, 4), (3, 4)]),
])
def test_einsum_is_sums_transposes_and_batched_matmuls(equation, shapes):
    names = [f"x{i}" for i in range(len(shapes))]
    model = _model([helper.make_node("Einsum", names, ["y"], equation=equation)],
                   [_f32(name, shape) for name, shape in zip(names, shapes)],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    _check(model, *[RNG.standard_normal(shape).astype(np.float32) for shape in shapes])


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_gridsample_matches_the_reference(mode, padding_mode, align_corners):
    # Grid points inside, far outside, and on pixel centres and halves (x = k / 2 denormalized).
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    grid = RNG.uniform(-3, 3, (2, 6, 4, 2))
    halves = RNG.integers(-12, 12, (2, 6, 4, 2)) / 2
    sizes = np.array([5, 4])  # grid[..., 0] indexes the width
    grid[:, 3:] = (2 * halves / (sizes - 1) - 1 if align_corners else (2 * halves + 1) / sizes - 1)[:, 3:]
    grid[0, 0, 0] = [40.0, -1e4]
    model = _model([helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding_mode,
                                     align_corners=align_corners)],
                   [_f32("x", [2, 3, 4, 5]), _f32("grid", [2, 6, 4, 2])], [_f32("y", [2, 3, 6, 4])], opset=22)
    _check(model, x, grid.astype(np.float32))
