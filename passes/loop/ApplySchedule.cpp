//===- ApplySchedule.cpp - carry out loop.schedule ops --------------------===//
//
// A schedule's primitives are carried out in the order written, phase by
// phase (loop::Phase): loop.grid_reduce rewrites a kernel's reductions to
// single values (on GPUs the whole kernel, on the CPU before its other
// schedules); loop.materialize computes contraction inputs that the kernel
// computes in nests of their own; loop.split_k splits the root's
// contraction into partial products, which the levels then tile, and their
// sum, tiled on its own; each loop.tile tiles the kernel's current root
// (the tiled root of the previous level) and fuses its producers, so the
// levels nest: blocks, then warps or threads, then sequential loops (on the
// CPU: parallel tiles); the primitives of the innermost tile follow. The
// shared primitives (tiles, loop.split_k, loop.unroll) are carried out
// here, the others by the strategy of the target that owns them
// (strategies/): loop.vectorize and loop.split_reduction rewrite the tile,
// loop.mma, loop.warp_reduce and loop.vector_access become attributes for
// the passes after bufferization. On GPUs, what the schedules leave untiled
// gets the pointwise tiling of its own.
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/linalg/Contractions.h"
#include "passes/linalg/PadAsGather.h"
#include "passes/linalg/SplitK.h"
#include "passes/loop/RowReduction.h"
#include "passes/loop/strategies/Strategy.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"

