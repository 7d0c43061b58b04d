//===- GridReduce.h - reductions to a single value across the grid -*- C++ -*-===//
//
// How loop.grid_reduce is carried out (loop-apply-schedule).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LOOP_GRIDREDUCE_H
#define TESSEL_PASSES_LOOP_GRIDREDUCE_H

#include "dialects/loop/Loop.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace tessel {

/// Carries out `primitive` on kernel `func` (gridReductionUnfit holds with
/// its part count): each reduction to a single value, its loops merged into
/// one, is split into rows of partial results (of unequal lengths where the
/// part count does not divide it at every size), one block per row, and the partials and the single-value ops
/// that read them (transitively) move into a one-block scf.forall. Both
/// are marked for gpu-distribute-rows. The kernel's other ops are left for
/// the leftover tiling.
mlir::LogicalResult gridReduce(mlir::RewriterBase &rewriter,
                               loop::GridReduceOp primitive,
                               mlir::func::FuncOp func);

/// Carries out CPU `primitive` on kernel `func` (gridReductionUnfit holds
/// with its part count): each reduction to
/// a single value, its loops merged into one, is split into rows of
/// partial results, one parallel task (scf.forall iteration) per row, each
/// walked in `lanes` partial results (loop.split_reduction; 1: none). The
/// combination and the single-value ops that read it move into a
/// one-iteration scf.forall, computed once before the root's tiles.
mlir::LogicalResult cpuGridReduce(mlir::RewriterBase &rewriter,
                                  loop::GridReduceOp primitive,
                                  mlir::func::FuncOp func, int64_t lanes);

} // namespace tessel

#endif // TESSEL_PASSES_LOOP_GRIDREDUCE_H
