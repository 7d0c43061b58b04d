//===- DropRedundantWrites.cpp - writes that change nothing (CPU) ---------===//
//
// Bufferized, a tensor.pad fills its whole buffer with the padding value
// and then copies its source into the interior; a padded matmul tile's C
// buffer is zeroed and then overwritten whole by the copy out of the padded
// tile, and so was a kernel's result (each head of a batched matmul of
// 197x197 tiles). All write most of the buffer twice: ResNet-18 at batch 1
// ran 37 MB of memset per call, and the pads' ran on one thread while the
// other waited. Here such a fill writes only the border the copy leaves
// (the pad's), or nothing where the copy covers the buffer. A tile that
// computes into its slice of the result through a collapse of it (a 1x1
// convolution's, as a matmul) was also copied from the expansion of that
// collapse onto the slice, itself: such copies go.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace tessel {
#define GEN_PASS_DEF_CPUDROPREDUNDANTWRITES
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

/// The value `op` writes to every element of its one output buffer, where
/// it is a fill: linalg.fill, or a linalg.map without inputs yielding a
/// value from outside its body.
Value filledValue(Operation *op) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.hasPureBufferSemantics() ? fill.value() : Value();
  auto map = dyn_cast<linalg::MapOp>(op);
  if (!map || !map.hasPureBufferSemantics() || !map.getInputs().empty())
    return {};
  Value yielded = map.getBody()->getTerminator()->getOperand(0);
  return map.getMapper().isAncestor(yielded.getParentRegion()) ? Value()
                                                               : yielded;
}

/// Whether every use of `buffer` (through views of it) other than `except`
/// and deallocations is by an op after `copy` in its block.
bool usedOnlyAfter(Value buffer, Operation *copy,
                   ArrayRef<Operation *> except) {
  Block *block = copy->getBlock();
  for (Operation *user : buffer.getUsers()) {
    if (llvm::is_contained(except, user) || isa<memref::DeallocOp>(user))
      continue;
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (!inBlock)
      return false;
    if (copy->isBeforeInBlock(inBlock))
      continue;
    // A view made before the copy is used after it, or not at all.
    if (!isa<ViewLikeOpInterface>(user) || user->getNumResults() != 1 ||
        !usedOnlyAfter(user->getResult(0), copy, except))
      return false;
  }
  return true;
}

/// Whether nothing but views of `root` reaches its memory: the kernel's own
/// allocation, or an argument of a kernel (the host passes a kernel
/// distinct buffers, and an output never aliases an input).
bool ownedBuffer(Value root) {
  if (root.getDefiningOp<memref::AllocOp>())
    return true;
  auto argument = dyn_cast<BlockArgument>(root);
  auto func = argument ? dyn_cast<func::FuncOp>(
                             argument.getOwner()->getParentOp())
                       : func::FuncOp();
  return func && func->hasAttr("tessel.kernel");
}

/// The copy into `buffer` (a subview of it, or itself; a view of `root`)
/// that the fill `fill` is overwritten by before anything reads `root`, if
/// there is one.
memref::CopyOp overwritingCopy(Operation *fill, Value buffer, Value root) {
  for (Operation *user : buffer.getUsers()) {
    Operation *view = nullptr;
    auto copy = dyn_cast<memref::CopyOp>(user);
    if (!copy && isa<memref::SubViewOp>(user) && user->hasOneUse()) {
      view = user;
      copy = dyn_cast<memref::CopyOp>(*user->getUsers().begin());
    }
    if (!copy || copy.getTarget() != (view ? view->getResult(0) : buffer) ||
        copy->getBlock() != fill->getBlock() || !fill->isBeforeInBlock(copy))
      continue;
    // A copy out of the filled buffer itself reads the fill.
    if (memref::skipViewLikeOps(copy.getSource()) == root)
      continue;
    SmallVector<Operation *> except = {fill, copy};
    if (view)
      except.push_back(view);
    if (usedOnlyAfter(root, copy, except))
      return copy;
  }
  return {};
}

/// Fills `value` into the part of `buffer` (static shape) outside the box
/// at `offsets` of `sizes`: per dim, the slabs before and after the box's
/// extent in it, across the box's extents in the dims before it and the
/// whole buffer in those after.
void fillBorder(RewriterBase &rewriter, Location loc, Value value,
                Value buffer, ArrayRef<int64_t> offsets,
                ArrayRef<int64_t> sizes) {
  ArrayRef<int64_t> shape = cast<MemRefType>(buffer.getType()).getShape();
  int64_t rank = shape.size();
  SmallVector<int64_t> slabOffsets(rank, 0), slabSizes(shape);
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t end = offsets[d] + sizes[d];
    for (auto [from, to] : {std::pair(int64_t(0), offsets[d]),
                            std::pair(end, shape[d])}) {
      if (from == to)
        continue;
      slabOffsets[d] = from;
      slabSizes[d] = to - from;
      Value slab = memref::SubViewOp::create(rewriter, loc, buffer,
                                             slabOffsets, slabSizes, strides);
      linalg::FillOp::create(rewriter, loc, value, slab);
    }
    slabOffsets[d] = offsets[d];
    slabSizes[d] = sizes[d];
  }
}

/// Whether `source` is `target` itself, or its collapse expanded back to
/// its shape (the same elements; a unit dim's stride may differ).
bool sameBuffer(Value source, Value target) {
  if (source == target)
    return true;
  auto expand = source.getDefiningOp<memref::ExpandShapeOp>();
  auto collapse =
      expand ? expand.getSrc().getDefiningOp<memref::CollapseShapeOp>()
             : memref::CollapseShapeOp();
  return collapse && collapse.getSrc() == target &&
         expand.getType().hasStaticShape() &&
         expand.getType().getShape() == collapse.getSrcType().getShape() &&
         expand.getReassociationIndices() ==
             collapse.getReassociationIndices();
}

struct CpuDropRedundantWritesPass
    : tessel::impl::CpuDropRedundantWritesBase<CpuDropRedundantWritesPass> {
  void runOnOperation() override {
    getOperation()->walk([](memref::CopyOp copy) {
      if (sameBuffer(copy.getSource(), copy.getTarget()))
        copy->erase();
    });
    SmallVector<Operation *> fills;
    getOperation()->walk([&](Operation *op) {
      if (filledValue(op))
        fills.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *fill : fills) {
      Value buffer = cast<DestinationStyleOpInterface>(fill).getDpsInits()[0];
      auto type = cast<MemRefType>(buffer.getType());
      Value root = memref::skipViewLikeOps(cast<MemrefValue>(buffer));
      if (!ownedBuffer(root) || !type.hasStaticShape())
        continue;
      memref::CopyOp copy = overwritingCopy(fill, buffer, root);
      if (!copy)
        continue;
      // A copy into a subview of the buffer (the buffer itself may be one).
      auto view = copy.getTarget() == buffer
                      ? memref::SubViewOp()
                      : copy.getTarget().getDefiningOp<memref::SubViewOp>();
      if (view) {
        // The border of a box of static offsets and unit strides.
        if (!view.hasUnitStride() || ShapedType::isDynamicShape(
                                         view.getStaticOffsets()) ||
            ShapedType::isDynamicShape(view.getStaticSizes()) ||
            view.getType().getRank() != type.getRank())
          continue;
        rewriter.setInsertionPoint(fill);
        fillBorder(rewriter, fill->getLoc(), filledValue(fill), buffer,
                   view.getStaticOffsets(), view.getStaticSizes());
      }
      rewriter.eraseOp(fill);
    }
  }
};

} // namespace
