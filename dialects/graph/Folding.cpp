//===- Folding.cpp - constant folding and algebraic simplification --------===//
//
// One evaluator folds every elementwise op (scalarValue below is its only
// per-op table), so folding cannot drift from op to op. Large non-splat
// results are not folded to keep compile time and constant size in check.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/Graph.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace tessel::graph;

namespace {

/// Folding is skipped when it would create a non-splat constant this big.
constexpr int64_t kMaxFoldedElements = 1 << 22;

/// A scalar in the evaluator: doubles for floats, 64-bit for integers.
struct Scalar {
  double f = 0;
  int64_t i = 0;
};

std::optional<double> floatResult(Operation *op, ArrayRef<double> x) {
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  return llvm::TypeSwitch<Operation *, std::optional<double>>(op)
      .Case([&](AddOp) { return x[0] + x[1]; })
      .Case([&](SubOp) { return x[0] - x[1]; })
      .Case([&](MulOp) { return x[0] * x[1]; })
      .Case([&](DivOp) { return x[0] / x[1]; })
      .Case([&](RemOp) { return std::fmod(x[0], x[1]); })
      .Case([&](PowOp) { return std::pow(x[0], x[1]); })
      .Case([&](MaximumOp) {
        return std::isnan(x[0]) || std::isnan(x[1]) ? NAN : std::max(x[0], x[1]);
      })
      .Case([&](MinimumOp) {
        return std::isnan(x[0]) || std::isnan(x[1]) ? NAN : std::min(x[0], x[1]);
      })
      .Case([&](ReluOp) { return x[0] > 0 ? x[0] : 0.0; })
      .Case([&](NegOp) { return -x[0]; })
      .Case([&](AbsOp) { return std::fabs(x[0]); })
      .Case([&](ExpOp) { return std::exp(x[0]); })
      .Case([&](LogOp) { return std::log(x[0]); })
      .Case([&](SqrtOp) { return std::sqrt(x[0]); })
      .Case([&](RsqrtOp) { return 1.0 / std::sqrt(x[0]); })
      .Case([&](TanhOp) { return std::tanh(x[0]); })
      .Case([&](SinOp) { return std::sin(x[0]); })
      .Case([&](CosOp) { return std::cos(x[0]); })
      .Case([&](ErfOp) { return std::erf(x[0]); })
      .Case([&](FloorOp) { return std::floor(x[0]); })
      .Case([&](CeilOp) { return std::ceil(x[0]); })
      // The default rounding mode rounds halves to even.
      .Case([&](RoundOp) { return std::nearbyint(x[0]); })
      .Case([&](SigmoidOp) { return sigmoid(x[0]); })
      .Case([&](SiluOp) { return x[0] * sigmoid(x[0]); })
      .Case([&](GeluOp op) {
        double v = x[0];
        if (op.getApproximateTanh())
          return 0.5 * v *
                 (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        return 0.5 * v * (1 + std::erf(v * 0.7071067811865476));
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// Integer semantics match the lowering: two's complement wraparound,
/// division truncating toward zero, numpy's 0 for a zero divisor (quotient
/// and remainder) and MIN / -1 = MIN (the negation wraps). Computed on uint64_t, where
/// wraparound is defined; the caller truncates to the element width.
std::optional<int64_t> intResult(Operation *op, ArrayRef<int64_t> x) {
  auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };
  uint64_t a = x[0], b = x.size() > 1 ? x[1] : 0;
  return llvm::TypeSwitch<Operation *, std::optional<int64_t>>(op)
      .Case([&](AddOp) { return wrap(a + b); })
      .Case([&](SubOp) { return wrap(a - b); })
      .Case([&](MulOp) { return wrap(a * b); })
      .Case([&](DivOp) -> std::optional<int64_t> {
        if (x[1] == 0)
          return 0;
        if (x[1] == -1)
          return wrap(0 - a);
        return x[0] / x[1];
      })
      .Case([&](RemOp) -> std::optional<int64_t> {
        // MIN % -1 would trap; its remainder is 0, as any by -1.
        if (x[1] == 0 || x[1] == -1)
          return 0;
        return x[0] % x[1];
      })
      .Case([&](MaximumOp) { return std::max(x[0], x[1]); })
      .Case([&](MinimumOp) { return std::min(x[0], x[1]); })
      .Case([&](ReluOp) { return std::max<int64_t>(x[0], 0); })
      .Case([&](NegOp) { return wrap(0 - a); })
      .Case([&](AbsOp) { return x[0] < 0 ? wrap(0 - a) : x[0]; })
      .Default([](Operation *) { return std::nullopt; });
}

double toDouble(const APFloat &v) {
  bool lost;
  APFloat d = v;
  d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
  return d.convertToDouble();
}

APFloat fromDouble(double v, FloatType type) {
  bool lost;
  APFloat r(v);
  r.convert(type.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  return r;
}

/// The values of `in` as doubles: one for a splat (broadcast strides read
/// nothing else). f32 and f64 are read directly, not through APFloat, which
/// cost ~0.1 us per element: folding a CNN's weights took seconds.
SmallVector<double> floatValues(DenseElementsAttr in) {
  if (in.isSplat())
    return {toDouble(in.getSplatValue<APFloat>())};
  Type elem = in.getElementType();
  if (elem.isF32()) {
    auto values = in.getValues<float>();
    return SmallVector<double>(values.begin(), values.end());
  }
  if (elem.isF64())
    return llvm::to_vector(in.getValues<double>());
  SmallVector<double> out;
  for (const APFloat &v : in.getValues<APFloat>())
    out.push_back(toDouble(v));
  return out;
}

/// Row-major strides of `operand` as seen from `resultShape` (0 where the
/// operand broadcasts).
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> operand,
                                      ArrayRef<int64_t> resultShape) {
  SmallVector<int64_t> strides(resultShape.size(), 0);
  int64_t stride = 1, offset = resultShape.size() - operand.size();
  for (int64_t d = operand.size() - 1; d >= 0; --d) {
    strides[d + offset] = operand[d] == 1 ? 0 : stride;
    stride *= operand[d];
  }
  return strides;
}

/// A splat of `value`; for floats the sign of a zero must match too.
bool isSplatOf(Attribute attr, double value) {
  auto dense = dyn_cast_if_present<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  Type elem = dense.getElementType();
  if (isa<FloatType>(elem)) {
    double v = toDouble(dense.getSplatValue<APFloat>());
    return v == value && std::signbit(v) == std::signbit(value);
  }
  return dense.getSplatValue<APInt>().getSExtValue() == int64_t(value);
}

/// x op c -> x for the identity constant c of `op` (on either side when op
/// is commutative), when the result has x's type.
Value foldIdentity(Operation *op, ArrayRef<Attribute> operands) {
  if (op->getNumOperands() != 2)
    return {};
  // x + (-0.0) is x for every float x; x + 0.0 is not for x = -0.0.
  bool isFloat = isa<FloatType>(getElementTypeOrSelf(op->getResult(0)));
  auto identityAt = [&](unsigned i) -> bool {
    Attribute c = operands[i];
    return llvm::TypeSwitch<Operation *, bool>(op)
        .Case([&](AddOp) { return isSplatOf(c, isFloat ? -0.0 : 0.0); })
        .Case([&](SubOp) { return i == 1 && isSplatOf(c, 0); })
        .Case([&](MulOp) { return isSplatOf(c, 1); })
        .Case([&](DivOp) { return i == 1 && isSplatOf(c, 1); })
        .Default([](Operation *) { return false; });
  };
  for (unsigned i : {1u, 0u}) {
    Value other = op->getOperand(1 - i);
    if (identityAt(i) && other.getType() == op->getResult(0).getType())
      return other;
  }
  return {};
}

} // namespace

OpFoldResult tessel::graph::foldElementwise(Operation *op,
                                            ArrayRef<Attribute> operands) {
  if (Value same = foldIdentity(op, operands))
    return same;
  SmallVector<DenseElementsAttr> inputs;
  for (Attribute a : operands) {
    auto dense = dyn_cast_if_present<DenseElementsAttr>(a);
    if (!dense)
      return {};
    inputs.push_back(dense);
  }
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  bool splat = llvm::all_of(inputs, [](auto d) { return d.isSplat(); });
  int64_t count = splat ? 1 : type.getNumElements();
  if (count > kMaxFoldedElements)
    return {};
  Type elem = type.getElementType();
  auto floatType = dyn_cast<FloatType>(elem);

  // Operand values as doubles or int64s, read once.
  SmallVector<SmallVector<double>> fs(inputs.size());
  SmallVector<SmallVector<int64_t>> is(inputs.size());
  SmallVector<SmallVector<int64_t>> strides;
  for (auto [k, in] : llvm::enumerate(inputs)) {
    if (floatType)
      fs[k] = floatValues(in);
    else if (in.isSplat())
      is[k].push_back(in.getSplatValue<APInt>().getSExtValue());
    else
      for (const APInt &v : in.getValues<APInt>())
        is[k].push_back(v.getSExtValue());
    strides.push_back(
        in.isSplat() ? SmallVector<int64_t>(type.getRank(), 0)
                     : broadcastStrides(in.getType().getShape(), type.getShape()));
  }

  SmallVector<double> floats;
  SmallVector<APInt> ints;
  SmallVector<int64_t> index(type.getRank(), 0);
  SmallVector<double> xf(inputs.size());
  SmallVector<int64_t> xi(inputs.size());
  for (int64_t n = 0; n < count; ++n) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      int64_t at = 0;
      for (int64_t d = 0; d < type.getRank(); ++d)
        at += index[d] * strides[k][d];
      if (floatType)
        xf[k] = fs[k][at];
      else
        xi[k] = is[k][at];
    }
    if (floatType) {
      std::optional<double> r = floatResult(op, xf);
      if (!r)
        return {};
      floats.push_back(*r);
    } else {
      std::optional<int64_t> r = intResult(op, xi);
      if (!r)
        return {};
      ints.push_back(APInt(elem.getIntOrFloatBitWidth(), *r, /*isSigned=*/true,
                           /*implicitTrunc=*/true));
    }
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      if (++index[d] < type.getDimSize(d))
        break;
      index[d] = 0;
    }
  }
  if (floatType && splat)
    return DenseElementsAttr::get(type, fromDouble(floats[0], floatType));
  if (floatType && floatType.isF32()) {
    SmallVector<float> values(floats.begin(), floats.end());
    return DenseElementsAttr::get(type, ArrayRef(values));
  }
  if (floatType && floatType.isF64())
    return DenseElementsAttr::get(type, ArrayRef(floats));
  if (floatType)
    return DenseElementsAttr::get(
        type, llvm::map_to_vector(floats, [&](double v) {
          return fromDouble(v, floatType);
        }));
  return splat ? DenseElementsAttr::get(type, ints[0])
               : DenseElementsAttr::get(type, ints);
}

