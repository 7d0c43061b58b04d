//===- Buffers.h - buffers that GPU lowering moves or drops ---*- C++ -*-===//
//
// Shared by gpu-lower-mma, gpu-distribute-rows and gpu-map-kernels, which
// replace bufferization's allocations by registers, shared memory or the
// stack and must take their deallocations with them.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_GPU_BUFFERS_H
#define TESSEL_PASSES_GPU_BUFFERS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace tessel {

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
