//===- ShapeInference.h - graph result-type rules ---------------*- C++ -*-===//
//
// The shape rules of graph ops, shared by their InferTypeOpInterface
// implementations and by the Python builder (through the verifier).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DIALECTS_GRAPH_SHAPEINFERENCE_H
#define TESSEL_DIALECTS_GRAPH_SHAPEINFERENCE_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace tessel::graph {

/// numpy broadcasting of two ranked tensors with the same element type.
llvm::LogicalResult
inferBroadcastResultType(std::optional<mlir::Location> loc, mlir::Type lhs,
                         mlir::Type rhs,
                         llvm::SmallVectorImpl<mlir::Type> &results);

/// numpy.matmul for operands of rank >= 2: [b..., M, K] x [b..., K, N].
llvm::LogicalResult
inferMatmulResultType(std::optional<mlir::Location> loc, mlir::Type lhs,
                      mlir::Type rhs,
                      llvm::SmallVectorImpl<mlir::Type> &results);

} // namespace tessel::graph

#endif // TESSEL_DIALECTS_GRAPH_SHAPEINFERENCE_H
