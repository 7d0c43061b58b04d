//===- TileAndFuse.cpp - CPU tiling of kernel functions --------------------===//
//
// Each kernel's last result-producing linalg op (the root) is tiled along
// its outer parallel dimensions with scf.forall, and every linalg producer
// in the kernel is fused into the tile. A softmax then runs row block by row
// block with its intermediates in cache instead of making one pass over
// memory per op, and the forall's iterations are independent tasks for the
// async runtime. Tiles hold about `tile-elements` points of the root's
// parallel iteration space (reduction dimensions are never tiled).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace tessel {
#define GEN_PASS_DEF_CPUTILEANDFUSE
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// Contraction kernels: blocks of at most `rows` x `columns` of the result
/// (its last two dims), so that a block's rows of A and columns of B stay
/// in cache; batch dims are tiled by 1.
SmallVector<int64_t> contractionTileSizes(TilingInterface op, OpBuilder &b,
                                          int64_t rows, int64_t columns) {
  SmallVector<Range> domain = op.getIterationDomain(b);
  SmallVector<utils::IteratorType> iterators = op.getLoopIteratorTypes();
  SmallVector<int64_t> parallel;
  for (auto [d, it] : llvm::enumerate(iterators))
    if (it == utils::IteratorType::parallel)
      parallel.push_back(d);
  SmallVector<int64_t> sizes(domain.size(), 0);
  if (parallel.size() < 2)
    return {};
  for (int64_t d : ArrayRef(parallel).drop_back(2))
    sizes[d] = 1;
  int64_t limits[] = {rows, columns};
  for (auto [d, limit] : llvm::zip(ArrayRef(parallel).take_back(2), limits)) {
    std::optional<int64_t> extent = getConstantIntValue(domain[d].size);
    if (!extent)
      return {};
    sizes[d] = *extent > limit ? limit : 0;
  }
  if (llvm::all_of(sizes, [](int64_t s) { return s == 0; }))
    return {};
  return sizes;
}

/// Tile sizes (0 = untiled) giving tiles of about `target` parallel points:
/// inner dims are kept whole, the first dim that overflows is split, outer
/// dims are tiled by 1. Nothing is tiled when the whole op fits.
SmallVector<int64_t> chooseTileSizes(TilingInterface op, OpBuilder &b,
                                     int64_t target) {
  SmallVector<Range> domain = op.getIterationDomain(b);
  SmallVector<utils::IteratorType> iterators = op.getLoopIteratorTypes();
  SmallVector<int64_t> sizes(domain.size(), 0);
  int64_t volume = 1;
  bool split = false;
  for (int64_t d = domain.size() - 1; d >= 0; --d) {
    if (iterators[d] != utils::IteratorType::parallel)
      continue;
    std::optional<int64_t> extent = getConstantIntValue(domain[d].size);
    if (!extent)
      return {};
    if (split) {
      sizes[d] = 1;
    } else if (volume * *extent > target) {
      sizes[d] = std::max<int64_t>(1, target / volume);
      split = true;
    } else {
      volume *= *extent;
    }
  }
  if (!split)
    return {};
  return sizes;
}

struct CpuTileAndFusePass
    : tessel::impl::CpuTileAndFuseBase<CpuTileAndFusePass> {
  using CpuTileAndFuseBase::CpuTileAndFuseBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr("tessel.kernel") || func.isExternal())
      return;
    llvm::SmallPtrSet<Operation *, 4> returned;
    TilingInterface root = findKernelRoot(func, returned);
    if (!root)
      return;
    OpBuilder b(root);
    auto kind = func->getAttrOfType<StringAttr>("tessel.kernel");
    SmallVector<int64_t> sizes =
        kind && kind.getValue() == "contraction"
            ? contractionTileSizes(root, b, contractionRows, contractionColumns)
            : chooseTileSizes(root, b, tileElements);
    if (sizes.empty())
      return;

    IRRewriter rewriter(&getContext());
    if (failed(tileAndFuseRoot(rewriter, root, sizes, /*sequential=*/false,
                               /*mapping=*/{}, returned))) {
      root.emitError("cpu-tile-and-fuse could not tile this op");
      return signalPassFailure();
    }
  }
};

} // namespace
