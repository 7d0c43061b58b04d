//===- Decompose.cpp - composite graph ops into primitive ones ------------===//
//
// softmax, log_softmax, layer_norm, rms_norm, batch_norm and linear are
// rewritten into reductions, elementwise ops and matmul. Fusion then groups
// the pieces (a softmax becomes one reduction group), constant folding
// precomputes what depends on weights only (batch_norm's scale and shift,
// linear's transposed weight), and lowering only needs the primitives.
// Zero-size tensors fold away here too (FoldZeroSize), so that no later
// stage schedules a loop of extent 0.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/Graph.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_GRAPHDECOMPOSE
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;
using namespace tessel::graph;

namespace {

RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// A rank-0 constant that broadcasts against anything.
Value scalar(OpBuilder &b, Location loc, Type elem, double value) {
  auto type = RankedTensorType::get({}, elem);
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elem, value)));
}

Value castTo(OpBuilder &b, Location loc, Value v, Type elem) {
  if (tensorOf(v).getElementType() == elem)
    return v;
  return CastOp::create(b, loc, v, elem);
}

/// f16/bf16 statistics are computed in f32, like torch does.
Type computeType(Value v) {
  Type elem = tensorOf(v).getElementType();
  return elem.isF16() || elem.isBF16() ? Float32Type::get(v.getContext())
                                       : elem;
}

SmallVector<int64_t> dimsFrom(int64_t axis, int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(axis, rank));
}

Value reduce(OpBuilder &b, Location loc, ReduceKind kind, Value x,
             ArrayRef<int64_t> dims) {
  return ReduceOp::create(b, loc, kind, x, dims, /*keepdims=*/true);
}

/// softmax: e / sum(e) with e = exp(x - max x); log_softmax: (x - max x) -
/// log(sum(e)). Subtracting the max keeps exp from overflowing.
template <typename OpTy>
struct DecomposeSoftmax : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    Type elem = tensorOf(x).getElementType();
    int64_t rank = tensorOf(x).getRank();
    int64_t axis = graph::positiveAxis(op.getAxis(), rank);
    Value wide = castTo(rewriter, loc, x, computeType(x));
    Value shifted = SubOp::create(
        rewriter, loc, wide, reduce(rewriter, loc, ReduceKind::max, wide, axis));
    Value e = ExpOp::create(rewriter, loc, shifted);
    Value sum = reduce(rewriter, loc, ReduceKind::sum, e, axis);
    Value result;
    if constexpr (std::is_same_v<OpTy, SoftmaxOp>)
      result = DivOp::create(rewriter, loc, e, sum);
    else
      result = SubOp::create(rewriter, loc, shifted,
                             LogOp::create(rewriter, loc, sum));
    rewriter.replaceOp(op, castTo(rewriter, loc, result, elem));
    return success();
  }
};

/// (x - mean) * rsqrt(var + eps) * weight + bias over the dims from `axis`.
struct DecomposeLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    int64_t rank = tensorOf(x).getRank();
    int64_t axis = graph::positiveAxis(op.getAxis(), rank);
    Type elem = tensorOf(x).getElementType(), wideType = computeType(x);
    SmallVector<int64_t> dims = dimsFrom(axis, rank);
    Value wide = castTo(rewriter, loc, x, wideType);
    Value centered = SubOp::create(
        rewriter, loc, wide, reduce(rewriter, loc, ReduceKind::mean, wide, dims));
    Value var = reduce(rewriter, loc, ReduceKind::mean,
                       MulOp::create(rewriter, loc, centered, centered), dims);
    Value eps = scalar(rewriter, loc, wideType, op.getEpsilon().convertToDouble());
    Value inv = RsqrtOp::create(rewriter, loc,
                                AddOp::create(rewriter, loc, var, eps));
    Value y = MulOp::create(rewriter, loc, centered, inv);
    if (Value w = op.getWeight())
      y = MulOp::create(rewriter, loc, y, castTo(rewriter, loc, w, wideType));
    if (Value bias = op.getBias())
      y = AddOp::create(rewriter, loc, y, castTo(rewriter, loc, bias, wideType));
    rewriter.replaceOp(op, castTo(rewriter, loc, y, elem));
    return success();
  }
};

