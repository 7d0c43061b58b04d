//===- Buffers.h - buffers that GPU lowering moves or drops ---*- C++ -*-===//
//
// Shared by gpu-lower-mma, gpu-distribute-rows and gpu-map-kernels, which
// replace bufferization's allocations by registers, shared memory or the
// stack and must take their deallocations with them, and by
// gpu-pass-dynamic-buffers, which passes buffers as static ones.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_GPU_BUFFERS_H
#define TESSEL_PASSES_GPU_BUFFERS_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace tessel {

/// Alignment of dynamic shared memory and of its buffers of this size or
/// more: where the 128-byte swizzle of wgmma's tiles repeats.
constexpr int64_t kSharedAlignment = 1024;

/// A view of type `type` (identity layout, maybe of dynamic shape) at
/// `sizes` over the first elements of `flat`, a static 1-D buffer at least
/// as large: how buffers over size symbols live in a static one (their
/// largest extent).
inline mlir::Value rowMajorView(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::MemRefType type, mlir::Value flat,
                                llvm::ArrayRef<mlir::OpFoldResult> sizes) {
  using namespace mlir;
  SmallVector<OpFoldResult> strides(type.getRank());
  OpFoldResult stride = b.getIndexAttr(1);
  AffineExpr s0, s1;
  bindSymbols(b.getContext(), s0, s1);
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride = affine::makeComposedFoldedAffineApply(b, loc, s0 * s1,
                                                   {stride, sizes[d]});
  }
  // Values where the type's stride is dynamic, as the cast's verifier wants.
  SmallVector<int64_t> typeStrides = type.getStridesAndOffset().first;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (ShapedType::isDynamic(typeStrides[d]))
      strides[d] = getValueOrCreateConstantIndexOp(b, loc, strides[d]);
  return memref::ReinterpretCastOp::create(b, loc, type, flat,
                                           b.getIndexAttr(0), sizes, strides)
      .getResult();
}

/// Erases the memref.dealloc ops of `alloc`.
inline void eraseDeallocs(mlir::memref::AllocOp alloc) {
  for (mlir::Operation *user : llvm::to_vector(alloc->getUsers()))
    if (mlir::isa<mlir::memref::DeallocOp>(user))
      user->erase();
}

/// Erases `alloc`, whose contents a lowering now keeps in registers, with
/// its deallocations; `stillUsed` is the error when anything else reads it.
inline mlir::LogicalResult eraseReplacedBuffer(mlir::memref::AllocOp alloc,
                                               const llvm::Twine &stillUsed) {
  eraseDeallocs(alloc);
  if (!alloc->use_empty())
    return alloc.emitError(stillUsed);
  alloc.erase();
  return mlir::success();
}

} // namespace tessel

#endif // TESSEL_PASSES_GPU_BUFFERS_H
