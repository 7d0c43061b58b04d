//===- SplitReduction.h - vectorized partial reductions (CPU) ---*- C++ -*-===//
//
// How loop.split_reduction is carried out (loop-apply-schedule).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_CPU_SPLITREDUCTION_H
#define TESSEL_PASSES_CPU_SPLITREDUCTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace tessel {

/// Whether loop.split_reduction takes `op`: a linalg.generic on tensors of
/// static shape whose innermost loop is its only reduction, with one result,
/// and that reduces along its inputs' rows (not acrossRowsLoop).
bool isSplittableReduction(mlir::linalg::LinalgOp op);

/// Whether loop.split_reduction of `lanes` takes `op`: isSplittableReduction
/// and not shorter than the lanes. A shorter one is left whole: the
/// remainder of a reduction already split, reduced after its vectors, or a
/// row of loop.grid_reduce shorter than the lanes.
bool takesLanes(mlir::linalg::LinalgOp op, int64_t lanes);

/// The parallel loop of `op` along which an input is contiguous when `op`'s
/// innermost loop is a reduction that walks that input across its rows (a
/// sum over axis 0): vectors of partial results along the reduction would
/// gather an element per row, vectors along this loop read whole lines.
std::optional<unsigned> acrossRowsLoop(mlir::linalg::LinalgOp op);

/// Walks `op` (isSplittableReduction) one row (one point of its parallel
/// loops) at a time and tiles each row's reduction loop by `lanes` into
/// partial results (upstream partial-reduction tiling), vectorizes the
/// partial step, keeps its accumulator in registers across the loop, and
/// leaves the final combination after it. When `lanes` does not divide the
/// reduced extent, the remainder is reduced after the split part by a copy
/// of `op`, element by element. Emits an error and fails when `lanes`
/// exceeds the extent, or the remainder cannot be split off.
mlir::LogicalResult splitReduction(mlir::RewriterBase &rewriter,
                                   mlir::linalg::LinalgOp op, int64_t lanes);

} // namespace tessel

#endif // TESSEL_PASSES_CPU_SPLITREDUCTION_H
