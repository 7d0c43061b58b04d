//===- InputRuns.cpp - runs of an input row as vectors --------------------===//

#include "passes/cpu/InputRuns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

int64_t tessel::wholeVector(int64_t lanes) {
  return llvm::alignTo(lanes, std::min<int64_t>(8, llvm::PowerOf2Ceil(lanes)));
}

Value tessel::readInputRun(OpBuilder &b, Location loc, Value source,
                           ValueRange indices, int64_t count, int64_t stride,
                           Value padding, int64_t leading) {
  Type element = getElementTypeOrSelf(source.getType());
  // Without one, never kept: the run's lanes are in bounds; those read past
  // them, masked to this, are shuffled away.
  if (!padding)
    padding =
        arith::ConstantOp::create(b, loc, element, b.getZeroAttr(element));
  // At a stride, the span of count lanes is odd (31 elements for 16 lanes),
  // a vector LLVM loads in pieces of 16, 8, 4, 2 and 1: where the index is
  // known, read whole vectors of count * stride elements instead, masked
  // past the row's end.
  int64_t length = (count - leading - 1) * stride + 1;
  bool inBounds = true;
  int64_t width = cast<ShapedType>(source.getType()).getShape().back();
  std::optional<int64_t> at = getConstantIntValue(indices.back());
  if (at && !ShapedType::isDynamic(width)) {
    length = tessel::wholeVector(count * stride);
    inBounds = *at + length <= width;
  }
  Value run = vector::TransferReadOp::create(
      b, loc, VectorType::get({length}, element), source, indices, padding,
      ArrayRef<bool>{inBounds});
  if (leading == 0 && length == count)
    return run;
  // Lane l: the read's element (l - leading) * stride, or the padding.
  SmallVector<int64_t> lanes;
  for (int64_t lane = 0; lane < count; ++lane)
    lanes.push_back(lane >= leading ? (lane - leading) * stride : length);
  Value other = leading ? vector::BroadcastOp::create(
                              b, loc, VectorType::get({count}, element),
                              padding)
                              .getResult()
                        : run;
  return vector::ShuffleOp::create(b, loc, run, other, lanes);
}
