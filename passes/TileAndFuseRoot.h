//===- TileAndFuseRoot.h - tiling a kernel's root with its producers -*- C++ -*-===//
//
// Shared by cpu-tile-and-fuse and loop-apply-schedule: both tile the root of
// a kernel function (the last linalg op whose result it returns) and fuse
// every linalg producer into the tile. Also the tiling of one op by scf.for
// loops that the CPU passes share (tileInLoops).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_TILEANDFUSEROOT_H
#define TESSEL_PASSES_TILEANDFUSEROOT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace tessel {

/// Adds to `returned` every linalg op whose result the kernel returns,
/// maybe through reshapes (a batched x @ W is a 2-D matmul between two).
void collectReturnedLinalgOps(mlir::func::FuncOp func,
                              llvm::SmallPtrSetImpl<mlir::Operation *> &returned);

/// The root of a `tessel.kernel` function: the last linalg op whose result
/// it returns. Null when the kernel returns no linalg result. `returned`
/// receives every returned linalg op (collectReturnedLinalgOps).
mlir::TilingInterface
findKernelRoot(mlir::func::FuncOp func,
               llvm::SmallPtrSetImpl<mlir::Operation *> &returned);

/// The roots of a `tessel.kernel` function with the index of the first
/// result each computes, last root first: the returned linalg ops that are
/// not producers of a later root. Tiling each root fused with its producers
/// computes every result of the kernel.
llvm::SmallVector<std::pair<unsigned, mlir::TilingInterface>>
findKernelRoots(mlir::func::FuncOp func);

/// The root a schedule names: the first root (the last result's) when
/// `result` is empty, else the root computing that result. Null for an
/// empty schedule of a kernel without roots (one that only concatenates
/// its inputs): it has nothing to tile. Emits an error at `schedule` and
/// fails when there is no such root.
mlir::FailureOr<mlir::TilingInterface> scheduledRoot(
    mlir::Operation *schedule, mlir::func::FuncOp func,
    llvm::ArrayRef<std::pair<unsigned, mlir::TilingInterface>> roots,
    std::optional<uint64_t> result);

/// The function argument attribute giving the argument's size symbols
/// (#graph.shape), which graph-to-linalg keeps when it drops the encodings.
constexpr llvm::StringLiteral kArgumentShape = "graph.shape";

/// The extent of each loop of `root`, a dynamic one at its largest: its
/// size in terms of the kernel's argument dims, each of them its
/// `kArgumentShape` expression with every symbol at its largest value in
/// the function's `graph.dims`. Nothing when a dynamic extent is not such
/// an expression (no declared range, or a size the IR does not tie to the
/// arguments).
std::optional<llvm::SmallVector<int64_t>>
largestLoopExtents(mlir::TilingInterface root);

/// A number that divides each loop's extent of `root` at every size: a
/// dynamic one's expression over its symbols' declared multiples
/// (`#graph.dim<1, 2048, multiple_of 8>`), as largestLoopExtents follows
/// sizes; nothing where it cannot.
std::optional<llvm::SmallVector<int64_t>>
loopExtentDivisors(mlir::TilingInterface root);

/// The largest size of dim `dim` of `shaped` (a tensor or buffer of a
/// kernel function) over its size symbols' ranges, as largestLoopExtents
/// finds sizes; nothing where the IR does not tie it to the arguments.
std::optional<int64_t> largestSize(mlir::Value shaped, int64_t dim);

/// Tiles `root` by `sizes` (0 = untiled) into an scf.forall (with `mapping`,
/// which may be empty) or, when `sequential`, scf.for loops, fuses every
/// linalg producer into the innermost tile, and redirects later uses to the
/// loop's results. A producer in `returned` is yielded from the loop rather
/// than recomputed outside it. Returns the tiled root, or failure.
mlir::FailureOr<mlir::TilingInterface>
tileAndFuseRoot(mlir::RewriterBase &rewriter, mlir::TilingInterface root,
                llvm::ArrayRef<int64_t> sizes, bool sequential,
                llvm::ArrayRef<mlir::Attribute> mapping,
                const llvm::SmallPtrSetImpl<mlir::Operation *> &returned);

/// Tiles `op` by `sizes` (0 = untiled) into scf.for loops, nested in the
/// order of `interchange` (empty: the op's), and replaces `op` with their
/// results. Returns the tiling, or failure with `op` left as it was.
mlir::FailureOr<mlir::scf::SCFTilingResult>
tileInLoops(mlir::RewriterBase &rewriter, mlir::TilingInterface op,
            llvm::ArrayRef<int64_t> sizes,
            llvm::ArrayRef<int64_t> interchange = {});

} // namespace tessel

#endif // TESSEL_PASSES_TILEANDFUSEROOT_H
