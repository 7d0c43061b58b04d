//===- RowReduction.cpp - what loop.warp_reduce and grid_reduce accept ----===//

#include "passes/loop/RowReduction.h"
#include "dialects/loop/Loop.h"
#include "passes/TileAndFuseRoot.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"

using namespace mlir;
using namespace tessel;

std::optional<KernelRows> tessel::kernelRows(func::FuncOp func,
                                              TilingInterface root) {
  // Rows, and their length, may be as many as a size symbol says (at its
  // largest here).
  std::optional<SmallVector<int64_t>> rootExtents = largestLoopExtents(root);
  auto rootOp = dyn_cast<linalg::LinalgOp>(root.getOperation());
  if (!rootExtents || rootExtents->empty() || !rootOp)
    return std::nullopt;
  KernelRows rows{rootExtents->back(), rootOp.getStaticLoopRanges().back(),
                  true};
  if (root.getLoopIteratorTypes().back() == utils::IteratorType::reduction)
    return rows;
  // A reduction whose other loops are the root's: the root is over its
  // per-row results.
  func.walk([&](linalg::LinalgOp op) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    std::optional<SmallVector<int64_t>> largest =
        largestLoopExtents(cast<TilingInterface>(op.getOperation()));
    if (ranges.empty() || !largest ||
        op.getIteratorTypesArray().back() != utils::IteratorType::reduction ||
        ArrayRef(*largest).drop_back() != ArrayRef(*rootExtents))
      return WalkResult::advance();
    rows = {largest->back(), ranges.back(), false};
    return WalkResult::interrupt();
  });
  return rows;
}

Operation *tessel::reductionCombiner(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  Operation *combiner = body.getTerminator()->getOperand(0).getDefiningOp();
  BlockArgument out = body.getArguments().back();
  if (!combiner || !arith::getNeutralElement(combiner) ||
      !llvm::is_contained(combiner->getOperands(), out))
    return nullptr;
  return combiner;
}

Operation *tessel::shuffleCombiner(linalg::GenericOp op) {
  Operation *combiner = reductionCombiner(op);
  if (!combiner)
    return nullptr;
  Type type = op.getRegion().front().getArguments().back().getType();
  if (type.isF32() || type.isInteger(32) || type.isInteger(64))
    return combiner;
  return (type.isF16() || type.isBF16()) &&
                 isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
                     arith::MinNumFOp>(combiner)
             ? combiner
             : nullptr;
}

