//===- FuseElementwise.cpp - fuse elementwise linalg ops in kernels -------===//
//
// Upstream's elementwise fusion without its reshape propagation: upstream's
// pass also pushes reshapes through linalg ops, which turns the 2-D matmul
// of a batched x @ W (collapse, linalg.matmul, expand) back into a generic
// that the matmul vectorizer does not handle.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_CPUFUSEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {
struct CpuFuseElementwisePass
    : tessel::impl::CpuFuseElementwiseBase<CpuFuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    // A producer with other users would be recomputed: keep it.
    linalg::ControlFusionFn singleUse = [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      return producer && producer->hasOneUse();
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, singleUse);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(
        patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
