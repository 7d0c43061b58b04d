// RUN: tessel-opt %s -host-dedupe-kernel-results | FileCheck %s

// The kernel returns %a twice: it now returns it once and both uses of the
// call take that result.
// CHECK-LABEL: func.func private @k
// CHECK-SAME: -> tensor<4xf32>
// CHECK: return %{{.*}} : tensor<4xf32>
// CHECK-LABEL: func.func @f
// CHECK: %[[R:.*]] = call @k(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: return %[[R]], %[[R]]
func.func private @k(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {tessel.kernel = "elementwise"} {
  %a = math.absf %x : tensor<4xf32>
  return %a, %a : tensor<4xf32>, tensor<4xf32>
}
func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0:2 = call @k(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %0#0, %0#1 : tensor<4xf32>, tensor<4xf32>
}
