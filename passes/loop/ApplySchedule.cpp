//===- ApplySchedule.cpp - carry out loop.schedule ops --------------------===//
//
// Each loop.tile of a schedule tiles the kernel's current root (the tiled
// root of the previous level) and fuses its producers, so the levels nest:
// blocks, then warps or threads, then sequential loops.
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"

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

struct LoopApplySchedulesPass
    : tessel::impl::LoopApplySchedulesBase<LoopApplySchedulesPass> {
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
                            /*sequential=*/mapping.empty(), mapping, returned);
        if (failed(tiled)) {
          InFlightDiagnostic diag = tile.emitError("could not tile the root");
          diag.attachNote(root->getLoc()) << "root: " << root->getName();
          return signalPassFailure();
        }
        root = *tiled;
        collectYieldedOps(root, returned);
      }
      rewriter.eraseOp(schedule);
    }
  }
};

} // namespace
