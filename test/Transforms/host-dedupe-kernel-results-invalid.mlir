// RUN: tessel-opt %s -host-dedupe-kernel-results -allow-unregistered-dialect -verify-diagnostics -split-input-file

// A kernel whose results must change can only be rewritten at call sites.
func.func private @k(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {tessel.kernel = "elementwise"} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
func.func @f() {
  // expected-error @+1 {{kernels may only be called}}
  %0 = "test.symbol_user"() {callee = @k} : () -> i32
  return
}
