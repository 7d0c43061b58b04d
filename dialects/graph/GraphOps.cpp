//===- GraphOps.cpp - tessel graph ops ------------------------------------===//

#include "dialects/graph/Graph.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace tessel::graph;

#include "dialects/graph/GraphEnums.cpp.inc"

bool tessel::graph::hasSupportedShape(ShapedType type) {
  if (type.getRank() > kMaxRank)
    return false;
  int64_t bytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
  for (int64_t size : type.getShape())
    if (!ShapedType::isDynamic(size) &&
        (size < 0 || llvm::MulOverflow(bytes, size, bytes)))
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type)
    return emitOptionalError(loc, "constant value must be a ranked tensor");
  // Dense values, or imported weights as a resource blob (its size is
  // checked where it is read: the blob is parsed after the op). A rank-0
  // resource has no lowering upstream (MemRefToLLVM asks for its splat
  // value), nor has a sparse value.
  if (isa<DenseResourceElementsAttr>(adaptor.getValue())) {
    if (type.getRank() == 0)
      return emitOptionalError(loc, "a rank-0 dense_resource constant is not "
                                    "supported; write it as dense<...>");
  } else if (!isa<DenseElementsAttr>(adaptor.getValue())) {
    return emitOptionalError(loc, "constant value must be dense<...> or "
                                  "dense_resource<...>; sparse constants are "
                                  "not supported");
  }
  results.push_back(type);
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  return inferMatmulResultType(loc, adaptor.getLhs().getType(),
                               adaptor.getRhs().getType(), results);
}

//===----------------------------------------------------------------------===//
// Elementwise ops with their own shape rules
//===----------------------------------------------------------------------===//

static RankedTensorType tensorOf(Type t) { return cast<RankedTensorType>(t); }

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  auto l = tensorOf(adaptor.getLhs().getType());
  auto r = tensorOf(adaptor.getRhs().getType());
  if (l.getElementType() != r.getElementType())
    return emitOptionalError(loc, "compares different element types ",
                             l.getElementType(), " and ", r.getElementType());
  SmallVector<int64_t> shape;
  Attribute encoding;
  if (failed(broadcastTypes(loc, {l, r}, shape, encoding)))
    return failure();
  results.push_back(
      RankedTensorType::get(shape, IntegerType::get(ctx, 1), encoding));
  return success();
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  auto c = tensorOf(adaptor.getCondition().getType());
  auto l = tensorOf(adaptor.getLhs().getType());
  auto r = tensorOf(adaptor.getRhs().getType());
  if (l.getElementType() != r.getElementType())
    return emitOptionalError(loc, "selects between different element types ",
                             l.getElementType(), " and ", r.getElementType());
  SmallVector<int64_t> shape;
  Attribute encoding;
  if (failed(broadcastTypes(loc, {c, l, r}, shape, encoding)))
    return failure();
  results.push_back(RankedTensorType::get(shape, l.getElementType(), encoding));
  return success();
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  results.push_back(
      tensorOf(adaptor.getInput().getType()).clone(adaptor.getElementType()));
  return success();
}


//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

/// Non-negative, sorted, checked reduction dimensions.
static FailureOr<SmallVector<int64_t>>
reducedDims(std::optional<Location> loc, ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> dims;
  for (int64_t axis : axes) {
    FailureOr<int64_t> d = normalizeAxis(loc, axis, rank);
    if (failed(d))
      return failure();
    if (llvm::is_contained(dims, *d)) {
      (void)emitOptionalError(loc, "axis ", *d, " is reduced twice");
      return failure();
    }
    dims.push_back(*d);
  }
  llvm::sort(dims);
  return dims;
}

TypedAttr tessel::graph::reductionInitialValue(Builder &b, ReduceKind kind,
                                               Type element) {
  if (kind == ReduceKind::sum || kind == ReduceKind::mean)
    return b.getZeroAttr(element);
  bool lowest = kind == ReduceKind::max;
  if (auto f = dyn_cast<FloatType>(element))
    return b.getFloatAttr(element,
                          APFloat::getInf(f.getFloatSemantics(), lowest));
  unsigned w = element.getIntOrFloatBitWidth();
  return b.getIntegerAttr(element, lowest ? APInt::getSignedMinValue(w)
                                          : APInt::getSignedMaxValue(w));
}

