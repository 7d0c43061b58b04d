//===- ReuseBuffers.cpp - buffer reuse in the host program ----------------===//
//
// After bufferization a function allocates one buffer per intermediate and
// copies its final result into the caller's output buffer. On its
// straight-line top-level code this pass
//   1. lets the code that produces a result write straight into the output
//      argument, or into a reshaped view of it (drops the alloc and the
//      copy), in host and kernel functions, and
//   2. in host functions, hands a buffer freed by a dealloc to the next alloc
//      of the same type (run optimize-allocation-liveness first so deallocs
//      follow last uses).
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

/// The alloc a copy's source is, directly or through one reshape, with
/// that reshape (or null).
std::pair<memref::AllocOp, Operation *> copiedAlloc(Value source, Block &block) {
  Operation *reshape = source.getDefiningOp();
  if (isa_and_present<memref::CollapseShapeOp, memref::ExpandShapeOp>(reshape))
    return {topLevelAlloc(reshape->getOperand(0), block), reshape};
  return {topLevelAlloc(source, block), nullptr};
}

/// `out` reshaped back to the type of `reshape`'s source, `alloc`: the
/// inverse view, sized as `alloc` is (sizes over symbols cannot be inferred
/// from a collapsed buffer).
Value inverseReshape(OpBuilder &b, Operation *reshape, Value out,
                     memref::AllocOp alloc) {
  if (auto collapse = dyn_cast<memref::CollapseShapeOp>(reshape))
    return memref::ExpandShapeOp::create(
        b, reshape->getLoc(), collapse.getSrcType(), out,
        collapse.getReassociationIndices(), alloc.getMixedSizes());
  auto expand = cast<memref::ExpandShapeOp>(reshape);
  return memref::CollapseShapeOp::create(b, reshape->getLoc(), out,
                                         expand.getReassociationIndices());
}

void elideOutputCopies(Block &block) {
  for (auto copy : llvm::make_early_inc_range(block.getOps<memref::CopyOp>())) {
    auto out = dyn_cast<BlockArgument>(copy.getTarget());
    auto [alloc, reshape] = copiedAlloc(copy.getSource(), block);
    if (!out || out.getOwner() != &block || !out.hasOneUse() || !alloc ||
        copy.getSource().getType() != out.getType() ||
        (reshape && !reshape->hasOneUse()) ||
        !alloc.getType().getLayout().isIdentity())
      continue;
    // Every other use must come before the copy (or free the buffer).
    bool ordered = llvm::all_of(alloc->getUsers(), [&](Operation *user) {
      if (user == copy || user == reshape || isa<memref::DeallocOp>(user))
        return true;
      Operation *ancestor = block.findAncestorOpInBlock(*user);
      return ancestor && ancestor->isBeforeInBlock(copy);
    });
    if (!ordered)
      continue;
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    copy.erase();
    Value replacement = out;
    if (reshape) {
      OpBuilder b(alloc);
      replacement = inverseReshape(b, reshape, out, alloc);
      reshape->erase();
    }
    alloc.replaceAllUsesWith(replacement);
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
    if (func.isExternal())
      return;
    Block &block = func.getBody().front();
    elideOutputCopies(block);
    if (!func->hasAttr("tessel.kernel"))
      reuseFreedBuffers(block);
  }
};

} // namespace