OpFoldResult GeluOp::fold(FoldAdaptor adaptor) {
  return foldElementwise(*this, adaptor.getOperands());
}

//===----------------------------------------------------------------------===//
// Cast and transpose
//===----------------------------------------------------------------------===//

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
  if (!dense || (!dense.isSplat() && dense.getNumElements() > kMaxFoldedElements))
    return {};
  Type from = dense.getElementType(), to = getType().getElementType();
  // Same semantics as convertScalar in the lowering.
  auto convert = [&](Attribute v) -> Attribute {
    bool lost;
    if (auto f = dyn_cast<FloatType>(to)) {
      if (auto fa = dyn_cast<FloatAttr>(v)) {
        APFloat x = fa.getValue();
        x.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        return FloatAttr::get(to, x);
      }
      APFloat x(f.getFloatSemantics());
      x.convertFromAPInt(cast<IntegerAttr>(v).getValue(),
                         /*IsSigned=*/!from.isInteger(1),
                         APFloat::rmNearestTiesToEven);
      return FloatAttr::get(to, x);
    }
    unsigned w = to.getIntOrFloatBitWidth();
    if (auto fa = dyn_cast<FloatAttr>(v)) {
      if (to.isInteger(1))
        return IntegerAttr::get(to, APInt(1, !fa.getValue().isZero()));
      APSInt r(w, /*isUnsigned=*/false);
      // Out of range or NaN: the kernel's result is undefined, keep the op.
      if (fa.getValue().convertToInteger(r, APFloat::rmTowardZero, &lost) &
          APFloat::opInvalidOp)
        return {};
      return IntegerAttr::get(to, r);
    }
    APInt i = cast<IntegerAttr>(v).getValue();
    if (to.isInteger(1))
      return IntegerAttr::get(to, APInt(1, !i.isZero()));
    return IntegerAttr::get(to, from.isInteger(1) ? i.zextOrTrunc(w)
                                                  : i.sextOrTrunc(w));
  };
  SmallVector<Attribute> values;
  for (Attribute v : dense.isSplat()
                         ? SmallVector<Attribute>{dense.getSplatValue<Attribute>()}
                         : llvm::to_vector(dense.getValues<Attribute>())) {
    Attribute c = convert(v);
    if (!c)
      return {};
    values.push_back(c);
  }
  if (dense.isSplat())
    return DenseElementsAttr::get(getType(), values[0]);
  return DenseElementsAttr::get(getType(), values);
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  // transpose(transpose(x, p), q) is transpose(x, p[q[i]]).
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t q : perm)
      composed.push_back(inner.getPerm()[q]);
    getInputMutable().assign(inner.getInput());
    setPerm(composed);
    return getResult();
  }
  auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
  if (!dense)
    return {};
  if (dense.isSplat())
    return dense.resizeSplat(getType());
  if (dense.getNumElements() > kMaxFoldedElements)
    return {};
  // Walk the result in row-major order, reading the input through permuted
  // strides: bytes of whole-byte elements (their raw data is the values in
  // order), else attributes (i1 is stored as bits).
  ArrayRef<int64_t> inShape = dense.getType().getShape();
  SmallVector<int64_t> inStrides(inShape.size(), 1);
  for (int64_t d = int64_t(inShape.size()) - 2; d >= 0; --d)
    inStrides[d] = inStrides[d + 1] * inShape[d + 1];
  ArrayRef<int64_t> outShape = getType().getShape();
  auto permuted = [&](auto copy) {
    SmallVector<int64_t> index(outShape.size(), 0);
    for (int64_t n = 0, e = dense.getNumElements(); n < e; ++n) {
      int64_t at = 0;
      for (size_t d = 0; d < outShape.size(); ++d)
        at += index[d] * inStrides[perm[d]];
      copy(at);
      for (int64_t d = int64_t(outShape.size()) - 1; d >= 0; --d) {
        if (++index[d] < outShape[d])
          break;
        index[d] = 0;
      }
    }
  };
  Type elem = dense.getElementType();
  if (elem.isIntOrFloat() && elem.getIntOrFloatBitWidth() % 8 == 0) {
    size_t bytes = elem.getIntOrFloatBitWidth() / 8;
    ArrayRef<char> raw = dense.getRawData();
    SmallVector<char> result;
    result.reserve(raw.size());
    permuted([&](int64_t at) {
      result.append(raw.begin() + at * bytes, raw.begin() + (at + 1) * bytes);
    });
    return DenseElementsAttr::getFromRawBuffer(getType(), result);
  }
  auto values = llvm::to_vector(dense.getValues<Attribute>());
  SmallVector<Attribute> result;
  result.reserve(values.size());
  permuted([&](int64_t at) { result.push_back(values[at]); });
  return DenseElementsAttr::get(getType(), result);
}