SmallVector<int64_t> ReduceOp::getReducedDims() {
  return *reducedDims(std::nullopt, getAxes(), getInput().getType().getRank());
}

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  auto input = tensorOf(adaptor.getInput().getType());
  if (adaptor.getKind() == ReduceKind::mean &&
      !isa<FloatType>(input.getElementType()))
    return emitOptionalError(loc, "mean needs a float tensor, got ", input);
  FailureOr<SmallVector<int64_t>> dims =
      reducedDims(loc, adaptor.getAxes(), input.getRank());
  if (failed(dims))
    return failure();
  SmallVector<int64_t> shape, from;
  for (auto [i, size] : llvm::enumerate(input.getShape())) {
    if (!llvm::is_contained(*dims, int64_t(i))) {
      shape.push_back(size);
      from.push_back(i);
    } else if (adaptor.getKeepdims()) {
      shape.push_back(1);
      from.push_back(-1);
    }
  }
  results.push_back(derivedType(input, shape, from));
  return success();
}

static LogicalResult verifyAxisOp(Operation *op, int64_t axis) {
  int64_t rank = tensorOf(op->getOperand(0).getType()).getRank();
  return normalizeAxis(op->getLoc(), axis, rank);
}

LogicalResult SoftmaxOp::verify() { return verifyAxisOp(*this, getAxis()); }
LogicalResult LogSoftmaxOp::verify() { return verifyAxisOp(*this, getAxis()); }

/// `param` must have the shape of `input`'s dimensions from `axis` on.
static LogicalResult checkNormalizedShape(std::optional<Location> loc,
                                          StringRef what, RankedTensorType input,
                                          int64_t axis, Value param) {
  if (!param)
    return success();
  auto type = tensorOf(param.getType());
  ArrayRef<int64_t> expected = input.getShape().drop_front(axis);
  if (type.getShape() != expected ||
      type.getElementType() != input.getElementType())
    return emitOptionalError(loc, what, " must be ",
                             RankedTensorType::get(expected,
                                                   input.getElementType()),
                             " (the normalized dimensions), got ", type);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto input = tensorOf(adaptor.getInput().getType());
  FailureOr<int64_t> axis = normalizeAxis(loc, adaptor.getAxis(), input.getRank());
  if (failed(axis) ||
      failed(checkNormalizedShape(loc, "weight", input, *axis,
                                  adaptor.getWeight())) ||
      failed(checkNormalizedShape(loc, "bias", input, *axis, adaptor.getBias())))
    return failure();
  results.push_back(input);
  return success();
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  auto input = tensorOf(adaptor.getInput().getType());
  FailureOr<int64_t> axis = normalizeAxis(loc, adaptor.getAxis(), input.getRank());
  if (failed(axis) || failed(checkNormalizedShape(loc, "weight", input, *axis,
                                                  adaptor.getWeight())))
    return failure();
  results.push_back(input);
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto input = tensorOf(adaptor.getInput().getType());
  FailureOr<int64_t> axis = normalizeAxis(loc, adaptor.getAxis(), input.getRank());
  if (failed(axis))
    return failure();
  auto param = tensorOf(adaptor.getScale().getType());
  auto expected = RankedTensorType::get({input.getDimSize(*axis)},
                                        input.getElementType());
  if (param != expected)
    return emitOptionalError(loc, "batch_norm parameters must be ", expected,
                             " (one per channel of axis ", *axis, "), got ",
                             param);
  results.push_back(input);
  return success();
}

//===----------------------------------------------------------------------===//
// Linear, convolution, pooling
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  auto input = tensorOf(adaptor.getInput().getType());
  auto weight = tensorOf(adaptor.getWeight().getType());
  if (input.getRank() < 1 || weight.getRank() != 2)
    return emitOptionalError(loc, "linear takes input [..., K] and weight "
                                  "[N, K], got ",
                             input, " and ", weight);
  if (input.getElementType() != weight.getElementType())
    return emitOptionalError(loc, "linear operands have different element "
                                  "types: ",
                             input.getElementType(), " and ",
                             weight.getElementType());
  int64_t k = input.getShape().back(), n = weight.getDimSize(0);
  if (ShapedType::isDynamic(k) && isa_and_present<ShapeAttr>(input.getEncoding()))
    return emitOptionalError(loc, "linear needs static input features K, got ",
                             input);
  if (isa_and_present<ShapeAttr>(weight.getEncoding()))
    return emitOptionalError(loc, "linear needs a weight of static shape, got ",
                             weight);
  if (!ShapedType::isDynamic(k) && !ShapedType::isDynamic(weight.getDimSize(1)) &&
      weight.getDimSize(1) != k)
    return emitOptionalError(loc, "linear weight ", weight,
                             " does not match input features K = ", k);
  if (Value bias = adaptor.getBias()) {
    auto expected = RankedTensorType::get({n}, input.getElementType());
    if (bias.getType() != expected)
      return emitOptionalError(loc, "linear bias must be ", expected, ", got ",
                               bias.getType());
  }
  SmallVector<int64_t> shape(input.getShape().drop_back());
  shape.push_back(n);
  auto from = llvm::to_vector(llvm::seq<int64_t>(0, input.getRank() - 1));
  from.push_back(-1);
  results.push_back(derivedType(input, shape, from));
  return success();
}

