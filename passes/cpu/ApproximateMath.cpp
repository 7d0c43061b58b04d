//===- ApproximateMath.cpp - inline polynomial math for vectorization -----===//
//
// exp, log, tanh, erf, ... become upstream's polynomial approximations
// (f32, within a few ulp) instead of libm calls, so LLVM can vectorize the
// loops that use them.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_CPUAPPROXIMATEMATH
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {
struct CpuApproximateMathPass
    : tessel::impl::CpuApproximateMathBase<CpuApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
