//===- RowReduction.cpp - what loop.warp_reduce accepts -------------------===//

#include "passes/loop/RowReduction.h"
#include "passes/TileAndFuseRoot.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;
using namespace tessel;

std::optional<KernelRows> tessel::kernelRows(func::FuncOp func,
                                              TilingInterface root) {
  std::optional<SmallVector<int64_t>> rootExtents = staticLoopExtents(root);
  if (!rootExtents || rootExtents->empty())
    return std::nullopt;
  KernelRows rows{rootExtents->back(), true};
  if (root.getLoopIteratorTypes().back() == utils::IteratorType::reduction)
    return rows;
  // A reduction whose other loops are the root's: the root is over its
  // per-row results.
  func.walk([&](linalg::LinalgOp op) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (ranges.empty() ||
        op.getIteratorTypesArray().back() != utils::IteratorType::reduction ||
        ArrayRef(ranges).drop_back() != ArrayRef(*rootExtents))
      return WalkResult::advance();
    rows = {ranges.back(), false};
    return WalkResult::interrupt();
  });
  return rows;
}

bool tessel::isShuffleReducible(Operation *combiner, Type type) {
  if (!combiner || !arith::getNeutralElement(combiner))
    return false;
  if (type.isF32())
    return true;
  return (type.isF16() || type.isBF16()) &&
         isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
             arith::MinNumFOp>(combiner);
}

std::string tessel::rowReductionUnfit(func::FuncOp func, TilingInterface root) {
  std::optional<KernelRows> rows = kernelRows(func, root);
  if (!rows)
    return "the root has dynamic or no loops";
  int64_t columns = rows->columns;
  unsigned rootLoops = root.getLoopIteratorTypes().size();
  std::string why;
  func.walk([&](linalg::LinalgOp op) {
    if (isa<linalg::FillOp>(op))
      return WalkResult::advance();
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic) {
      why = ("'" + op->getName().getStringRef() + "' is not a generic").str();
      return WalkResult::interrupt();
    }
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    SmallVector<utils::IteratorType> iterators =
        generic.getIteratorTypesArray();
    unsigned last = ranges.size() - 1;
    // An op over per-row values has the root's loops, none of them a row.
    bool perRow = !rows->rootWalksRow && ranges.size() == rootLoops &&
                  generic.getNumReductionLoops() == 0;
    bool fits = !ranges.empty() &&
                (ranges.back() == columns || ranges.back() == 1 || perRow) &&
                llvm::all_of(ArrayRef(iterators).drop_back(), [](auto it) {
                  return it == utils::IteratorType::parallel;
                });
    // The row is addressed only by the last loop, in the last position.
    if (!perRow)
      for (AffineMap map : generic.getIndexingMapsArray())
        for (auto [i, e] : llvm::enumerate(map.getResults()))
          fits &= !e.isFunctionOfDim(last) ||
                  (i + 1 == map.getNumResults() && isa<AffineDimExpr>(e));
    if (fits && iterators.back() == utils::IteratorType::reduction) {
      Block &body = generic.getRegion().front();
      Operation *combiner =
          body.getTerminator()->getOperand(0).getDefiningOp();
      fits = isShuffleReducible(combiner,
                                body.getArguments().back().getType()) &&
             llvm::is_contained(combiner->getOperands(),
                                body.getArguments().back());
    }
    if (!fits) {
      why = "an op is not elementwise over rows nor a reduction of whole "
            "rows that warp shuffles can combine";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return why;
}