/// The result type of a windowed op (conv2d, pool2d) of `input` with
/// static `shape`: only the batch dim may be a size symbol, which the result
/// keeps; a symbol in the other dims is an error naming `op`.
static FailureOr<RankedTensorType> windowedType(std::optional<Location> loc,
                                                StringRef op,
                                                RankedTensorType input,
                                                ArrayRef<int64_t> shape) {
  if (!isa_and_present<ShapeAttr>(input.getEncoding()))
    return input.clone(shape);
  for (int64_t d = 1; d < input.getRank(); ++d)
    if (input.isDynamicDim(d))
      return emitOptionalError(loc, op, " takes a size symbol as its batch "
                                        "dim only; dim ",
                               d, " of ", input, " is one");
  return derivedType(input, shape, {0, -1, -1, -1});
}

/// Output size of one spatial dimension of a window op.
static FailureOr<int64_t> windowOutput(std::optional<Location> loc,
                                       StringRef dimName, int64_t size,
                                       int64_t window, int64_t stride,
                                       int64_t dilation, int64_t padBefore,
                                       int64_t padAfter) {
  if (ShapedType::isDynamic(size) || ShapedType::isDynamic(window))
    return ShapedType::kDynamic;
  int64_t span = dilation * (window - 1) + 1;
  int64_t padded = size + padBefore + padAfter;
  if (span > padded) {
    (void)emitOptionalError(loc, "window of ", span, " cells does not fit ",
                            dimName, " = ", padded, " (after padding)");
    return failure();
  }
  return (padded - span) / stride + 1;
}

/// Checks the 2-element strides/dilations, 4-element padding and a
/// 2-element kernel, all positive (padding non-negative).
static LogicalResult checkWindowAttrs(std::optional<Location> loc,
                                      StringRef kernelName,
                                      ArrayRef<int64_t> kernel,
                                      ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> dilations,
                                      ArrayRef<int64_t> padding) {
  auto check = [&](StringRef name, ArrayRef<int64_t> v, size_t n,
                   int64_t min) -> LogicalResult {
    if (v.size() != n || llvm::any_of(v, [&](int64_t x) { return x < min; }))
      return emitOptionalError(loc, name, " must have ", n,
                               " values, each at least ", min, ", got ",
                               shapeString(v));
    return success();
  };
  return success(succeeded(check(kernelName, kernel, 2, 1)) &&
                 succeeded(check("strides", strides, 2, 1)) &&
                 succeeded(check("dilations", dilations, 2, 1)) &&
                 succeeded(check("padding", padding, 4, 0)));
}

/// (channel, height, width) dimension indices of an image layout.
static std::array<int64_t, 3> imageDims(ImageLayout layout) {
  return layout == ImageLayout::nchw ? std::array<int64_t, 3>{1, 2, 3}
                                    : std::array<int64_t, 3>{3, 1, 2};
}

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  auto input = tensorOf(adaptor.getInput().getType());
  auto weight = tensorOf(adaptor.getWeight().getType());
  if (input.getRank() != 4 || weight.getRank() != 4)
    return emitOptionalError(loc, "conv2d takes rank-4 input and weight, got ",
                             input, " and ", weight);
  if (input.getElementType() != weight.getElementType())
    return emitOptionalError(loc, "conv2d operands have different element "
                                  "types: ",
                             input.getElementType(), " and ",
                             weight.getElementType());
  bool nchw = adaptor.getLayout() == ImageLayout::nchw;
  // Weight dims: (F, C/g, KH, KW) for nchw, (KH, KW, C/g, F) for nhwc.
  int64_t f = weight.getDimSize(nchw ? 0 : 3);
  int64_t cg = weight.getDimSize(nchw ? 1 : 2);
  int64_t kh = weight.getDimSize(nchw ? 2 : 0);
  int64_t kw = weight.getDimSize(nchw ? 3 : 1);
  auto [cDim, hDim, wDim] = imageDims(adaptor.getLayout());
  int64_t groups = adaptor.getGroups();
  int64_t c = input.getDimSize(cDim);
  if (failed(checkWindowAttrs(loc, "weight window (KH, KW)", {kh, kw},
                              adaptor.getStrides(),
                              adaptor.getDilations(), adaptor.getPadding())))
    return failure();
  if (groups < 1 || c % groups != 0 || f % groups != 0)
    return emitOptionalError(loc, "groups = ", groups, " must divide the ", c,
                             " input channels and the ", f, " filters");
  if (cg != c / groups)
    return emitOptionalError(loc, "conv2d weight ", weight, " has ", cg,
                             " input channels per group; the input has ", c,
                             " channels in ", groups, " group(s)");
  if (Value bias = adaptor.getBias()) {
    auto expected = RankedTensorType::get({f}, input.getElementType());
    if (bias.getType() != expected)
      return emitOptionalError(loc, "conv2d bias must be ", expected, ", got ",
                               bias.getType());
  }
  ArrayRef<int64_t> s = adaptor.getStrides(), d = adaptor.getDilations(),
                    p = adaptor.getPadding();
  FailureOr<int64_t> oh = windowOutput(loc, "height", input.getDimSize(hDim), kh,
                                       s[0], d[0], p[0], p[2]);
  FailureOr<int64_t> ow = windowOutput(loc, "width", input.getDimSize(wDim), kw,
                                       s[1], d[1], p[1], p[3]);
  if (failed(oh) || failed(ow))
    return failure();
  int64_t n = input.getDimSize(0);
  SmallVector<int64_t> shape =
      nchw ? SmallVector<int64_t>{n, f, *oh, *ow}
           : SmallVector<int64_t>{n, *oh, *ow, f};
  FailureOr<RankedTensorType> type = windowedType(loc, "conv2d", input, shape);
  if (failed(type))
    return failure();
  results.push_back(*type);
  return success();
}

