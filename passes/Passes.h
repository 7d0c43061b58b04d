//===- Passes.h - tessel passes ---------------------------------*- C++ -*-===//
#ifndef TESSEL_PASSES_PASSES_H
#define TESSEL_PASSES_PASSES_H

#include "dialects/graph/Graph.h"
#include "dialects/loop/Loop.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace tessel {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// Patterns of graph-decompose, also used by graph-to-linalg so that it
/// accepts composite ops directly.
void populateGraphDecompositionPatterns(mlir::RewritePatternSet &patterns);

/// The attribute of a function in destination-passing style (set by
/// graph-to-linalg{destinations}, dropped by host-drop-destination-results):
/// how many destination arguments end its argument list, one per result.
constexpr llvm::StringLiteral kDestinationsAttr = "tessel.destinations";

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace tessel

#endif // TESSEL_PASSES_PASSES_H
