//===- DefaultSchedule.h - default tilings for other passes -*- C++ -*-===//
//
// loop-default-schedule's tiling of kernels that neither tensor cores nor
// warp reductions take; loop-apply-schedule reuses it for the sum of a
// loop.split_k.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LOOP_DEFAULTSCHEDULE_H
#define TESSEL_PASSES_LOOP_DEFAULTSCHEDULE_H

#include "dialects/loop/Target.h"
#include "mlir/IR/Attributes.h"
#include "mlir/Interfaces/TilingInterface.h"

#include <optional>

namespace tessel {

/// Two tile levels: blocks, then threads (one point each, or `vector`
/// adjacent points of the innermost loop, and of `squareLoop`); for vectors, a sequential level
/// of single points of the loops that the grid cannot take, when any.
struct PointwiseTiling {
  llvm::SmallVector<int64_t> blockSizes, threadSizes, pointSizes;
  llvm::SmallVector<mlir::Attribute> blockMapping, threadMapping;
  /// Points per thread, moved as vectors (loop.vector_access) when above 1.
  int64_t vector = 1;
  /// The vector widths legal for these block sizes (ascending).
  llvm::SmallVector<int64_t> vectorChoices;
  /// A loop that also has `vector` points per thread (on threads along y),
  /// along which an input is contiguous (a transpose's); -1 for none.
  int64_t squareLoop = -1;
};

/// The GPU tiling of `root` (of static shape): blocks of 256 threads along
/// its innermost parallel loop, outer parallel loops one index per block
/// (up to the grid's three dims). Each thread takes one point or, when the
/// root is elementwise, a vector of up to 16 bytes of its widest element
/// along its innermost loop (the most points that divide the loop). With
/// `rowwise`, the innermost loop (a reduced row) stays whole in a thread
/// and blocks hold 64 rows. Nothing when no loop can be distributed.
std::optional<PointwiseTiling>
gpuPointwiseTiling(mlir::TilingInterface root, bool rowwise,
                   const loop::TargetDescription &target);

} // namespace tessel

#endif // TESSEL_PASSES_LOOP_DEFAULTSCHEDULE_H
