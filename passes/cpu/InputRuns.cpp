//===- InputRuns.cpp - runs of an input row as vectors --------------------===//

#include "passes/cpu/InputRuns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

Value tessel::readInputRun(OpBuilder &b, Location loc, Value source,
                           ValueRange indices, int64_t count, int64_t stride) {
  Type element = getElementTypeOrSelf(source.getType());
  // Never read: the run is in bounds, and a read past them is masked.
  Value padding =
      arith::ConstantOp::create(b, loc, element, b.getZeroAttr(element));
  // At a stride, the span of count lanes is odd (31 elements for 16 lanes),
  // a vector LLVM loads in pieces of 16, 8, 4, 2 and 1: read count * stride
  // instead, masked where the row may end before it (the index is known).
  int64_t length = (count - 1) * stride + 1;
  bool inBounds = true;
  int64_t width = cast<ShapedType>(source.getType()).getShape().back();
  std::optional<int64_t> at = getConstantIntValue(indices.back());
  if (stride != 1 && at && !ShapedType::isDynamic(width)) {
    inBounds = *at + count * stride <= width;
    length = count * stride;
  }
  Value run = vector::TransferReadOp::create(
      b, loc, VectorType::get({length}, element), source, indices, padding,
      ArrayRef<bool>{inBounds});
  if (stride == 1)
    return run;
  SmallVector<int64_t> every;
  for (int64_t lane = 0; lane < count; ++lane)
    every.push_back(lane * stride);
  return vector::ShuffleOp::create(b, loc, run, run, every);
}
