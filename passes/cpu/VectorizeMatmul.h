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

#include <string>

namespace tessel {

/// Tiles the (batched) matmul `op` (on tensors, of static K; batch loops
/// are walked one index at a time, each a 2-D linalg.matmul) with scf.for
/// along K into cache blocks of at most `depth` (equal ones, rounded up to
/// whole register blocks), each along its rows into blocks of at most
/// `rows` (whole register blocks that divide the rows; when there are
/// several, the B block of a step is first copied into a buffer they all
/// read), then into register blocks of
/// `registerTile` = (rows, columns, depth), each vectorized into a
/// vector.contract whose accumulator is hoisted out of the depth loop. A
/// tile that these do not divide is first padded with zeros to static
/// multiples of them; one of dynamic rows or columns (a tiling that does
/// not divide the matmul) is split by an scf.if into the full tile, read in
/// place at its static size, and the partial edge tile, computed on padded
/// copies over its live row and register blocks. Emits an error and fails
/// when it cannot.
mlir::LogicalResult vectorizeMatmul(mlir::RewriterBase &rewriter,
                                    mlir::linalg::LinalgOp op, int64_t rows,
                                    int64_t depth,
                                    llvm::ArrayRef<int64_t> registerTile);

/// The width of the register blocks that take the `columns` of a matmul
/// tile left over by whole blocks `width` wide, or 0 where those columns
/// are instead padded to a whole block: the power of two at or above
/// them, where narrower than a block and not all the tile's columns. A
/// 7x7 convolution's 49 pixels are 3 blocks of 16 and one of 1, not 4 of
/// 16. Also 0 for dynamic `columns`.
int64_t tailColumns(int64_t columns, int64_t width);

/// The matmul of a kernel that loop.vectorize can take: the kernel's root
/// contraction (findRootContraction), a (batched, maybe broadcast) matmul
/// of static shape on tensors. Null, with the reason in `why`, otherwise.
mlir::linalg::LinalgOp findVectorizableMatmul(mlir::func::FuncOp func,
                                              mlir::TilingInterface root,
                                              std::string &why);

/// Registers what vectorizeMatmul needs beyond its dialects: the vector
/// transfer ops as subsets, so the accumulator can be hoisted.
void registerVectorizeMatmulInterfaces(mlir::DialectRegistry &registry);

} // namespace tessel

#endif // TESSEL_PASSES_CPU_VECTORIZEMATMUL_H
