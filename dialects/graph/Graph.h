//===- Graph.h - tessel graph dialect ---------------------------*- C++ -*-===//
#ifndef TESSEL_DIALECTS_GRAPH_GRAPH_H
#define TESSEL_DIALECTS_GRAPH_GRAPH_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/graph/GraphDialect.h.inc"
#include "dialects/graph/GraphEnums.h.inc"
#include "dialects/graph/Folding.h"
#include "dialects/graph/ShapeInference.h"

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.h.inc"

#endif // TESSEL_DIALECTS_GRAPH_GRAPH_H
