//===- PointwiseBody.h - a linalg.generic's body at one point --*- C++ -*-===//
//
// Shared by gpu-lower-mma (epilogues on accumulator registers) and
// gpu-distribute-rows (row ops at a thread's columns), which both replace a
// linalg.generic by its body computed at the points a thread owns.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_GPU_POINTWISEBODY_H
#define TESSEL_PASSES_GPU_POINTWISEBODY_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"

namespace tessel {

/// Clones `op`'s body at `b` for one point and returns the yielded value.
/// `operand` gives the value of each operand whose block argument is used,
/// `index` the value of `linalg.index dim`.
inline mlir::Value
clonePointwiseBody(mlir::OpBuilder &b, mlir::linalg::GenericOp op,
                   llvm::function_ref<mlir::Value(mlir::OpOperand &)> operand,
                   llvm::function_ref<mlir::Value(unsigned)> index) {
  mlir::Block &body = op.getRegion().front();
  mlir::IRMapping map;
  for (mlir::OpOperand &o : op->getOpOperands()) {
    mlir::BlockArgument arg = body.getArgument(o.getOperandNumber());
    if (!arg.use_empty())
      map.map(arg, operand(o));
  }
  for (mlir::Operation &inner : body.without_terminator()) {
    if (auto idx = llvm::dyn_cast<mlir::linalg::IndexOp>(inner)) {
      map.map(idx.getResult(), index(idx.getDim()));
      continue;
    }
    b.clone(inner, map);
  }
  return map.lookupOrDefault(body.getTerminator()->getOperand(0));
}

} // namespace tessel

#endif // TESSEL_PASSES_GPU_POINTWISEBODY_H