/// x * rsqrt(mean(x^2) + eps) * weight over the dims from `axis`.
struct DecomposeRmsNorm : OpRewritePattern<RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RmsNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    int64_t rank = tensorOf(x).getRank();
    int64_t axis = graph::positiveAxis(op.getAxis(), rank);
    Type elem = tensorOf(x).getElementType(), wideType = computeType(x);
    Value wide = castTo(rewriter, loc, x, wideType);
    Value ms = reduce(rewriter, loc, ReduceKind::mean,
                      MulOp::create(rewriter, loc, wide, wide),
                      dimsFrom(axis, rank));
    Value eps = scalar(rewriter, loc, wideType, op.getEpsilon().convertToDouble());
    Value y = MulOp::create(
        rewriter, loc, wide,
        RsqrtOp::create(rewriter, loc, AddOp::create(rewriter, loc, ms, eps)));
    if (Value w = op.getWeight())
      y = MulOp::create(rewriter, loc, y, castTo(rewriter, loc, w, wideType));
    rewriter.replaceOp(op, castTo(rewriter, loc, y, elem));
    return success();
  }
};

/// x * s + t with s = scale * rsqrt(var + eps) and t = bias - mean * s, the
/// per-channel vectors reshaped to broadcast along `axis`. With constant
/// parameters s and t fold to constants.
struct DecomposeBatchNorm : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto xType = tensorOf(x);
    int64_t rank = xType.getRank();
    int64_t axis = graph::positiveAxis(op.getAxis(), rank);
    Type elem = xType.getElementType(), wideType = computeType(x);
    auto wide = [&](Value v) { return castTo(rewriter, loc, v, wideType); };
    Value eps = scalar(rewriter, loc, wideType, op.getEpsilon().convertToDouble());
    Value s = MulOp::create(
        rewriter, loc, wide(op.getScale()),
        RsqrtOp::create(rewriter, loc,
                        AddOp::create(rewriter, loc, wide(op.getVariance()), eps)));
    Value t = SubOp::create(rewriter, loc, wide(op.getBias()),
                            MulOp::create(rewriter, loc, wide(op.getMean()), s));
    // [C] -> [C, 1, ..., 1] so that it lines up with dimension `axis`.
    SmallVector<int64_t> shape(rank - axis, 1);
    shape[0] = xType.getDimSize(axis);
    auto channelType = RankedTensorType::get(shape, wideType);
    s = ReshapeOp::create(rewriter, loc, channelType, s);
    t = ReshapeOp::create(rewriter, loc, channelType, t);
    Value y = AddOp::create(rewriter, loc,
                            MulOp::create(rewriter, loc, wide(x), s), t);
    rewriter.replaceOp(op, castTo(rewriter, loc, y, elem));
    return success();
  }
};

/// matmul(x, transpose(w)) + b; a rank-1 x is a single row.
struct DecomposeLinear : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto xType = tensorOf(x);
    if (xType.getRank() == 1)
      x = ReshapeOp::create(rewriter, loc,
                            xType.clone({1, xType.getDimSize(0)}), x);
    Value wt = TransposeOp::create(rewriter, loc, op.getWeight(),
                                   ArrayRef<int64_t>{1, 0});
    Value y = MatmulOp::create(rewriter, loc, x, wt);
    if (Value bias = op.getBias())
      y = AddOp::create(rewriter, loc, y, bias);
    if (xType.getRank() == 1)
      y = ReshapeOp::create(rewriter, loc, op.getType(), y);
    rewriter.replaceOp(op, y);
    return success();
  }
};

