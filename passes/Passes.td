//===- Passes.td - tessel pass declarations ----------------*- tablegen -*-===//

#ifndef TESSEL_PASSES
#define TESSEL_PASSES

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Graph passes, in pipeline order
//===----------------------------------------------------------------------===//

def GraphDecompose : Pass<"graph-decompose"> {
  let summary = "Rewrite composite graph ops into primitive ones";
  let description = [{
    softmax and log_softmax become max/sum reductions around exp; layer_norm
    and rms_norm become mean reductions and elementwise ops (computed in f32
    for f16/bf16); batch_norm becomes `x * s + t` with per-channel `s` and
    `t`; linear becomes matmul with a transposed weight plus bias. After
    this pass, constant folding precomputes everything that depends on
    weights only and fusion sees the primitive ops.
  }];
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

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
