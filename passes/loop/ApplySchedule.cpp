//===- ApplySchedule.cpp - carry out loop.schedule ops --------------------===//
//
// Each loop.tile of a schedule tiles the kernel's current root (the tiled
// root of the previous level) and fuses its producers, so the levels nest:
// blocks, then warps or threads, then sequential loops (on the CPU: parallel
// tiles). loop.vectorize then vectorizes the tile's matmul and
// loop.split_reduction its reductions; loop.mma and
// loop.warp_reduce become attributes for the GPU passes after bufferization.
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/cpu/SplitReduction.h"
#include "passes/cpu/VectorizeMatmul.h"
#include "passes/loop/MmaConfig.h"

#include "mlir/Analysis/SliceAnalysis.h"

namespace tessel {
#define GEN_PASS_DEF_LOOPAPPLYSCHEDULES
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// The ops of `root`'s block whose results leave the innermost loop: after
/// a level of tiling these are the kernel's returned values in that tile,
/// which the next level must yield rather than recompute.
void collectYieldedOps(TilingInterface root,
                       llvm::SmallPtrSetImpl<Operation *> &yielded) {
  yielded.clear();
  for (Operation &op : *root->getBlock())
    for (Operation *user : op.getUsers())
      if (isa<tensor::ParallelInsertSliceOp, tensor::InsertSliceOp,
              scf::YieldOp>(user) &&
          isa<linalg::LinalgOp>(op))
        yielded.insert(&op);
}

/// The contraction in the tile of `root`: root itself or the one linalg
/// contraction fused into its block.
linalg::LinalgOp findTiledContraction(TilingInterface root) {
  linalg::LinalgOp found;
  for (Operation &op : *root->getBlock()) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp || !linalg::isaContractionOpInterface(linalgOp))
      continue;
    if (found)
      return {};
    found = linalgOp;
  }
  return found;
}

/// Tensor-core primitives apply after bufferization (gpu-lower-mma): the
/// contraction carries them as a `tessel.mma` attribute until then.
LogicalResult markMma(loop::ScheduleOp schedule, TilingInterface root) {
  auto mma = *schedule.getBody().getOps<loop::MmaOp>().begin();
  linalg::LinalgOp contraction = findTiledContraction(root);
  if (!contraction)
    return mma.emitError("needs exactly one contraction in the block tile");
  Builder b(schedule.getContext());
  int64_t stages = 1, pad = 0;
  SmallVector<int64_t> promoted;
  for (auto pipeline : schedule.getBody().getOps<loop::PipelineOp>())
    stages = pipeline.getResolvedStages();
  for (auto promote : schedule.getBody().getOps<loop::PromoteOp>()) {
    pad = promote.getResolvedPad();
    llvm::append_range(promoted, promote.getInputs());
  }
  SmallVector<int64_t> sizes = mma.getResolvedSizes();
  // The block tile's M and N sizes (untiled: the whole extent); edge tiles
  // of the forall are smaller.
  unsigned batch = *mmaBatchLoops(contraction);
  SmallVector<int64_t> block;
  for (auto tile : schedule.getBody().getOps<loop::TileOp>())
    if (tile.getMapping() &&
        isa<gpu::GPUBlockMappingAttr>((*tile.getMapping())[0]))
      block = tile.getResolvedSizes();
  SmallVector<int64_t> ranges = contraction.getStaticLoopRanges();
  auto blockSize = [&](unsigned loop) {
    return block.empty() || block[loop] == 0 ? ranges[loop] : block[loop];
  };
  contraction->setAttr(
      loop::kMmaAttrName,
      b.getDictionaryAttr({
          b.getNamedAttr("block", b.getDenseI64ArrayAttr(
                                      {blockSize(batch), blockSize(batch + 1)})),
          b.getNamedAttr("warp", b.getDenseI64ArrayAttr({sizes[0], sizes[1]})),
          b.getNamedAttr("k", b.getI64IntegerAttr(sizes[2])),
          b.getNamedAttr("shape", mma.getShapeAttr()),
          b.getNamedAttr("stages", b.getI64IntegerAttr(stages)),
          b.getNamedAttr("pad", b.getI64IntegerAttr(pad)),
          b.getNamedAttr("promoted", b.getDenseI64ArrayAttr(promoted)),
          b.getNamedAttr("target", schedule.getTargetAttr()),
      }));
  return success();
}

