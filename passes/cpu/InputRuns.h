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

/// `lanes` rounded up to whole vectors of 8 (x86's 256-bit registers), or
/// of a power of two where fewer: LLVM loads and stores a vector of 7 or 14
/// lanes in pieces of 8, 4, 2 and 1.
int64_t wholeVector(int64_t lanes);

/// The `count` elements of `source`'s last dim from `indices` on, every
/// `stride`-th, as a vector<count>: read as the span they cover (in bounds)
/// or, where the last index is a constant, as whole vectors (wholeVector) of
/// count * stride elements, those past the row's end masked to `padding`
/// (zero where null); then, where that is more than count, shuffled. The
/// first `leading` lanes are `padding` instead (a padded row's columns
/// before it), the read's first element lane `leading`.
mlir::Value readInputRun(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value source, mlir::ValueRange indices,
                         int64_t count, int64_t stride,
                         mlir::Value padding = {}, int64_t leading = 0);

} // namespace tessel

#endif // TESSEL_PASSES_CPU_INPUTRUNS_H
