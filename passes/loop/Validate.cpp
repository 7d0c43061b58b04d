//===- Validate.cpp - schedules against their target's limits -------------===//
//
// Op verifiers check what one op can see (knob domains, mapping kinds);
// this pass needs the kernel and the target: it follows the tile extents
// level by level and checks each against the hardware.
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/cpu/SplitReduction.h"
#include "passes/cpu/VectorizeMatmul.h"
#include "passes/linalg/Contractions.h"
#include "passes/loop/Alignment.h"
#include "passes/loop/MmaConfig.h"
#include "passes/loop/RowReduction.h"

#include "llvm/ADT/StringMap.h"

namespace tessel {
#define GEN_PASS_DEF_LOOPVALIDATESCHEDULES
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// The description of the target `primitive`'s schedule is for.
const loop::TargetDescription &targetOf(Operation *primitive) {
  return primitive->getParentOfType<loop::ScheduleOp>().getTargetDescription();
}

/// A name for entry `index` of a list of tunable values in messages: its
/// knob, else `what` and (in a list of several) its position.
std::string valueName(ValueRange dynamic, ArrayRef<int64_t> statics,
                      unsigned index, StringRef what) {
  unsigned next = 0;
  for (auto [i, s] : llvm::enumerate(statics)) {
    if (!ShapedType::isDynamic(s))
      continue;
    if (i == index)
      return ("knob '" +
              dynamic[next].getDefiningOp<loop::KnobOp>().getName() + "'")
          .str();
    ++next;
  }
  if (statics.size() == 1)
    return what.str();
  return (what + " #" + Twine(index)).str();
}

std::string sizeName(loop::TileOp tile, unsigned index) {
  return valueName(tile.getDynamicSizes(), tile.getStaticSizes(), index,
                   "tile size");
}

/// A primitive that distributes the block tile itself (loop.mma,
/// loop.warp_reduce) needs one block-level tile and no other.
LogicalResult checkOnlyBlockTile(loop::ScheduleOp schedule, Operation *primitive,
                                 loop::TileOp blockTile) {
  if (!blockTile)
    return primitive->emitError("needs a block-level loop.tile before it");
  for (auto tile : schedule.getBody().getOps<loop::TileOp>())
    if (tile != blockTile)
      return tile.emitError("cannot be combined with ")
             << primitive->getName()
             << ", which distributes the block tile itself";
  return success();
}

/// Checks loop.mma (with loop.promote and loop.pipeline) against the
/// kernel's contraction and the target. `blockTile` tiles the root's loops,
/// which are the contraction's batch, M and N loops (the root is the
/// contraction or reads it at the identity).
LogicalResult validateMma(loop::ScheduleOp schedule, func::FuncOp func,
                          TilingInterface root, loop::TileOp blockTile,
                          int64_t parts) {
  auto mma = *schedule.getBody().getOps<loop::MmaOp>().begin();
  if (failed(checkOnlyBlockTile(schedule, mma, blockTile)))
    return failure();
  auto promotes = schedule.getBody().getOps<loop::PromoteOp>();
  auto promote = promotes.empty() ? loop::PromoteOp() : *promotes.begin();
  if (!promote || !llvm::is_contained(promote.getInputs(), 0) ||
      !llvm::is_contained(promote.getInputs(), 1))
    return mma.emitError("needs loop.promote inputs [0, 1]: ldmatrix reads "
                         "its fragments from shared memory");
  std::string why;
  SmallVector<int64_t> computed;
  linalg::LinalgOp contraction =
      findMmaContraction(func, root, why, &computed);
  if (!contraction)
    return mma.emitError("cannot apply to kernel '")
           << schedule.getKernel() << "': " << why;
  for (int64_t input : computed)
    if (llvm::none_of(schedule.getBody().getOps<loop::MaterializeOp>(),
                      [&](loop::MaterializeOp m) {
                        return llvm::is_contained(m.getInputs(), input);
                      }))
      return mma.emitError("copies its tiles from memory, but input ")
             << input << " of the contraction is computed in the kernel; "
             << "add loop.materialize inputs [" << input << "]";
  int64_t elementBytes = mmaElementBytes(contraction);
  SmallVector<int64_t> shape = {16, 8, elementBytes == 4 ? 8 : 16};
  if (mma.getShape() != ArrayRef<int64_t>(shape))
    return mma.emitError("shape [")
           << mma.getShape() << "] is not supported; "
           << (elementBytes == 4 ? "f32 operands (as tf32)" : "f16 or bf16 operands")
           << " with f32 accumulation use [" << shape << "]";
  unsigned batch = *mmaBatchLoops(contraction);
  SmallVector<int64_t> extents = contraction.getStaticLoopRanges();
  SmallVector<int64_t> block = blockTile.getResolvedSizes();
  for (auto [size, extent] : llvm::zip(block, extents))
    if (size == 0)
      size = extent; // untiled: the whole loop
  SmallVector<int64_t> sizes = mma.getResolvedSizes();
  int64_t stages = 1;
  auto pipelines = schedule.getBody().getOps<loop::PipelineOp>();
  if (!pipelines.empty())
    stages = (*pipelines.begin()).getResolvedStages();
  MmaConfig c{extents[batch], extents[batch + 1], extents[batch + 2] / parts,
              block[batch],   block[batch + 1],   sizes[0],
              sizes[1],       sizes[2],           stages,
              promote.getResolvedPad(), elementBytes};
  std::string error = c.check(schedule.getTargetDescription(), [&](MmaConfig::Field f) {
    switch (f) {
    case MmaConfig::BlockM:
    case MmaConfig::BlockN:
      return sizeName(blockTile, batch + (f == MmaConfig::BlockM ? 0 : 1));
    case MmaConfig::WarpM:
    case MmaConfig::WarpN:
    case MmaConfig::BlockK:
      return valueName(mma.getDynamicSizes(), mma.getStaticSizes(),
                       f == MmaConfig::WarpM ? 0 : f == MmaConfig::WarpN ? 1 : 2,
                       "loop.mma size");
    case MmaConfig::Stages:
      return pipelines.empty()
                 ? std::string("stages")
                 : valueName((*pipelines.begin()).getDynamicStages(),
                             (*pipelines.begin()).getStaticStages(), 0,
                             "stages");
    case MmaConfig::Pad:
      return valueName(promote.getDynamicPad(), promote.getStaticPad(), 0,
                       "pad");
    }
    llvm_unreachable("unknown field");
  });
  if (!error.empty())
    return mma.emitError(error);
  return success();
}

/// Checks loop.warp_reduce: one block tile that keeps rows whole, a kernel
/// of row ops, at most 1024 threads.
LogicalResult validateWarpReduce(loop::ScheduleOp schedule, func::FuncOp func,
                                 TilingInterface root, loop::TileOp blockTile,
                                 ArrayRef<int64_t> extents) {
  auto warpReduce = *schedule.getBody().getOps<loop::WarpReduceOp>().begin();
  if (failed(checkOnlyBlockTile(schedule, warpReduce, blockTile)))
    return failure();
  // A root without the row loop (over per-row values) cannot split it.
  std::optional<KernelRows> rows = kernelRows(func, root);
  int64_t last = blockTile.getResolvedSizes().back();
  if (rows && rows->rootWalksRow && last != 0 && last != extents.back())
    return blockTile.emitError(sizeName(blockTile, extents.size() - 1))
           << " = " << last << " splits the rows that loop.warp_reduce "
           << "shares among threads; leave it 0";
  int64_t maxThreads = targetOf(warpReduce).maxThreadsPerBlock;
  if (warpReduce.getResolvedThreads() > maxThreads)
    return warpReduce.emitError("threads = ")
           << warpReduce.getResolvedThreads() << " exceeds the limit of "
           << maxThreads << " threads per block";
  std::string why = rowReductionUnfit(func, root);
  if (!why.empty())
    return warpReduce.emitError("cannot apply to kernel '")
           << schedule.getKernel() << "': " << why;
  return success();
}

/// Checks loop.vectorize: a matmul kernel, at most one `parallel` tile,
/// not of K, and register blocks no larger than the tiles (blocks that do
/// not divide are padded, but a block larger than its tile only computes
/// padding).
LogicalResult validateVectorize(loop::ScheduleOp schedule, func::FuncOp func,
                                TilingInterface root, int64_t parts) {
  auto vectorize = *schedule.getBody().getOps<loop::VectorizeOp>().begin();
  std::string why;
  linalg::LinalgOp matmul = findVectorizableMatmul(func, root, why);
  if (!matmul)
    return vectorize.emitError("cannot apply to kernel '")
           << schedule.getKernel() << "': " << why;
  // The root's loops and the matmul's begin with the same batch, m and n.
  unsigned batch = *matmulBatchLoops(matmul, /*broadcast=*/true);
  SmallVector<int64_t> tile(
      ArrayRef(matmul.getStaticLoopRanges()).drop_front(batch));
  const char *what[] = {"rows", "columns", "depth"};
  loop::TileOp parallelTile;
  for (auto t : schedule.getBody().getOps<loop::TileOp>()) {
    if (!t.getParallel() || parallelTile)
      return t.emitError("cannot be combined with loop.vectorize, which "
                         "takes the tile of one `parallel` loop.tile");
    parallelTile = t;
  }
  if (parallelTile) {
    SmallVector<int64_t> sizes = parallelTile.getResolvedSizes();
    if (sizes.size() > batch + 2 && sizes[batch + 2] != 0)
      return parallelTile.emitError(sizeName(parallelTile, batch + 2))
             << " = " << sizes[batch + 2] << " tiles the matmul's K loop; "
             << "loop.vectorize walks K itself (its depth)";
    for (unsigned i : {0u, 1u})
      if (sizes[batch + i] != 0)
        tile[i] = std::min(tile[i], sizes[batch + i]);
  }
  tile[2] = std::min(tile[2] / parts, vectorize.getResolvedDepth());
  for (auto [i, size] : llvm::enumerate(vectorize.getResolvedSizes()))
    if (size > tile[i])
      return vectorize.emitError(valueName(vectorize.getDynamicSizes(),
                                           vectorize.getStaticSizes(), i,
                                           "loop.vectorize size"))
             << " = " << size << " exceeds the tile's " << tile[i] << " "
             << what[i];
  return success();
}

/// Checks loop.split_reduction: the kernel has reductions over an innermost
/// loop, and the lane count is at most each one's extent.
LogicalResult validateSplitReduction(loop::ScheduleOp schedule,
                                     func::FuncOp func) {
  for (auto split : schedule.getBody().getOps<loop::SplitReductionOp>()) {
    bool any = false;
    WalkResult walk = func.walk([&](linalg::LinalgOp op) {
      if (!isSplittableReduction(op))
        return WalkResult::advance();
      any = true;
      int64_t extent = op.getStaticLoopRanges().back();
      if (split.getResolvedLanes() <= extent)
        return WalkResult::advance();
      InFlightDiagnostic diag =
          split.emitError(valueName(split.getDynamicLanes(),
                                    split.getStaticLanes(), 0, "lanes"))
          << " = " << split.getResolvedLanes()
          << " exceeds the extent " << extent << " of a reduction";
      diag.attachNote(op->getLoc()) << "the reduction";
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return failure();
    if (!any)
      return split.emitError("kernel '")
             << schedule.getKernel()
             << "' has no reduction over an innermost loop to split";
  }
  return success();
}

/// Checks loop.vector_access: an elementwise root whose innermost tile (of
/// `tile` extents, mapped to threads) is `width` points of its innermost
/// loop and of at most one other, one of every other loop, in vectors of
/// at most 16 bytes.
LogicalResult validateVectorAccess(loop::ScheduleOp schedule,
                                   TilingInterface root, bool threadMapped,
                                   ArrayRef<int64_t> tile) {
  for (auto access : schedule.getBody().getOps<loop::VectorAccessOp>()) {
    int64_t width = access.getResolvedWidth();
    std::string name = valueName(access.getDynamicWidth(),
                                 access.getStaticWidth(), 0, "width");
    for (Operation &op : schedule.getBody().getOps())
      if (isa<loop::MmaOp, loop::WarpReduceOp>(op))
        return access.emitError("cannot be combined with ")
               << op.getName() << ", which writes the block's accesses itself";
    if (llvm::any_of(root.getLoopIteratorTypes(), [](utils::IteratorType it) {
          return it != utils::IteratorType::parallel;
        }))
      return access.emitError("needs an elementwise root; the root of "
                              "kernel '")
             << schedule.getKernel() << "' has reduction loops";
    if (!threadMapped)
      return access.emitError("needs a loop.tile mapped to threads");
    // One other loop may have `width` points too: the loop along which a
    // transposed operand is contiguous.
    bool other = false;
    for (auto [i, extent] : llvm::enumerate(tile.drop_back())) {
      if (extent == 1)
        continue;
      if (extent == width && !other) {
        other = true;
        continue;
      }
      return access.emitError("needs a thread tile of one point in every "
                              "loop but the innermost and at most one "
                              "other of ")
             << name << " points; loop " << i << " keeps " << extent;
    }
    if (tile.back() != width)
      return access.emitError(name)
             << " = " << width << " differs from the thread tile's "
             << tile.back() << " points of the innermost loop; tile it by "
             << "the same knob";
    Type widest = widestElement(root);
    int64_t bytes = widest ? width * elementBytes(widest) : 0;
    if (bytes > loop::kMaxVectorBytes)
      return access.emitError(name)
             << " = " << width << " moves " << bytes << " bytes of "
             << widest << " per vector; the limit is "
             << loop::kMaxVectorBytes;
  }
  return success();
}

/// Checks loop.materialize: a contraction kernel whose named inputs are
/// computed in it, by linalg ops.
LogicalResult validateMaterialize(loop::ScheduleOp schedule, func::FuncOp func,
                                  TilingInterface root) {
  for (auto materialize : schedule.getBody().getOps<loop::MaterializeOp>()) {
    linalg::LinalgOp contraction =
        findRootContraction(materialize, func, root);
    if (!contraction)
      return failure();
    for (int64_t input : materialize.getInputs())
      if (!computingOp(contraction.getDpsInputs()[input]))
        return materialize.emitError("input ")
               << input << " of the contraction is not computed by a linalg "
               << "op of the kernel; there is nothing to materialize";
  }
  return success();
}

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
  if (!batch || ShapedType::isDynamicShape(contraction.getStaticLoopRanges()))
    return split.emitError("cannot apply to kernel '")
           << schedule.getKernel() << "': its contraction is not a (batched) "
           << "matmul of static shape, A (m, k) and B (k, n)";
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

/// Checks loop.grid_reduce: on GPUs a schedule of nothing else with a
/// thread count, on the CPU one without, for a kernel whose reductions to
/// a single value it can take (gridReductionUnfit), in a part count that
/// divides each.
LogicalResult validateGridReduce(loop::ScheduleOp schedule, func::FuncOp func,
                                 loop::GridReduceOp grid) {
  bool gpu = !schedule.getTargetDescription().isCpu();
  if (!llvm::hasSingleElement(schedule.getBody().getOps<loop::GridReduceOp>()))
    return grid.emitError("is one of several in the schedule; one splits all "
                          "the kernel's reductions to single values");
  std::optional<int64_t> threads = grid.getResolvedThreads();
  if (gpu && !threads)
    return grid.emitError("needs `threads` on GPU targets");
  if (!gpu && threads)
    return grid.emitError("takes no `threads` on the CPU, whose rows are "
                          "walked in vectors by loop.split_reduction");
  if (gpu)
    for (Operation &op : schedule.getBody().getOps())
      if (!isa<loop::KnobOp>(op) && &op != grid.getOperation())
        return op.emitError("cannot be combined with loop.grid_reduce, which "
                            "schedules the whole kernel");
  int64_t parts = grid.getResolvedParts();
  std::string why = gridReductionUnfit(func, parts, gpu);
  if (!why.empty())
    return grid.emitError("cannot apply to kernel '")
           << schedule.getKernel() << "': " << why;
  for (linalg::GenericOp op : singleValueReductions(func)) {
    int64_t elements = reducedElements(op);
    if (elements % parts == 0)
      continue;
    InFlightDiagnostic diag =
        grid.emitError(valueName(grid.getDynamicParts(),
                                 grid.getStaticParts(), 0, "parts"))
        << " = " << parts << " does not divide the " << elements
        << " elements of a reduction";
    diag.attachNote(op.getLoc()) << "the reduction";
    return diag;
  }
  int64_t maxThreads = targetOf(grid).maxThreadsPerBlock;
  if (threads && *threads > maxThreads)
    return grid.emitError(valueName(grid.getDynamicThreads(),
                                    grid.getStaticThreads(), 0, "threads"))
           << " = " << *threads << " exceeds the limit of " << maxThreads
           << " threads per block";
  return success();
}

LogicalResult validate(loop::ScheduleOp schedule, func::FuncOp func) {
  // On the CPU, loop.grid_reduce leaves the root to the other primitives.
  if (auto grids = schedule.getBody().getOps<loop::GridReduceOp>();
      !grids.empty()) {
    if (failed(validateGridReduce(schedule, func, *grids.begin())))
      return failure();
    if (!schedule.getTargetDescription().isCpu())
      return success();
  }
  FailureOr<TilingInterface> maybeRoot = scheduledRoot(
      schedule, func, findKernelRoots(func), schedule.getResult());
  if (failed(maybeRoot))
    return failure();
  if (!*maybeRoot)
    return success(); // nothing to tile
  TilingInterface root = *maybeRoot;
  std::optional<SmallVector<int64_t>> maybeExtents = staticLoopExtents(root);
  if (!maybeExtents)
    return schedule.emitError("kernel '")
           << schedule.getKernel() << "' has dynamic loops; schedules "
           << "need static shapes";
  SmallVector<int64_t> extents = *maybeExtents;
  SmallVector<utils::IteratorType> iterators = root.getLoopIteratorTypes();
  const loop::TargetDescription &target = schedule.getTargetDescription();
  bool gpu = target.isGpu();
  if (gpu && llvm::is_contained(extents, 0))
    return schedule.emitError("kernel '")
           << schedule.getKernel() << "' has a loop of extent 0, which GPU "
           << "schedules do not take; graph-decompose folds zero-size "
              "tensors away";
  bool blocks = false;
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
    if (mapping && !isBlock && !blocks)
      return tile.emitError("maps loops to ")
             << (*mapping)[0] << " before any loop is mapped to blocks";
    if (isBlock && blocks)
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
    blocks |= isBlock;
    threadMapped |= mapping && !isBlock;
    if (isBlock)
      blockTile = tile;
  }
  for (Operation &op : schedule.getBody().getOps()) {
    bool gpuOnly = isa<loop::MmaOp, loop::PromoteOp, loop::PipelineOp,
                       loop::WarpReduceOp, loop::MaterializeOp,
                       loop::VectorAccessOp>(op);
    if (gpuOnly != gpu &&
        (gpuOnly || isa<loop::VectorizeOp, loop::SplitReductionOp>(op)))
      return op.emitError("is for ")
             << (gpuOnly ? "GPU targets" : "the CPU") << ", not target '"
             << schedule.getTarget().getName() << "'";
  }
  if (failed(validateSplitReduction(schedule, func)))
    return failure();
  if (failed(validateMaterialize(schedule, func, root)) ||
      failed(validateVectorAccess(schedule, root, threadMapped, extents)))
    return failure();
  // Primitives that write the tile's loops themselves unroll them by their
  // own knobs (register blocks, K steps, columns per thread).
  for (auto unroll : schedule.getBody().getOps<loop::UnrollOp>())
    for (Operation &op : schedule.getBody().getOps())
      if (isa<loop::VectorizeOp, loop::SplitReductionOp, loop::MmaOp,
              loop::WarpReduceOp>(op))
        return unroll.emitError("cannot be combined with ")
               << op.getName() << ", which writes the tile's loops itself";
  FailureOr<int64_t> parts = validateSplitK(schedule, func, root, blockTile);
  if (failed(parts))
    return failure();
  if (!schedule.getBody().getOps<loop::VectorizeOp>().empty())
    return validateVectorize(schedule, func, root, *parts);
  if (!schedule.getBody().getOps<loop::MmaOp>().empty())
    return validateMma(schedule, func, root, blockTile, *parts);
  if (!schedule.getBody().getOps<loop::WarpReduceOp>().empty())
    return validateWarpReduce(schedule, func, root, blockTile, *maybeExtents);
  if (gpu && !blocks)
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
