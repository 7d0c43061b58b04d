//===- Graph.h - tessel graph dialect ---------------------------*- C++ -*-===//
#ifndef TESSEL_DIALECTS_GRAPH_GRAPH_H
#define TESSEL_DIALECTS_GRAPH_GRAPH_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TensorEncoding.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::OpTrait {
/// Marks a graph op whose shape rules read size symbols (#graph.shape);
/// the others refuse tensors that carry them (GraphAttrs.cpp).
template <typename ConcreteType>
class GraphSymbolicSizes : public TraitBase<ConcreteType, GraphSymbolicSizes> {};
} // namespace mlir::OpTrait

namespace tessel::graph {
/// The highest rank of a graph tensor: numpy's, since every input and
/// result crosses as a numpy array (and compile time grows with rank).
constexpr int64_t kMaxRank = 64;
/// Whether `type` has rank at most kMaxRank and its static dims hold fewer
/// than 2^63 bytes (the byte size computed without overflow).
bool hasSupportedShape(mlir::ShapedType type);
} // namespace tessel::graph

#include "dialects/graph/GraphDialect.h.inc"
#include "dialects/graph/GraphEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/graph/GraphAttrs.h.inc"
#include "dialects/graph/Folding.h"
#include "dialects/graph/ShapeInference.h"

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.h.inc"

namespace tessel::graph {
/// The value a `kind` reduction of `element`s starts from: 0 for sum and
/// mean (whose sum is then divided), the lowest and highest value for max
/// and min (-inf / +inf for floats).
mlir::TypedAttr reductionInitialValue(mlir::Builder &b, ReduceKind kind,
                                      mlir::Type element);
} // namespace tessel::graph

#endif // TESSEL_DIALECTS_GRAPH_GRAPH_H
