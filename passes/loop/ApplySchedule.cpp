//===- ApplySchedule.cpp - carry out loop.schedule ops --------------------===//
//
// Each loop.tile of a schedule tiles the kernel's current root (the tiled
// root of the previous level) and fuses its producers, so the levels nest:
// blocks, then warps or threads, then sequential loops (on the CPU: parallel
// tiles). loop.materialize first computes contraction inputs that the kernel
// computes in nests of their own; loop.split_k splits the root's contraction
// into partial products, which the levels then tile, and their sum, tiled
// on its own.
// loop.vectorize then vectorizes the tile's matmul and
// loop.split_reduction its reductions; loop.mma, loop.warp_reduce,
// loop.unroll and loop.vector_access become attributes for the passes after
// bufferization. loop.grid_reduce rewrites a kernel's reductions to single
// values in two stages (GridReduce.cpp).
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/cpu/SplitReduction.h"
#include "passes/cpu/VectorizeMatmul.h"
#include "passes/linalg/Contractions.h"
#include "passes/linalg/PadAsGather.h"
#include "passes/linalg/SplitK.h"
#include "passes/loop/DefaultSchedule.h"
#include "passes/loop/GridReduce.h"
#include "passes/loop/MmaConfig.h"
#include "passes/loop/RowReduction.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"

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

/// One loop.tile level, as sizes of some root's loops.
struct Level {
  Operation *origin; // the schedule op it comes from, for diagnostics
  SmallVector<int64_t> sizes;
  SmallVector<Attribute> mapping;
  bool sequential;

  bool isBlockLevel() const {
    return !mapping.empty() && isa<gpu::GPUBlockMappingAttr>(mapping[0]);
  }
};

/// Tiles `root` by `levels` in turn, each fusing its producers; returns the
/// innermost tiled root. `returned` (the ops whose results leave the
/// current tile) and `roots` follow the tiling.
FailureOr<TilingInterface>
tileLevels(RewriterBase &rewriter, TilingInterface root, ArrayRef<Level> levels,
           llvm::SmallPtrSetImpl<Operation *> &returned,
           llvm::SmallPtrSetImpl<Operation *> &roots) {
  for (const Level &level : levels) {
    FailureOr<TilingInterface> tiled = tileAndFuseRoot(
        rewriter, root, level.sizes, level.sequential, level.mapping, returned);
    if (failed(tiled)) {
      InFlightDiagnostic diag =
          level.origin->emitError("could not tile the root");
      diag.attachNote(root->getLoc()) << "root: " << root->getName();
      return failure();
    }
    roots.erase(root.getOperation());
    root = *tiled;
    roots.insert(root.getOperation());
    collectYieldedOps(root, returned);
  }
  return root;
}

/// The levels of `tiling`, for diagnostics at `origin`.
SmallVector<Level> pointwiseLevels(Operation *origin,
                                   const PointwiseTiling &tiling) {
  SmallVector<Level> levels = {
      {origin, tiling.blockSizes, tiling.blockMapping, false},
      {origin, tiling.threadSizes, tiling.threadMapping, false}};
  if (!tiling.pointSizes.empty())
    levels.push_back({origin, tiling.pointSizes, {}, true});
  return levels;
}

/// Marks the elementwise ops of the innermost tile of `root` for
/// loop-vector-access (loop.vector_access of `width`).
void markVectorAccess(TilingInterface root, int64_t width) {
  if (width == 1)
    return;
  Builder b(root->getContext());
  for (Operation &op : *root->getBlock())
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
        linalgOp && linalgOp.getNumParallelLoops() == linalgOp.getNumLoops())
      op.setAttr(loop::kVectorAccessAttrName, b.getI64IntegerAttr(width));
}

/// Tiles `op` with `tiling` in a nest of its own (its linalg producers
/// fused), marking its tile for loop.vector_access; `origin` is the op
/// that asks, for diagnostics. `returned` and `roots` as for tileLevels.
LogicalResult tilePointwise(RewriterBase &rewriter, Operation *origin,
                            TilingInterface op, const PointwiseTiling &tiling,
                            llvm::SmallPtrSetImpl<Operation *> &returned,
                            llvm::SmallPtrSetImpl<Operation *> &roots) {
  FailureOr<TilingInterface> tiled = tileLevels(
      rewriter, op, pointwiseLevels(origin, tiling), returned, roots);
  if (failed(tiled))
    return failure();
  markVectorAccess(*tiled, tiling.vector);
  return success();
}

