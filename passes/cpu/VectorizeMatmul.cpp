//===- VectorizeMatmul.cpp - register-blocked matmuls for the CPU ---------===//
//
// A matmul tile is walked in K blocks that stay in L2, and each K block in
// register blocks: one vector.contract per block, lowered to outer
// products (a row of B streamed, a column of A broadcast per step) into an
// accumulator that stays in vector registers across the depth loop.
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/VectorizeMatmul.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

using namespace mlir;

namespace {

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

FailureOr<scf::SCFTilingResult> tile(RewriterBase &rewriter, Operation *target,
                                     ArrayRef<int64_t> sizes) {
  rewriter.setInsertionPoint(target);
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  FailureOr<scf::SCFTilingResult> tiled =
      scf::tileUsingSCF(rewriter, cast<TilingInterface>(target), options);
  if (succeeded(tiled))
    rewriter.replaceOp(target, tiled->replacements);
  return tiled;
}

} // namespace

linalg::MatmulOp tessel::findVectorizableMatmul(func::FuncOp func,
                                                TilingInterface root) {
  SmallVector<linalg::MatmulOp> matmuls;
  func.walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
  if (matmuls.size() != 1)
    return {};
  linalg::MatmulOp matmul = matmuls.front();
  if (ShapedType::isDynamicShape(matmul.getStaticLoopRanges()) ||
      !matmul.hasPureTensorSemantics())
    return {};
  if (root.getOperation() == matmul.getOperation())
    return matmul;
  auto epilogue = dyn_cast<linalg::GenericOp>(root.getOperation());
  if (!epilogue || epilogue.getNumLoops() != 2 ||
      epilogue.getNumParallelLoops() != 2)
    return {};
  bool readsMatmul = false;
  for (OpOperand *in : epilogue.getDpsInputOperands()) {
    Value v = in->get();
    if (v == matmul->getResult(0)) {
      if (!epilogue.getMatchingIndexingMap(in).isIdentity())
        return {};
      readsMatmul = true;
      continue;
    }
    // A kernel argument (maybe reshaped) or a constant: nothing to fuse.
    while (isa_and_present<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(
        v.getDefiningOp()))
      v = v.getDefiningOp()->getOperand(0);
    if (!isa<BlockArgument>(v) &&
        !isa_and_present<arith::ConstantOp>(v.getDefiningOp()))
      return {};
  }
  return readsMatmul ? matmul : linalg::MatmulOp();
}

void tessel::registerVectorizeMatmulInterfaces(DialectRegistry &registry) {
  vector::registerSubsetOpInterfaceExternalModels(registry);
}

LogicalResult tessel::vectorizeMatmul(RewriterBase &rewriter,
                                      linalg::MatmulOp op, int64_t depth,
                                      ArrayRef<int64_t> registerTile) {
  SmallVector<int64_t> bounds = op.getStaticLoopRanges();
  if (ShapedType::isDynamicShape(bounds) || !op.hasPureTensorSemantics())
    return op.emitError("loop.vectorize needs a matmul of static shape on "
                        "tensors; this tile is ")
           << op->getResult(0).getType();
  int64_t extents[] = {bounds[0], bounds[1], std::min(depth, bounds[2])};
  for (auto [extent, size] : llvm::zip(extents, registerTile))
    if (extent % size != 0 || bounds[2] % extents[2] != 0)
      return op.emitError("loop.vectorize sizes [")
             << registerTile << "] depth " << depth
             << " do not divide the matmul tile " << bounds[0] << "x"
             << bounds[1] << "x" << bounds[2];
  Operation *target = op;
  if (extents[2] < bounds[2]) {
    FailureOr<scf::SCFTilingResult> cacheBlocks =
        tile(rewriter, op, {0, 0, extents[2]});
    if (failed(cacheBlocks))
      return op.emitError("loop.vectorize could not tile this matmul by K");
    target = cacheBlocks->tiledOps.front();
    packOperands(rewriter, cast<linalg::MatmulOp>(target));
  }
  FailureOr<scf::SCFTilingResult> tiled = tile(rewriter, target, registerTile);
  if (failed(tiled))
    return op.emitError("loop.vectorize could not tile this matmul");
  Operation *block = tiled->tiledOps.front();
  rewriter.setInsertionPoint(block);
  FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(
      rewriter, block, /*inputVectorSizes=*/{}, /*inputScalableVecDims=*/{},
      /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
      /*assumeDynamicDimsMatchVecSizes=*/false,
      /*createNamedContraction=*/true);
  if (failed(vectorized))
    return block->emitError("loop.vectorize could not vectorize a block");
  rewriter.replaceOp(block, vectorized->replacements);
  // The depth loop is innermost. Its accumulator is a slice of the C tile
  // read by a transfer_read: hoisting peels one subset per call, after the
  // constants the vectorizer created inside it have left.
  LoopLikeOpInterface depthLoop = tiled->loops.back();
  for (int peel = 0; peel < 2; ++peel) {
    moveLoopInvariantCode(depthLoop);
    depthLoop = hoistLoopInvariantSubsets(rewriter, depthLoop);
  }
  return success();
}
