//===- Passes.td - tessel pass declarations ----------------*- tablegen -*-===//

#ifndef TESSEL_PASSES
#define TESSEL_PASSES

include "mlir/Pass/PassBase.td"

def ConvertGraphToLinalg : Pass<"graph-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower graph ops to upstream linalg on tensors";
  let description = [{
    Rewrites every graph op into upstream MLIR only: constants become
    `arith.constant`, elementwise ops become `linalg.generic` with
    broadcasting indexing maps, 2-D matmuls become `linalg.matmul` and
    batched ones a `linalg.generic` contraction. f16/bf16 matmuls accumulate
    in f32 and round once at the end. `graph.fused` groups are inlined: use
    this pass to export a graph for other MLIR compilers, or after kernels
    have been outlined.

    Shapes must be static; a dynamic dimension is reported at the op that
    has it.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect",
    "mlir::tensor::TensorDialect",
  ];
}

#endif // TESSEL_PASSES
