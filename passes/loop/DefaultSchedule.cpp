//===- DefaultSchedule.cpp - a loop.schedule for every kernel --------------===//
//
// A contraction that tensor cores can take (an f16 matmul, maybe batched,
// maybe with an elementwise epilogue, K and N multiples of 8) gets a
// loop.mma schedule; edge tiles are masked. Every other kernel gets blocks over the root's parallel loops,
// each thread computing one point (or, in reduction kernels whose root is
// elementwise over the reduced rows, one whole row). A kernel with no loop
// to distribute gets no schedule and runs in a single thread. The fallback
// is correct for every kernel class, and slow for contractions and
// reductions.
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/loop/MmaConfig.h"
#include "passes/loop/RowReduction.h"

#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringMap.h"

namespace tessel {
#define GEN_PASS_DEF_LOOPDEFAULTSCHEDULE
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// Threads per block of the default schedule: a multiple of the warp size
/// that keeps several blocks resident per SM.
constexpr int64_t kThreadsPerBlock = 256;
/// Rows per block when each thread walks a whole row.
constexpr int64_t kRowsPerBlock = 64;

const gpu::MappingId kBlockIds[] = {gpu::MappingId::DimX, gpu::MappingId::DimY,
                                    gpu::MappingId::DimZ};

/// Streaming multiprocessors of each target's reference chip (A100, H100/
/// H200): a default tile is the largest that still gives every SM a block.
int64_t multiprocessors(StringRef target) {
  return target == "sm_80" ? 108 : 132;
}

/// Block tiles divide their loop so that every block has the same static
/// thread count (thread ids are mapped statically).
int64_t largestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0)
      return d;
  return 1;
}

