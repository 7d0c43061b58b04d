//===- PackPatches.h - B blocks of a convolution's patches ----*- C++ -*-===//
//
// How loop.vectorize packs the B block of a convolution computed as a
// matmul (linalg-im2col, NCHW): gathered from the input a row segment at a
// time.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_CPU_PACKPATCHES_H
#define TESSEL_PASSES_CPU_PACKPATCHES_H

#include "mlir/IR/PatternMatch.h"

namespace tessel {

/// `block`, a static [depth, columns] B block of a matmul tile, written
/// into `dest` (of its shape) straight from the convolution's input, if it
/// is a slice of patches that linalg-im2col marked (getPatchGeometry)
/// whose columns are whole output rows or equal parts of one: each row of
/// the block is then a few contiguous (or, for a stride, evenly spaced)
/// runs of an input row, moved as vectors. Null otherwise, nothing
/// created.
mlir::Value packPatches(mlir::RewriterBase &rewriter, mlir::Location loc,
                        mlir::Value block, mlir::Value dest);

} // namespace tessel

#endif // TESSEL_PASSES_CPU_PACKPATCHES_H
