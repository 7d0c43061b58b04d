// RUN: tessel-opt %s -pass-pipeline='builtin.module(func.func(cpu-tile-and-fuse{tile-elements=256 contraction-rows=64}))' -split-input-file | FileCheck %s

// A row-wise reduction kernel: the root (the division) is tiled along rows
// and both reductions and the exp are fused into the tile.
// CHECK-LABEL: func.func private @softmax_rows
// CHECK: scf.forall (%{{.*}}) = (0) to (64) step (4)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.divf
// CHECK: scf.forall.in_parallel
// CHECK-NOT: linalg.generic
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#red_in = affine_map<(d0, d1, d2) -> (d0, d2)>
#red_out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func private @softmax_rows(%x: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "reduction"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64x1xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<64x1xf32>) -> tensor<64x1xf32>
  %m = linalg.generic {indexing_maps = [#red_in, #red_out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<64x64xf32>) outs(%m0 : tensor<64x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.maximumf %acc, %in : f32
    linalg.yield %0 : f32
  } -> tensor<64x1xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x1xf32>) -> tensor<64x1xf32>
  %s = linalg.generic {indexing_maps = [#red_in, #red_out, #red_out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %m : tensor<64x64xf32>, tensor<64x1xf32>) outs(%s0 : tensor<64x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %acc: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %acc, %1 : f32
    linalg.yield %2 : f32
  } -> tensor<64x1xf32>
  %e2 = tensor.empty() : tensor<64x64xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %m, %s : tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>) outs(%e2 : tensor<64x64xf32>) {
  ^bb0(%in: f32, %mx: f32, %sum: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.divf %1, %sum : f32
    linalg.yield %2 : f32
  } -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// -----

// Contraction kernels tile the result in 64x128 blocks; the epilogue is the
// root and the matmul and its fill are fused into each block.
// CHECK-LABEL: func.func private @matmul_relu
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (128, 256) step (64, 128)
// CHECK: linalg.fill
// CHECK: linalg.matmul {{.*}}tensor<64x32xf32>, tensor<32x128xf32>
// CHECK: linalg.generic
// CHECK: arith.maximumf
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func private @matmul_relu(%a: tensor<128x32xf32>, %b: tensor<32x256xf32>) -> tensor<128x256xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x256xf32>) -> tensor<128x256xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<128x32xf32>, tensor<32x256xf32>) outs(%f : tensor<128x256xf32>) -> tensor<128x256xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<128x256xf32>) outs(%e : tensor<128x256xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %zero : f32
    linalg.yield %0 : f32
  } -> tensor<128x256xf32>
  return %r : tensor<128x256xf32>
}

// -----

// A small kernel fits one tile and is left alone; so are functions that are
// not kernels.
// CHECK-LABEL: func.func private @small
// CHECK-NOT: scf.forall
// CHECK-LABEL: func.func @host
// CHECK-NOT: scf.forall
#id3 = affine_map<(d0) -> (d0)>
func.func private @small(%x: tensor<16xf32>) -> tensor<16xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
func.func @host(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %e = tensor.empty() : tensor<4096xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel"]} ins(%x : tensor<4096xf32>) outs(%e : tensor<4096xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<4096xf32>
  return %r : tensor<4096xf32>
}

// -----

// A fused producer the kernel also returns is yielded by the loop; the
// untiled ops before the loop keep their own operands (they die).
// CHECK-LABEL: func.func private @returned_producer
// CHECK: %[[L:.*]]:2 = scf.forall
// CHECK: return %[[L]]#{{.*}}, %[[L]]#{{.*}}
#c_in = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#c_w = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#c_out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#e = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func private @returned_producer(%x: tensor<2x4x5xf32>, %w: tensor<2x5x3xf32>) -> (tensor<2x4x3xf32>, tensor<2x4x3xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %mm = linalg.generic {indexing_maps = [#c_in, #c_w, #c_out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<2x4x5xf32>, tensor<2x5x3xf32>) outs(%f : tensor<2x4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %c, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x4x3xf32>
  %n = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel", "parallel"]} ins(%mm : tensor<2x4x3xf32>) outs(%e : tensor<2x4x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %0 = arith.negf %a : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x3xf32>
  return %mm, %n : tensor<2x4x3xf32>, tensor<2x4x3xf32>
}