LogicalResult Pool2DOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  auto input = tensorOf(adaptor.getInput().getType());
  if (input.getRank() != 4)
    return emitOptionalError(loc, "pool2d takes a rank-4 input, got ", input);
  if (adaptor.getKind() == PoolKind::avg &&
      !isa<FloatType>(input.getElementType()))
    return emitOptionalError(loc, "avg pooling needs a float tensor, got ",
                             input);
  ArrayRef<int64_t> k = adaptor.getKernel(), s = adaptor.getStrides(),
                    p = adaptor.getPadding();
  int64_t ones[] = {1, 1};
  if (failed(checkWindowAttrs(loc, "kernel", k, s, ones, p)))
    return failure();
  if (p[0] >= k[0] || p[2] >= k[0] || p[1] >= k[1] || p[3] >= k[1])
    return emitOptionalError(loc, "padding must be smaller than the kernel, "
                                  "so that no window is all padding");
  auto [cDim, hDim, wDim] = imageDims(adaptor.getLayout());
  FailureOr<int64_t> oh = windowOutput(loc, "height", input.getDimSize(hDim),
                                       k[0], s[0], 1, p[0], p[2]);
  FailureOr<int64_t> ow = windowOutput(loc, "width", input.getDimSize(wDim),
                                       k[1], s[1], 1, p[1], p[3]);
  if (failed(oh) || failed(ow))
    return failure();
  SmallVector<int64_t> shape(input.getShape());
  shape[hDim] = *oh;
  shape[wDim] = *ow;
  (void)cDim;
  FailureOr<RankedTensorType> type = windowedType(loc, "pool2d", input, shape);
  if (failed(type))
    return failure();
  results.push_back(*type);
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto input = tensorOf(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  SmallVector<bool> seen(input.getRank(), false);
  bool valid = int64_t(perm.size()) == input.getRank();
  for (int64_t p : perm) {
    valid = valid && p >= 0 && p < input.getRank() && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid)
    return emitOptionalError(loc, "perm ", shapeString(perm),
                             " is not a permutation of the ", input.getRank(),
                             " dimensions of ", input);
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input.getDimSize(p));
  results.push_back(derivedType(input, shape, perm));
  return success();
}


LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("cannot change the element type (")
           << in.getElementType() << " to " << out.getElementType() << ")";
  if (in.hasStaticShape() && out.hasStaticShape()) {
    if (in.getNumElements() != out.getNumElements())
      return emitOpError("cannot reshape ")
             << in.getNumElements() << " elements " << shapeString(in.getShape())
             << " into " << out.getNumElements() << " elements "
             << shapeString(out.getShape());
    return success();
  }
  // With size symbols, the element counts must be the same product; a `?`
  // without a symbol is left to graph-to-linalg's check.
  SizeProduct inCount(sizeSymbols(*this)), outCount(sizeSymbols(*this));
  for (int64_t d = 0; d < in.getRank(); ++d)
    inCount.multiply(in, d);
  for (int64_t d = 0; d < out.getRank(); ++d)
    outCount.multiply(out, d);
  if (inCount.unknown() || outCount.unknown())
    return success();
  if (!(inCount == outCount))
    return emitOpError("cannot reshape ")
           << inCount.str() << " elements into " << outCount.str()
           << " elements (size symbols must appear as the same factors; "
              "a quotient counts as its dividend over the divisor only "
              "where the symbols' declared multiples make it exact)";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) is one reshape.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
      dense && getType().hasStaticShape())
    return dense.reshape(getType());
  return {};
}

