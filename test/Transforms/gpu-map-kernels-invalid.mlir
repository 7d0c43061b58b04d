// RUN: tessel-opt %s --verify-diagnostics --gpu-map-kernels

// Before bufferization (out of pipeline order): an error, not an assertion.
// expected-error @below {{gpu-map-kernels runs on bufferized kernels, but kernel 'k' takes or returns tensors}}
func.func private @k(%a: tensor<4xf32>) -> tensor<4xf32> attributes {tessel.kernel = "elementwise"} {
  return %a : tensor<4xf32>
}
