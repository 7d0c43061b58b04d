//===- ExpandStridedCopies.cpp - strided memref.copy as loops (CPU) -------===//
//
// LLVM lowering turns a memref.copy between contiguous buffers into memcpy,
// but any other copy (a tile padded into a block buffer, a slice of a
// strided view) into a call of the runtime's generic copy, which calls
// memcpy once per element. As a linalg.copy it becomes a loop nest whose
// innermost loop LLVM vectorizes. A large one that a kernel runs on its own
// (a concatenation's parts, placed into the result; a padded input's
// interior) is cut into chunks of its outermost dim of more than one index
// under an scf.parallel, which runs them as tasks of the async runtime like
// a schedule's tiles.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace tessel {
#define GEN_PASS_DEF_CPUEXPANDSTRIDEDCOPIES
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

/// The condition under which LLVM lowering copies with one memcpy.
bool isContiguous(MemRefType type) {
  return type.getLayout().isIdentity() ||
         memref::isStaticShapeAndContiguousRowMajor(type);
}

/// Parallel copies run in chunks of about this many bytes.
constexpr int64_t kChunkBytes = 1 << 16;

/// Replaces `copy` (static shape, at the top of a kernel) by a parallel
/// loop over chunks of its dim `outer` (the first of more than one index,
/// so that a batch of one still splits), each a linalg.copy of a subview.
void copyInParallel(RewriterBase &rewriter, memref::CopyOp copy,
                    MemRefType type, int64_t outer) {
  Location loc = copy.getLoc();
  int64_t extent = type.getDimSize(outer);
  int64_t bytesPerOuter = type.getNumElements() / extent *
                          llvm::divideCeil(type.getElementTypeBitWidth(), 8);
  int64_t chunk = std::max<int64_t>(1, kChunkBytes / bytesPerOuter);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value end = arith::ConstantIndexOp::create(rewriter, loc, extent);
  Value step = arith::ConstantIndexOp::create(rewriter, loc, chunk);
  auto loop = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                      ValueRange{end}, ValueRange{step});
  rewriter.setInsertionPointToStart(loop.getBody());
  Value start = loop.getInductionVars()[0];
  AffineExpr i = rewriter.getAffineDimExpr(0);
  OpFoldResult rows = affine::makeComposedFoldedAffineMin(
      rewriter, loc,
      AffineMap::get(1, 0, {rewriter.getAffineConstantExpr(chunk), extent - i},
                     rewriter.getContext()),
      {start});
  SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
  offsets[outer] = start;
  SmallVector<OpFoldResult> sizes =
      getAsIndexOpFoldResult(rewriter.getContext(), type.getShape());
  sizes[outer] = rows;
  SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
  auto part = [&](Value buffer) {
    return memref::SubViewOp::create(rewriter, loc, buffer, offsets, sizes,
                                     strides);
  };
  Value source = part(copy.getSource());
  Value target = part(copy.getTarget());
  linalg::CopyOp::create(rewriter, loc, source, target);
  rewriter.eraseOp(copy);
}

struct CpuExpandStridedCopiesPass
    : tessel::impl::CpuExpandStridedCopiesBase<CpuExpandStridedCopiesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<memref::CopyOp> strided;
    getOperation()->walk([&](memref::CopyOp copy) {
      // Unranked buffers have no linalg.copy; their copies stay.
      auto source = dyn_cast<MemRefType>(copy.getSource().getType());
      auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
      if (source && target && !(isContiguous(source) && isContiguous(target)))
        strided.push_back(copy);
    });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : strided) {
      rewriter.setInsertionPoint(copy);
      auto type = cast<MemRefType>(copy.getTarget().getType());
      auto func = dyn_cast<func::FuncOp>(copy->getParentOp());
      const int64_t *outer =
          llvm::find_if(type.getShape(), [](int64_t d) { return d > 1; });
      if (parallelBytes > 0 && func && func->hasAttr("tessel.kernel") &&
          type.hasStaticShape() && outer != type.getShape().end() &&
          type.getNumElements() * type.getElementTypeBitWidth() / 8 >=
              parallelBytes) {
        copyInParallel(rewriter, copy, type, outer - type.getShape().begin());
        continue;
      }
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    }
  }
};

} // namespace