struct LoopApplySchedulesPass
    : tessel::impl::LoopApplySchedulesBase<LoopApplySchedulesPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    LoopApplySchedulesBase::getDependentDialects(registry);
    registerVectorizeMatmulInterfaces(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    IRRewriter rewriter(&getContext());
    // Roots are found before any tiling changes the kernels.
    SmallVector<std::tuple<loop::ScheduleOp, TilingInterface,
                           llvm::SmallPtrSet<Operation *, 4>>>
        work;
    for (auto schedule : module.getOps<loop::ScheduleOp>()) {
      auto func = symbols.lookup<func::FuncOp>(schedule.getKernel());
      if (!func) {
        schedule.emitError("schedules '")
            << schedule.getKernel() << "', which is not a func.func";
        return signalPassFailure();
      }
      TilingInterface root =
          scheduledRoot(schedule, func, findKernelRoots(func),
                        schedule.getResult());
      if (!root)
        return signalPassFailure();
      llvm::SmallPtrSet<Operation *, 4> returned;
      collectReturnedLinalgOps(func, returned);
      work.emplace_back(schedule, root, std::move(returned));
    }
    llvm::SmallPtrSet<Operation *, 8> roots;
    for (auto &item : work)
      roots.insert(std::get<1>(item).getOperation());
    for (auto &[schedule, root, returned] : work) {
      for (auto tile : schedule.getBody().getOps<loop::TileOp>()) {
        SmallVector<int64_t> sizes = tile.getResolvedSizes();
        if (sizes.size() != root.getLoopIteratorTypes().size()) {
          tile.emitError("has ")
              << sizes.size() << " sizes but the kernel's root has "
              << root.getLoopIteratorTypes().size() << " loops";
          return signalPassFailure();
        }
        SmallVector<Attribute> mapping;
        if (tile.getMapping())
          mapping = llvm::to_vector(*tile.getMapping());
        FailureOr<TilingInterface> tiled =
            tileAndFuseRoot(rewriter, root, sizes,
                            /*sequential=*/mapping.empty() && !tile.getParallel(),
                            mapping, returned);
        if (failed(tiled)) {
          InFlightDiagnostic diag = tile.emitError("could not tile the root");
          diag.attachNote(root->getLoc()) << "root: " << root->getName();
          return signalPassFailure();
        }
        roots.erase(root.getOperation());
        root = *tiled;
        roots.insert(root.getOperation());
        collectYieldedOps(root, returned);
      }
      for (auto vectorize : schedule.getBody().getOps<loop::VectorizeOp>()) {
        linalg::LinalgOp matmul = findTiledContraction(root);
        if (!matmul) {
          vectorize.emitError("needs exactly one matmul in the tile");
          return signalPassFailure();
        }
        if (failed(vectorizeMatmul(rewriter, matmul,
                                   vectorize.getResolvedDepth(),
                                   vectorize.getResolvedSizes())))
          return signalPassFailure();
      }
      for (auto split : schedule.getBody().getOps<loop::SplitReductionOp>()) {
        // The root's own reductions: itself and those it reads in its block,
        // but not another schedule's root, which its own schedule splits
        // (a kernel with several roots has a schedule each). A reduction
        // shorter than the lanes is the remainder of one already split.
        SetVector<Operation *> producers;
        BackwardSliceOptions options;
        options.filter = [&](Operation *op) {
          return op->getBlock() == root->getBlock();
        };
        (void)getBackwardSlice(root.getOperation(), &producers, options);
        producers.insert(root);
        SmallVector<linalg::LinalgOp> reductions;
        for (Operation *op : producers)
          if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
              linalgOp && isSplittableReduction(linalgOp) &&
              (op == root.getOperation() || !roots.contains(op)) &&
              linalgOp.getStaticLoopRanges().back() >=
                  split.getResolvedLanes())
            reductions.push_back(linalgOp);
        for (linalg::LinalgOp op : reductions)
          if (failed(splitReduction(rewriter, op, split.getResolvedLanes())))
            return signalPassFailure();
      }
      if (!schedule.getBody().getOps<loop::MmaOp>().empty() &&
          failed(markMma(schedule, root)))
        return signalPassFailure();
      // gpu-distribute-rows carries out loop.warp_reduce on buffers.
      for (auto warpReduce : schedule.getBody().getOps<loop::WarpReduceOp>())
        root->setAttr(loop::kWarpReduceAttrName,
                      rewriter.getI64IntegerAttr(warpReduce.getResolvedThreads()));
      rewriter.eraseOp(schedule);
    }
  }
};

} // namespace
