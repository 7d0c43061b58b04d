//===- Folding.h - constant folding of graph ops ----------------*- C++ -*-===//
#ifndef TESSEL_DIALECTS_GRAPH_FOLDING_H
#define TESSEL_DIALECTS_GRAPH_FOLDING_H

#include "mlir/IR/OpDefinition.h"

namespace tessel::graph {

/// Folds an elementwise op: evaluates it when every operand is a constant
/// (numpy broadcasting, f16/bf16 computed in double and rounded once), and
/// applies the identities x + 0, x - 0, x * 1, x / 1 when they keep x's type.
mlir::OpFoldResult foldElementwise(mlir::Operation *op,
                                   llvm::ArrayRef<mlir::Attribute> operands);

} // namespace tessel::graph

#endif // TESSEL_DIALECTS_GRAPH_FOLDING_H