//===----------------------------------------------------------------------===//
// Folding per-channel scale and shift into convolutions and matmuls
//===----------------------------------------------------------------------===//

namespace {

/// The number of channels of constant `c` if it broadcasts against `result`
/// along dimension `channelDim` only (1 if it is a scalar), else nullopt.
std::optional<int64_t> perChannel(Value c, RankedTensorType result,
                                  int64_t channelDim) {
  if (!matchPattern(c, m_Constant()))
    return std::nullopt;
  auto type = cast<RankedTensorType>(c.getType());
  if (type.getNumElements() == 1)
    return 1;
  int64_t offset = result.getRank() - type.getRank();
  if (offset < 0)
    return std::nullopt;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.getDimSize(d) != 1 && d + offset != channelDim)
      return std::nullopt;
  return type.getNumElements();
}

Value reshapeTo(PatternRewriter &rewriter, Location loc, Value v,
                ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType()).clone(shape);
  return ReshapeOp::create(rewriter, loc, type, v);
}

/// The conv2d or 2-D-weight matmul producing `v`, when its weight is a
/// constant and `v` has no other use; with the weight's channel shape.
struct ScalableProducer {
  Operation *op = nullptr;
  int64_t channelDim = 0;  // of the result
  SmallVector<int64_t> weightScaleShape; // F' values along the weight's F
};

