// RUN: tessel-opt %s --split-input-file --loop-validate --loop-apply-schedule --canonicalize | FileCheck %s

// Blocks, then threads: each level tiles the previous level's tiled root
// (the epilogue), and its producers (the matmul, the fill) are fused into
// every level.
// CHECK-LABEL: func.func private @mm_relu
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (128, 256) step (32, 64)
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (32, 64) step (4, 4)
// CHECK: linalg.fill {{.*}} -> tensor<4x4xf32>
// CHECK: linalg.matmul {{.*}} tensor<4x512xf32>, tensor<512x4xf32>{{.*}} -> tensor<4x4xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<4x4xf32>)
// CHECK: } {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
// CHECK: } {mapping = [#gpu.block<y>, #gpu.block<x>]}
// CHECK-NOT: loop.schedule
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @mm_relu(%a: tensor<128x512xf32>, %b: tensor<512x256xf32>) -> tensor<128x256xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x256xf32>) -> tensor<128x256xf32>
  %m = linalg.matmul ins(%a, %b : tensor<128x512xf32>, tensor<512x256xf32>) outs(%f : tensor<128x256xf32>) -> tensor<128x256xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<128x256xf32>) outs(%e : tensor<128x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %x, %zero : f32
    linalg.yield %y : f32
  } -> tensor<128x256xf32>
  return %r : tensor<128x256xf32>
}
loop.schedule @mm_relu target "sm_90" {
  %bm = loop.knob "block_m" = 32 choices [16, 32, 64]
  loop.tile [%bm, 64] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.tile [4, 4] mapping [#gpu.thread<y>, #gpu.thread<x>]
}

// -----

// A tile without a mapping gives sequential scf.for loops.
// CHECK-LABEL: func.func private @seq
// CHECK: scf.forall (%{{.*}}) = (0) to (1024) step (256)
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c32
// CHECK: arith.negf
// CHECK: } {mapping = [#gpu.block<x>]}
#id1 = affine_map<(d0) -> (d0)>
func.func private @seq(%a: tensor<1024xf32>) -> tensor<1024xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<1024xf32>
  %0 = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<1024xf32>
  return %0 : tensor<1024xf32>
}
loop.schedule @seq target "sm_90" {
  loop.tile [256] mapping [#gpu.block<x>]
  loop.tile [32]
}

// -----

// Each root gets its own nest; a root's returned producer is yielded from
// its nest rather than recomputed (%neg here, returned and used by %abs).
// CHECK-LABEL: func.func private @roots
// CHECK: %[[B:.*]] = scf.forall {{.*}} -> (tensor<16xf32>) {
// CHECK: math.exp
// CHECK: } {mapping = [#gpu.block<x>]}
// CHECK: %[[A:.*]]:2 = scf.forall {{.*}} -> (tensor<16xf32>, tensor<16xf32>) {
// CHECK: arith.negf
// CHECK: math.absf
// CHECK: } {mapping = [#gpu.block<x>]}
// CHECK: return %[[A]]#0, %[[B]], %[[A]]#1
#id1 = affine_map<(d0) -> (d0)>
func.func private @roots(%a: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<16xf32>
  %neg = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %exp = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %abs = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%neg : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.absf %x : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  return %abs, %exp, %neg : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
loop.schedule @roots target "sm_90" {
  loop.tile [8] mapping [#gpu.block<x>]
}
loop.schedule @roots result 1 target "sm_90" {
  loop.tile [4] mapping [#gpu.block<x>]
}

// -----

// Tensor-core primitives tile the block level here and leave the rest to
// gpu-lower-mma, which runs on buffers: the contraction in the block tile
// carries them, with the pipeline depth and padding.
// CHECK-LABEL: func.func private @mma
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (256, 256) step (128, 64)
// CHECK: linalg.fill {{.*}} -> tensor<128x64xf32>
// CHECK: linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_80", block_m = 128, block_n = 64, warp_m = 64, warp_n = 32, k = 32, stages = 3, pad = 8>}
// CHECK-SAME: -> tensor<128x64xf32>
// CHECK: linalg.generic
// CHECK: } {mapping = [#gpu.block<y>, #gpu.block<x>]}
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @mma(%a: tensor<256x512xf16>, %b: tensor<512x256xf16>) -> tensor<256x256xf16> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  %m = linalg.matmul ins(%a, %b : tensor<256x512xf16>, tensor<512x256xf16>) outs(%f : tensor<256x256xf32>) -> tensor<256x256xf32>
  %e16 = tensor.empty() : tensor<256x256xf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<256x256xf32>) outs(%e16 : tensor<256x256xf16>) {
  ^bb0(%x: f32, %o: f16):
    %y = arith.truncf %x : f32 to f16
    linalg.yield %y : f16
  } -> tensor<256x256xf16>
  return %r : tensor<256x256xf16>
}
loop.schedule @mma target "sm_80" {
  %st = loop.knob "stages" = 3 range [1, 5] step 1
  loop.tile [128, 64] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [8]
  loop.pipeline stages [%st]
  loop.mma [64, 32, 32] shape [16, 8, 16]
}

// -----

// sm_90a: loop.warp_specialize and loop.persistent land in the marking
// too (a producer warpgroup, groups of 4 tile rows), the mma shape m64
// (wgmma), pad 0.
// CHECK-LABEL: func.func private @wgmma
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (512, 1024) step (128, 256)
// CHECK: linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90a", block_m = 128, block_n = 256, warp_m = 64, warp_n = 256, k = 64, stages = 4, pad = 0, shape_m = 64, shape_n = 256, producers = 1, group_m = 4>}
// CHECK-SAME: -> tensor<128x256xf32>
// CHECK: } {mapping = [#gpu.block<y>, #gpu.block<x>]}
func.func private @wgmma(%a: tensor<512x512xf16>, %b: tensor<512x1024xf16>) -> tensor<512x1024xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x1024xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %m = linalg.matmul ins(%a, %b : tensor<512x512xf16>, tensor<512x1024xf16>) outs(%f : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  return %m : tensor<512x1024xf32>
}
loop.schedule @wgmma target "sm_90a" {
  %g = loop.knob "group_m" = 4 choices [0, 1, 2, 4, 8, 16]
  loop.tile [128, 256, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [0]
  loop.pipeline stages [4]
  loop.warp_specialize producers [1]
  loop.persistent group_m [%g]
  loop.mma [64, 256, 64] shape [64, 256, 16]
}

// -----

// loop.split_k on tensor cores: the partial products' block tiles take one
// part each on grid z and carry the tessel.mma marking (A read as
// (m, part, k)); the sum of the parts and the epilogue get the pointwise
// tiling (4 adjacent columns per thread: 24 threads along x for the row of
// 96 columns, 8 rows on threads along y), the elementwise epilogue marked
// for vectors (loop.vector_access).
// CHECK-LABEL: func.func private @split
// CHECK: %[[PARTS:.*]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (4, 64, 96) step (1, 32, 32)
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<32x1x512xf16>, tensor<1x512x32xf16>) outs(%{{.*}} : tensor<1x32x32xf32>) attrs = {tessel.mma = #loop.mma_config<target = "sm_90", block_m = 32, block_n = 32, warp_m = {{[0-9]+}}, warp_n = {{[0-9]+}}, k = 32
// CHECK: } {mapping = [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]}
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 96) step (8, 96)
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (8, 96) step (1, 4)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]} ins(%{{.*}} : tensor<4x1x4xf32>)
// CHECK: linalg.generic {{.*}} attrs = {tessel.vector_access = 4 : i64}
// CHECK: arith.truncf
// CHECK: } {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
// CHECK: } {mapping = [#gpu.block<y>, #gpu.block<x>]}
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func private @split(%a: tensor<64x2048xf16>, %b: tensor<2048x96xf16>, %bias: tensor<96xf32>) -> tensor<64x96xf16> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x2048xf16>, tensor<2048x96xf16>) outs(%acc : tensor<64x96xf32>) -> tensor<64x96xf32>
  %e16 = tensor.empty() : tensor<64x96xf16>
  %0 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<64x96xf32>, tensor<96xf32>) outs(%e16 : tensor<64x96xf16>) {
  ^bb0(%x: f32, %y: f32, %o: f16):
    %s = arith.addf %x, %y : f32
    %t = arith.truncf %s : f32 to f16
    linalg.yield %t : f16
  } -> tensor<64x96xf16>
  return %0 : tensor<64x96xf16>
}
loop.schedule @split target "sm_90" {
  loop.split_k parts [4]
  loop.tile [32, 32] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [8]
  loop.pipeline stages [3]
  loop.mma [16, 16, 32] shape [16, 8, 16]
}

