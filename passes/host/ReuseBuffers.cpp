//===- ReuseBuffers.cpp - buffer reuse in the host program ----------------===//
//
// After bufferization the host function allocates one buffer per
// intermediate and copies its final result into the caller's output buffer.
// On its straight-line top-level code this pass
//   1. lets the kernel that produces a result write straight into the
//      output argument (drops the alloc and the copy), and
//   2. hands a buffer freed by a dealloc to the next alloc of the same type
//      (run optimize-allocation-liveness first so deallocs follow last uses).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace tessel {
#define GEN_PASS_DEF_HOSTREUSEBUFFERS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

/// A top-level alloc of `block`, or null.
memref::AllocOp topLevelAlloc(Value v, Block &block) {
  auto alloc = v.getDefiningOp<memref::AllocOp>();
  return alloc && alloc->getBlock() == &block ? alloc : memref::AllocOp();
}

void elideOutputCopies(Block &block) {
  for (auto copy : llvm::make_early_inc_range(block.getOps<memref::CopyOp>())) {
    auto out = dyn_cast<BlockArgument>(copy.getTarget());
    memref::AllocOp alloc = topLevelAlloc(copy.getSource(), block);
    if (!out || out.getOwner() != &block || !out.hasOneUse() || !alloc ||
        alloc.getType() != out.getType())
      continue;
    // Every other use must come before the copy (or free the buffer).
    bool ordered = llvm::all_of(alloc->getUsers(), [&](Operation *user) {
      return user == copy || isa<memref::DeallocOp>(user) ||
             (user->getBlock() == &block && user->isBeforeInBlock(copy));
    });
    if (!ordered)
      continue;
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    copy.erase();
    alloc.replaceAllUsesWith(out);
    alloc.erase();
  }
}

void reuseFreedBuffers(Block &block) {
  SmallVector<memref::DeallocOp> freed;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      if (topLevelAlloc(dealloc.getMemref(), block))
        freed.push_back(dealloc);
      continue;
    }
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (!alloc || !alloc.getDynamicSizes().empty())
      continue;
    auto match = llvm::find_if(freed, [&](memref::DeallocOp d) {
      return d.getMemref().getType() == alloc.getType();
    });
    if (match == freed.end())
      continue;
    Value buffer = match->getMemref();
    match->erase();
    freed.erase(match);
    alloc.replaceAllUsesWith(buffer);
    alloc.erase();
  }
}

struct HostReuseBuffersPass
    : tessel::impl::HostReuseBuffersBase<HostReuseBuffersPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func->hasAttr("tessel.kernel") || func.isExternal())
      return;
    Block &block = func.getBody().front();
    elideOutputCopies(block);
    reuseFreedBuffers(block);
  }
};

} // namespace
