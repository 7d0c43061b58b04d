//===- DefaultSchedule.cpp - a loop.schedule for every kernel --------------===//
//
// The default GPU schedule tiles the root's parallel loops over blocks, then
// gives each thread one point (or, in reduction kernels whose root is
// elementwise over the reduced rows, one whole row). A kernel with no loop
// to distribute gets no schedule and runs in a single thread. It is correct
// for every kernel class; faster per-class schedules (tensor cores, warp
// reductions) take precedence as they are added.
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"

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
    auto schedule = loop::ScheduleOp::create(
        sb, func.getLoc(), FlatSymbolRefAttr::get(func.getSymNameAttr()),
        result ? sb.getI64IntegerAttr(*result) : IntegerAttr(),
        sb.getStringAttr(target));
    Block *body = sb.createBlock(&schedule.getBody());
    sb.setInsertionPointToEnd(body);
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
