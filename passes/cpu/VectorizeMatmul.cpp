//===- VectorizeMatmul.cpp - register-blocked matmuls for the CPU ---------===//
//
// Each linalg.matmul of a kernel (after cpu-tile-and-fuse, so usually one
// cache-sized tile) is tiled with scf.for into register blocks of
// `register-tile` = (rows, columns, depth) and each block is vectorized into
// a vector.contract. The accumulator block's read and write are hoisted out
// of the depth loop, so it stays in vector registers while the depth loop
// streams one row of B and broadcasts a column of A per step (outer
// products). Tile sizes that do not divide a dimension are reduced to the
// largest power-of-two divisor, keeping every block static.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace tessel {
#define GEN_PASS_DEF_CPUVECTORIZEMATMUL
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// The largest divisor of `extent` that is `wanted` halved zero or more times.
int64_t fittingTile(int64_t extent, int64_t wanted) {
  while (wanted > 1 && extent % wanted != 0)
    wanted /= 2;
  return std::max<int64_t>(wanted, 1);
}

/// Copies the A and B blocks of a cache block into contiguous buffers: rows
/// of the original matrices are a page or more apart, so the register
/// blocks' walk over them would miss the TLB at every row.
void packOperands(RewriterBase &rewriter, linalg::MatmulOp op) {
  rewriter.setInsertionPoint(op);
  for (OpOperand *operand : op.getDpsInputOperands()) {
    auto type = cast<RankedTensorType>(operand->get().getType());
    Value empty = tensor::EmptyOp::create(rewriter, op.getLoc(),
                                          type.getShape(),
                                          type.getElementType());
    Value packed = linalg::CopyOp::create(rewriter, op.getLoc(), operand->get(),
                                          empty)
                       .getResult(0);
    rewriter.modifyOpInPlace(op, [&] { operand->set(packed); });
  }
}

struct CpuVectorizeMatmulPass
    : tessel::impl::CpuVectorizeMatmulBase<CpuVectorizeMatmulPass> {
  using CpuVectorizeMatmulBase::CpuVectorizeMatmulBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    CpuVectorizeMatmulBase::getDependentDialects(registry);
    // Lets the accumulator's transfer_read/write pair be hoisted as a subset.
    vector::registerSubsetOpInterfaceExternalModels(registry);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr("tessel.kernel") || func.isExternal())
      return;
    if (registerTile.size() != 3) {
      func.emitError("register-tile needs 3 sizes (rows, columns, depth)");
      return signalPassFailure();
    }
    SmallVector<linalg::MatmulOp> matmuls;
    func.walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::MatmulOp op : matmuls) {
      SmallVector<int64_t> bounds = op.getStaticLoopRanges();
      if (ShapedType::isDynamicShape(bounds) || !op.hasPureTensorSemantics())
        continue;
      auto tile = [&](Operation *target, ArrayRef<int64_t> sizes)
          -> FailureOr<scf::SCFTilingResult> {
        rewriter.setInsertionPoint(target);
        scf::SCFTilingOptions options;
        options.setTileSizes(getAsIndexOpFoldResult(&getContext(), sizes));
        FailureOr<scf::SCFTilingResult> tiled =
            scf::tileUsingSCF(rewriter, cast<TilingInterface>(target), options);
        if (succeeded(tiled))
          rewriter.replaceOp(target, tiled->replacements);
        return tiled;
      };
      // Cache blocks along K first (when K is larger than one block).
      int64_t kBlock = fittingTile(bounds[2], depthBlock);
      Operation *target = op;
      if (kBlock < bounds[2]) {
        FailureOr<scf::SCFTilingResult> cacheBlocks = tile(op, {0, 0, kBlock});
        if (failed(cacheBlocks)) {
          op.emitError("cpu-vectorize-matmul could not tile this matmul");
          return signalPassFailure();
        }
        target = cacheBlocks->tiledOps.front();
        packOperands(rewriter, cast<linalg::MatmulOp>(target));
      }
      SmallVector<int64_t> extents = {bounds[0], bounds[1], kBlock};
      SmallVector<int64_t> sizes;
      for (auto [extent, wanted] : llvm::zip(extents, registerTile))
        sizes.push_back(fittingTile(extent, wanted));
      FailureOr<scf::SCFTilingResult> tiled = tile(target, sizes);
      if (failed(tiled)) {
        op.emitError("cpu-vectorize-matmul could not tile this matmul");
        return signalPassFailure();
      }
      Operation *block = tiled->tiledOps.front();
      rewriter.setInsertionPoint(block);
      FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(
          rewriter, block, /*inputVectorSizes=*/{}, /*inputScalableVecDims=*/{},
          /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
          /*assumeDynamicDimsMatchVecSizes=*/false,
          /*createNamedContraction=*/true);
      if (failed(vectorized)) {
        block->emitError("cpu-vectorize-matmul could not vectorize a block");
        return signalPassFailure();
      }
      rewriter.replaceOp(block, vectorized->replacements);
      // The depth loop is innermost. Its accumulator is a slice of the C
      // tile read by a transfer_read: hoisting peels one subset per call.
      LoopLikeOpInterface depth = tiled->loops.back();
      // Constants the vectorizer created inside it must leave first.
      for (int peel = 0; peel < 2; ++peel) {
        moveLoopInvariantCode(depth);
        depth = hoistLoopInvariantSubsets(rewriter, depth);
      }
    }
  }
};

} // namespace
