//===- Validate.cpp - schedules against their target's limits -------------===//
//
// Op verifiers check what one op can see (knob domains, mapping kinds, the
// order of primitives); this pass needs the kernel and the target. It
// follows the tile extents level by level and checks each against the
// hardware, and what every class shares (loop.split_k, loop.unroll); then
// each strategy of the target that owns a primitive of the schedule (the
// target's last strategy when none does) checks its own.
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/linalg/Contractions.h"
#include "passes/loop/strategies/Strategy.h"

#include "llvm/ADT/StringMap.h"

namespace tessel {
#define GEN_PASS_DEF_LOOPVALIDATESCHEDULES
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// Checks loop.split_k: a (batched) matmul kernel whose K the part count
/// divides; on GPUs, grid z free for the parts. Returns the part count.
FailureOr<int64_t> validateSplitK(loop::ScheduleOp schedule, func::FuncOp func,
                                  TilingInterface root,
                                  loop::TileOp blockTile) {
  auto splits = schedule.getBody().getOps<loop::SplitKOp>();
  if (splits.empty())
    return 1;
  if (std::next(splits.begin()) != splits.end())
    return (*std::next(splits.begin())).emitError("splits K a second time");
  loop::SplitKOp split = *splits.begin();
  int64_t parts = split.getResolvedParts();
  std::string name =
      valueName(split.getDynamicParts(), split.getStaticParts(), 0, "parts");
  linalg::LinalgOp contraction = findRootContraction(split, func, root);
  if (!contraction)
    return failure();
  std::optional<unsigned> batch =
      matmulBatchLoops(contraction, /*broadcast=*/true);
  if (!batch || ShapedType::isDynamic(contraction.getStaticLoopRanges()[*batch + 2]))
    return split.emitError("cannot apply to kernel '")
           << schedule.getKernel() << "': its contraction is not a (batched) "
           << "matmul of static depth, A (m, k) and B (k, n)";
  if (parts != 1 && contraction.hasDynamicShape())
    return split.emitError(name)
           << " = " << parts << ": K is split only in matmuls of static size "
           << "(the partial products would need a workspace of dynamic size)";
  int64_t depth = contraction.getStaticLoopRanges()[*batch + 2];
  if (depth % parts != 0)
    return split.emitError(name) << " = " << parts
                                 << " does not divide the contraction's K = "
                                 << depth;
  if (schedule.getTargetDescription().isCpu() || parts == 1)
    return parts;
  int64_t maxZ = schedule.getTargetDescription().maxGrid[2];
  if (parts > maxZ)
    return split.emitError(name) << " = " << parts << " parts go on grid z, "
                                 << "whose limit is " << maxZ;
  if (blockTile)
    for (Attribute id : *blockTile.getMapping())
      if (cast<gpu::GPUBlockMappingAttr>(id).getBlock() ==
          gpu::MappingId::DimZ)
        return split.emitError("puts the parts on grid z, which the block "
                               "tile already maps a loop to");
  return parts;
}

LogicalResult validate(loop::ScheduleOp schedule, func::FuncOp func) {
  const loop::TargetDescription &target = schedule.getTargetDescription();
  bool gpu = target.isGpu();
  for (Operation &op : schedule.getBody().getOps())
    if (!isSharedPrimitive(&op) && !ownerOf(target, &op))
      return op.emitError("is for ")
             << (gpu ? "the CPU" : "GPU targets") << ", not target '"
             << schedule.getTarget().getName() << "'";
  // loop.grid_reduce schedules the kernel before any root: on GPUs all
  // of it, on the CPU its reductions to single values, leaving the root to
  // the other primitives.
  const Strategy *gridOwner = nullptr;
  if (auto grids = schedule.getBody().getOps<loop::GridReduceOp>();
      !grids.empty()) {
    gridOwner = ownerOf(target, *grids.begin());
    if (failed(gridOwner->validate({schedule, func})))
      return failure();
    if (gpu)
      return success();
  }
  FailureOr<TilingInterface> maybeRoot = scheduledRoot(
      schedule, func, findKernelRoots(func), schedule.getResult());
  if (failed(maybeRoot))
    return failure();
  if (!*maybeRoot)
    return success(); // nothing to tile
  TilingInterface root = *maybeRoot;
  // A dynamic kernel's schedule is checked at the largest sizes of its
  // range (docs/dynamic-shapes.md).
  std::optional<SmallVector<int64_t>> maybeExtents = largestLoopExtents(root);
  if (!maybeExtents)
    return schedule.emitError("kernel '")
           << schedule.getKernel() << "' has dynamic loops whose largest "
           << "sizes its size symbols (graph.dims) do not give";
  SmallVector<int64_t> extents = *maybeExtents;
  SmallVector<utils::IteratorType> iterators = root.getLoopIteratorTypes();
  if (gpu && llvm::is_contained(extents, 0))
    return emitEmptyLoopError(schedule, schedule.getKernel());
  loop::TileOp blockTile;
  bool threadMapped = false;
  int64_t threads = 1;
  for (auto tile : schedule.getBody().getOps<loop::TileOp>()) {
    SmallVector<int64_t> sizes = tile.getResolvedSizes();
    if (sizes.size() != extents.size())
      return tile.emitError("has ")
             << sizes.size() << " sizes but the kernel's root has "
             << extents.size() << " loops";
    std::optional<ArrayAttr> mapping = tile.getMapping();
    if (gpu && tile.getParallel())
      return tile.emitError("is `parallel`, which is for CPU schedules; "
                            "GPU schedules map loops with `mapping`");
    if (!gpu && mapping)
      return tile.emitError("maps loops to GPU ids, but the target is 'cpu'; "
                            "CPU schedules tile in parallel with `parallel`");
    bool isBlock = mapping && isa<gpu::GPUBlockMappingAttr>((*mapping)[0]);
    if (mapping && !isBlock && !blockTile)
      return tile.emitError("maps loops to ")
             << (*mapping)[0] << " before any loop is mapped to blocks";
    if (isBlock && blockTile)
      return tile.emitError("maps loops to blocks a second time");
    // Processors of this level, per mapped loop in mapping order.
    int64_t level = 1;
    unsigned m = 0;
    for (auto [i, size] : llvm::enumerate(sizes)) {
      if (size == 0)
        continue;
      if (size > extents[i])
        return tile.emitError(sizeName(tile, i))
               << " = " << size << " exceeds its loop's extent "
               << extents[i];
      if ((mapping || tile.getParallel()) &&
          iterators[i] == utils::IteratorType::reduction)
        return tile.emitError(sizeName(tile, i))
               << " = " << size << " tiles reduction loop " << i
               << " across parallel "
               << (mapping ? "processors" : "workers")
               << ", whose tiles would race on the result; tile it in a "
                  "sequential loop.tile (neither `parallel` nor mapped) or "
                  "split it with loop.split_k";
      int64_t count = llvm::divideCeil(extents[i], size);
      if (mapping) {
        Attribute id = (*mapping)[m++];
        if (isBlock) {
          // Linear ids (past x, y, z) may land on y or z: the smaller limit.
          auto dim = static_cast<unsigned>(
              cast<gpu::GPUBlockMappingAttr>(id).getBlock());
          int64_t limit = dim < 3 ? target.maxGrid[dim]
                                  : std::min(target.maxGrid[1],
                                             target.maxGrid[2]);
          if (count > limit)
            return tile.emitError(sizeName(tile, i))
                   << " = " << size << " gives " << count
                   << " blocks along " << id << "; the limit is " << limit;
        }
        level *= count * loop::threadsPerProcessor(id);
      }
      extents[i] = size;
    }
    if (mapping && !isBlock) {
      if (level * threads > target.maxThreadsPerBlock)
        return tile.emitError("gives ")
               << level * threads << " threads per block on target '"
               << target.name << "'; the limit is "
               << target.maxThreadsPerBlock;
      threads *= level;
    }
    threadMapped |= mapping && !isBlock;
    if (isBlock)
      blockTile = tile;
  }
  for (auto unroll : schedule.getBody().getOps<loop::UnrollOp>())
    for (Operation &op : schedule.getBody().getOps())
      if (const Strategy *owner = ownerOf(target, &op);
          owner && owner->writesTileLoops(&op))
        return unroll.emitError("cannot be combined with ")
               << op.getName() << ", which writes the tile's loops itself";
  FailureOr<int64_t> parts = validateSplitK(schedule, func, root, blockTile);
  if (failed(parts))
    return failure();
  ScheduleCheck check{schedule,  func,         root,  *maybeExtents, extents,
                      blockTile, threadMapped, *parts};
  // Each class checks its own primitives; a schedule of shared ones alone
  // is the last strategy's.
  ArrayRef<const Strategy *> strategies = strategiesFor(target);
  bool owned = false;
  for (const Strategy *strategy : strategies) {
    if (strategy == gridOwner ||
        llvm::none_of(schedule.getBody().getOps(), [&](Operation &op) {
          return strategy->owns(&op);
        }))
      continue;
    owned = true;
    if (failed(strategy->validate(check)))
      return failure();
  }
  if (!owned && failed(strategies.back()->validate(check)))
    return failure();
  if (gpu && !blockTile)
    return schedule.emitError("a schedule for GPU target '")
           << schedule.getTarget().getName() << "' must map a loop to blocks";
  return success();
}

struct LoopValidateSchedulesPass
    : tessel::impl::LoopValidateSchedulesBase<LoopValidateSchedulesPass> {
  void runOnOperation() override {
    SymbolTable symbols(getOperation());
    bool failedAny = false;
    llvm::StringMap<unsigned> schedulesOf, gridReducesOf;
    for (auto schedule : getOperation().getOps<loop::ScheduleOp>()) {
      ++schedulesOf[schedule.getKernel()];
      if (!schedule.getBody().getOps<loop::GridReduceOp>().empty())
        ++gridReducesOf[schedule.getKernel()];
    }
    for (auto schedule : getOperation().getOps<loop::ScheduleOp>()) {
      auto func = symbols.lookup<func::FuncOp>(schedule.getKernel());
      if (!func) {
        schedule.emitError("schedules '")
            << schedule.getKernel() << "', which is not a func.func";
        failedAny = true;
        continue;
      }
      // On the CPU, loop.grid_reduce splits all the kernel's reductions
      // to single values, once.
      bool cpu = schedule.getTargetDescription().isCpu();
      if (!schedule.getBody().getOps<loop::GridReduceOp>().empty() &&
          (cpu ? gridReducesOf[schedule.getKernel()]
               : schedulesOf[schedule.getKernel()]) > 1) {
        schedule.emitError("kernel '")
            << schedule.getKernel()
            << (cpu ? "' has loop.grid_reduce in another schedule, but it "
                      "splits all the kernel's reductions to single values"
                    : "' has other schedules, but loop.grid_reduce "
                      "schedules all of it");
        failedAny = true;
        continue;
      }
      failedAny |= failed(validate(schedule, func));
    }
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
