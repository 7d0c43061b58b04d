//===- GpuRowReduction.cpp - GPU rows shared by a block's threads ----------===//
//
// A reduction kernel whose rows are long enough to share (a softmax, a
// layer_norm, a row sum): one row per block, its threads walking the row
// together and combining their partial results with warp shuffles
// (loop.warp_reduce), instead of one thread per row reading with strides.
// gpu-distribute-rows carries it out after bufferization.
//
//===----------------------------------------------------------------------===//

#include "passes/loop/strategies/Strategy.h"

#include "passes/loop/RowReduction.h"

using namespace mlir;
using namespace tessel;

namespace {

struct GpuRowReduction final : Strategy {
  StringRef name() const override { return "GPU row reduction"; }

  bool owns(Operation *op) const override {
    return isa<loop::WarpReduceOp>(op);
  }
  // Columns per thread.
  bool writesTileLoops(Operation *) const override { return true; }

  /// One row per block when the root is elementwise over the rows or
  /// reduces them (every loop but the innermost parallel), the kernel's ops
  /// allow it, its rows are long enough to share and the grid can take one
  /// block per row.
  Default addDefault(DefaultRequest r) const override {
    SmallVector<utils::IteratorType> iterators = r.root.getLoopIteratorTypes();
    if (!r.isKind("reduction") || iterators.empty() ||
        !llvm::all_of(ArrayRef(iterators).drop_back(),
                      [](utils::IteratorType it) {
                        return it == utils::IteratorType::parallel;
                      }))
      return Default::Declined;
    std::optional<KernelRows> rows = kernelRows(r.func, r.root);
    if (!rows || rows->columns < loop::kWarpSize ||
        !rowReductionUnfit(r.func, r.root).empty())
      return Default::Declined;
    // One block per row: the root's loops but the row, at most three.
    ArrayRef<int64_t> perRow =
        rows->rootWalksRow ? r.extents.drop_back() : r.extents;
    if (perRow.empty() || perRow.size() > 3)
      return Default::Declined;
    for (auto [i, extent] : llvm::enumerate(llvm::reverse(perRow)))
      if (extent > r.info.maxGrid[i])
        return Default::Declined;
    int64_t threads = defaultRowThreads(rows->columns, r.info);
    MLIRContext *ctx = r.func.getContext();
    OpBuilder sb(ctx);
    r.begin(sb);
    Location loc = r.func.getLoc();
    Value threadsKnob =
        addKnob(sb, loc, "threads", threads, threadChoices(r.info));
    SmallVector<int64_t> blockSizes(r.extents.size(), 1);
    if (rows->rootWalksRow)
      blockSizes.back() = 0;
    SmallVector<Attribute> mapping;
    for (int64_t i = perRow.size() - 1; i >= 0; --i)
      mapping.insert(mapping.begin(),
                     gpu::GPUBlockMappingAttr::get(
                         ctx, kBlockIds[perRow.size() - 1 - i]));
    loop::TileOp::create(sb, loc, ValueRange{},
                         sb.getDenseI64ArrayAttr(blockSizes),
                         sb.getArrayAttr(mapping));
    loop::WarpReduceOp::create(sb, loc, ValueRange{threadsKnob},
                               sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    return Default::Done;
  }

  /// One block tile that keeps rows whole, a kernel of row ops, at most
  /// the target's threads per block.
  LogicalResult validate(ScheduleCheck check) const override {
    loop::ScheduleOp schedule = check.schedule;
    auto warpReduce = *schedule.getBody().getOps<loop::WarpReduceOp>().begin();
    loop::TileOp blockTile = check.blockTile;
    if (failed(checkOnlyBlockTile(schedule, warpReduce, blockTile)))
      return failure();
    // A root without the row loop (over per-row values) cannot split it.
    std::optional<KernelRows> rows = kernelRows(check.func, check.root);
    int64_t last = blockTile.getResolvedSizes().back();
    if (rows && rows->rootWalksRow && last != 0 &&
        last != check.extents.back())
      return blockTile.emitError(sizeName(blockTile, check.extents.size() - 1))
             << " = " << last << " splits the rows that loop.warp_reduce "
             << "shares among threads; leave it 0";
    int64_t maxThreads = schedule.getTargetDescription().maxThreadsPerBlock;
    if (warpReduce.getResolvedThreads() > maxThreads)
      return warpReduce.emitError("threads = ")
             << warpReduce.getResolvedThreads() << " exceeds the limit of "
             << maxThreads << " threads per block";
    std::string why = rowReductionUnfit(check.func, check.root);
    if (!why.empty())
      return warpReduce.emitError("cannot apply to kernel '")
             << schedule.getKernel() << "': " << why;
    return success();
  }

  /// gpu-distribute-rows carries out loop.warp_reduce on buffers.
  LogicalResult apply(ApplyState &state, Operation *op) const override {
    state.root->setAttr(
        loop::kWarpReduceAttrName,
        state.rewriter.getI64IntegerAttr(
            cast<loop::WarpReduceOp>(op).getResolvedThreads()));
    std::optional<KernelRows> rows = kernelRows(state.func, state.root);
    if (rows && ShapedType::isDynamic(rows->extent))
      state.root->setAttr(loop::kRowColumnsAttrName,
                          state.rewriter.getI64IntegerAttr(rows->columns));
    return success();
  }
};

} // namespace

const Strategy &tessel::gpuRowReductionStrategy() {
  static const GpuRowReduction strategy;
  return strategy;
}