/// The split of a loop.split_k: the sum's root, its own levels and vector
/// width.
struct SplitSum {
  TilingInterface root;
  SmallVector<Level> levels;
  int64_t vector = 1;
};

/// Carries out loop.split_k on `contraction`, which `root` computes a tile
/// of (splitK): `root` becomes the partial products and `levels` their
/// levels, the part loop one index per tile of the first parallel level
/// (on grid z for GPUs). Returns the sum (with the epilogue up to the old
/// root) and its levels: the target's pointwise tiling on GPUs, the first
/// parallel level on the CPU.
FailureOr<SplitSum> splitContraction(RewriterBase &rewriter,
                                     loop::ScheduleOp schedule,
                                     loop::SplitKOp split,
                                     linalg::LinalgOp contraction,
                                     TilingInterface &root,
                                     SmallVector<Level> &levels) {
  unsigned batch = *matmulBatchLoops(contraction, /*broadcast=*/true);
  bool rootIsContraction = root.getOperation() == contraction.getOperation();
  FailureOr<SplitK> parts =
      splitK(rewriter, contraction, split.getResolvedParts());
  if (failed(parts))
    return failure();
  SplitSum sum{rootIsContraction
                   ? cast<TilingInterface>(parts->sum.getOperation())
                   : root,
               {}};
  MLIRContext *ctx = rewriter.getContext();
  bool gpu = !schedule.getTargetDescription().isCpu();
  size_t firstParallel = llvm::find_if(levels, [](const Level &level) {
                           return !level.sequential;
                         }) -
                         levels.begin();
  if (gpu) {
    std::optional<PointwiseTiling> tiling =
        gpuPointwiseTiling(sum.root, /*rowwise=*/false,
                           schedule.getTargetDescription());
    if (!tiling)
      return split.emitError("found no parallel loop in the sum of the parts");
    sum.levels = pointwiseLevels(split, *tiling);
    sum.vector = tiling->vector;
  } else if (firstParallel < levels.size()) {
    // The sum's loops: (part, batch..., m, n) when it is the root.
    SmallVector<int64_t> sizes(levels[firstParallel].sizes);
    if (rootIsContraction) {
      sizes.pop_back();
      sizes.insert(sizes.begin(), 0);
    }
    sum.levels = {{levels[firstParallel].origin, sizes, {}, false}};
  }
  // The partial products' loops: batch..., part, m, n, k.
  for (auto [i, level] : llvm::enumerate(levels)) {
    if (!rootIsContraction)
      level.sizes.push_back(0);
    bool first = i == firstParallel;
    if (first && !level.mapping.empty()) {
      unsigned tiledBefore = llvm::count_if(
          ArrayRef(level.sizes).take_front(batch),
          [](int64_t size) { return size != 0; });
      level.mapping.insert(
          level.mapping.begin() + tiledBefore,
          gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimZ));
    }
    level.sizes.insert(level.sizes.begin() + batch, first ? 1 : 0);
  }
  if (firstParallel == levels.size()) {
    SmallVector<int64_t> sizes(batch + 4, 0);
    sizes[batch] = 1;
    levels.insert(levels.begin(), Level{split, sizes, {}, false});
  }
  root = cast<TilingInterface>(parts->partials.getOperation());
  return sum;
}

/// Carries out loop.materialize: the producers of the named inputs of
/// `contraction` are tiled on their own, with the target's pointwise
/// tiling, so that the contraction reads their results from memory (tiling
/// the root fuses linalg producers only).
LogicalResult materializeInputs(RewriterBase &rewriter,
                                loop::MaterializeOp materialize,
                                linalg::LinalgOp contraction,
                                llvm::SmallPtrSetImpl<Operation *> &roots) {
  for (int64_t input : materialize.getInputs()) {
    auto producer = dyn_cast_if_present<TilingInterface>(
        computingOp(contraction.getDpsInputs()[input]).getOperation());
    std::optional<PointwiseTiling> tiling;
    if (producer)
      tiling = gpuPointwiseTiling(
          producer, /*rowwise=*/false,
          materialize->getParentOfType<loop::ScheduleOp>()
              .getTargetDescription());
    if (!tiling)
      return materialize.emitError("input ")
             << input << " of the contraction is not computed by a linalg "
             << "op of static shape with parallel loops";
    llvm::SmallPtrSet<Operation *, 4> returned;
    if (failed(tilePointwise(rewriter, materialize, producer, *tiling,
                             returned, roots)))
      return failure();
  }
  return success();
}

