//===- SinkReshapes.cpp - reshapes to the edges of kernels ----------------===//
//
// A batched x @ W is a 2-D linalg.matmul between a collapse and an expand of
// its rows, so its epilogue consumes an expand_shape, which tiling cannot
// fuse through. Collapsing the consumer's loops instead moves the
// expand_shape past it, out to the kernel's result, and leaves one
// contraction-plus-epilogue nest that a schedule tiles as a whole.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_LINALGSINKRESHAPES
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

struct LinalgSinkReshapesPass
    : tessel::impl::LinalgSinkReshapesBase<LinalgSinkReshapesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr("tessel.kernel") || func.isExternal())
      return;
    RewritePatternSet patterns(&getContext());
    // Only reshapes of values computed in the kernel move: reshaped
    // arguments are free views already.
    linalg::populateFoldReshapeOpsByCollapsingPatterns(
        patterns, [](OpOperand *operand) {
          auto expand = operand->get().getDefiningOp<tensor::ExpandShapeOp>();
          return expand &&
                 isa_and_present<linalg::LinalgOp>(
                     expand.getSrc().getDefiningOp());
        });
    // Reshaped tensor.empty (the collapsed consumer's init) folds to an
    // empty tensor of the new shape.
    tensor::populateFoldTensorEmptyPatterns(patterns);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, &getContext());
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns,
                                                         &getContext());
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
