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

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

using namespace mlir;

bool tessel::isSplittableReduction(linalg::LinalgOp op) {
  if (!isa<linalg::GenericOp>(op) || !op.hasPureTensorSemantics() ||
      op->getNumResults() != 1 || op.getNumReductionLoops() != 1 ||
      ShapedType::isDynamicShape(op.getStaticLoopRanges()))
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  return iterators.back() == utils::IteratorType::reduction;
}

LogicalResult tessel::splitReduction(RewriterBase &rewriter,
                                     linalg::LinalgOp op, int64_t lanes) {
  int64_t extent = op.getStaticLoopRanges().back();
  if (extent % lanes != 0)
    return op.emitError("loop.split_reduction lanes = ")
           << lanes << " does not divide this reduction's extent " << extent;
  if (lanes == 1 || lanes == extent)
    return success(); // nothing to split
  // One row at a time: the partial results are one vector of `lanes`, and
  // the row is read contiguously.
  SmallVector<OpFoldResult> rows(op.getNumLoops(), rewriter.getIndexAttr(1));
  rows.back() = rewriter.getIndexAttr(0);
  rewriter.setInsertionPoint(op);
  scf::SCFTilingOptions rowOptions;
  rowOptions.setTileSizes(rows);
  FailureOr<scf::SCFTilingResult> perRow = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), rowOptions);
  if (failed(perRow))
    return op.emitError("loop.split_reduction could not tile this reduction "
                        "by rows");
  rewriter.replaceOp(op, perRow->replacements);
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
