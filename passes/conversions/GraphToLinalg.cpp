//===- GraphToLinalg.cpp - graph ops to linalg on tensors -----------------===//
//
// Elementwise ops share one lowering: a linalg.generic whose indexing maps
// encode numpy broadcasting and whose body comes from scalarBody(). Adding an
// elementwise op means adding one case there.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/Graph.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/TypeSwitch.h"

namespace tessel {
#define GEN_PASS_DEF_CONVERTGRAPHTOLINALG
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

bool isLowPrecisionFloat(Type t) { return t.isF16() || t.isBF16(); }

/// Maps the loops of a `resultShape` iteration space onto an operand that
/// broadcasts to it (numpy rules: align right, size-1 dims repeat).
AffineMap broadcastMap(RankedTensorType operand, ArrayRef<int64_t> resultShape,
                       MLIRContext *ctx) {
  int64_t rank = resultShape.size();
  int64_t offset = rank - operand.getRank();
  SmallVector<AffineExpr> exprs;
  for (auto [i, dim] : llvm::enumerate(operand.getShape())) {
    if (dim == 1 && resultShape[i + offset] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(i + offset, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// Emits `fn` on the scalars of `operands` as a parallel linalg.generic whose
/// result has type `resultType`.
Value buildElementwise(
    OpBuilder &b, Location loc, RankedTensorType resultType,
    ValueRange operands,
    function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value v : operands)
    maps.push_back(broadcastMap(cast<RankedTensorType>(v.getType()),
                                resultType.getShape(), ctx));
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  Value init = tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                       resultType.getElementType());
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, operands, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, fn(nb, nloc, args.drop_back()));
      });
  return generic.getResult(0);
}

/// Transcendental functions run in f32 for f16/bf16 inputs, then round once.
Value inF32(OpBuilder &b, Location loc, Value x,
            function_ref<Value(OpBuilder &, Location, Value)> fn) {
  Type t = x.getType();
  if (!isLowPrecisionFloat(t))
    return fn(b, loc, x);
  Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  return arith::TruncFOp::create(b, loc, t, fn(b, loc, wide));
}

template <typename MathOp>
Value mathInF32(OpBuilder &b, Location loc, Value x) {
  return inF32(b, loc, x, [](OpBuilder &nb, Location l, Value v) -> Value {
    return MathOp::create(nb, l, v);
  });
}

Value floatConstant(OpBuilder &b, Location loc, Type t, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, value));
}

/// 1 / (1 + exp(-x)) on a float scalar.
Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  Value one = floatConstant(b, loc, t, 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e));
}

/// GELU on a float scalar: 0.5 x (1 + erf(x / sqrt 2)), or the tanh form.
Value gelu(OpBuilder &b, Location loc, Value x, bool tanhForm) {
  Type t = x.getType();
  auto c = [&](double v) { return floatConstant(b, loc, t, v); };
  Value inner;
  if (tanhForm) {
    Value x3 = arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
    Value poly = arith::AddFOp::create(
        b, loc, x, arith::MulFOp::create(b, loc, c(0.044715), x3));
    inner = math::TanhOp::create(
        b, loc, arith::MulFOp::create(b, loc, c(0.7978845608028654), poly));
  } else {
    inner = math::ErfOp::create(
        b, loc, arith::MulFOp::create(b, loc, x, c(0.7071067811865476)));
  }
  Value half = arith::MulFOp::create(b, loc, c(0.5), x);
  return arith::MulFOp::create(b, loc, half,
                               arith::AddFOp::create(b, loc, c(1.0), inner));
}

