// RUN: tessel-opt %s -graph-form-fusion-groups -split-input-file -verify-diagnostics

// Groups are formed within one block; control flow is not supported.
// expected-error @+1 {{'func.func' op graph-form-fusion-groups expects a single-block function}}
func.func @blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %x : tensor<4xf32>
  cf.br ^bb1
^bb1:
  %1 = graph.neg %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
