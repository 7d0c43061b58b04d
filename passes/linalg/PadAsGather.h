//===- PadAsGather.h - a tensor.pad as a pointwise gather ------*- C++ -*-===//
//
// How loop-apply-schedule gives a GPU kernel's leftover tensor.pad threads:
// tiled as a pad, each tile becomes branches (all padding, or a pad of a
// slice) whose buffers bufferization can only free with run-time
// ownership; as a gather, every point is one load or the padding value.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LINALG_PADASGATHER_H
#define TESSEL_PASSES_LINALG_PADASGATHER_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace tessel {

/// Replaces `pad` (static shapes and bounds, a padding value that does not
/// depend on the position) by an elementwise linalg.generic whose body
/// reads the source at the point's index minus the low padding, a clamped
/// (valid) one in the padding, and selects the padding value outside the
/// source. Fails, changing nothing, on a pad of another form.
mlir::FailureOr<mlir::linalg::GenericOp>
padAsGather(mlir::RewriterBase &rewriter, mlir::tensor::PadOp pad);

} // namespace tessel

#endif // TESSEL_PASSES_LINALG_PADASGATHER_H
