//===- TileAndFuseRoot.cpp - tiling a kernel's root with its producers ----===//

#include "passes/TileAndFuseRoot.h"
#include "passes/linalg/Contractions.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"

using namespace mlir;

void tessel::collectReturnedLinalgOps(
    func::FuncOp func, llvm::SmallPtrSetImpl<Operation *> &returned) {
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  for (Value v : ret.getOperands())
    if (linalg::LinalgOp op = tessel::computingOp(v))
      returned.insert(op.getOperation());
}

TilingInterface
tessel::findKernelRoot(func::FuncOp func,
                       llvm::SmallPtrSetImpl<Operation *> &returned) {
  collectReturnedLinalgOps(func, returned);
  TilingInterface root;
  for (Operation &op : func.getBody().front())
    if (returned.contains(&op))
      root = cast<TilingInterface>(&op);
  return root;
}

SmallVector<std::pair<unsigned, TilingInterface>>
tessel::findKernelRoots(func::FuncOp func) {
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  llvm::DenseMap<Operation *, unsigned> firstResult;
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (linalg::LinalgOp op = tessel::computingOp(v))
      firstResult.try_emplace(op.getOperation(), i);
  SmallVector<std::pair<unsigned, TilingInterface>> roots;
  llvm::SmallPtrSet<Operation *, 16> covered;
  for (Operation &op : llvm::reverse(func.getBody().front())) {
    if (!firstResult.count(&op) || covered.contains(&op))
      continue;
    roots.push_back({firstResult[&op], cast<TilingInterface>(&op)});
    // Everything this root computes through its producers.
    SmallVector<Operation *> worklist = {&op};
    while (!worklist.empty()) {
      Operation *current = worklist.pop_back_val();
      if (!covered.insert(current).second)
        continue;
      for (Value operand : current->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && def->getBlock() == &func.getBody().front())
          worklist.push_back(def);
    }
  }
  return roots;
}

FailureOr<TilingInterface> tessel::scheduledRoot(
    Operation *schedule, func::FuncOp func,
    ArrayRef<std::pair<unsigned, TilingInterface>> roots,
    std::optional<uint64_t> result) {
  if (roots.empty()) {
    if (!result && schedule->getRegion(0).front().empty())
      return TilingInterface();
    schedule->emitError("kernel '")
        << func.getSymName() << "' has no linalg root to schedule";
    return failure();
  }
  if (!result)
    return roots.front().second;
  for (auto [index, root] : roots)
    if (index == *result)
      return root;
  InFlightDiagnostic diag = schedule->emitError("result ")
                            << *result << " of kernel '" << func.getSymName()
                            << "' is not a root; roots compute results";
  for (auto [index, root] : roots)
    diag << " " << index;
  return failure();
}

std::optional<SmallVector<int64_t>>
tessel::staticLoopExtents(TilingInterface root) {
  OpBuilder b(root);
  SmallVector<int64_t> extents;
  for (Range r : root.getIterationDomain(b)) {
    std::optional<int64_t> extent = getConstantIntValue(r.size);
    if (!extent)
      return std::nullopt;
    extents.push_back(*extent);
  }
  return extents;
}

FailureOr<TilingInterface>
tessel::tileAndFuseRoot(RewriterBase &rewriter, TilingInterface root,
                        ArrayRef<int64_t> sizes, bool sequential,
                        ArrayRef<Attribute> mapping,
                        const llvm::SmallPtrSetImpl<Operation *> &returned) {
  // A loop over a reduction revisits each slice of the result: in
  // parallel its tiles would race, and sequentially the producer of the
  // accumulator (its fill) must run once before the loop, not per tile.
  bool tilesReduction = false;
  for (auto [size, type] : llvm::zip(sizes, root.getLoopIteratorTypes()))
    tilesReduction |= size != 0 && type == utils::IteratorType::reduction;
  if (tilesReduction && !sequential)
    return root->emitError("cannot tile a reduction loop in parallel: the "
                           "tiles would race on the result");
  scf::SCFTileAndFuseOptions options;
  options.tilingOptions.setTileSizes(
      getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  options.tilingOptions.setLoopType(
      sequential ? scf::SCFTilingOptions::LoopType::ForOp
                 : scf::SCFTilingOptions::LoopType::ForallOp);
  if (!mapping.empty())
    options.tilingOptions.setMapping(mapping);
  options.setFusionControlFn(
      [&](tensor::ExtractSliceOp, OpResult producer, bool isDestination)
          -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        if (!isa<linalg::LinalgOp>(producer.getOwner()) ||
            (isDestination && tilesReduction))
          return std::nullopt;
        return scf::SCFTileAndFuseOptions::ControlFnResult{
            returned.contains(producer.getOwner())};
      });
  rewriter.setInsertionPoint(root);
  FailureOr<scf::SCFTileAndFuseResult> result =
      scf::tileConsumerAndFuseProducersUsingSCF(rewriter, root, options);
  if (failed(result))
    return failure();
  // Only uses after the loop take its results: the untiled ops before it
  // (the root, producers) and leftovers inside it keep theirs and die.
  // Reshapes of a yielded value that sit before the loop (a returned
  // intermediate) move after it first, or the untiled op would stay alive
  // for them and run a second time.
  if (!result->loops.empty()) {
    Operation *loop = result->loops.front().getOperation();
    auto afterLoop = [&](Operation *op) {
      return op->getBlock() == loop->getBlock() && loop->isBeforeInBlock(op);
    };
    for (auto [original, replacement] : result->replacements)
      for (Operation *user : llvm::to_vector(original.getUsers()))
        if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user) &&
            user->getBlock() == loop->getBlock() &&
            user->isBeforeInBlock(loop) &&
            llvm::all_of(user->getUsers(), afterLoop))
          rewriter.moveOpAfter(user, loop);
  }
  DominanceInfo dominance(root->getParentOfType<func::FuncOp>());
  for (auto [original, replacement] : result->replacements)
    rewriter.replaceUsesWithIf(original, replacement, [&](OpOperand &use) {
      return dominance.properlyDominates(replacement, use.getOwner());
    });
  // The first tiled op is the tiled root.
  return cast<TilingInterface>(result->tiledAndFusedOps.front());
}

FailureOr<scf::SCFTilingResult>
tessel::tileInLoops(RewriterBase &rewriter, TilingInterface op,
                    ArrayRef<int64_t> sizes, ArrayRef<int64_t> interchange) {
  rewriter.setInsertionPoint(op);
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  options.setInterchange(interchange);
  FailureOr<scf::SCFTilingResult> tiled =
      scf::tileUsingSCF(rewriter, op, options);
  if (succeeded(tiled))
    rewriter.replaceOp(op, tiled->replacements);
  return tiled;
}