/// The scalar computation of one elementwise graph op.
Value scalarBody(Operation *op, OpBuilder &b, Location loc, ValueRange args) {
  Type t = args[0].getType();
  bool isFloat = isa<FloatType>(t);
  auto zero = [&]() -> Value {
    return arith::ConstantOp::create(b, loc, b.getZeroAttr(t));
  };
  auto pick = [&](auto floatOp, auto intOp) -> Value {
    using F = decltype(floatOp);
    using I = decltype(intOp);
    if (isFloat)
      return F::create(b, loc, args[0], args[1]);
    return I::create(b, loc, args[0], args[1]);
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](graph::AddOp) { return pick(arith::AddFOp(), arith::AddIOp()); })
      .Case([&](graph::SubOp) { return pick(arith::SubFOp(), arith::SubIOp()); })
      .Case([&](graph::MulOp) { return pick(arith::MulFOp(), arith::MulIOp()); })
      .Case([&](graph::DivOp) {
        return pick(arith::DivFOp(), arith::DivSIOp());
      })
      .Case([&](graph::MaximumOp) {
        return pick(arith::MaximumFOp(), arith::MaxSIOp());
      })
      .Case([&](graph::MinimumOp) {
        return pick(arith::MinimumFOp(), arith::MinSIOp());
      })
      .Case([&](graph::ReluOp) -> Value {
        if (isFloat)
          return arith::MaximumFOp::create(b, loc, args[0], zero());
        return arith::MaxSIOp::create(b, loc, args[0], zero());
      })
      .Case([&](graph::NegOp) -> Value {
        if (isFloat)
          return arith::NegFOp::create(b, loc, args[0]);
        return arith::SubIOp::create(b, loc, zero(), args[0]);
      })
      .Case([&](graph::AbsOp) -> Value {
        if (isFloat)
          return math::AbsFOp::create(b, loc, args[0]);
        return math::AbsIOp::create(b, loc, args[0]);
      })
      .Case([&](graph::ExpOp) { return mathInF32<math::ExpOp>(b, loc, args[0]); })
      .Case([&](graph::TanhOp) {
        return mathInF32<math::TanhOp>(b, loc, args[0]);
      })
      .Case([&](graph::LogOp) { return mathInF32<math::LogOp>(b, loc, args[0]); })
      .Case([&](graph::SqrtOp) {
        return mathInF32<math::SqrtOp>(b, loc, args[0]);
      })
      .Case([&](graph::RsqrtOp) {
        return mathInF32<math::RsqrtOp>(b, loc, args[0]);
      })
      .Case([&](graph::SigmoidOp) { return inF32(b, loc, args[0], sigmoid); })
      .Case([&](graph::SiluOp) {
        return inF32(b, loc, args[0], [](OpBuilder &nb, Location l, Value x) -> Value {
          return arith::MulFOp::create(nb, l, x, sigmoid(nb, l, x));
        });
      })
      .Case([&](graph::GeluOp op) {
        bool tanhForm = op.getApproximateTanh();
        return inF32(b, loc, args[0], [&](OpBuilder &nb, Location l, Value x) {
          return gelu(nb, l, x, tanhForm);
        });
      })
      .Default([](Operation *op) -> Value {
        llvm_unreachable("elementwise pattern registered without a body");
      });
}

template <typename OpTy>
struct ElementwiseToLinalg : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    Operation *raw = op.getOperation();
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, adaptor.getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return scalarBody(raw, b, loc, args);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConstantToArith : OpConversionPattern<graph::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, cast<TypedAttr>(op.getValue()));
    return success();
  }
};