// -----

// loop.materialize: the computed B is a pointwise nest of its own (blocks
// of 36 rows of 32 columns, 8 adjacent columns per thread), whose result
// the tensor-core tiles read by extract_slice; the filter A is read whole
// by every batch index.
// CHECK-LABEL: func.func private @patches
// CHECK: %[[COLS:.*]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (2, 72, 32) step (1, 36, 32)
// CHECK: tessel.vector_access = 8
// CHECK: arith.negf
// CHECK: } {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
// CHECK: } {mapping = [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]}
// CHECK: scf.forall (%[[B:.*]], %{{.*}}, %{{.*}}) = (0, 0, 0) to (2, 32, 32) step (1, 32, 32)
// CHECK: %[[TILE:.*]] = tensor.extract_slice %[[COLS]][%[[B]], 0, 0] [1, 72, 32]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[TILE]] : tensor<32x72xf16>, tensor<1x72x32xf16>) {{.*}}tessel.mma
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#a = affine_map<(b, m, n, k) -> (m, k)>
#b = affine_map<(b, m, n, k) -> (b, k, n)>
#c = affine_map<(b, m, n, k) -> (b, m, n)>
func.func private @patches(%x: tensor<2x72x32xf16>, %w: tensor<32x72xf16>) -> tensor<2x32x32xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x72x32xf16>
  %cols = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x72x32xf16>) outs(%e : tensor<2x72x32xf16>) {
  ^bb0(%v: f16, %o: f16):
    %n = arith.negf %v : f16
    linalg.yield %n : f16
  } -> tensor<2x72x32xf16>
  %acc0 = tensor.empty() : tensor<2x32x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc0 : tensor<2x32x32xf32>) -> tensor<2x32x32xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %cols : tensor<32x72xf16>, tensor<2x72x32xf16>) outs(%acc : tensor<2x32x32xf32>) {
  ^bb0(%p: f16, %q: f16, %r: f32):
    %pf = arith.extf %p : f16 to f32
    %qf = arith.extf %q : f16 to f32
    %m = arith.mulf %pf, %qf : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x32x32xf32>
  return %mm : tensor<2x32x32xf32>
}
loop.schedule @patches target "sm_90" {
  loop.materialize inputs [1]
  loop.tile [1, 32, 32, 0] mapping [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [8]
  loop.pipeline stages [2]
  loop.mma [16, 16, 32] shape [16, 8, 16]
}

// -----

// loop.unroll marks the linalg ops of the innermost (thread) tile for
// loop-unroll after bufferization: the fill and the thread's K loop.
// CHECK-LABEL: func.func private @unrolled
// CHECK: scf.forall
// CHECK: scf.forall
// CHECK: linalg.fill {{.*}}tessel.unroll = 4 : i64
// CHECK: linalg.matmul {{.*}}tessel.unroll = 4 : i64
// CHECK: } {mapping = [#gpu.thread<x>]}
func.func private @unrolled(%a: tensor<64x128xf32>, %b: tensor<128x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %mm : tensor<64x64xf32>
}
loop.schedule @unrolled target "sm_90" {
  loop.tile [1, 64, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.tile [0, 1, 0] mapping [#gpu.thread<x>]
  loop.unroll factor [4]
}

// -----

// Ops the schedule leaves untiled get pointwise nests of their own (last
// first) rather than a single GPU thread: the producer that the root reads
// through a collapse_shape, which tiling cannot fuse through, and the
// tensor.pad before it, as a gather (a clamped read of the source, the
// padding value outside it).
// CHECK-LABEL: func.func private @leftovers
// CHECK: scf.forall
// CHECK: linalg.generic
// CHECK: arith.cmpi ult
// CHECK: tensor.extract
// CHECK: arith.select
// CHECK: mapping = [{{.*}}#gpu.thread<x>]
// CHECK: scf.forall
// CHECK: math.exp
// CHECK: mapping = [{{.*}}#gpu.thread<x>]
// CHECK: tensor.collapse_shape
// CHECK: scf.forall
// CHECK: arith.negf
// CHECK: mapping = [#gpu.thread<x>]
// CHECK-NOT: linalg.generic
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func private @leftovers(%a: tensor<8x1x30xf32>) -> tensor<8x32xf32> attributes {tessel.kernel = "elementwise"} {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %a low[0, 0, 1] high[0, 0, 1] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<8x1x30xf32> to tensor<8x1x32xf32>
  %e = tensor.empty() : tensor<8x1x32xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p : tensor<8x1x32xf32>) outs(%e : tensor<8x1x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = math.exp %v : f32
    linalg.yield %y : f32
  } -> tensor<8x1x32xf32>
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<8x1x32xf32> into tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : tensor<8x32xf32>) outs(%e2 : tensor<8x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.negf %v : f32
    linalg.yield %y : f32
  } -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
loop.schedule @leftovers target "sm_90" {
  loop.tile [1, 32] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.tile [0, 1] mapping [#gpu.thread<x>]
}

// -----

// The parts of a concatenation are written in place by nests of their own:
// the relu that computes a part alone takes its slice of the result as its
// init; an input is copied. The result gets a buffer of its own, as the
// product also takes its shape from the same tensor.empty.
// CHECK-LABEL: func.func private @concat
// CHECK: %[[BUF:.*]] = bufferization.alloc_tensor() : tensor<8x48xf32>
// CHECK: %[[FIRST:.*]] = tensor.extract_slice %[[BUF]][0, 0] [8, 32]
// CHECK: scf.forall {{.*}} shared_outs(%{{.*}} = %[[FIRST]])
// CHECK: linalg.copy
// CHECK: mapping = [{{.*}}#gpu.thread<x>]
// CHECK: %[[PART:.*]] = tensor.insert_slice %{{.*}} into %[[BUF]][0, 0] [8, 32]
// CHECK: %[[SECOND:.*]] = tensor.extract_slice %[[PART]][0, 32] [8, 16]
// CHECK: scf.forall {{.*}} shared_outs(%{{.*}} = %[[SECOND]])
// CHECK: arith.maximumf
// CHECK: mapping = [{{.*}}#gpu.thread<x>]
// CHECK: %[[WHOLE:.*]] = tensor.insert_slice %{{.*}} into %[[PART]][0, 32] [8, 16]
// CHECK: scf.forall
// CHECK: tensor.extract_slice %[[WHOLE]]
// CHECK: arith.mulf
// CHECK-NOT: linalg.copy
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @concat(%a: tensor<8x32xf32>, %b: tensor<8x16xf32>) -> tensor<8x48xf32> attributes {tessel.kernel = "elementwise"} {
  %zero = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<8x16xf32>) outs(%eb : tensor<8x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.maximumf %v, %zero : f32
    linalg.yield %y : f32
  } -> tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x48xf32>
  %c0 = tensor.insert_slice %a into %e[0, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<8x48xf32>
  %c1 = tensor.insert_slice %r into %c0[0, 32] [8, 16] [1, 1] : tensor<8x16xf32> into tensor<8x48xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c1 : tensor<8x48xf32>) outs(%e : tensor<8x48xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.mulf %v, %v : f32
    linalg.yield %y : f32
  } -> tensor<8x48xf32>
  return %m : tensor<8x48xf32>
}
loop.schedule @concat target "sm_90" {
  loop.tile [1, 48] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.tile [0, 1] mapping [#gpu.thread<x>]
}

// -----

// An empty schedule of a kernel without a root: on GPUs every copy of the
// concatenation gets a nest of its own.
// CHECK-LABEL: func.func private @inputs
// CHECK: scf.forall
// CHECK: linalg.copy
// CHECK: mapping = [{{.*}}#gpu.thread<x>]
// CHECK: scf.forall
// CHECK: linalg.copy
// CHECK: mapping = [{{.*}}#gpu.thread<x>]
// CHECK-NOT: loop.schedule
func.func private @inputs(%a: tensor<8x32xf32>, %b: tensor<8x16xf32>) -> tensor<8x48xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<8x48xf32>
  %c0 = tensor.insert_slice %a into %e[0, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<8x48xf32>
  %c1 = tensor.insert_slice %b into %c0[0, 32] [8, 16] [1, 1] : tensor<8x16xf32> into tensor<8x48xf32>
  return %c1 : tensor<8x48xf32>
}
loop.schedule @inputs target "sm_90" {
}

// -----

// loop.grid_reduce: the mean's two loops merged and split into 4 rows, a
// block each (mapped), then one block combines the partials and scales
// them; the subtraction that reads the mean is tiled pointwise.
// CHECK-LABEL: func.func private @centered
// CHECK: %[[ROWS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [4, 1536]
// CHECK: %[[PARTS:.*]] = scf.forall (%[[I:[a-z0-9_]+]]) in (4) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<4xf32>)
// CHECK: tensor.extract_slice %[[ROWS]][%[[I]], 0] [1, 1536]
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME: tessel.warp_reduce = 128
// CHECK: mapping = [#gpu.block<x>]
// CHECK: %[[OUT:.*]] = bufferization.alloc_tensor() : tensor<f32>
// CHECK: %[[MEAN:.*]] = scf.forall (%{{.*}}) in (1) shared_outs(%[[O:.*]] = %[[OUT]]) -> (tensor<f32>)
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK-SAME: ins(%[[PARTS]] : tensor<4xf32>)
// CHECK-SAME: tessel.warp_reduce = 32
// CHECK: arith.mulf
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[O]][] [] []
// CHECK: mapping = [#gpu.block<x>]
// CHECK: scf.forall
// CHECK: scf.forall
// CHECK: linalg.generic
// CHECK-SAME: %[[MEAN]]
// CHECK: arith.subf
// CHECK: mapping = [#gpu.thread<y>, #gpu.thread<x>]
// CHECK-NOT: loop.schedule
#id = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
#none = affine_map<() -> ()>
func.func private @centered(%a: tensor<64x96xf32>) -> tensor<64x96xf32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 1.62760422E-4 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%a : tensor<64x96xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  %m = linalg.generic {indexing_maps = [#none, #none], iterator_types = []}
      ins(%s : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %scale : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  %e = tensor.empty() : tensor<64x96xf32>
  %r = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %m : tensor<64x96xf32>, tensor<f32>) outs(%e : tensor<64x96xf32>) {
  ^bb0(%x: f32, %v: f32, %o: f32):
    %y = arith.subf %x, %v : f32
    linalg.yield %y : f32
  } -> tensor<64x96xf32>
  return %r : tensor<64x96xf32>
}
loop.schedule @centered target "sm_90" {
  loop.grid_reduce parts [4] threads [128]
}

// -----

// loop.grid_reduce over a size symbol: rows of unequal lengths. Each of
// the 8 blocks reduces its slice of ceil(n / 8) elements, fewer (or none)
// for the last, into its slot of the partials; one block combines them.
// CHECK-LABEL: func.func private @uneven
// CHECK: %[[N:.*]] = tensor.dim %{{.*}}, %c0
// CHECK: %[[PARTS:.*]] = scf.forall (%[[I:[a-z0-9_]+]]) in (8) shared_outs(%{{.*}}) -> (tensor<8xf32>)
// CHECK: %[[LEN:.*]] = affine.max
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}] [%[[LEN]]] [1] : tensor<?xf32> to tensor<?xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK-SAME: tessel.warp_reduce = 128
// CHECK: mapping = [#gpu.block<x>]
// CHECK: scf.forall (%{{.*}}) in (1)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK-SAME: ins(%[[PARTS]] : tensor<8xf32>)
// CHECK-SAME: tessel.warp_reduce = 32
// CHECK: mapping = [#gpu.block<x>]
// CHECK-NOT: loop.schedule
func.func private @uneven(%a: tensor<?xf32> {graph.shape = #graph.shape<[n]>}) -> tensor<f32> attributes {graph.dims = {n = #graph.dim<1, 65536>}, tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%a : tensor<?xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
loop.schedule @uneven target "sm_90" {
  loop.grid_reduce parts [8] threads [128]
}

// -----

// A single-value op that reads two reductions, the second computed after
// an op over tensors reads the first: it cannot join the first reduction's
// block (which must come before that reader), so it joins the second's.
// CHECK-LABEL: func.func private @two_sums
// CHECK: %[[A:.*]] = scf.forall (%{{.*}}) in (1)
// CHECK: tessel.warp_reduce
// CHECK-NOT: arith.mulf
// CHECK: mapping = [#gpu.block<x>]
// CHECK: scf.forall
// CHECK: arith.subf
// CHECK: scf.forall (%{{.*}}) in (1)
// CHECK: tessel.warp_reduce
// CHECK: linalg.generic {{.*}}ins(%[[A]], %{{.*}} : tensor<f32>, tensor<f32>)
// CHECK: arith.mulf
// CHECK: mapping = [#gpu.block<x>]
#id = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
#none = affine_map<() -> ()>
func.func private @two_sums(%a: tensor<64x96xf32>, %b: tensor<64x96xf32>) -> (tensor<64x96xf32>, tensor<f32>) attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sa = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%a : tensor<64x96xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  %e = tensor.empty() : tensor<64x96xf32>
  %c = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %sa : tensor<64x96xf32>, tensor<f32>) outs(%e : tensor<64x96xf32>) {
  ^bb0(%x: f32, %v: f32, %o: f32):
    %y = arith.subf %x, %v : f32
    linalg.yield %y : f32
  } -> tensor<64x96xf32>
  %sb = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%b : tensor<64x96xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  %p = linalg.generic {indexing_maps = [#none, #none, #none], iterator_types = []}
      ins(%sa, %sb : tensor<f32>, tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %z = arith.mulf %x, %y : f32
    linalg.yield %z : f32
  } -> tensor<f32>
  return %c, %p : tensor<64x96xf32>, tensor<f32>
}
loop.schedule @two_sums target "sm_90" {
  loop.grid_reduce parts [1] threads [64]
}

// -----

// An elementwise producer that the kernel also returns is fused into the
// reduction (a copy of it): the maximum reads %a, not the producer's result
// written first, and the returned result gets a nest of its own.
// CHECK-LABEL: func.func private @fused_producer
// CHECK: scf.forall
// CHECK: arith.addf
// CHECK: mapping = [#gpu.block<y>, #gpu.block<x>]
// CHECK: %[[ROW:.*]] = tensor.collapse_shape %arg0
// CHECK: scf.forall (%{{.*}}) in (1)
// CHECK: linalg.generic {{.*}}ins(%[[ROW]] : tensor<42xf32>) outs(%{{.*}} : tensor<1x1xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.addf
// CHECK-NEXT: arith.maximumf
#id = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#o = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
func.func private @fused_producer(%a: tensor<7x6xf32>) -> (tensor<7x6xf32>, tensor<1x1xf32>) attributes {tessel.kernel = "reduction"} {
  %one = arith.constant 1.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<7x6xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<7x6xf32>) outs(%e : tensor<7x6xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %one : f32
    linalg.yield %y : f32
  } -> tensor<7x6xf32>
  %e1 = tensor.empty() : tensor<1x1xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<1x1xf32>) -> tensor<1x1xf32>
  %m = linalg.generic {indexing_maps = [#r, #o], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%p : tensor<7x6xf32>) outs(%f : tensor<1x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maximumf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<1x1xf32>
  return %p, %m : tensor<7x6xf32>, tensor<1x1xf32>
}
loop.schedule @fused_producer target "sm_90" {
  loop.grid_reduce parts [1] threads [32]
}
