//===- RowReduction.h - what loop.warp_reduce accepts ---------*- C++ -*-===//
//
// Shared by the pass that chooses default schedules and the validator.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LOOP_ROWREDUCTION_H
#define TESSEL_PASSES_LOOP_ROWREDUCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/TilingInterface.h"

#include <string>

namespace tessel {

/// Why loop.warp_reduce cannot share the rows of `func`'s kernel among a
/// block's threads, or "" when it can: every linalg op is a fill or a
/// generic whose loops but the last are parallel, whose last loop is the
/// row (of the root's last extent) or has extent 1, which reads and writes
/// the row only at the last loop's index, and whose reductions (over the
/// row) combine f32 values with an op that has a neutral element.
std::string rowReductionUnfit(mlir::func::FuncOp func,
                              mlir::TilingInterface root);

} // namespace tessel

#endif // TESSEL_PASSES_LOOP_ROWREDUCTION_H