/// 2-D matmuls become linalg.matmul; batched ones a generic contraction whose
/// batch maps broadcast. f16/bf16 accumulate in f32.
struct MatmulToLinalg : OpConversionPattern<graph::MatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(op.getType());
    Type elem = resultType.getElementType();
    Type acc = isLowPrecisionFloat(elem) ? rewriter.getF32Type() : elem;
    auto accType = resultType.clone(acc);
    Value zero =
        arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(acc));
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, accType.getShape(), acc);
    Value init = linalg::FillOp::create(rewriter, loc, zero, empty).result();

    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    Value product;
    if (resultType.getRank() == 2 &&
        cast<RankedTensorType>(lhs.getType()).getRank() == 2 &&
        cast<RankedTensorType>(rhs.getType()).getRank() == 2) {
      product = linalg::MatmulOp::create(rewriter, loc, ValueRange{lhs, rhs},
                                         ValueRange{init})
                    .getResult(0);
    } else {
      // Loops: batch dims of the result, then m, n, and the reduction k.
      int64_t rank = resultType.getRank();
      int64_t numLoops = rank + 1;
      AffineExpr m = getAffineDimExpr(rank - 2, ctx);
      AffineExpr n = getAffineDimExpr(rank - 1, ctx);
      AffineExpr k = getAffineDimExpr(rank, ctx);
      auto operandMap = [&](Value v, AffineExpr row, AffineExpr col) {
        auto type = cast<RankedTensorType>(v.getType());
        AffineMap batch = broadcastMap(
            RankedTensorType::get(type.getShape().drop_back(2), acc),
            resultType.getShape().drop_back(2), ctx);
        SmallVector<AffineExpr> exprs(batch.getResults());
        exprs.push_back(row);
        exprs.push_back(col);
        return AffineMap::get(numLoops, 0, exprs, ctx);
      };
      SmallVector<AffineExpr> outExprs;
      for (int64_t i = 0; i < rank; ++i)
        outExprs.push_back(getAffineDimExpr(i, ctx));
      SmallVector<AffineMap> maps = {
          operandMap(lhs, m, k), operandMap(rhs, k, n),
          AffineMap::get(numLoops, 0, outExprs, ctx)};
      SmallVector<utils::IteratorType> iterators(
          rank, utils::IteratorType::parallel);
      iterators.push_back(utils::IteratorType::reduction);
      bool isFloat = isa<FloatType>(acc);
      product =
          linalg::GenericOp::create(
              rewriter, loc, accType, ValueRange{lhs, rhs}, init, maps,
              iterators,
              [&](OpBuilder &b, Location l, ValueRange args) {
                Value a = args[0], c = args[1];
                if (a.getType() != acc) {
                  a = arith::ExtFOp::create(b, l, acc, a);
                  c = arith::ExtFOp::create(b, l, acc, c);
                }
                Value sum =
                    isFloat
                        ? Value(arith::AddFOp::create(
                              b, l, args[2], arith::MulFOp::create(b, l, a, c)))
                        : Value(arith::AddIOp::create(
                              b, l, args[2], arith::MulIOp::create(b, l, a, c)));
                linalg::YieldOp::create(b, l, sum);
              })
              .getResult(0);
    }
    if (acc != elem)
      product = buildElementwise(
          rewriter, loc, resultType, product,
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            return arith::TruncFOp::create(b, l, elem, args[0]);
          });
    rewriter.replaceOp(op, product);
    return success();
  }
};

/// Groups only mark kernel boundaries; exporting to linalg inlines them.
struct InlineFusedOp : OpConversionPattern<graph::FusedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::FusedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    auto yield = cast<graph::YieldOp>(body.getTerminator());
    SmallVector<Value> results(yield.getValues());
    rewriter.inlineBlockBefore(&body, op, adaptor.getInputs());
    rewriter.eraseOp(yield);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct ConvertGraphToLinalgPass
    : tessel::impl::ConvertGraphToLinalgBase<ConvertGraphToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    WalkResult dynamic = module.walk([](Operation *op) {
      if (!isa<graph::GraphDialect>(op->getDialect()))
        return WalkResult::advance();
      for (Type t : llvm::concat<Type>(op->getOperandTypes(),
                                       op->getResultTypes()))
        if (auto shaped = dyn_cast<ShapedType>(t);
            shaped && !shaped.hasStaticShape()) {
          op->emitOpError("has dynamic shape ")
              << t << "; graph-to-linalg supports static shapes only";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (dynamic.wasInterrupted())
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<graph::GraphDialect>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });

    RewritePatternSet patterns(ctx);
    patterns.add<ConstantToArith, MatmulToLinalg, InlineFusedOp,
                 ElementwiseToLinalg<graph::AddOp>,
                 ElementwiseToLinalg<graph::SubOp>,
                 ElementwiseToLinalg<graph::MulOp>,
                 ElementwiseToLinalg<graph::DivOp>,
                 ElementwiseToLinalg<graph::MaximumOp>,
                 ElementwiseToLinalg<graph::MinimumOp>,
                 ElementwiseToLinalg<graph::ReluOp>,
                 ElementwiseToLinalg<graph::NegOp>,
                 ElementwiseToLinalg<graph::AbsOp>,
                 ElementwiseToLinalg<graph::ExpOp>,
                 ElementwiseToLinalg<graph::TanhOp>,
                 ElementwiseToLinalg<graph::LogOp>,
                 ElementwiseToLinalg<graph::SqrtOp>,
                 ElementwiseToLinalg<graph::RsqrtOp>,
                 ElementwiseToLinalg<graph::SigmoidOp>,
                 ElementwiseToLinalg<graph::SiluOp>,
                 ElementwiseToLinalg<graph::GeluOp>>(ctx);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
