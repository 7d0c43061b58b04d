// RUN: tessel-opt %s --graph-to-linalg -split-input-file -verify-diagnostics

func.func @dynamic(%a: tensor<?x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{has dynamic shape 'tensor<?x8xf32>'; graph-to-linalg supports static shapes only}}
  %0 = graph.add %a, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
