//===- VectorizeMatmul.h - register-blocked matmuls for the CPU -*- C++ -*-===//
//
// How loop.vectorize is carried out (loop-apply-schedule, CPU schedules).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_CPU_VECTORIZEMATMUL_H
#define TESSEL_PASSES_CPU_VECTORIZEMATMUL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace tessel {

/// Tiles the linalg.matmul `op` (on tensors, of static K) with scf.for along
/// K into cache blocks of `depth` (when smaller than K; the A and B blocks
/// of a step are copied into contiguous tensors), then into register blocks
/// of `registerTile` = (rows, columns, depth), each vectorized into a
/// vector.contract whose accumulator is hoisted out of the depth loop. A
/// tile that these do not divide, or of dynamic rows or columns (the edge of
/// a tiling that does not divide the matmul), is first padded with zeros to
/// static multiples of them (K blocks of `depth` rounded up to whole
/// register blocks). Emits an error and fails when it cannot.
mlir::LogicalResult vectorizeMatmul(mlir::RewriterBase &rewriter,
                                    mlir::linalg::MatmulOp op, int64_t depth,
                                    llvm::ArrayRef<int64_t> registerTile);

/// The matmul of a kernel that loop.vectorize can take: the kernel's only
/// linalg.matmul, of static shape, which is the kernel's root or read at the
/// identity by an elementwise root whose other inputs are kernel arguments
/// or constants, so that a tile of the root is the same tile of the matmul.
/// Null otherwise.
mlir::linalg::MatmulOp findVectorizableMatmul(mlir::func::FuncOp func,
                                              mlir::TilingInterface root);

/// Registers what vectorizeMatmul needs beyond its dialects: the vector
/// transfer ops as subsets, so the accumulator can be hoisted.
void registerVectorizeMatmulInterfaces(mlir::DialectRegistry &registry);

} // namespace tessel

#endif // TESSEL_PASSES_CPU_VECTORIZEMATMUL_H
