// RUN: tessel-opt %s -pass-pipeline='builtin.module(func.func(cpu-vectorize-matmul{register-tile=4,16,8 depth-block=32}),canonicalize)' -split-input-file | FileCheck %s
// RUN: not tessel-opt %s -pass-pipeline='builtin.module(func.func(cpu-vectorize-matmul{register-tile=4,16}))' -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// K is blocked by 32 (A and B blocks packed), then 4x16x8 register blocks are vector.contracts whose
// accumulator is a loop-carried vector (read before, written after the
// depth loop).
// CHECK-LABEL: func.func private @matmul
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c32
// The K block's A and B slices are packed into contiguous tensors.
// CHECK: linalg.copy ins(%{{.*}} : tensor<8x32xf32>)
// CHECK: linalg.copy ins(%{{.*}} : tensor<32x32xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c4
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<4x16xf32>, vector<4x16xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ACC]]) -> (vector<4x16xf32>)
// CHECK: vector.contract {{.*}} : vector<4x8xf32>, vector<8x16xf32> into vector<4x16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<4x16xf32>, tensor<4x16xf32>
// BAD: register-tile needs 3 sizes (rows, columns, depth)
func.func private @matmul(%a: tensor<8x64xf32>, %b: tensor<64x32xf32>) -> tensor<8x32xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<8x64xf32>, tensor<64x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %mm : tensor<8x32xf32>
}

// -----

// Sizes that do not divide a dimension shrink to its largest power-of-two
// divisor (6 rows: blocks of 2; 12 columns: blocks of 4; K 5: 1).
// CHECK-LABEL: func.func private @odd_matmul
// CHECK: vector.contract {{.*}} : vector<2x1xf32>, vector<1x4xf32> into vector<2x4xf32>
func.func private @odd_matmul(%a: tensor<6x5xf32>, %b: tensor<5x12xf32>, %c: tensor<6x12xf32>) -> tensor<6x12xf32> attributes {tessel.kernel = "contraction"} {
  %mm = linalg.matmul ins(%a, %b : tensor<6x5xf32>, tensor<5x12xf32>) outs(%c : tensor<6x12xf32>) -> tensor<6x12xf32>
  return %mm : tensor<6x12xf32>
}
