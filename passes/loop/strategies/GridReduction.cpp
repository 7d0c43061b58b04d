//===- GridReduction.cpp - reductions to single values in parts ------------===//
//
// A kernel that reduces to single values (a sum, a 1-D softmax's maximum
// and sum): each reduction is split in parts computed in parallel, then
// combined (loop.grid_reduce; GridReduce.cpp). On GPUs one schedule covers
// the whole kernel: one block per part, a block combining them; pointwise
// tiling would leave such a reduction to a single thread. On the CPU the
// parts are tasks, computed before the root's tiles, and the CPU tiles
// strategy writes the primitive into the root's schedule beside its tiles.
//
//===----------------------------------------------------------------------===//

#include "passes/loop/strategies/Strategy.h"

#include "passes/loop/GridReduce.h"
#include "passes/loop/RowReduction.h"

using namespace mlir;
using namespace tessel;

namespace {

struct GridReduction final : Strategy {
  StringRef name() const override { return "grid reduction"; }

  bool owns(Operation *op) const override {
    return isa<loop::GridReduceOp>(op);
  }

  /// GPUs: loop.grid_reduce when the kernel can take it: rows of at least
  /// 4096 points, one block per row, up to 4096 rows, the part count
  /// dividing every reduction where that leaves at least half the parts
  /// (else rows of unequal lengths: a prime count, a size symbol; one part,
  /// a single block, when the reductions cannot be split). Declined when it
  /// cannot, when the reductions are shorter than a warp, and on the CPU.
  Default addDefault(DefaultRequest r) const override {
    if (r.info.isCpu() || !r.mayCoverKernel)
      return Default::Declined;
    constexpr int64_t kRowPoints = 4096, kMaxParts = 4096;
    std::optional<GridParts> grid =
        gridParts(r.func, kRowPoints, kMaxParts, /*uneven=*/true);
    if (!grid || grid->longest < loop::kWarpSize)
      return Default::Declined;
    if (!gridReductionUnfit(r.func, grid->parts, /*gpu=*/true).empty()) {
      if (grid->parts == 1 || !gridReductionUnfit(r.func, 1, true).empty())
        return Default::Declined;
      grid->parts = 1;
      grid->choices = {1};
    }
    OpBuilder sb(r.func.getContext());
    DefaultRequest whole = r;
    whole.result = std::nullopt;
    whole.begin(sb);
    Location loc = r.func.getLoc();
    Value vparts = addKnob(sb, loc, "parts", grid->parts, grid->choices);
    Value threads = addKnob(
        sb, loc, "threads", defaultRowThreads(grid->longest / grid->parts, r.info),
        threadChoices(r.info));
    loop::GridReduceOp::create(
        sb, loc, ValueRange{vparts},
        sb.getDenseI64ArrayAttr({ShapedType::kDynamic}), ValueRange{threads},
        sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    return Default::DoneKernel;
  }

  /// On GPUs a schedule of nothing else with a thread count, on the CPU
  /// one without, for a kernel whose reductions to a single value it can
  /// take (gridReductionUnfit), in any part count. Called
  /// before the root is known: the primitive schedules the kernel.
  LogicalResult validate(ScheduleCheck check) const override {
    loop::ScheduleOp schedule = check.schedule;
    auto grid = *schedule.getBody().getOps<loop::GridReduceOp>().begin();
    bool gpu = !schedule.getTargetDescription().isCpu();
    if (!llvm::hasSingleElement(
            schedule.getBody().getOps<loop::GridReduceOp>()))
      return grid.emitError("is one of several in the schedule; one splits "
                            "all the kernel's reductions to single values");
    std::optional<int64_t> threads = grid.getResolvedThreads();
    if (gpu && !threads)
      return grid.emitError("needs `threads` on GPU targets");
    if (!gpu && threads)
      return grid.emitError("takes no `threads` on the CPU, whose rows are "
                            "walked in vectors by loop.split_reduction");
    if (gpu)
      for (Operation &op : schedule.getBody().getOps())
        if (!isa<loop::KnobOp>(op) && &op != grid.getOperation())
          return op.emitError("cannot be combined with loop.grid_reduce, "
                              "which schedules the whole kernel");
    int64_t parts = grid.getResolvedParts();
    std::string why = gridReductionUnfit(check.func, parts, gpu);
    if (!why.empty())
      return grid.emitError("cannot apply to kernel '")
             << schedule.getKernel() << "': " << why;
    int64_t maxThreads = schedule.getTargetDescription().maxThreadsPerBlock;
    if (threads && *threads > maxThreads)
      return grid.emitError(valueName(grid.getDynamicThreads(),
                                      grid.getStaticThreads(), 0, "threads"))
             << " = " << *threads << " exceeds the limit of " << maxThreads
             << " threads per block";
    return success();
  }

  /// Rewrites the kernel's reductions to single values (before any other
  /// schedule of the kernel is carried out); on the CPU, walked in the
  /// lanes of the schedule's loop.split_reduction.
  LogicalResult apply(ApplyState &state, Operation *op) const override {
    auto grid = cast<loop::GridReduceOp>(op);
    if (!state.schedule.getTargetDescription().isCpu())
      return gridReduce(state.rewriter, grid, state.func);
    int64_t lanes = 1;
    for (auto split :
         state.schedule.getBody().getOps<loop::SplitReductionOp>())
      lanes = split.getResolvedLanes();
    return cpuGridReduce(state.rewriter, grid, state.func, lanes);
  }
};

} // namespace

const Strategy &tessel::gridReductionStrategy() {
  static const GridReduction strategy;
  return strategy;
}
