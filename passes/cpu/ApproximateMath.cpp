//===- ApproximateMath.cpp - inline polynomial math for vectorization -----===//
//
// exp, log, tanh, erf, ... become upstream's polynomial approximations
// (f32, within a few ulp) instead of libm calls, so LLVM can vectorize the
// loops that use them. Upstream's log reads the exponent bits, which is
// wrong for subnormals (it gives log(FLT_MIN) for all of them), so those are
// scaled into the normal range first.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_CPUAPPROXIMATEMATH
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

/// log(x) = log(x * 2^24) - 24 ln 2 for f32 subnormal x, so that the
/// approximation sees a normal number. Zero, negatives and NaN keep their
/// results (the scaled value is still 0, negative or NaN).
void scaleSubnormalLogs(Operation *root) {
  SmallVector<math::LogOp> logs;
  root->walk([&](math::LogOp log) {
    if (getElementTypeOrSelf(log.getType()).isF32())
      logs.push_back(log);
  });
  for (math::LogOp log : logs) {
    Type type = log.getType();
    OpBuilder b(log);
    Location loc = log.getLoc();
    auto constant = [&](float v) -> Value {
      TypedAttr attr = b.getF32FloatAttr(v);
      if (auto shaped = dyn_cast<ShapedType>(type))
        attr = DenseElementsAttr::get(shaped, attr);
      return arith::ConstantOp::create(b, loc, attr);
    };
    Value x = log.getOperand();
    Value small = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                        constant(0x1p-126f));
    Value input = arith::SelectOp::create(
        b, loc, small, arith::MulFOp::create(b, loc, x, constant(0x1p24f)), x);
    Value scaledLog = math::LogOp::create(b, loc, input, log.getFastmathAttr());
    Value corrected = arith::SubFOp::create(
        b, loc, scaledLog, constant(24 * 0.69314718055994531f));
    log.replaceAllUsesWith(
        arith::SelectOp::create(b, loc, small, corrected, scaledLog)
            .getResult());
    log.erase();
  }
}

struct CpuApproximateMathPass
    : tessel::impl::CpuApproximateMathBase<CpuApproximateMathPass> {
  void runOnOperation() override {
    scaleSubnormalLogs(getOperation());
    RewritePatternSet patterns(&getContext());
    // Upstream's default set less sin and cos, whose range reduction in f32
    // loses all precision for large arguments (sin(7.7e8) was off by 0.9):
    // those stay libm calls.
    auto approximated = [](StringRef name) {
      return llvm::is_contained(
          {math::AtanOp::getOperationName(), math::Atan2Op::getOperationName(),
           math::TanhOp::getOperationName(), math::LogOp::getOperationName(),
           math::Log2Op::getOperationName(), math::Log1pOp::getOperationName(),
           math::ErfOp::getOperationName(), math::ErfcOp::getOperationName(),
           math::AsinOp::getOperationName(), math::AcosOp::getOperationName(),
           math::ExpOp::getOperationName(), math::ExpM1Op::getOperationName(),
           math::CbrtOp::getOperationName()},
          name);
    };
    populateMathF32ExpansionPatterns(patterns, approximated);
    populateMathPolynomialApproximationPatterns(patterns, approximated);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