/// Tensor-core primitives apply after bufferization (gpu-lower-mma): the
/// contraction carries them as a `tessel.mma` #loop.mma_config until then.
/// `levels` tile the contraction's loops (or the root's, which begin with
/// them).
LogicalResult markMma(loop::ScheduleOp schedule, TilingInterface root,
                      ArrayRef<Level> levels) {
  auto mma = *schedule.getBody().getOps<loop::MmaOp>().begin();
  linalg::LinalgOp contraction = findTiledContraction(root);
  if (!contraction)
    return mma.emitError("needs exactly one contraction in the block tile");
  int64_t stages = 1, pad = 0;
  for (auto pipeline : schedule.getBody().getOps<loop::PipelineOp>())
    stages = pipeline.getResolvedStages();
  for (auto promote : schedule.getBody().getOps<loop::PromoteOp>())
    pad = promote.getResolvedPad();
  SmallVector<int64_t> sizes = mma.getResolvedSizes();
  // The block tile's M and N sizes (untiled: the whole extent); edge tiles
  // of the forall are smaller.
  unsigned batch = *mmaBatchLoops(contraction);
  SmallVector<int64_t> block;
  for (const Level &level : levels)
    if (level.isBlockLevel())
      block = level.sizes;
  SmallVector<int64_t> ranges = contraction.getStaticLoopRanges();
  auto blockSize = [&](unsigned loop) {
    return block.empty() || block[loop] == 0 ? ranges[loop] : block[loop];
  };
  auto config = loop::MmaConfigAttr::getChecked(
      [&] { return mma.emitError(); }, schedule.getContext(),
      schedule.getTarget(), blockSize(batch), blockSize(batch + 1), sizes[0],
      sizes[1], sizes[2], stages, pad);
  if (!config)
    return failure();
  contraction->setAttr(loop::kMmaAttrName, config);
  return success();
}

/// The last op at the top level of GPU kernel `func` that its schedules
/// left untiled and something still reads, if any (but those in `done`).
Operation *lastLeftover(func::FuncOp func,
                        const llvm::SmallPtrSetImpl<Operation *> &done) {
  for (Operation &op : llvm::reverse(func.getBody().front()))
    if (isa<linalg::LinalgOp, tensor::PadOp, tensor::InsertSliceOp>(op) &&
        !op.use_empty() && !done.contains(&op))
      return &op;
  return nullptr;
}

/// The linalg op that computes `value` for one consumer alone and only
/// takes its shape from its init, if there is one.
linalg::LinalgOp soleShapeOnlyProducer(Value value) {
  auto producer = value.getDefiningOp<linalg::LinalgOp>();
  if (!producer || !value.hasOneUse() || producer->getNumResults() != 1 ||
      producer.payloadUsesValueFromOperand(producer.getDpsInitOperand(0)))
    return {};
  return producer;
}

/// `value`, or where it is a slice of a linalg op's result that nothing
/// else reads (a part taken from a transposed tensor), that op computing
/// just the slice.
Value computeSliceAlone(RewriterBase &rewriter, Value value) {
  auto part = value.getDefiningOp<tensor::ExtractSliceOp>();
  if (!part)
    return value;
  auto whole = dyn_cast<OpResult>(part.getSource());
  if (!whole || !whole.hasOneUse() || !isa<linalg::LinalgOp>(whole.getOwner()))
    return value;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(part);
  FailureOr<TilingResult> tiled =
      tensor::replaceExtractSliceWithTiledProducer(rewriter, part, whole);
  // A rank-reducing slice keeps its copy.
  if (failed(tiled) || tiled->tiledValues.size() != 1 ||
      tiled->tiledValues[0].getType() != part.getType())
    return value;
  rewriter.replaceOp(part, tiled->tiledValues[0]);
  return tiled->tiledValues[0];
}

