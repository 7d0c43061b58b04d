//===- ExpandStridedCopies.cpp - strided memref.copy as loops (CPU) -------===//
//
// LLVM lowering turns a memref.copy between contiguous buffers into memcpy,
// but any other copy (a tile padded into a block buffer, a slice of a
// strided view) into a call of the runtime's generic copy, which calls
// memcpy once per element. As a linalg.copy it becomes a loop nest whose
// innermost loop LLVM vectorizes.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"

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

struct CpuExpandStridedCopiesPass
    : tessel::impl::CpuExpandStridedCopiesBase<CpuExpandStridedCopiesPass> {
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
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    }
  }
};

} // namespace