struct LoopDefaultSchedulePass
    : tessel::impl::LoopDefaultScheduleBase<LoopDefaultSchedulePass> {
  using LoopDefaultScheduleBase::LoopDefaultScheduleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!llvm::is_contained(loop::ScheduleOp::getKnownTargets(), target) ||
        target == "cpu") {
      module.emitError("loop-default-schedule: unknown GPU target '")
          << target << "'";
      return signalPassFailure();
    }
    // (kernel, result) pairs that already have a schedule; a schedule
    // without `result` covers the kernel's first root.
    llvm::StringMap<llvm::SmallSet<int64_t, 4>> scheduled;
    for (auto schedule : module.getOps<loop::ScheduleOp>())
      scheduled[schedule.getKernel()].insert(
          schedule.getResult() ? static_cast<int64_t>(*schedule.getResult())
                               : -1);
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!func->hasAttr("tessel.kernel") || func.isExternal())
        continue;
      auto kind = func->getAttrOfType<StringAttr>("tessel.kernel");
      for (auto [i, indexAndRoot] : llvm::enumerate(findKernelRoots(func))) {
        auto [index, root] = indexAndRoot;
        const auto &done = scheduled.lookup(func.getSymName());
        if (done.contains(index) || (i == 0 && done.contains(-1)))
          continue;
        if (failed(addSchedule(func, root, kind, i == 0 ? std::nullopt
                                                        : std::optional(index))))
          return signalPassFailure();
      }
    }
  }

  /// A new empty schedule of `func` (for `result`) at the module's end.
  loop::ScheduleOp createSchedule(OpBuilder &sb, func::FuncOp func,
                                  std::optional<unsigned> result) {
    auto schedule = loop::ScheduleOp::create(
        sb, func.getLoc(), FlatSymbolRefAttr::get(func.getSymNameAttr()),
        result ? sb.getI64IntegerAttr(*result) : IntegerAttr(),
        sb.getStringAttr(target));
    sb.setInsertionPointToEnd(sb.createBlock(&schedule.getBody()));
    return schedule;
  }

  /// The tensor-core schedule of `root`, when its kernel is a contraction
  /// loop.mma takes and some legal tiling fits it; false otherwise.
  bool addMmaSchedule(func::FuncOp func, TilingInterface root,
                      std::optional<unsigned> result) {
    std::string why;
    linalg::LinalgOp contraction = findMmaContraction(func, root, why);
    if (!contraction)
      return false;
    unsigned batch = *mmaBatchLoops(contraction);
    SmallVector<int64_t> extents = contraction.getStaticLoopRanges();
    // The innermost batch loop goes to grid z, outer ones stay in the block.
    int64_t batchBlocks = batch ? extents[batch - 1] : 1;
    auto noName = [](MmaConfig::Field) { return std::string(); };
    // Candidates from the largest tile down, four warps each (2x2), four
    // stages where they fit; the first that gives every SM a block wins,
    // else the one with the most blocks.
    std::optional<MmaConfig> best;
    auto blocksOf = [&](const MmaConfig &c) { return c.blocks() * batchBlocks; };
    for (int64_t bm : {128, 64, 32})
      for (int64_t bn : {128, 64, 32})
        for (int64_t bk : {32, 16})
          for (int64_t stages : {4, 3, 2}) {
            MmaConfig c{extents[batch], extents[batch + 1], extents[batch + 2],
                        bm, bn, bm / 2, bn / 2, bk, stages, kCopyElements};
            if (!c.check(target, noName).empty())
              continue;
            if (!best ||
                blocksOf(*best) < std::min(blocksOf(c), multiprocessors(target)))
              best = c;
            break;
          }
    if (!best)
      return false;
    MLIRContext *ctx = &getContext();
    OpBuilder sb = OpBuilder::atBlockEnd(getOperation().getBody());
    createSchedule(sb, func, result);
    Location loc = func.getLoc();
    auto knob = [&](MmaConfig::Field field, int64_t value,
                    ArrayRef<int64_t> choices) -> Value {
      return loop::KnobOp::create(
          sb, loc, sb.getIndexType(), sb.getStringAttr(MmaConfig::knobName(field)),
          sb.getI64IntegerAttr(value), sb.getDenseI64ArrayAttr(choices),
          IntegerAttr(), IntegerAttr(), IntegerAttr());
    };
    Value bm = knob(MmaConfig::BlockM, best->bm, {32, 64, 128, 256});
    Value bn = knob(MmaConfig::BlockN, best->bn, {32, 64, 128, 256});
    Value bk = knob(MmaConfig::BlockK, best->bk, {16, 32, 64});
    Value wm = knob(MmaConfig::WarpM, best->wm, {16, 32, 64, 128});
    Value wn = knob(MmaConfig::WarpN, best->wn, {16, 32, 64, 128});
    Value stages = knob(MmaConfig::Stages, best->stages, {1, 2, 3, 4, 5});
    Value pad = knob(MmaConfig::Pad, best->pad, {0, 8, 16});
    SmallVector<int64_t> blockSizes(root.getLoopIteratorTypes().size(), 0);
    blockSizes[batch] = blockSizes[batch + 1] = ShapedType::kDynamic;
    SmallVector<Attribute> mapping;
    if (batch) {
      blockSizes[batch - 1] = 1;
      mapping.push_back(gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimZ));
    }
    mapping.push_back(gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimY));
    mapping.push_back(gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX));
    loop::TileOp::create(sb, loc, ValueRange{bm, bn},
                         sb.getDenseI64ArrayAttr(blockSizes),
                         sb.getArrayAttr(mapping));
    loop::PromoteOp::create(sb, loc, sb.getDenseI64ArrayAttr({0, 1}),
                            ValueRange{pad},
                            sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    loop::PipelineOp::create(sb, loc, ValueRange{stages},
                             sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    loop::MmaOp::create(
        sb, loc, ValueRange{wm, wn, bk},
        sb.getDenseI64ArrayAttr(
            {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic}),
        sb.getDenseI64ArrayAttr({16, 8, 16}));
    return true;
  }

  /// One row per block, shared by the block's threads (loop.warp_reduce),
  /// when the kernel's ops allow it, its rows are long enough to share and
  /// the grid can take one block per row; false otherwise.
  bool addWarpReduceSchedule(func::FuncOp func, TilingInterface root,
                             ArrayRef<int64_t> extents,
                             std::optional<unsigned> result) {
    if (extents.size() < 2 || extents.size() > 4 ||
        extents.back() < loop::kWarpSize ||
        !rowReductionUnfit(func, root).empty())
      return false;
    int64_t columns = extents.back();
    for (auto [i, extent] : llvm::enumerate(extents.drop_back()))
      if (i + 2 < extents.size() && extent > 65535) // grid y and z
        return false;
    // Four or more columns per thread, at most 256 threads.
    int64_t threads = std::clamp<int64_t>(
        llvm::bit_floor(static_cast<uint64_t>(columns / 4)), loop::kWarpSize,
        256);
    MLIRContext *ctx = &getContext();
    OpBuilder sb = OpBuilder::atBlockEnd(getOperation().getBody());
    createSchedule(sb, func, result);
    Location loc = func.getLoc();
    Value knob = loop::KnobOp::create(
        sb, loc, sb.getIndexType(), sb.getStringAttr("threads"),
        sb.getI64IntegerAttr(threads),
        sb.getDenseI64ArrayAttr({32, 64, 128, 256, 512, 1024}), IntegerAttr(),
        IntegerAttr(), IntegerAttr());
    SmallVector<int64_t> blockSizes(extents.size(), 1);
    blockSizes.back() = 0;
    SmallVector<Attribute> mapping;
    for (int64_t i = extents.size() - 2; i >= 0; --i)
      mapping.insert(mapping.begin(),
                     gpu::GPUBlockMappingAttr::get(
                         ctx, kBlockIds[extents.size() - 2 - i]));
    loop::TileOp::create(sb, loc, ValueRange{},
                         sb.getDenseI64ArrayAttr(blockSizes),
                         sb.getArrayAttr(mapping));
    loop::WarpReduceOp::create(sb, loc, ValueRange{knob},
                               sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    return true;
  }

  /// Appends the default schedule of `root` to the module.
  LogicalResult addSchedule(func::FuncOp func, TilingInterface root,
                            StringAttr kind, std::optional<unsigned> result) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    std::optional<SmallVector<int64_t>> maybeExtents = staticLoopExtents(root);
    if (!maybeExtents)
      return root->emitError("GPU schedules need static shapes; this "
                             "kernel's root has a dynamic loop");
    SmallVector<int64_t> extents = *maybeExtents;
    if (kind && kind.getValue() == "contraction" &&
        addMmaSchedule(func, root, result))
      return success();
    SmallVector<utils::IteratorType> iterators = root.getLoopIteratorTypes();
    // The loops to distribute: parallel ones, innermost first. A reduction
    // kernel whose root is elementwise keeps its innermost loop whole
    // (the reduced rows of a softmax or layer_norm), so that the fused
    // reductions are not recomputed per point. Unit loops (kept reduced
    // dims) are skipped unless nothing else is left to distribute.
    bool rowwise = kind && kind.getValue() == "reduction" &&
                   llvm::all_of(iterators, [](utils::IteratorType it) {
                     return it == utils::IteratorType::parallel;
                   });
    if (rowwise && addWarpReduceSchedule(func, root, extents, result))
      return success();
    SmallVector<int64_t> parallel, unit;
    for (int64_t d = extents.size() - 1; d >= 0; --d) {
      if (iterators[d] != utils::IteratorType::parallel ||
          (rowwise && d == static_cast<int64_t>(extents.size()) - 1))
        continue;
      (extents[d] == 1 ? unit : parallel).push_back(d);
    }
    if (parallel.empty() && !unit.empty())
      parallel.push_back(unit.front());
    // Nothing to distribute (a reduction to a scalar, a softmax over a
    // 1-D tensor): no schedule; gpu-map-kernels runs the kernel in one
    // thread.
    if (parallel.empty())
      return success();
    // Blocks: the innermost distributed loop in chunks of one block's
    // threads, outer ones one index per block (at most 3 grid dims, so
    // further outer loops stay whole within a block's thread).
    int64_t perBlock = rowwise ? kRowsPerBlock : kThreadsPerBlock;
    SmallVector<int64_t> blockSizes(extents.size(), 0),
        threadSizes(extents.size(), 0);
    SmallVector<Attribute> blockMapping;
    for (auto [i, d] : llvm::enumerate(parallel)) {
      if (i == 3)
        break;
      blockSizes[d] = i == 0 ? largestDivisorAtMost(extents[d], perBlock) : 1;
      blockMapping.push_back(gpu::GPUBlockMappingAttr::get(ctx, kBlockIds[i]));
    }
    threadSizes[parallel.front()] = 1;
    // Mapping entries follow the order of the tiled loops (outer first).
    std::reverse(blockMapping.begin(), blockMapping.end());

    OpBuilder sb = OpBuilder::atBlockEnd(module.getBody());
    createSchedule(sb, func, result);
    loop::TileOp::create(sb, func.getLoc(), ValueRange{},
                         sb.getDenseI64ArrayAttr(blockSizes),
                         sb.getArrayAttr(blockMapping));
    loop::TileOp::create(
        sb, func.getLoc(), ValueRange{}, sb.getDenseI64ArrayAttr(threadSizes),
        sb.getArrayAttr({gpu::GPUThreadMappingAttr::get(
            ctx, gpu::MappingId::DimX)}));
    return success();
  }
};

} // namespace
