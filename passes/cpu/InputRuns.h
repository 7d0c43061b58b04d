//===- InputRuns.h - runs of an input row as vectors ----------*- C++ -*-===//
//
// What the CPU's convolution kernels read: the elements of an input row
// that a run of output columns meets, every stride-th (PackPatches.cpp,
// VectorizeConvolutions.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_CPU_INPUTRUNS_H
#define TESSEL_PASSES_CPU_INPUTRUNS_H

#include "mlir/IR/Builders.h"

namespace tessel {

/// The `count` elements of `source`'s last dim from `indices` on, every
/// `stride`-th, as a vector<count>: read as the span they cover (in bounds)
/// and, at a stride other than 1, shuffled.
mlir::Value readInputRun(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value source, mlir::ValueRange indices,
                         int64_t count, int64_t stride);

} // namespace tessel

#endif // TESSEL_PASSES_CPU_INPUTRUNS_H
