//===- VectorEpilogues.cpp - elementwise epilogues on vectors ------------===//

#include "passes/cpu/VectorEpilogues.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

SmallVector<Value> tessel::indicesAt(OpBuilder &b, Location loc,
                                     AffineMap map,
                                     ArrayRef<OpFoldResult> point) {
  SmallVector<Value> values;
  for (AffineExpr e : map.getResults())
    values.push_back(getValueOrCreateConstantIndexOp(
        b, loc,
        affine::makeComposedFoldedAffineApply(
            b, loc, AffineMap::get(map.getNumDims(), 0, e, b.getContext()),
            point)));
  return values;
}

linalg::GenericOp tessel::fusableEpilogue(Value result) {
  if (!result.hasOneUse())
    return {};
  OpOperand &use = *result.getUses().begin();
  auto epilogue = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!epilogue || epilogue.getNumDpsInits() != 1 ||
      !epilogue.hasPureTensorSemantics() || epilogue.isDpsInit(&use) ||
      epilogue.getNumParallelLoops() != epilogue.getNumLoops() ||
      epilogue->getResult(0).getType() != result.getType() ||
      !epilogue.getMatchingIndexingMap(&use).isIdentity() ||
      !epilogue.getIndexingMapMatchingResult(epilogue->getResult(0))
           .isIdentity())
    return {};
  Block *body = epilogue.getBody();
  if (!body->getArguments().back().use_empty())
    return {};
  for (Operation &op : body->without_terminator())
    if (!isa<arith::ArithDialect, math::MathDialect>(op.getDialect()) ||
        op.getNumRegions() != 0 || op.getNumResults() != 1 ||
        !llvm::all_of(op.getOperandTypes(),
                      [](Type t) { return t.isIntOrFloat(); }) ||
        !op.getResult(0).getType().isIntOrFloat())
      return {};
  unsigned columns = epilogue.getNumLoops() - 1;
  for (OpOperand *input : epilogue.getDpsInputOperands()) {
    AffineMap map = epilogue.getMatchingIndexingMap(input);
    ArrayRef<AffineExpr> results = map.getResults();
    if (results.empty())
      continue; // a 0-D input: one scalar, broadcast
    if (llvm::any_of(results.drop_back(), [&](AffineExpr e) {
          return e.isFunctionOfDim(columns);
        }))
      return {};
    if (results.back().isFunctionOfDim(columns) &&
        results.back() != getAffineDimExpr(columns, result.getContext()))
      return {};
  }
  return epilogue;
}

Value tessel::computeEpilogue(OpBuilder &b, Location loc,
                              linalg::GenericOp epilogue, Value result,
                              Value acc, ArrayRef<Value> at, int64_t count,
                              bool inBounds) {
  Block *body = epilogue.getBody();
  unsigned columns = epilogue.getNumLoops() - 1;
  auto vectorOf = [&](Type t) { return VectorType::get({count}, t); };
  IRMapping vectors;
  auto mapped = [&](Value scalar) -> Value {
    if (Value v = vectors.lookupOrNull(scalar))
      return v;
    // Defined outside the body: the same for every lane.
    return vector::BroadcastOp::create(b, loc, vectorOf(scalar.getType()),
                                       scalar);
  };
  for (OpOperand *input : epilogue.getDpsInputOperands()) {
    BlockArgument arg = body->getArgument(input->getOperandNumber());
    if (input->get() == result) {
      vectors.map(arg, acc);
      continue;
    }
    AffineMap map = epilogue.getMatchingIndexingMap(input);
    SmallVector<Value> indices =
        indicesAt(b, loc, map, getAsOpFoldResult(ValueRange(at)));
    Value value;
    if (!map.getResults().empty() &&
        map.getResults().back().isFunctionOfDim(columns)) {
      Value padding = arith::ConstantOp::create(
          b, loc, arg.getType(), b.getZeroAttr(arg.getType()));
      value = vector::TransferReadOp::create(b, loc, vectorOf(arg.getType()),
                                             input->get(), indices, padding,
                                             ArrayRef<bool>{inBounds});
    } else {
      value = vector::BroadcastOp::create(
          b, loc, vectorOf(arg.getType()),
          tensor::ExtractOp::create(b, loc, input->get(), indices));
    }
    vectors.map(arg, value);
  }
  for (Operation &op : body->without_terminator()) {
    Type type = vectorOf(op.getResult(0).getType());
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      vectors.map(op.getResult(0),
                  arith::ConstantOp::create(
                      b, loc, type,
                      SplatElementsAttr::get(cast<ShapedType>(type),
                                             constant.getValue())));
      continue;
    }
    SmallVector<Value> operands =
        llvm::map_to_vector(op.getOperands(), mapped);
    Operation *vectorOp =
        b.create(loc, op.getName().getIdentifier(), operands, TypeRange{type},
                 op.getAttrs());
    vectors.map(op.getResult(0), vectorOp->getResult(0));
  }
  return mapped(body->getTerminator()->getOperand(0));
}