std::optional<ScalableProducer> scalableProducer(Value v, int64_t channels) {
  Operation *op = v.getDefiningOp();
  if (!op || !v.hasOneUse())
    return std::nullopt;
  if (auto conv = dyn_cast<Conv2DOp>(op)) {
    if (!matchPattern(conv.getWeight(), m_Constant()) ||
        (conv.getBias() && !matchPattern(conv.getBias(), m_Constant())))
      return std::nullopt;
    bool nchw = conv.getLayout() == ImageLayout::nchw;
    return ScalableProducer{
        op, nchw ? 1 : 3,
        nchw ? SmallVector<int64_t>{channels, 1, 1, 1}
             : SmallVector<int64_t>{1, 1, 1, channels}};
  }
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    if (!matchPattern(mm.getRhs(), m_Constant()) ||
        mm.getRhs().getType().getRank() != 2)
      return std::nullopt;
    return ScalableProducer{op, mm.getType().getRank() - 1,
                            SmallVector<int64_t>{1, channels}};
  }
  return std::nullopt;
}

/// conv(x, W, b) * s -> conv(x, W * s, b * s) and matmul(x, W) * s ->
/// matmul(x, W * s) for constant W and a constant per-output-channel s
/// (batch_norm's scale after graph-decompose). The new weights fold.
struct FoldScaleIntoWeights : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [prod, scale] : {std::pair(op.getLhs(), op.getRhs()),
                               std::pair(op.getRhs(), op.getLhs())}) {
      if (prod.getType() != op.getType())
        continue;
      auto resultType = op.getType();
      // The channel dim depends on the producer; try it first.
      std::optional<ScalableProducer> p = scalableProducer(prod, 1);
      if (!p)
        continue;
      std::optional<int64_t> channels =
          perChannel(scale, resultType, p->channelDim);
      if (!channels)
        continue;
      p = scalableProducer(prod, *channels);
      Location loc = op.getLoc();
      Value s = reshapeTo(rewriter, loc, scale, {*channels});
      Value wScale = reshapeTo(rewriter, loc, s, p->weightScaleShape);
      if (auto conv = dyn_cast<Conv2DOp>(p->op)) {
        Value w = MulOp::create(rewriter, loc, conv.getWeight(), wScale);
        Value b = conv.getBias()
                      ? Value(MulOp::create(rewriter, loc, conv.getBias(), s))
                      : Value();
        rewriter.replaceOpWithNewOp<Conv2DOp>(
            op, conv.getLayout(), conv.getInput(), w, b, conv.getStrides(),
            conv.getPadding(), conv.getDilations(), conv.getGroups());
        return success();
      }
      auto mm = cast<MatmulOp>(p->op);
      Value w = MulOp::create(rewriter, loc, mm.getRhs(), wScale);
      rewriter.replaceOpWithNewOp<MatmulOp>(op, mm.getLhs(), w);
      return success();
    }
    return failure();
  }
};

