//===- Alignment.h - which accesses can move vectors ---------*- C++ -*-===//
//
// Shared by gpu-distribute-rows and loop-vector-access, which load and
// store runs of adjacent elements as one vector where they can prove the run
// starts at a multiple of its own size from a 16-byte aligned buffer (every
// buffer that the CUDA runtime or the CPU executable gives a kernel is).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LOOP_ALIGNMENT_H
#define TESSEL_PASSES_LOOP_ALIGNMENT_H

#include "mlir/IR/Value.h"

namespace tessel {

/// A divisor of the index `value` (a power of two of at most 2^30; 1 when
/// nothing is known), from constants, affine.apply, arith.addi/muli and the
/// induction variables of scf.for and scf.forall.
int64_t knownDivisor(mlir::Value value);

/// Whether every run of `width` elements of `buffer`'s innermost dim that
/// starts at a multiple of `width` can move as one vector aligned to
/// `chunkAlignment`: the innermost dim is contiguous, the other strides and
/// the offsets of subviews are multiples of `width`, down through casts and
/// reshapes to a buffer of the host program (a kernel argument or a
/// top-level alloc), and the elements are whole bytes.
bool isChunkAligned(mlir::Value buffer, int64_t width);

/// The widest int or float element type that `op` reads or writes (null
/// when none): what bounds the points a thread can move in one vector.
mlir::Type widestElement(mlir::Operation *op);

/// Bytes that an element of `type` (an int or float) takes in memory.
inline int64_t elementBytes(mlir::Type type) {
  return (type.getIntOrFloatBitWidth() + 7) / 8;
}

/// The alignment in bytes of such a run of `width` elements of `element`:
/// its size, up to loop::kMaxVectorBytes (the buffers' alignment).
int64_t chunkAlignment(mlir::Type element, int64_t width);

} // namespace tessel

#endif // TESSEL_PASSES_LOOP_ALIGNMENT_H
