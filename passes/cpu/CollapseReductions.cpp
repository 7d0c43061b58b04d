//===- CollapseReductions.cpp - several reduced axes as one loop ----------===//
//
// A reduction over several trailing axes (a sum of a whole tensor, a mean
// over H and W) has one loop per axis. CPU schedules split a single
// innermost reduction loop into vectors of partial results
// (loop.split_reduction); with several, each result was a chain of
// dependent scalar adds (the sum of a 4096x4096 tensor: 23.7 ms). Merging
// the loops into one (upstream collapseOpIterationDims) where the inputs
// are contiguous along them gives the split a single loop.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"

namespace tessel {
#define GEN_PASS_DEF_CPUCOLLAPSEREDUCTIONS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

/// The trailing reduction loops of `op` that one loop can replace: at
/// least two, walked contiguously by every operand, and read only from
/// function arguments or constants (a producer in the kernel would be
/// separated from the reduction by the reshape and no longer fuse into its
/// tiles). An op whose body reads its loop indices (a gather fused into the
/// reduction) is left alone: loop.split_reduction cannot vectorize it.
std::optional<ReassociationIndices> collapsibleReductions(
    linalg::GenericOp op) {
  if (op.hasIndexSemantics() ||
      !llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
        return map.isProjectedPermutation();
      }))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned first = iterators.size();
  while (first > 0 && iterators[first - 1] == utils::IteratorType::reduction)
    --first;
  if (iterators.size() - first < 2)
    return std::nullopt;
  ReassociationIndices group =
      llvm::to_vector_of<int64_t>(llvm::seq<int64_t>(first, iterators.size()));
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (!op.getMatchingIndexingMap(input).isFunctionOfDim(first))
      continue;
    Value value = input->get();
    if (!isa<BlockArgument>(value) && !value.getDefiningOp<arith::ConstantOp>())
      return std::nullopt;
  }
  if (!linalg::areDimSequencesPreserved(op.getIndexingMapsArray(), group))
    return std::nullopt;
  return group;
}

struct CpuCollapseReductionsPass
    : tessel::impl::CpuCollapseReductionsBase<CpuCollapseReductionsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      std::optional<ReassociationIndices> group = collapsibleReductions(op);
      if (!group)
        continue;
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::CollapseResult> collapsed =
          linalg::collapseOpIterationDims(op, {*group}, rewriter);
      if (failed(collapsed)) {
        op.emitError("cpu-collapse-reductions could not merge the reduction "
                     "loops of this op");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, collapsed->results);
    }
  }
};

} // namespace
