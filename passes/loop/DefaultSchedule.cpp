//===- DefaultSchedule.cpp - a loop.schedule for every kernel --------------===//
//
// Each root of a kernel without a schedule gets the default schedule of
// the first of its target's strategies (strategies/Strategy.h) that takes
// it: on GPUs tensor-core contractions, row reductions, grid reductions,
// then pointwise tiling (correct for every kernel class); on the CPU
// matmuls, other contractions, transposes, then row tiles. A schedule
// that covers the whole kernel (loop.grid_reduce on GPUs) leaves its other
// roots none; a GPU kernel without roots (one that only concatenates its
// inputs) gets an empty schedule, whose leftover tiling gives its ops
// threads.
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/loop/strategies/Strategy.h"

#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

namespace tessel {
#define GEN_PASS_DEF_LOOPDEFAULTSCHEDULE
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

struct LoopDefaultSchedulePass
    : tessel::impl::LoopDefaultScheduleBase<LoopDefaultSchedulePass> {
  using LoopDefaultScheduleBase::LoopDefaultScheduleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    loop::TargetAttr targetAttr = loop::TargetAttr::lookup(&getContext(), target);
    if (!targetAttr) {
      module.emitError("loop-default-schedule: unknown target '")
          << target << "'; expected one of: "
          << llvm::join(loop::targetNames(), ", ");
      return signalPassFailure();
    }
    const loop::TargetDescription &info = targetAttr.getDescription();
    if (!vectorBits)
      vectorBits = info.vectorBits;
    if (!cores)
      cores = std::max<int64_t>(info.cores, 1);
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
      auto roots = findKernelRoots(func);
      DefaultRequest request{module,     func,      {},     {},
                             kind,       std::nullopt, false, targetAttr,
                             info,       allowTf32, vectorBits, cores};
      if (roots.empty() && info.isGpu() &&
          !scheduled.contains(func.getSymName())) {
        OpBuilder b(&getContext());
        request.begin(b);
      }
      const auto &done = scheduled.lookup(func.getSymName());
      for (auto [i, indexAndRoot] : llvm::enumerate(roots)) {
        auto [index, root] = indexAndRoot;
        if (done.contains(index) || (i == 0 && done.contains(-1)))
          continue;
        // Schedules are chosen for the largest sizes of a dynamic kernel's
        // range; their tiles take any size (remainder tiles).
        std::optional<SmallVector<int64_t>> extents = largestLoopExtents(root);
        if (!extents) {
          root->emitError("has a dynamic loop whose largest size the "
                          "kernel's size symbols (graph.dims) do not give");
          return signalPassFailure();
        }
        if (llvm::is_contained(*extents, 0)) {
          if (info.isCpu())
            continue; // an empty root has nothing to schedule
          emitEmptyLoopError(root, func.getSymName());
          return signalPassFailure();
        }
        request.root = root;
        request.extents = *extents;
        request.result = i == 0 ? std::nullopt : std::optional(index);
        request.mayCoverKernel = i == 0 && done.empty();
        Default outcome = Default::Declined;
        for (const Strategy *strategy : strategiesFor(info))
          if ((outcome = strategy->addDefault(request)) != Default::Declined)
            break;
        if (outcome == Default::DoneKernel)
          break;
      }
    }
  }
};

} // namespace
