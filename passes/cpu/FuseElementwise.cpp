//===- FuseElementwise.cpp - fuse elementwise linalg ops in kernels -------===//
//
// Upstream's elementwise fusion without its reshape propagation: upstream's
// pass also pushes reshapes through linalg ops, which turns the 2-D matmul
// of a batched x @ W (collapse, linalg.matmul, expand) back into a generic
// that the matmul vectorizer does not handle. A transpose read only by an
// elementwise generic is generalized first, so that it fuses too: the
// consumer then reads the transposed input itself, which the schedules
// see (square CPU tiles, GPU thread tiles that read and write vectors).
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
    IRRewriter rewriter(ctx);
    getOperation()->walk([&](linalg::TransposeOp transpose) {
      Value result = transpose->getResult(0);
      if (!result.hasOneUse() || !isa<linalg::GenericOp>(*result.user_begin()))
        return;
      rewriter.setInsertionPoint(transpose);
      (void)linalg::generalizeNamedOp(rewriter, transpose);
    });
    RewritePatternSet patterns(ctx);
    // A producer with other users would be recomputed: keep it. Each
    // fusion copies both bodies into a new op, so a chain of n ops fused
    // pairwise costs n^2 copies; bodies stop growing at kMaxFusedBody ops
    // (a loop nest that long is compute-bound: storing its result and
    // reading it back in the next one costs little), which keeps long
    // chains linear.
    constexpr size_t kMaxFusedBody = 256;
    linalg::ControlFusionFn singleUse = [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      if (!producer || !producer->hasOneUse())
        return false;
      auto bodySize = [](Operation *op) {
        auto generic = dyn_cast<linalg::GenericOp>(op);
        return generic ? generic.getBody()->getOperations().size() : 1;
      };
      return bodySize(producer) + bodySize(operand->getOwner()) <=
             kMaxFusedBody;
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
