//===- GraphDialect.cpp - tessel graph dialect ----------------------------===//

#include "dialects/graph/Graph.h"

using namespace mlir;
using namespace tessel::graph;

#include "dialects/graph/GraphDialect.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/graph/GraphOps.cpp.inc"
      >();
  registerAttributes();
}

Operation *GraphDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