/// Makes `insert` (a part of a concatenation) write its source into the
/// slice of its destination in place: the linalg op that computes the
/// source alone (computeSliceAlone), moved to the insert, takes the slice
/// as its init; any other source is a linalg.copy into the slice.
/// Bufferized as it stands, the insert is a memref.copy that
/// gpu-map-kernels runs in one thread. A tensor.empty destination that
/// other ops also use as their (shape-only) init is replaced by a buffer
/// of its own, or bufferization copies the concatenation. Returns the op
/// that computes the slice and the new insert.
std::pair<linalg::LinalgOp, tensor::InsertSliceOp>
insertSliceInPlace(RewriterBase &rewriter, tensor::InsertSliceOp insert) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(insert);
  Location loc = insert.getLoc();
  Value dest = insert.getDest();
  // An allocation, as a second tensor.empty would be CSE'd into the first.
  if (auto empty = dest.getDefiningOp<tensor::EmptyOp>();
      empty && !dest.hasOneUse())
    dest = bufferization::AllocTensorOp::create(rewriter, loc,
                                                empty.getType(),
                                                empty.getDynamicSizes());
  Value slice = tensor::ExtractSliceOp::create(
      rewriter, loc, insert.getSourceType(), dest, insert.getMixedOffsets(),
      insert.getMixedSizes(), insert.getMixedStrides());
  Value source = computeSliceAlone(rewriter, insert.getSource());
  linalg::LinalgOp producer = soleShapeOnlyProducer(source);
  if (producer) {
    rewriter.moveOpBefore(producer, insert);
    rewriter.modifyOpInPlace(producer, [&] {
      producer.getDpsInitOperand(0)->set(slice);
    });
  } else {
    producer = linalg::CopyOp::create(rewriter, loc, source, slice);
  }
  auto newInsert = rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
      insert, producer->getResult(0), dest, insert.getMixedOffsets(),
      insert.getMixedSizes(), insert.getMixedStrides());
  return {producer, newInsert};
}

/// Gives each op that the schedules of GPU kernel `func` left untiled (a
/// producer that tiling cannot fuse, read through a reshape; the padding
/// of a convolution that is not a matmul; the parts of a concatenation)
/// the pointwise tiling of its own,
/// last first so that a consumer's nest fuses its leftover producers:
/// gpu-map-kernels would run them in a single thread. A tensor.pad becomes
/// a gather first (padAsGather); a tensor.insert_slice is computed in
/// place (insertSliceInPlace).
LogicalResult tileLeftovers(RewriterBase &rewriter, func::FuncOp func,
                            const loop::TargetDescription &target) {
  llvm::SmallPtrSet<Operation *, 8> roots, returned, done;
  while (Operation *op = lastLeftover(func, done)) {
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
      auto [producer, newInsert] = insertSliceInPlace(rewriter, insert);
      done.insert(newInsert);
      op = producer;
    }
    if (auto pad = dyn_cast<tensor::PadOp>(op)) {
      FailureOr<linalg::GenericOp> gather = padAsGather(rewriter, pad);
      if (failed(gather)) {
        done.insert(pad); // stays in one thread
        continue;
      }
      op = *gather;
    }
    done.insert(op);
    auto leftover = cast<TilingInterface>(op);
    // One with nothing to distribute (a reduction to a scalar) stays.
    std::optional<PointwiseTiling> tiling =
        gpuPointwiseTiling(leftover, /*rowwise=*/false, target);
    if (!tiling)
      continue;
    collectReturnedLinalgOps(func, returned);
    if (failed(tilePointwise(rewriter, leftover, leftover, *tiling, returned,
                             roots)))
      return failure();
  }
  return success();
}