namespace tessel {
#define GEN_PASS_DEF_LOOPAPPLYSCHEDULES
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

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
    for (const Strategy *strategy : allStrategies())
      strategy->getDependentDialects(registry);
  }

  /// Carries out the CPU schedules' loop.grid_reduce first: it rewrites
  /// all the kernel's reductions to single values, which the roots of its
  /// other schedules may read. Schedules of roots that are single values
  /// (a sum, a mean) then have nothing left to tile, and go.
  LogicalResult splitCpuSingleValueReductions(RewriterBase &rewriter,
                                              SymbolTable &symbols) {
    auto schedules = llvm::to_vector(getOperation().getOps<loop::ScheduleOp>());
    llvm::SmallPtrSet<Operation *, 1> noRoots;
    for (loop::ScheduleOp schedule : schedules) {
      if (!schedule)
        continue;
      auto grids = schedule.getBody().getOps<loop::GridReduceOp>();
      auto func = symbols.lookup<func::FuncOp>(schedule.getKernel());
      const loop::TargetDescription &target = schedule.getTargetDescription();
      if (!target.isCpu() || grids.empty() || !func)
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
      ApplyState state{rewriter, schedule, func, {}, {}, {}, noRoots};
      if (failed(ownerOf(target, grid)->apply(state, grid)))
        return failure();
      rewriter.eraseOp(grid);
      for (loop::ScheduleOp other : singleValued) {
        llvm::replace(schedules, other, loop::ScheduleOp());
        rewriter.eraseOp(other);
      }
    }
    return success();
  }

  /// Carries out `schedule` of `func` on `root` (found before any schedule
  /// changed the kernels), its primitives in the order written.
  LogicalResult applySchedule(IRRewriter &rewriter, loop::ScheduleOp schedule,
                              func::FuncOp func, TilingInterface root,
                              llvm::SmallPtrSetImpl<Operation *> &returned,
                              llvm::SmallPtrSetImpl<Operation *> &roots) {
    const loop::TargetDescription &target = schedule.getTargetDescription();
    ApplyState state{rewriter, schedule, func, root, {}, {}, roots};
    for (auto tile : schedule.getBody().getOps<loop::TileOp>()) {
      SmallVector<int64_t> sizes = tile.getResolvedSizes();
      if (sizes.size() != root.getLoopIteratorTypes().size())
        return tile.emitError("has ")
               << sizes.size() << " sizes but the kernel's root has "
               << root.getLoopIteratorTypes().size() << " loops";
      SmallVector<Attribute> mapping;
      if (tile.getMapping())
        mapping = llvm::to_vector(*tile.getMapping());
      state.levels.push_back(
          {tile, sizes, mapping, mapping.empty() && !tile.getParallel()});
    }
    std::optional<SplitSum> sum;
    // The levels are tiled together where the first of them stands (or
    // before the first primitive of the innermost tile): they nest, and
    // loop.split_k, before them, has added its part loop to each.
    bool tiled = false;
    auto tileLevelsOnce = [&]() -> LogicalResult {
      if (tiled)
        return success();
      tiled = true;
      FailureOr<TilingInterface> innermost =
          tileLevels(rewriter, state.root, state.levels, returned, roots);
      if (failed(innermost))
        return failure();
      state.root = *innermost;
      return success();
    };
    for (Operation &op : schedule.getBody().getOps()) {
      std::optional<loop::Phase> phase = loop::phaseOf(&op);
      if (!phase)
        continue;
      // loop.materialize and loop.split_k act on the contraction that the
      // root computes a tile of.
      if ((*phase == loop::Phase::Inputs || *phase == loop::Phase::Split) &&
          !state.contraction) {
        state.contraction = findRootContraction(&op, func, state.root);
        if (!state.contraction)
          return failure();
      }
      if (*phase >= loop::Phase::Levels && failed(tileLevelsOnce()))
        return failure();
      if (auto split = dyn_cast<loop::SplitKOp>(op)) {
        if (split.getResolvedParts() == 1)
          continue;
        roots.erase(state.root.getOperation());
        FailureOr<SplitSum> splitSum = splitContraction(
            rewriter, schedule, split, state.contraction, state.root,
            state.levels);
        if (failed(splitSum))
          return failure();
        sum = *splitSum;
        roots.insert(state.root.getOperation());
        roots.insert(sum->root.getOperation());
        // The partial products are not returned; the sum is.
        returned.clear();
      } else if (auto unroll = dyn_cast<loop::UnrollOp>(op)) {
        // loop-unroll carries out loop.unroll on buffers.
        for (Operation &inner : *state.root->getBlock())
          if (isa<linalg::LinalgOp>(inner))
            inner.setAttr(loop::kUnrollAttrName,
                          rewriter.getI64IntegerAttr(unroll.getResolvedFactor()));
      } else if (!isSharedPrimitive(&op)) {
        const Strategy *owner = ownerOf(target, &op);
        if (!owner)
          return op.emitError("is not a primitive of target '")
                 << target.name << "'";
        if (failed(owner->apply(state, &op)))
          return failure();
      }
    }
    if (failed(tileLevelsOnce()))
      return failure();
    if (sum) {
      collectReturnedLinalgOps(func, returned);
      FailureOr<TilingInterface> tiledSum =
          tileLevels(rewriter, sum->root, sum->levels, returned, roots);
      if (failed(tiledSum))
        return failure();
      markVectorAccess(*tiledSum, sum->vector);
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
    SmallVector<std::tuple<loop::ScheduleOp, func::FuncOp, TilingInterface,
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
      const loop::TargetDescription &target = schedule.getTargetDescription();
      // On GPUs, loop.grid_reduce covers the whole kernel; the rest are
      // leftovers.
      if (auto grids = schedule.getBody().getOps<loop::GridReduceOp>();
          !grids.empty()) {
        llvm::SmallPtrSet<Operation *, 1> noRoots;
        ApplyState state{rewriter, schedule, func, {}, {}, {}, noRoots};
        if (failed(ownerOf(target, *grids.begin())
                       ->apply(state, *grids.begin())))
          return signalPassFailure();
        gpuKernels.insert({func, &target});
        rewriter.eraseOp(schedule);
        continue;
      }
      FailureOr<TilingInterface> root = scheduledRoot(
          schedule, func, findKernelRoots(func), schedule.getResult());
      if (failed(root))
        return signalPassFailure();
      // A rootless kernel's ops are all leftovers.
      if (!*root) {
        if (!target.isCpu())
          gpuKernels.insert({func, &target});
        rewriter.eraseOp(schedule);
        continue;
      }
      llvm::SmallPtrSet<Operation *, 4> returned;
      collectReturnedLinalgOps(func, returned);
      work.emplace_back(schedule, func, *root, std::move(returned));
    }
    llvm::SmallPtrSet<Operation *, 8> roots;
    for (auto &item : work)
      roots.insert(std::get<2>(item).getOperation());
    for (auto &[schedule, func, root, returned] : work) {
      if (failed(applySchedule(rewriter, schedule, func, root, returned, roots)))
        return signalPassFailure();
      if (!schedule.getTargetDescription().isCpu())
        gpuKernels.insert({func, &schedule.getTargetDescription()});
      rewriter.eraseOp(schedule);
    }
    for (auto [func, target] : gpuKernels)
      if (failed(tileLeftovers(rewriter, func, *target)))
        return signalPassFailure();
  }
};

} // namespace
