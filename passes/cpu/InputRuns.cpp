//===- InputRuns.cpp - runs of an input row as vectors --------------------===//

#include "passes/cpu/InputRuns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

Value tessel::readInputRun(OpBuilder &b, Location loc, Value source,
                           ValueRange indices, int64_t count, int64_t stride) {
  Type element = getElementTypeOrSelf(source.getType());
  // In bounds, so never read; transfer_read takes one all the same.
  Value padding =
      arith::ConstantOp::create(b, loc, element, b.getZeroAttr(element));
  int64_t span = (count - 1) * stride + 1;
  Value run = vector::TransferReadOp::create(
      b, loc, VectorType::get({span}, element), source, indices, padding,
      ArrayRef<bool>{true});
  if (stride == 1)
    return run;
  SmallVector<int64_t> every;
  for (int64_t lane = 0; lane < count; ++lane)
    every.push_back(lane * stride);
  return vector::ShuffleOp::create(b, loc, run, run, every);
}
