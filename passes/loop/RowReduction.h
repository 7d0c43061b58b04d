//===- RowReduction.h - what warp_reduce and grid_reduce accept -*- C++ -*-===//
//
// Shared by the pass that chooses default schedules and the validator.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LOOP_ROWREDUCTION_H
#define TESSEL_PASSES_LOOP_ROWREDUCTION_H

#include "dialects/loop/Target.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/TilingInterface.h"

#include <optional>
#include <string>

namespace tessel {

/// The rows of a row-reduction kernel: their length (at its largest over
/// size symbols), the loop's static extent (ShapedType::kDynamic for a
/// row over a size symbol), and whether the root's last loop walks them (an
/// elementwise root over rows, a root that reduces them) or the root has
/// none (it computes per-row values from the reductions, such as the f16
/// cast of an f32 row sum).
struct KernelRows {
  int64_t columns;
  int64_t extent;
  bool rootWalksRow;
};

/// The rows of `func`'s kernel with root `root`: when the root is
/// elementwise, those of a reduction whose other loops are the root's if
/// there is one, else the root's last loop. Nothing when the root has no
/// loops or a size the kernel's arguments do not give.
std::optional<KernelRows> kernelRows(mlir::func::FuncOp func,
                                     mlir::TilingInterface root);

/// The op that combines `op`'s reduced values when the body yields
/// combiner(out, ...) for a combiner with a neutral element (what upstream
/// splitReduction needs), else null.
mlir::Operation *reductionCombiner(mlir::linalg::GenericOp op);

/// The op that combines `op`'s reduced values, when loop.warp_reduce can
/// combine partials of it through warp shuffles, else null: the body yields
/// combiner(out, ...) for a combiner with a neutral element over f32, i32
/// or i64 values, or the maximum or minimum of f16 or bf16 ones, which are
/// exact in f32.
mlir::Operation *shuffleCombiner(mlir::linalg::GenericOp op);

/// Why loop.warp_reduce cannot share the rows of `func`'s kernel among a
/// block's threads, or "" when it can: every linalg op is a fill or a
/// generic whose loops but the last are parallel, whose last loop is the
/// row (kernelRows) or has extent 1, or that has no row loop when the root
/// has none, which reads and writes the row only at the last loop's index,
/// and whose reductions (over the row) have a shuffleCombiner.
std::string rowReductionUnfit(mlir::func::FuncOp func,
                              mlir::TilingInterface root);

/// Threads of a block sharing rows of `columns`: four or more columns per
/// thread, at most 256 threads; more (up to 1024) where a thread would get
/// over 16 columns, which gpu-distribute-rows keeps in registers (at 8192
/// f16 columns, 256 threads make ptxas spill, 512 do not).
int64_t defaultRowThreads(int64_t columns,
                          const loop::TargetDescription &target);

/// Whether every loop of `op` has extent 1 (or it has none): an op on
/// single values.
bool isSingleValueOp(mlir::linalg::LinalgOp op);

/// Whether every parallel loop of `op` has extent 1: its result is a
/// single value (a sum to a scalar, an op on single values).
bool isSingleValueResult(mlir::linalg::LinalgOp op);

/// The reductions at the top level of `func` that leave a single value, in
/// order: generics whose parallel loops have extent 1 and whose reduction
/// loops more than one point at their largest (over size symbols, their
/// declared ranges: largestLoopExtents).
llvm::SmallVector<mlir::linalg::GenericOp>
singleValueReductions(mlir::func::FuncOp func);

/// The points a reduction to a single value combines: as many as `largest`
/// at most, always a multiple of `divisor` (both the count where it is
/// static); `largest` is 0 where the IR does not tie a size to the
/// kernel's arguments.
struct ReducedElements {
  int64_t largest, divisor;
};
ReducedElements reducedElements(mlir::linalg::GenericOp reduction);

/// Why loop.grid_reduce cannot take the reductions to a single value of
/// `func`'s kernel in `parts` parts, or "" when it can: there is one, each
/// has one result and a shuffleCombiner on GPUs (a reductionCombiner on
/// the CPU), its reduction loops are consecutive and every
/// operand reads them in order at its last indices (merged, they are a
/// row); more than one part also needs projected permutations and no
/// linalg.index (upstream splitReduction, and the partial-reduction tiling
/// of rows of unequal lengths).
std::string gridReductionUnfit(mlir::func::FuncOp func, int64_t parts,
                               bool gpu);

} // namespace tessel

#endif // TESSEL_PASSES_LOOP_ROWREDUCTION_H