LogicalResult IotaOp::verify() {
  RankedTensorType type = getType();
  if (getDim() < 0 || getDim() >= type.getRank())
    return emitOpError("dim ") << getDim() << " is not a dim of a tensor of rank "
                               << type.getRank();
  Type elem = type.getElementType();
  if (elem.isInteger(1) || !(isa<IntegerType>(elem) || isa<FloatType>(elem)))
    return emitOpError("needs an integer or float element type, not ") << elem;
  return success();
}

LogicalResult BroadcastToOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("cannot change the element type");
  SmallVector<int64_t> shape;
  Attribute encoding;
  if (failed(broadcastTypes(getLoc(), {in, out}, shape, encoding)))
    return failure();
  if (ArrayRef<int64_t>(shape) != out.getShape() ||
      encoding != out.getEncoding())
    return emitOpError("cannot broadcast ")
           << shapeString(in.getShape()) << " to "
           << shapeString(out.getShape());
  return success();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
      dense && dense.isSplat() && getType().hasStaticShape())
    return dense.resizeSplat(getType());
  return {};
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "concat needs at least one input");
  auto first = tensorOf(adaptor.getInputs()[0].getType());
  FailureOr<int64_t> axis = normalizeAxis(loc, adaptor.getAxis(), first.getRank());
  if (failed(axis))
    return failure();
  SmallVector<RankedTensorType> types;
  for (auto [i, v] : llvm::enumerate(adaptor.getInputs())) {
    auto t = tensorOf(v.getType());
    bool same = t.getRank() == first.getRank() &&
                t.getElementType() == first.getElementType();
    for (int64_t d = 0; same && d < t.getRank(); ++d)
      same = d == *axis || t.getDimSize(d) == first.getDimSize(d);
    if (!same)
      return emitOptionalError(loc, "concat input #", i, " ", t,
                               " does not match input #0 ", first,
                               " outside axis ", *axis);
    types.push_back(t);
  }
  SmallVector<int64_t> shape;
  Attribute encoding;
  if (failed(concatTypes(loc, types, *axis, shape, encoding)))
    return failure();
  results.push_back(
      RankedTensorType::get(shape, first.getElementType(), encoding));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  FailureOr<RankedTensorType> type =
      slicedType(loc, tensorOf(adaptor.getInput().getType()),
                 adaptor.getStarts(), adaptor.getLimits(), adaptor.getSteps());
  if (failed(type))
    return failure();
  results.push_back(*type);
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  auto input = tensorOf(adaptor.getInput().getType());
  auto indices = tensorOf(adaptor.getIndices().getType());
  FailureOr<int64_t> axis = normalizeAxis(loc, adaptor.getAxis(), input.getRank());
  if (failed(axis))
    return failure();
  // No index is in range of an empty axis (numpy raises the same).
  if (input.getDimSize(*axis) == 0 && !llvm::is_contained(indices.getShape(), 0))
    return emitOptionalError(loc, "gather of indices ", indices,
                             " from axis ", *axis, " of ", input,
                             ", which is empty");
  results.push_back(gatheredType(input, indices, *axis));
  return success();
}

//===----------------------------------------------------------------------===//
// FusedOp
//===----------------------------------------------------------------------===//

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ")
           << body.getNumArguments() << " arguments but the group has "
           << getInputs().size() << " inputs";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(body.getArgumentTypes(), getInputs())))
    if (std::get<0>(pair) != std::get<1>(pair).getType())
      return emitOpError("body argument #")
             << i << " has type " << std::get<0>(pair) << " but input #" << i
             << " has type " << std::get<1>(pair).getType();
  return success();
}

LogicalResult FusedOp::verifyRegions() {
  Block &body = getBody().front();
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError("body must end with graph.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().getTypes() << " but the group returns "
           << getResultTypes();
  for (Operation &op : body.without_terminator()) {
    if (isa<FusedOp>(op))
      return op.emitOpError("fusion groups do not nest");
    if (!isa<GraphDialect>(op.getDialect()))
      return op.emitOpError("is not a graph op; fusion groups hold graph ops "
                            "only");
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.cpp.inc"
