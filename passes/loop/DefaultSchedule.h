//===- DefaultSchedule.h - default tilings for other passes -*- C++ -*-===//
//
// loop-default-schedule's tiling of kernels that neither tensor cores nor
// warp reductions take; loop-apply-schedule reuses it for the sum of a
// loop.split_k.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LOOP_DEFAULTSCHEDULE_H
#define TESSEL_PASSES_LOOP_DEFAULTSCHEDULE_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Attributes.h"

#include <optional>

namespace tessel {

/// Two tile levels: blocks, then threads (one point each).
struct PointwiseTiling {
  llvm::SmallVector<int64_t> blockSizes, threadSizes;
  llvm::SmallVector<mlir::Attribute> blockMapping, threadMapping;
};

/// The GPU tiling of a root with loops of `extents`: blocks of 256 threads
/// along its innermost parallel loop, outer parallel loops one index per
/// block (up to the grid's three dims), each thread one point. With
/// `rowwise`, the innermost loop (a reduced row) stays whole in a thread
/// and blocks hold 64 rows. Nothing when no loop can be distributed.
std::optional<PointwiseTiling>
gpuPointwiseTiling(mlir::MLIRContext *ctx, llvm::ArrayRef<int64_t> extents,
                   llvm::ArrayRef<mlir::utils::IteratorType> iterators,
                   bool rowwise);

} // namespace tessel

#endif // TESSEL_PASSES_LOOP_DEFAULTSCHEDULE_H
