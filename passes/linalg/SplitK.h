//===- SplitK.h - a matmul as partial products over parts of K --*- C++ -*-===//
//
// How loop.split_k rewrites a kernel's contraction (loop-apply-schedule).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LINALG_SPLITK_H
#define TESSEL_PASSES_LINALG_SPLITK_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace tessel {

/// The two ops a split contraction becomes.
struct SplitK {
  /// The partial products: a batched matmul generic over (batch..., part,
  /// m, n, k) into a zero-filled [batch..., parts, M, N] workspace, reading
  /// A and B with their K dim expanded into [parts, K / parts]. The part
  /// loop is the innermost batch loop.
  mlir::linalg::GenericOp partials;
  /// The sum over (part, batch..., m, n), the part loop outermost (so the
  /// innermost loop reads rows of the workspace), into the contraction's
  /// own accumulator; it replaces the contraction's result.
  mlir::linalg::GenericOp sum;
};

/// Splits `contraction` (a (batched, maybe broadcast) matmul on tensors,
/// matmulBatchLoops) into `parts` partial products and their sum. Emits an
/// error and fails when `parts` does not divide its static K.
mlir::FailureOr<SplitK> splitK(mlir::RewriterBase &rewriter,
                               mlir::linalg::LinalgOp contraction,
                               int64_t parts);

} // namespace tessel

#endif // TESSEL_PASSES_LINALG_SPLITK_H
