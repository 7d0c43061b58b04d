//===- VectorEpilogues.h - elementwise epilogues on vectors ----*- C++ -*-===//
//
// The bias and activation after a CPU tile's multiply-accumulates, computed
// on the accumulators' vectors as they leave the registers instead of in a
// pass of their own over a buffer that a fill zeroes first
// (VectorizeConvolutions.cpp, VectorizeMatmul.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_CPU_VECTOREPILOGUES_H
#define TESSEL_PASSES_CPU_VECTOREPILOGUES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace tessel {

/// The indices `map` gives at `point`, folded.
llvm::SmallVector<mlir::Value> indicesAt(mlir::OpBuilder &b,
                                         mlir::Location loc,
                                         mlir::AffineMap map,
                                         llvm::ArrayRef<mlir::OpFoldResult> point);

/// The elementwise linalg.generic that alone reads `result` (a tile's
/// accumulators), if it can be computed on the tile's vectors of output
/// columns as they leave the registers: its loops `result`'s dims
/// (identity maps for that operand and its own), its result of
/// `result`'s type, its body scalar arith and math ops that do not read
/// its output, its other inputs read at most in their last dim along the
/// columns (a vector) and elsewhere not (a broadcast scalar).
mlir::linalg::GenericOp fusableEpilogue(mlir::Value result);

/// `epilogue` (fusableEpilogue of `result`) at its indices `at`, where the
/// `count` columns of `result` from there are `acc`: each body op on
/// vectors. Unless `inBounds`, the columns may run past the operands' last
/// (a padded tile's): those lanes read zeros.
mlir::Value computeEpilogue(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::linalg::GenericOp epilogue,
                            mlir::Value result, mlir::Value acc,
                            llvm::ArrayRef<mlir::Value> at, int64_t count,
                            bool inBounds = true);

} // namespace tessel

#endif // TESSEL_PASSES_CPU_VECTOREPILOGUES_H
