// RUN: tessel-opt %s | tessel-opt | FileCheck %s
// RUN: tessel-opt %s --mlir-print-op-generic | tessel-opt | FileCheck %s

func.func @matmul_kernel(%a: tensor<4096x4096xf16>, %b: tensor<4096x4096xf16>) -> tensor<4096x4096xf32> {
  %0 = tensor.empty() : tensor<4096x4096xf32>
  return %0 : tensor<4096x4096xf32>
}

// CHECK-LABEL: loop.schedule @matmul_kernel target "sm_90" {
// CHECK-NEXT: %[[BM:block_m]] = loop.knob "block_m" = 128 choices [64, 128, 256]
// CHECK-NEXT: %[[BN:block_n]] = loop.knob "block_n" = 128 choices [64, 128, 256]
// CHECK-NEXT: %[[BK:block_k]] = loop.knob "block_k" = 32 range [16, 64] step 16
// CHECK-NEXT: loop.tile [%[[BM]], %[[BN]], 0] mapping [#gpu.block<y>, #gpu.block<x>]
// CHECK-NEXT: loop.tile [64, 64, 0] mapping [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]
// CHECK-NEXT: loop.tile [0, 0, %[[BK]]]{{$}}
// CHECK-NEXT: }
loop.schedule @matmul_kernel target "sm_90" {
  %bm = loop.knob "block_m" = 128 choices [64, 128, 256]
  %bn = loop.knob "block_n" = 128 choices [64, 128, 256]
  %bk = loop.knob "block_k" = 32 range [16, 64] step 16
  loop.tile [%bm, %bn, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.tile [64, 64, 0] mapping [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]
  loop.tile [0, 0, %bk]
}

// Wide ranges verify without enumerating them.
// CHECK-LABEL: loop.schedule @matmul_kernel target "sm_80" {
// CHECK-NEXT: loop.knob "split" = 999999999999 range [1, 1000000000000] step 2
loop.schedule @matmul_kernel target "sm_80" {
  %split = loop.knob "split" = 999999999999 range [1, 1000000000000] step 2
}

// A CPU schedule with thread-level tiling only.
// CHECK-LABEL: loop.schedule @matmul_kernel target "cpu" {
// CHECK-NEXT: loop.tile [32, 0, 0] mapping [#gpu.thread<x>]
loop.schedule @matmul_kernel target "cpu" {
  loop.tile [32, 0, 0] mapping [#gpu.thread<x>]
}

// A schedule for a sibling root names the result it computes.
// CHECK-LABEL: loop.schedule @matmul_kernel result 0 target "sm_80" {
// CHECK-NEXT: loop.tile [64, 64, 0] mapping [#gpu.block<y>, #gpu.block<x>]
loop.schedule @matmul_kernel result 0 target "sm_80" {
  loop.tile [64, 64, 0] mapping [#gpu.block<y>, #gpu.block<x>]
}

// Tensor-core primitives take constants or knobs.
// CHECK-LABEL: loop.schedule @matmul_kernel result 1 target "sm_90" {
// CHECK: loop.promote inputs [0, 1] pad [%[[PAD:pad]]]
// CHECK-NEXT: loop.pipeline stages [%[[ST:stages]]]
// CHECK-NEXT: loop.mma [%[[WM:warp_m]], 64, 32] shape [16, 8, 16]
loop.schedule @matmul_kernel result 1 target "sm_90" {
  %wm = loop.knob "warp_m" = 64 choices [32, 64]
  %st = loop.knob "stages" = 4 range [1, 5] step 1
  %pad = loop.knob "pad" = 8 choices [0, 8, 16]
  loop.tile [128, 128, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [%pad]
  loop.pipeline stages [%st]
  loop.mma [%wm, 64, 32] shape [16, 8, 16]
}

// CHECK-LABEL: loop.schedule @matmul_kernel result 2 target "sm_80" {
// CHECK: loop.warp_reduce threads [%{{.*}}]
loop.schedule @matmul_kernel result 2 target "sm_80" {
  %t = loop.knob "threads" = 256 choices [128, 256]
  loop.tile [1, 0, 0] mapping [#gpu.block<x>]
  loop.warp_reduce threads [%t]
}

// CPU schedules: parallel tiles (tasks on the host's cores) and
// register-blocked matmuls.
// CHECK-LABEL: loop.schedule @matmul_kernel result 3 target "cpu" {
// CHECK: loop.tile [%[[BM:block_m]], 64, 0] parallel
// CHECK-NEXT: loop.vectorize [8, %[[RN:reg_n]], 8] depth [%[[BK:block_k]]] rows [%[[CM:cache_m]]]
loop.schedule @matmul_kernel result 3 target "cpu" {
  %bm = loop.knob "block_m" = 128 choices [64, 128]
  %rn = loop.knob "reg_n" = 16 choices [8, 16, 32]
  %bk = loop.knob "block_k" = 256 range [64, 512] step 64
  %cm = loop.knob "cache_m" = 8 choices [8, 16, 32]
  loop.tile [%bm, 64, 0] parallel
  loop.vectorize [8, %rn, 8] depth [%bk] rows [%cm]
}

// CHECK-LABEL: loop.schedule @matmul_kernel result 4 target "cpu" {
// CHECK: loop.split_reduction lanes [%[[L:lanes]]]
loop.schedule @matmul_kernel result 4 target "cpu" {
  %lanes = loop.knob "lanes" = 16 choices [8, 16, 32]
  loop.tile [4, 0, 0] parallel
  loop.split_reduction lanes [%lanes]
}

// CHECK-LABEL: loop.schedule @matmul_kernel result 5 target "sm_90" {
// CHECK: loop.materialize inputs [1]
// CHECK: loop.split_k parts [%[[P:split_k]]]
// CHECK: loop.schedule @matmul_kernel result 6 target "cpu" {
// CHECK: loop.split_k parts [4]
// CHECK: loop.unroll factor [%{{.*}}]
loop.schedule @matmul_kernel result 5 target "sm_90" {
  %parts = loop.knob "split_k" = 2 choices [1, 2, 4]
  loop.materialize inputs [1]
  loop.split_k parts [%parts]
  loop.tile [128, 128, 0] mapping [#gpu.block<y>, #gpu.block<x>]
}
loop.schedule @matmul_kernel result 6 target "cpu" {
  %unroll = loop.knob "unroll" = 4 choices [1, 2, 4, 8]
  loop.split_k parts [4]
  loop.unroll factor [%unroll]
}

// CHECK-LABEL: loop.schedule @matmul_kernel result 7 target "sm_90" {
// CHECK: loop.tile [0, %[[V:vector]]] mapping [#gpu.thread<x>]
// CHECK: loop.vector_access width [%[[V]]]
loop.schedule @matmul_kernel result 7 target "sm_90" {
  %vector = loop.knob "vector" = 4 choices [1, 2, 4]
  loop.tile [1, 1024] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.tile [0, %vector] mapping [#gpu.thread<x>]
  loop.vector_access width [%vector]
}

// CHECK-LABEL: loop.schedule @matmul_kernel result 8 target "sm_90a" {
// CHECK: loop.warp_specialize producers [%[[P:producers]]]
// CHECK: loop.persistent group_m [%[[G:group_m]]]
// CHECK: loop.mma [64, 256, 64] shape [64, 256, 16]
loop.schedule @matmul_kernel result 8 target "sm_90a" {
  %producers = loop.knob "producers" = 1 choices [0, 1]
  %group_m = loop.knob "group_m" = 8 choices [1, 2, 4, 8, 16]
  loop.tile [128, 256] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [0]
  loop.pipeline stages [4]
  loop.warp_specialize producers [%producers]
  loop.persistent group_m [%group_m]
  loop.mma [64, 256, 64] shape [64, 256, 16]
}

// A tensor map of a buffer (box outermost first) and an mma_config with
// wgmma's fields.
// CHECK-LABEL: func.func @tensor_map
// CHECK-SAME: #loop.mma_config<target = "sm_90a", block_m = 128, block_n = 256, warp_m = 64, warp_n = 256, k = 64, stages = 4, pad = 0, shape_m = 64, shape_n = 256, producers = 1, group_m = 8>
// CHECK: loop.tensor_map %{{.*}} box [128, 64] swizzle "128B" : memref<?x4096xf16> -> memref<128xi8>
func.func @tensor_map(%a: memref<?x4096xf16>) -> memref<128xi8> attributes {config = #loop.mma_config<target = "sm_90a", block_m = 128, block_n = 256, warp_m = 64, warp_n = 256, k = 64, stages = 4, pad = 0, shape_m = 64, shape_n = 256, producers = 1, group_m = 8>} {
  %map = loop.tensor_map %a box [128, 64] swizzle "128B" : memref<?x4096xf16> -> memref<128xi8>
  return %map : memref<128xi8>
}
