//===- Contractions.h - the matmuls that schedules recognize --*- C++ -*-===//
//
// One definition, shared by the CPU (loop.vectorize) and GPU (loop.mma)
// schedules, of a (batched) matmul and of a kernel whose root computes a
// tile of one.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LINALG_CONTRACTIONS_H
#define TESSEL_PASSES_LINALG_CONTRACTIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/TilingInterface.h"

#include <string>

namespace tessel {

/// Leading batch loops of a (batched) matmul, on tensors or buffers: a
/// linalg.matmul (0), or a generic contraction over (batch..., m, n, k)
/// reading A at (batch..., m, k) and B at (batch..., k, n) into C at
/// (batch..., m, n); A and B may also read batch dims after their row
/// (A at (m, part, k) after loop.split_k). With `broadcast`, A and B may
/// read only some of the batch loops (their broadcast dims dropped).
/// Nothing otherwise.
std::optional<unsigned> matmulBatchLoops(mlir::linalg::LinalgOp op,
                                         bool broadcast);

/// `acc + lhs * rhs` in the type of `acc`, the factors converted to it
/// first (f16 and bf16 extended to f32, integers sign-extended): the body of
/// a contraction generic.
mlir::Value multiplyAccumulate(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value lhs, mlir::Value rhs,
                               mlir::Value acc);

/// Whether `v` is a kernel argument, maybe reshaped (x @ W on a 3-D x reads
/// x collapsed to 2-D): a buffer of the host program, not computed in the
/// kernel.
bool isKernelArgument(mlir::Value v);

/// The linalg op of the kernel that computes `v`, maybe reshaped; null for
/// a kernel argument or anything else.
mlir::linalg::LinalgOp computingOp(mlir::Value v);

/// The contraction `root` computes a tile of: the kernel's only linalg
/// contraction, when it is `root` itself or read at the identity by a chain
/// of elementwise generics ending in `root`, whose other inputs are kernel
/// arguments or constants. Each value of the chain (the contraction's
/// included) is read by one op of the chain at most, and otherwise only
/// returned. A tile of the root is then the same tile of the contraction.
/// Null, with the reason in `why`, otherwise.
mlir::linalg::LinalgOp findRootContraction(mlir::func::FuncOp func,
                                           mlir::TilingInterface root,
                                           std::string &why);
/// The same for a schedule's `primitive` that needs it: null after an error
/// at `primitive` saying why there is none.
mlir::linalg::LinalgOp findRootContraction(mlir::Operation *primitive,
                                           mlir::func::FuncOp func,
                                           mlir::TilingInterface root);

} // namespace tessel

#endif // TESSEL_PASSES_LINALG_CONTRACTIONS_H