std::string tessel::rowReductionUnfit(func::FuncOp func, TilingInterface root) {
  std::optional<KernelRows> rows = kernelRows(func, root);
  if (!rows)
    return "the root has no loops, or a size its kernel's arguments do not "
           "give";
  // An op over the row: the same static extent, or a dynamic one as long
  // at its largest (a kernel's rows over a size symbol are all one row).
  auto overRow = [&](linalg::GenericOp op) {
    int64_t extent = op.getStaticLoopRanges().back();
    if (extent != rows->extent)
      return false;
    if (!ShapedType::isDynamic(extent))
      return true;
    std::optional<SmallVector<int64_t>> largest =
        largestLoopExtents(cast<TilingInterface>(op.getOperation()));
    return largest && largest->back() == rows->columns;
  };
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
                (ranges.back() == 1 || perRow || overRow(generic)) &&
                llvm::all_of(ArrayRef(iterators).drop_back(), [](auto it) {
                  return it == utils::IteratorType::parallel;
                });
    // The row is addressed only by the last loop, in the last position.
    if (!perRow)
      for (AffineMap map : generic.getIndexingMapsArray())
        for (auto [i, e] : llvm::enumerate(map.getResults()))
          fits &= !e.isFunctionOfDim(last) ||
                  (i + 1 == map.getNumResults() && isa<AffineDimExpr>(e));
    if (fits && iterators.back() == utils::IteratorType::reduction)
      fits = shuffleCombiner(generic) != nullptr;
    if (!fits) {
      why = "an op is not elementwise over rows nor a reduction of whole "
            "rows that warp shuffles can combine";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return why;
}

int64_t tessel::defaultRowThreads(int64_t columns,
                                  const loop::TargetDescription &target) {
  int64_t threads = std::clamp<int64_t>(
      llvm::bit_floor(static_cast<uint64_t>(std::max<int64_t>(columns / 4, 1))),
      loop::kWarpSize, 256);
  while (columns / threads > 16 && threads < target.maxThreadsPerBlock)
    threads *= 2;
  return threads;
}

bool tessel::isSingleValueOp(linalg::LinalgOp op) {
  return llvm::all_of(op.getStaticLoopRanges(),
                      [](int64_t extent) { return extent == 1; });
}

bool tessel::isSingleValueResult(linalg::LinalgOp op) {
  return llvm::all_of(
      llvm::zip(op.getIteratorTypesArray(), op.getStaticLoopRanges()),
      [](auto loop) {
        return std::get<0>(loop) != utils::IteratorType::parallel ||
               std::get<1>(loop) == 1;
      });
}

SmallVector<linalg::GenericOp>
tessel::singleValueReductions(func::FuncOp func) {
  SmallVector<linalg::GenericOp> found;
  for (auto op : func.getBody().front().getOps<linalg::GenericOp>())
    if (op.getNumReductionLoops() > 0 && isSingleValueResult(op) &&
        reducedElements(op).largest > 1)
      found.push_back(op);
  return found;
}

ReducedElements tessel::reducedElements(linalg::GenericOp reduction) {
  auto root = cast<TilingInterface>(reduction.getOperation());
  std::optional<SmallVector<int64_t>> largest = largestLoopExtents(root);
  std::optional<SmallVector<int64_t>> divisors = loopExtentDivisors(root);
  if (!largest || !divisors)
    return {0, 1};
  ReducedElements points{1, 1};
  for (auto [it, most, divisor] : llvm::zip(reduction.getIteratorTypesArray(),
                                            *largest, *divisors))
    if (it == utils::IteratorType::reduction) {
      points.largest *= most;
      points.divisor *= divisor;
    }
  return points;
}

std::string tessel::gridReductionUnfit(func::FuncOp func, int64_t parts,
                                      bool gpu) {
  SmallVector<linalg::GenericOp> reductions = singleValueReductions(func);
  if (reductions.empty())
    return "it has no reduction to a single value";
  for (linalg::GenericOp op : reductions) {
    if (op.getNumDpsInits() != 1)
      return "a reduction to a single value has several results";
    if (gpu && !shuffleCombiner(op))
      return "a reduction to a single value does not combine f32, i32 or "
             "i64 values with an op that has a neutral element, nor take "
             "the maximum or minimum of f16 or bf16 ones";
    if (!gpu && !reductionCombiner(op))
      return "a reduction to a single value does not combine its values "
             "with an op that has a neutral element";
    SmallVector<unsigned> dims;
    op.getReductionDims(dims);
    bool projected =
        cast<linalg::LinalgOp>(op.getOperation()).hasOnlyProjectedPermutations();
    ReassociationIndices merged(dims.begin(), dims.end());
    bool inOrder = dims.size() == 1 ||
                   (projected && dims.back() - dims.front() + 1 == dims.size() &&
                    linalg::areDimSequencesPreserved(op.getIndexingMapsArray(),
                                                     {merged}));
    // Merged, the loops are the row, which must be the last index.
    for (AffineMap map : op.getIndexingMapsArray())
      if (map.getNumResults() &&
          llvm::any_of(map.getResults(), [&](AffineExpr e) {
            return e.isFunctionOfDim(dims.front());
          }))
        inOrder &= map.getResults().back() ==
                   getAffineDimExpr(dims.back(), op.getContext());
    if (!inOrder)
      return "a reduction to a single value reads its loops out of order, "
             "in part or not last (a transposed or broadcast input)";
    if (parts > 1 && (!projected || op.hasIndexSemantics()))
      return "a reduction to a single value in parts needs inputs indexed "
             "by loops alone and no linalg.index";
  }
  return "";
}
