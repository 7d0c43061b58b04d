//===- ShapeInference.cpp - graph result-type rules -----------------------===//

#include "dialects/graph/ShapeInference.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace tessel::graph {

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

LogicalResult broadcastShapes(std::optional<Location> loc,
                              ArrayRef<ArrayRef<int64_t>> shapes,
                              SmallVectorImpl<int64_t> &result) {
  result.clear();
  for (ArrayRef<int64_t> shape : shapes) {
    SmallVector<int64_t> next;
    if (!OpTrait::util::getBroadcastedShape(result, shape, next)) {
      std::string all;
      llvm::raw_string_ostream os(all);
      llvm::interleave(
          shapes, os, [&](ArrayRef<int64_t> s) { os << shapeString(s); },
          " and ");
      return emitOptionalError(loc, "operand shapes ", all,
                               " are not broadcast-compatible");
    }
    result.assign(next);
  }
  return success();
}

FailureOr<int64_t> normalizeAxis(std::optional<Location> loc, int64_t axis,
                                 int64_t rank, StringRef what) {
  if (axis < -rank || axis >= rank) {
    (void)emitOptionalError(loc, what, " ", axis, " is out of range for rank ",
                            rank, " (valid: ", -rank, " to ", rank - 1, ")");
    return failure();
  }
  return positiveAxis(axis, rank);
}

LogicalResult inferBroadcastResultType(std::optional<Location> loc, Type lhs,
                                       Type rhs,
                                       SmallVectorImpl<Type> &results) {
  auto l = cast<RankedTensorType>(lhs);
  auto r = cast<RankedTensorType>(rhs);
  SmallVector<int64_t> shape;
  if (failed(broadcastShapes(loc, {l.getShape(), r.getShape()}, shape)))
    return failure();
  results.push_back(RankedTensorType::get(shape, l.getElementType()));
  return success();
}

LogicalResult inferMatmulResultType(std::optional<Location> loc, Type lhs,
                                    Type rhs, SmallVectorImpl<Type> &results) {
  auto l = cast<RankedTensorType>(lhs);
  auto r = cast<RankedTensorType>(rhs);
  if (l.getRank() < 2 || r.getRank() < 2)
    return emitOptionalError(loc, "matmul operands need rank >= 2, got ranks ",
                             l.getRank(), " and ", r.getRank());
  if (l.getElementType() != r.getElementType())
    return emitOptionalError(loc, "matmul operands have different element "
                                  "types: ",
                             l.getElementType(), " and ", r.getElementType());
  int64_t k1 = l.getShape().back(), k2 = r.getShape()[r.getRank() - 2];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return emitOptionalError(loc, "matmul contraction dimensions differ: lhs ",
                             shapeString(l.getShape()), " has K = ", k1,
                             ", rhs ", shapeString(r.getShape()), " has K = ",
                             k2);
  SmallVector<int64_t> batch;
  if (!OpTrait::util::getBroadcastedShape(l.getShape().drop_back(2),
                                          r.getShape().drop_back(2), batch))
    return emitOptionalError(loc, "matmul batch dimensions ",
                             shapeString(l.getShape().drop_back(2)), " and ",
                             shapeString(r.getShape().drop_back(2)),
                             " are not broadcast-compatible");
  batch.push_back(l.getShape()[l.getRank() - 2]);
  batch.push_back(r.getShape().back());
  results.push_back(RankedTensorType::get(batch, l.getElementType()));
  return success();
}

} // namespace tessel::graph