/// Zero-size tensors leave no work for a kernel, and a reduction over an
/// empty extent is its identity: an op with an empty result becomes an
/// empty constant, sum/mean/matmul/conv over nothing a constant (plus a
/// conv's bias), and a concatenation drops its empty operands. Later
/// stages then never see a loop of extent 0 with work after it. Runs
/// before the decompositions (higher benefit): a softmax of an empty row
/// is empty, not a max over nothing.
struct FoldZeroSize : RewritePattern {
  FoldZeroSize(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/2, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<GraphDialect>(op->getDialect()) || op->getNumRegions() != 0 ||
        isa<ConstantOp>(op) || op->getNumResults() != 1)
      return failure();
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || !type.hasStaticShape())
      return failure();
    Location loc = op->getLoc();
    if (type.getNumElements() == 0) {
      rewriter.replaceOpWithNewOp<ConstantOp>(
          op, DenseElementsAttr::get(type, ArrayRef<Attribute>()));
      return success();
    }
    auto isEmpty = [](Value v) {
      auto t = cast<RankedTensorType>(v.getType());
      return t.hasStaticShape() && t.getNumElements() == 0;
    };
    if (auto concat = dyn_cast<ConcatOp>(op)) {
      SmallVector<Value> kept = llvm::to_vector(
          llvm::make_filter_range(concat.getInputs(), [&](Value v) {
            return !isEmpty(v);
          }));
      if (kept.size() == concat.getInputs().size())
        return failure();
      if (kept.size() == 1)
        rewriter.replaceOp(op, kept[0]);
      else
        rewriter.replaceOpWithNewOp<ConcatOp>(op, kept, concat.getAxis());
      return success();
    }
    Attribute zero = rewriter.getZeroAttr(type);
    auto constant = [&](Attribute value) -> Value {
      return ConstantOp::create(rewriter, loc, cast<ElementsAttr>(value));
    };
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      if (!isEmpty(reduce.getInput()))
        return failure();
      // What the lowering starts from, but NaN (0 / 0) for a mean.
      Attribute value =
          reduce.getKind() == ReduceKind::mean
              ? DenseElementsAttr::get(
                    type, APFloat::getNaN(cast<FloatType>(type.getElementType())
                                              .getFloatSemantics()))
              : DenseElementsAttr::get(
                    type, reductionInitialValue(rewriter, reduce.getKind(),
                                                type.getElementType()));
      rewriter.replaceOp(op, constant(value));
      return success();
    }
    if (auto matmul = dyn_cast<MatmulOp>(op)) {
      if (tensorOf(matmul.getLhs()).getShape().back() != 0)
        return failure();
      rewriter.replaceOp(op, constant(zero));
      return success();
    }
    if (auto conv = dyn_cast<Conv2DOp>(op)) {
      if (!isEmpty(conv.getWeight()))
        return failure();
      Value result = constant(zero);
      if (Value bias = conv.getBias()) {
        // [F] against the result's channel dimension.
        if (conv.getLayout() == ImageLayout::nchw)
          bias = ReshapeOp::create(
              rewriter, loc,
              RankedTensorType::get({tensorOf(bias).getDimSize(0), 1, 1},
                                    type.getElementType()),
              bias);
        result = AddOp::create(rewriter, loc, result, bias);
      }
      rewriter.replaceOp(op, result);
      return success();
    }
    return failure();
  }
};

struct GraphDecomposePass
    : tessel::impl::GraphDecomposeBase<GraphDecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGraphDecompositionPatterns(patterns);
    patterns.add<FoldZeroSize>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void tessel::populateGraphDecompositionPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeSoftmax<SoftmaxOp>, DecomposeSoftmax<LogSoftmaxOp>,
               DecomposeLayerNorm, DecomposeRmsNorm, DecomposeBatchNorm,
               DecomposeLinear>(patterns.getContext());
}