struct LoopApplySchedulesPass
    : tessel::impl::LoopApplySchedulesBase<LoopApplySchedulesPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    LoopApplySchedulesBase::getDependentDialects(registry);
    registerVectorizeMatmulInterfaces(registry);
  }

  /// Carries out the CPU schedules' loop.grid_reduce first: it rewrites
  /// all the kernel's reductions to single values, which the roots of its
  /// other schedules may read. Schedules of roots that are single values
  /// (a sum, a mean) then have nothing left to tile, and go.
  LogicalResult splitCpuSingleValueReductions(RewriterBase &rewriter,
                                              SymbolTable &symbols) {
    auto schedules = llvm::to_vector(getOperation().getOps<loop::ScheduleOp>());
    for (loop::ScheduleOp schedule : schedules) {
      if (!schedule)
        continue;
      auto grids = schedule.getBody().getOps<loop::GridReduceOp>();
      auto func = symbols.lookup<func::FuncOp>(schedule.getKernel());
      if (!schedule.getTargetDescription().isCpu() || grids.empty() || !func)
        continue;
      loop::GridReduceOp grid = *grids.begin();
      SmallVector<loop::ScheduleOp> singleValued;
      for (loop::ScheduleOp other : schedules) {
        if (!other || other.getKernel() != schedule.getKernel())
          continue;
        FailureOr<TilingInterface> root = scheduledRoot(
            other, func, findKernelRoots(func), other.getResult());
        if (failed(root))
          return failure();
        auto linalgRoot = dyn_cast_if_present<linalg::LinalgOp>(
            root->getOperation());
        if (linalgRoot && isSingleValueResult(linalgRoot))
          singleValued.push_back(other);
      }
      int64_t lanes = 1;
      for (auto split : schedule.getBody().getOps<loop::SplitReductionOp>())
        lanes = split.getResolvedLanes();
      if (failed(cpuGridReduce(rewriter, grid, func, lanes)))
        return failure();
      rewriter.eraseOp(grid);
      for (loop::ScheduleOp other : singleValued) {
        llvm::replace(schedules, other, loop::ScheduleOp());
        rewriter.eraseOp(other);
      }
    }
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    IRRewriter rewriter(&getContext());
    // GPU kernels whose leftovers get threads, with their target.
    llvm::MapVector<func::FuncOp, const loop::TargetDescription *> gpuKernels;
    if (failed(splitCpuSingleValueReductions(rewriter, symbols)))
      return signalPassFailure();
    // Roots are found before any tiling changes the kernels.
    SmallVector<std::tuple<loop::ScheduleOp, TilingInterface,
                           llvm::SmallPtrSet<Operation *, 4>>>
        work;
    for (auto schedule :
         llvm::make_early_inc_range(module.getOps<loop::ScheduleOp>())) {
      auto func = symbols.lookup<func::FuncOp>(schedule.getKernel());
      if (!func) {
        schedule.emitError("schedules '")
            << schedule.getKernel() << "', which is not a func.func";
        return signalPassFailure();
      }
      // On GPUs, loop.grid_reduce covers the whole kernel; the rest are
      // leftovers.
      if (auto grids = schedule.getBody().getOps<loop::GridReduceOp>();
          !grids.empty()) {
        if (failed(gridReduce(rewriter, *grids.begin(), func)))
          return signalPassFailure();
        gpuKernels.insert({func, &schedule.getTargetDescription()});
        rewriter.eraseOp(schedule);
        continue;
      }
      FailureOr<TilingInterface> root = scheduledRoot(
          schedule, func, findKernelRoots(func), schedule.getResult());
      if (failed(root))
        return signalPassFailure();
      // A rootless kernel's ops are all leftovers.
      if (!*root) {
        if (!schedule.getTargetDescription().isCpu())
          gpuKernels.insert({func, &schedule.getTargetDescription()});
        rewriter.eraseOp(schedule);
        continue;
      }
      llvm::SmallPtrSet<Operation *, 4> returned;
      collectReturnedLinalgOps(func, returned);
      work.emplace_back(schedule, *root, std::move(returned));
    }
    llvm::SmallPtrSet<Operation *, 8> roots;
    for (auto &item : work)
      roots.insert(std::get<1>(item).getOperation());
    for (auto &[schedule, root, returned] : work) {
      SmallVector<Level> levels;
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
        levels.push_back({tile, sizes, mapping,
                          mapping.empty() && !tile.getParallel()});
      }
      // loop.materialize and loop.split_k act on the contraction that the
      // root computes a tile of.
      linalg::LinalgOp contraction;
      for (Operation &op : schedule.getBody().getOps()) {
        if (!isa<loop::MaterializeOp, loop::SplitKOp>(op))
          continue;
        contraction = findRootContraction(
            &op, root->getParentOfType<func::FuncOp>(), root);
        if (!contraction)
          return signalPassFailure();
        break;
      }
      for (auto materialize :
           schedule.getBody().getOps<loop::MaterializeOp>())
        if (failed(materializeInputs(rewriter, materialize, contraction,
                                     roots)))
          return signalPassFailure();
      std::optional<SplitSum> sum;
      for (auto split : schedule.getBody().getOps<loop::SplitKOp>()) {
        if (split.getResolvedParts() == 1)
          continue;
        roots.erase(root.getOperation());
        FailureOr<SplitSum> splitSum =
            splitContraction(rewriter, schedule, split, contraction, root,
                             levels);
        if (failed(splitSum))
          return signalPassFailure();
        sum = *splitSum;
        roots.insert(root.getOperation());
        roots.insert(sum->root.getOperation());
        // The partial products are not returned; the sum is.
        returned.clear();
      }
      FailureOr<TilingInterface> tiled =
          tileLevels(rewriter, root, levels, returned, roots);
      if (failed(tiled))
        return signalPassFailure();
      root = *tiled;
      for (auto vectorize : schedule.getBody().getOps<loop::VectorizeOp>()) {
        linalg::LinalgOp matmul = findTiledContraction(root);
        if (!matmul) {
          vectorize.emitError("needs exactly one matmul in the tile");
          return signalPassFailure();
        }
        if (failed(vectorizeMatmul(rewriter, matmul,
                                   vectorize.getResolvedRows(),
                                   vectorize.getResolvedDepth(),
                                   vectorize.getResolvedSizes())))
          return signalPassFailure();
      }
      for (auto split : schedule.getBody().getOps<loop::SplitReductionOp>()) {
        // The root's own reductions: itself and those it reads in its block,
        // but not another schedule's root, which its own schedule splits
        // (a kernel with several roots has a schedule each); those that
        // take the lanes (takesLanes).
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
              linalgOp && takesLanes(linalgOp, split.getResolvedLanes()) &&
              (op == root.getOperation() || !roots.contains(op)))
            reductions.push_back(linalgOp);
        for (linalg::LinalgOp op : reductions)
          if (failed(splitReduction(rewriter, op, split.getResolvedLanes())))
            return signalPassFailure();
      }
      if (!schedule.getBody().getOps<loop::MmaOp>().empty() &&
          failed(markMma(schedule, root, levels)))
        return signalPassFailure();
      // gpu-distribute-rows carries out loop.warp_reduce on buffers.
      for (auto warpReduce : schedule.getBody().getOps<loop::WarpReduceOp>())
        root->setAttr(loop::kWarpReduceAttrName,
                      rewriter.getI64IntegerAttr(warpReduce.getResolvedThreads()));
      // loop-unroll carries out loop.unroll on buffers.
      for (auto unroll : schedule.getBody().getOps<loop::UnrollOp>())
        for (Operation &op : *root->getBlock())
          if (isa<linalg::LinalgOp>(op))
            op.setAttr(loop::kUnrollAttrName,
                       rewriter.getI64IntegerAttr(unroll.getResolvedFactor()));
      // loop-vector-access carries out loop.vector_access on buffers.
      for (auto access : schedule.getBody().getOps<loop::VectorAccessOp>())
        markVectorAccess(root, access.getResolvedWidth());
      if (sum) {
        collectReturnedLinalgOps(sum->root->getParentOfType<func::FuncOp>(),
                                 returned);
        FailureOr<TilingInterface> tiledSum = tileLevels(
            rewriter, sum->root, sum->levels, returned, roots);
        if (failed(tiledSum))
          return signalPassFailure();
        markVectorAccess(*tiledSum, sum->vector);
      }
      if (!schedule.getTargetDescription().isCpu())
        gpuKernels.insert({root->getParentOfType<func::FuncOp>(),
                           &schedule.getTargetDescription()});
      rewriter.eraseOp(schedule);
    }
    for (auto [func, target] : gpuKernels)
      if (failed(tileLeftovers(rewriter, func, *target)))
        return signalPassFailure();
  }
};

} // namespace