/// conv(x, W, b) + t -> conv(x, W, b + t) for a constant per-channel t
/// (batch_norm's shift after graph-decompose).
struct FoldShiftIntoConvBias : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [prod, shift] : {std::pair(op.getLhs(), op.getRhs()),
                               std::pair(op.getRhs(), op.getLhs())}) {
      auto conv = prod.getDefiningOp<Conv2DOp>();
      if (!conv || !prod.hasOneUse() || prod.getType() != op.getType() ||
          (conv.getBias() && !matchPattern(conv.getBias(), m_Constant())))
        continue;
      int64_t channelDim = conv.getLayout() == ImageLayout::nchw ? 1 : 3;
      std::optional<int64_t> channels =
          perChannel(shift, op.getType(), channelDim);
      if (!channels)
        continue;
      Location loc = op.getLoc();
      int64_t f = op.getType().getDimSize(channelDim);
      Value t = reshapeTo(rewriter, loc, shift, {*channels});
      if (*channels != f)
        t = BroadcastToOp::create(
            rewriter, loc, cast<RankedTensorType>(t.getType()).clone({f}), t);
      Value bias = conv.getBias() ? Value(AddOp::create(rewriter, loc,
                                                        conv.getBias(), t))
                                  : t;
      rewriter.replaceOpWithNewOp<Conv2DOp>(
          op, conv.getLayout(), conv.getInput(), conv.getWeight(), bias,
          conv.getStrides(), conv.getPadding(), conv.getDilations(),
          conv.getGroups());
      return success();
    }
    return failure();
  }
};

} // namespace

void MulOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                        MLIRContext *ctx) {
  patterns.add<FoldScaleIntoWeights>(ctx);
}

void AddOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                        MLIRContext *ctx) {
  patterns.add<FoldShiftIntoConvBias>(ctx);
}
