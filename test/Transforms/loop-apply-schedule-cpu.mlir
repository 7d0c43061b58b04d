// RUN: tessel-opt %s -split-input-file -pass-pipeline='builtin.module(loop-validate,loop-apply-schedule,canonicalize)' | FileCheck %s

// A CPU schedule of a matmul kernel: parallel tiles of 8x16 (an scf.forall
// without mapping: tasks of the async runtime), K in blocks of 32 (A and B
// blocks packed), then 4x16x8 register blocks that are vector.contracts
// whose accumulator is a loop-carried vector (read before, written after
// the depth loop).
// CHECK-LABEL: func.func private @matmul
// (The one-tile row loop folds away.)
// CHECK: scf.forall (%{{.*}}) = (0) to (32) step (16)
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c32
// The K block's A and B slices are packed into contiguous tensors.
// CHECK: linalg.copy ins(%{{.*}} : tensor<8x32xf32>)
// CHECK: linalg.copy ins(%{{.*}} : tensor<32x16xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c4
// CHECK: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<4x16xf32>, vector<4x16xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ACC]]) -> (vector<4x16xf32>)
// CHECK: vector.contract {{.*}} : vector<4x8xf32>, vector<8x16xf32> into vector<4x16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<4x16xf32>, tensor<4x16xf32>
// CHECK-NOT: loop.schedule
func.func private @matmul(%a: tensor<8x64xf32>, %b: tensor<64x32xf32>) -> tensor<8x32xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<8x64xf32>, tensor<64x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %mm : tensor<8x32xf32>
}

loop.schedule @matmul target "cpu" {
  %rows = loop.knob "reg_m" = 4 choices [1, 2, 4, 8]
  loop.tile [8, 16, 0] parallel
  loop.vectorize [%rows, 16, 8] depth [32]
}

// -----

// Without a loop.tile, loop.vectorize takes the whole matmul; a depth of K
// or more leaves K unblocked (nothing packed).
// CHECK-LABEL: func.func private @whole
// CHECK-NOT: scf.forall
// CHECK-NOT: linalg.copy
// CHECK: vector.contract {{.*}} : vector<2x4xf32>, vector<4x4xf32> into vector<2x4xf32>
func.func private @whole(%a: tensor<6x8xf32>, %b: tensor<8x12xf32>, %c: tensor<6x12xf32>) -> tensor<6x12xf32> attributes {tessel.kernel = "contraction"} {
  %mm = linalg.matmul ins(%a, %b : tensor<6x8xf32>, tensor<8x12xf32>) outs(%c : tensor<6x12xf32>) -> tensor<6x12xf32>
  return %mm : tensor<6x12xf32>
}
loop.schedule @whole target "cpu" {
  loop.vectorize [2, 4, 4] depth [8]
}
