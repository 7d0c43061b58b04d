// RUN: tessel-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(func.func(gpu-lower-mma),canonicalize)" | FileCheck %s

// Tensor-core contractions over size symbols (docs/dynamic-shapes.md).
// (Their buffers reach kernels through gpu-pass-dynamic-buffers, which the
// PTX pipeline of gpu-lower-mma.mlir does not run.)

// K over a size symbol (a multiple of 8 up to 64, by the function's
// graph.dims): the K loop runs ceildiv(K, 32) steps, counted from A's size
// at each call, and the copies zero-fill the chunks past K (reading
// nothing, from a clamped address), the prologue's as the main loop's.
// CHECK-LABEL: func.func private @dynamic_k
// CHECK: %[[K:.*]] = memref.dim %{{.*}}, %c1 : memref<64x?xf16>
// CHECK: scf.forall (%{{.*}}) in (128) {
// CHECK: %[[STEPS:.*]] = affine.apply #{{.*}}()[%[[K]]]
// CHECK: %[[INSIDE:.*]] = arith.cmpi ult, %{{.*}}, %[[K]] : index
// CHECK: %[[COUNT:.*]] = arith.select %[[INSIDE]], %c8, %c0 : index
// CHECK: nvgpu.device_async_copy {{.*}}, 8, %[[COUNT]] {bypassL1}
// CHECK: scf.for %{{.*}} = %c0 to %[[STEPS]] step %c1 iter_args
// CHECK-COUNT-8: nvgpu.mma.sync
func.func private @dynamic_k(%a: memref<64x?xf16> {graph.shape = #graph.shape<[64, seq]>}, %b: memref<?x64xf16> {graph.shape = #graph.shape<[seq, 64]>}, %out: memref<64x64xf32>) attributes {tessel.kernel = "contraction", graph.dims = {seq = #graph.dim<8, 64, multiple_of 8>}} {
  %zero = arith.constant 0.0 : f32
  %c1 = arith.constant 1 : index
  %k = memref.dim %a, %c1 : memref<64x?xf16>
  scf.forall (%i, %j) = (0, 0) to (64, 64) step (64, 64) {
    %sa = memref.subview %a[%i, 0] [64, %k] [1, 1] : memref<64x?xf16> to memref<64x?xf16, strided<[?, 1], offset: ?>>
    %sb = memref.subview %b[0, %j] [%k, 64] [1, 1] : memref<?x64xf16> to memref<?x64xf16, strided<[64, 1], offset: ?>>
    %so = memref.subview %out[%i, %j] [64, 64] [1, 1] : memref<64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%so : memref<64x64xf32, strided<[64, 1], offset: ?>>)
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90", block_m = 64, block_n = 64, warp_m = 32, warp_n = 32, k = 32, stages = 2, pad = 8>}
        ins(%sa, %sb : memref<64x?xf16, strided<[?, 1], offset: ?>>, memref<?x64xf16, strided<[64, 1], offset: ?>>) outs(%so : memref<64x64xf32, strided<[64, 1], offset: ?>>)
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}
