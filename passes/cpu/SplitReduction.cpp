//===- SplitReduction.cpp - vectorized partial reductions (CPU) -----------===//
//
// A scalar floating-point reduction is a chain of dependent adds (or
// maxes): one per element, each waiting for the previous one's latency.
// Tiling its loop by `lanes` into partial results makes each step a
// `lanes`-wide elementwise update of independent accumulators, which
// vectorizes; the accumulators are combined once after the loop.
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/SplitReduction.h"
#include "passes/TileAndFuseRoot.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

using namespace mlir;

bool tessel::isSplittableReduction(linalg::LinalgOp op) {
  if (!isa<linalg::GenericOp>(op) || !op.hasPureTensorSemantics() ||
      op->getNumResults() != 1 || op.getNumReductionLoops() != 1 ||
      ShapedType::isDynamic(op.getStaticLoopRanges().back()))
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  return iterators.back() == utils::IteratorType::reduction &&
         !acrossRowsLoop(op);
}

bool tessel::takesLanes(linalg::LinalgOp op, int64_t lanes) {
  return isSplittableReduction(op) &&
         op.getStaticLoopRanges().back() >= lanes;
}

std::optional<unsigned> tessel::acrossRowsLoop(linalg::LinalgOp op) {
  unsigned innermost = op.getNumLoops() - 1;
  if (op.getNumLoops() < 2 || !linalg::isReductionIterator(
                                  op.getIteratorTypesArray()[innermost]))
    return std::nullopt;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (map.getNumResults() == 0 || !map.isFunctionOfDim(innermost))
      continue;
    auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
    if (last && linalg::isParallelIterator(
                    op.getIteratorTypesArray()[last.getPosition()]))
      return last.getPosition();
  }
  return std::nullopt;
}

namespace {

/// Splits the innermost (reduction) loop of `op` at `main`: `op` then
/// reduces [0, main), and a copy of it reduces [main, extent) starting from
/// its result, which replaces `op`'s uses. Null when the body reads the
/// reduction loop's index, which would restart in the copy, or an operand
/// indexes that loop other than by itself.
linalg::GenericOp peelTail(RewriterBase &rewriter, linalg::GenericOp op,
                           int64_t main) {
  unsigned last = op.getNumLoops() - 1;
  bool readsIndex = false;
  op.getBody()->walk([&](linalg::IndexOp index) {
    readsIndex |= index.getDim() == last;
  });
  if (readsIndex)
    return {};
  int64_t extent = op.getStaticLoopRanges()[last];
  // The operand's slice of the loop range [offset, offset + size).
  auto slice = [&](OpOperand *operand, int64_t offset,
                   int64_t size) -> FailureOr<Value> {
    auto type = cast<RankedTensorType>(operand->get().getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, op.getLoc(), operand->get());
    SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
    bool sliced = false;
    for (auto [pos, expr] :
         llvm::enumerate(cast<linalg::GenericOp>(operand->getOwner())
                             .getMatchingIndexingMap(operand)
                             .getResults())) {
      if (auto dim = dyn_cast<AffineDimExpr>(expr);
          dim && dim.getPosition() == last) {
        offsets[pos] = rewriter.getIndexAttr(offset);
        sizes[pos] = rewriter.getIndexAttr(size);
        sliced = true;
      } else if (expr.isFunctionOfDim(last)) {
        return failure();
      }
    }
    if (!sliced)
      return operand->get();
    return tensor::ExtractSliceOp::create(rewriter, op.getLoc(), operand->get(),
                                          offsets, sizes, strides)
        .getResult();
  };
  rewriter.setInsertionPointAfter(op);
  auto tail = cast<linalg::GenericOp>(rewriter.clone(*op));
  SmallVector<std::pair<OpOperand *, Value>> heads, tails;
  for (OpOperand *in : op.getDpsInputOperands()) {
    rewriter.setInsertionPoint(op);
    FailureOr<Value> head = slice(in, 0, main);
    rewriter.setInsertionPoint(tail);
    FailureOr<Value> rest = slice(tail.getDpsInputOperand(in->getOperandNumber()),
                                  main, extent - main);
    if (failed(head) || failed(rest)) {
      rewriter.eraseOp(tail);
      return {};
    }
    heads.emplace_back(in, *head);
    tails.emplace_back(tail.getDpsInputOperand(in->getOperandNumber()), *rest);
  }
  rewriter.replaceAllUsesWith(op->getResult(0), tail->getResult(0));
  rewriter.modifyOpInPlace(op, [&] {
    for (auto [operand, value] : heads)
      operand->set(value);
  });
  rewriter.modifyOpInPlace(tail, [&] {
    for (auto [operand, value] : tails)
      operand->set(value);
    tail.getDpsInitOperand(0)->set(op->getResult(0));
  });
  return tail;
}

} // namespace

LogicalResult tessel::splitReduction(RewriterBase &rewriter,
                                     linalg::LinalgOp op, int64_t lanes) {
  int64_t extent = op.getStaticLoopRanges().back();
  if (lanes > extent)
    return op.emitError("loop.split_reduction lanes = ")
           << lanes << " exceed this reduction's extent " << extent;
  if (lanes == 1 || lanes == extent)
    return success(); // nothing to split
  // Lanes that do not divide the extent split the whole vectors; the
  // remainder is reduced after them, one element at a time.
  if (int64_t main = extent - extent % lanes; main != extent &&
      !peelTail(rewriter, cast<linalg::GenericOp>(op.getOperation()), main))
    return op.emitError("loop.split_reduction lanes = ")
           << lanes << " do not divide this reduction's extent " << extent
           << ", and its remainder cannot be split off (the body reads the "
           << "reduction's index)";
  // One row at a time: the partial results are one vector of `lanes`, and
  // the row is read contiguously.
  SmallVector<int64_t> rows(op.getNumLoops(), 1);
  rows.back() = 0;
  FailureOr<scf::SCFTilingResult> perRow = tileInLoops(
      rewriter, cast<TilingInterface>(op.getOperation()), rows);
  if (failed(perRow))
    return op.emitError("loop.split_reduction could not tile this reduction "
                        "by rows");
  Operation *row = perRow->tiledOps.front();
  SmallVector<OpFoldResult> sizes(op.getNumLoops(), rewriter.getIndexAttr(0));
  sizes.back() = rewriter.getIndexAttr(lanes);
  rewriter.setInsertionPoint(row);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileReductionUsingScf(
      rewriter, cast<PartialReductionOpInterface>(row), sizes);
  if (failed(tiled))
    return row->emitError("loop.split_reduction could not tile this reduction");
  rewriter.replaceOp(row, tiled->replacements);
  Operation *step = tiled->tiledOps.back();
  rewriter.setInsertionPoint(step);
  FailureOr<linalg::VectorizationResult> vectorized =
      linalg::vectorize(rewriter, step);
  if (failed(vectorized))
    return step->emitError("loop.split_reduction could not vectorize the "
                           "partial reduction");
  rewriter.replaceOp(step, vectorized->replacements);
  // The partial results are read and written whole each step: hoisted, they
  // stay in registers as the loop's iter_args.
  LoopLikeOpInterface loop = tiled->loops.back();
  moveLoopInvariantCode(loop);
  hoistLoopInvariantSubsets(rewriter, loop);
  return success();
}
