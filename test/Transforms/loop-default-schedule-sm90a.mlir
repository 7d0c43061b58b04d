// RUN: tessel-opt %s --loop-default-schedule="target=sm_90a allow-tf32=true" --split-input-file | FileCheck %s

// On sm_90a an f16 matmul gets the Hopper strategy: wgmma warpgroups of
// 64 x 256 (shape [64, 256, 16]), K steps of one 128-byte row (64), pad 0
// (the tiles are swizzled), a producer warpgroup for the TMA copies and,
// as the 512 tiles of 128 x 256 outnumber the 132 SMs, a persistent grid in
// groups of 8 tile rows (0 keeps a block per tile).
// CHECK-LABEL: loop.schedule @gemm target "sm_90a" {
// CHECK-NEXT: %[[BM:.*]] = loop.knob "block_m" = 128
// CHECK-NEXT: %[[BN:.*]] = loop.knob "block_n" = 256
// CHECK-NEXT: %[[BK:.*]] = loop.knob "block_k" = 64
// CHECK-NEXT: %[[WM:.*]] = loop.knob "warp_m" = 64
// CHECK-NEXT: %[[WN:.*]] = loop.knob "warp_n" = 256
// CHECK-NEXT: %[[ST:.*]] = loop.knob "stages" = 4
// CHECK-NEXT: %[[PAD:.*]] = loop.knob "pad" = 0
// CHECK-NEXT: %[[PR:.*]] = loop.knob "producers" = 1 choices [0, 1]
// CHECK-NEXT: %[[G:.*]] = loop.knob "group_m" = 8 choices [0, 1, 2, 4, 8, 16]
// CHECK: loop.tile [%[[BM]], %[[BN]], 0] mapping [#gpu.block<y>, #gpu.block<x>]
// CHECK-NEXT: loop.promote inputs [0, 1] pad [%[[PAD]]]
// CHECK-NEXT: loop.pipeline stages [%[[ST]]]
// CHECK-NEXT: loop.warp_specialize producers [%[[PR]]]
// CHECK-NEXT: loop.persistent group_m [%[[G]]]
// CHECK-NEXT: loop.mma [%[[WM]], %[[WN]], %[[BK]]] shape [64, 256, 16]
func.func private @gemm(%a: tensor<4096x4096xf16>, %b: tensor<4096x4096xf16>) -> tensor<4096x4096xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4096x4096xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<4096x4096xf16>, tensor<4096x4096xf16>) outs(%acc : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  return %mm : tensor<4096x4096xf32>
}

// -----

// f32 operands with allow-tf32: wgmma of k 8 (tf32), K steps of 32 (one
// 128-byte row); no producer knob: the consumers copy B, transposing it
// into its K-major tile, which TMA cannot.
// CHECK-LABEL: loop.schedule @tf32 target "sm_90a" {
// CHECK: loop.knob "block_k" = 32
// CHECK-NOT: producers
// CHECK-NOT: loop.warp_specialize
// CHECK: loop.mma [%{{.*}}, %{{.*}}, %{{.*}}] shape [64, 64, 8]

func.func private @tf32(%a: tensor<1024x512xf32>, %b: tensor<512x2048xf32>) -> tensor<1024x2048xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x2048xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x2048xf32>) -> tensor<1024x2048xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<1024x512xf32>, tensor<512x2048xf32>) outs(%acc : tensor<1024x2048xf32>) -> tensor<1024x2048xf32>
  return %mm : tensor<1024x2048xf32>
}
