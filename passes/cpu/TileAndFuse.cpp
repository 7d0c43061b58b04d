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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace tessel {
#define GEN_PASS_DEF_CPUTILEANDFUSE
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

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
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    // The root: the last op in the body whose result the kernel returns.
    TilingInterface root;
    for (Operation &op : func.getBody().front())
      if (auto t = dyn_cast<TilingInterface>(&op);
          t && isa<linalg::LinalgOp>(&op) &&
          llvm::any_of(op.getUsers(),
                       [&](Operation *u) { return u == ret.getOperation(); }))
        root = t;
    if (!root)
      return;
    OpBuilder b(root);
    SmallVector<int64_t> sizes = chooseTileSizes(root, b, tileElements);
    if (sizes.empty())
      return;

    scf::SCFTileAndFuseOptions options;
    options.tilingOptions.setTileSizes(
        getAsIndexOpFoldResult(&getContext(), sizes));
    options.tilingOptions.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
    // A fused producer the kernel also returns is yielded from the loop
    // instead of being computed a second time outside it.
    options.setFusionControlFn(
        [&](tensor::ExtractSliceOp, OpResult producer, bool)
            -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
          if (!isa<linalg::LinalgOp>(producer.getOwner()))
            return std::nullopt;
          bool returned = llvm::is_contained(ret.getOperands(), producer);
          return scf::SCFTileAndFuseOptions::ControlFnResult{returned};
        });
    IRRewriter rewriter(&getContext());
    FailureOr<scf::SCFTileAndFuseResult> result =
        scf::tileConsumerAndFuseProducersUsingSCF(rewriter, root, options);
    if (failed(result)) {
      root.emitError("cpu-tile-and-fuse could not tile this op");
      return signalPassFailure();
    }
    for (auto [original, replacement] : result->replacements)
      rewriter.replaceAllUsesWith(original, replacement);
  }
};

} // namespace
