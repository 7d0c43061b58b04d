//===- GraphOps.cpp - tessel graph ops ------------------------------------===//

#include "dialects/graph/Graph.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace tessel::graph;

#include "dialects/graph/GraphEnums.cpp.inc"

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type)
    return emitOptionalError(loc, "constant value must be a ranked tensor");
  results.push_back(type);
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  return inferMatmulResultType(loc, adaptor.getLhs().getType(),
                               adaptor.getRhs().getType(), results);
}

//===----------------------------------------------------------------------===//
// FusedOp
//===----------------------------------------------------------------------===//

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ")
           << body.getNumArguments() << " arguments but the group has "
           << getInputs().size() << " inputs";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(body.getArgumentTypes(), getInputs())))
    if (std::get<0>(pair) != std::get<1>(pair).getType())
      return emitOpError("body argument #")
             << i << " has type " << std::get<0>(pair) << " but input #" << i
             << " has type " << std::get<1>(pair).getType();
  return success();
}

LogicalResult FusedOp::verifyRegions() {
  Block &body = getBody().front();
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError("body must end with graph.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().getTypes() << " but the group returns "
           << getResultTypes();
  for (Operation &op : body.without_terminator()) {
    if (isa<FusedOp>(op))
      return op.emitOpError("fusion groups do not nest");
    if (!isa<GraphDialect>(op.getDialect()))
      return op.emitOpError("is not a graph op; fusion groups hold graph ops "
                            "only");
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.cpp.inc"
