// RUN: tessel-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(func.func(gpu-distribute-rows),canonicalize,cse)" | FileCheck %s
// RUN: tessel-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(func.func(gpu-distribute-rows),gpu-map-kernels,canonicalize,gpu-launch-sink-index-computations,gpu-kernel-outlining,nvvm-attach-target{chip=sm_90 features=+ptx80 O=3},gpu.module(convert-linalg-to-loops,expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv}),reconcile-unrealized-casts,gpu-module-to-binary{format=isa})" | FileCheck %s --check-prefix=PTX

// A softmax row as bufferization leaves it (one row per block): 128
// threads take every 128th column; the max and the sum reduce per thread,
// then through five xor shuffles and four warps' partials in workgroup
// memory; exp(x - max) is recomputed where read, never stored; only the
// result row is stored.
// CHECK-LABEL: func.func private @softmax
// CHECK: memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK: scf.forall (%[[T:.*]]) in (128) {
// CHECK: %[[MAX:.*]] = scf.for %{{.*}} = %[[T]] to %c1000 step %c128 iter_args(%{{.*}} = %cst{{.*}}) -> (f32) {
// CHECK: arith.maximumf
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.store {{.*}} : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} -> (f32) {
// CHECK: math.exp
// CHECK: arith.addf
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: scf.for %{{.*}} = %[[T]] to %c1000 step %c128 {
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: memref.store
// CHECK: } {mapping = [#gpu.thread<x>]}
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.alloc() {{.*}}1000
// PTX: shfl.sync.bfly.b32
// PTX: bar.sync
#id = affine_map<(d0, d1) -> (d0, d1)>
#in = affine_map<(d0, d1, d2) -> (d0, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func private @softmax(%x: memref<64x1000xf32>, %y: memref<64x1000xf32>) attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  scf.forall (%r) in (64) {
    %sx = memref.subview %x[%r, 0] [1, 1000] [1, 1] : memref<64x1000xf32> to memref<1x1000xf32, strided<[1000, 1], offset: ?>>
    %max = memref.alloc() : memref<1x1xf32>
    linalg.fill ins(%ninf : f32) outs(%max : memref<1x1xf32>)
    linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%sx : memref<1x1000xf32, strided<[1000, 1], offset: ?>>) outs(%max : memref<1x1xf32>) {
    ^bb0(%a: f32, %m: f32):
      %0 = arith.maximumf %m, %a : f32
      linalg.yield %0 : f32
    }
    %e = memref.alloc() : memref<1x1000xf32>
    linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%sx, %max : memref<1x1000xf32, strided<[1000, 1], offset: ?>>, memref<1x1xf32>) outs(%e : memref<1x1000xf32>) {
    ^bb0(%a: f32, %m: f32, %o: f32):
      %0 = arith.subf %a, %m : f32
      %1 = math.exp %0 : f32
      linalg.yield %1 : f32
    }
    %sum = memref.alloc() : memref<1x1xf32>
    linalg.fill ins(%zero : f32) outs(%sum : memref<1x1xf32>)
    linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%e : memref<1x1000xf32>) outs(%sum : memref<1x1xf32>) {
    ^bb0(%a: f32, %s: f32):
      %0 = arith.addf %s, %a : f32
      linalg.yield %0 : f32
    }
    %sy = memref.subview %y[%r, 0] [1, 1000] [1, 1] : memref<64x1000xf32> to memref<1x1000xf32, strided<[1000, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%e, %sum : memref<1x1000xf32>, memref<1x1xf32>) outs(%sy : memref<1x1000xf32, strided<[1000, 1], offset: ?>>)
        attrs = {tessel.warp_reduce = 128 : i64} {
    ^bb0(%a: f32, %s: f32, %o: f32):
      %0 = arith.divf %a, %s : f32
      linalg.yield %0 : f32
    }
    memref.dealloc %e : memref<1x1000xf32>
    memref.dealloc %max : memref<1x1xf32>
    memref.dealloc %sum : memref<1x1xf32>
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// An op that is neither over the row nor a scalar of it is an error.
func.func private @copy(%x: memref<1x64xf32>, %y: memref<1x64xf32>) attributes {tessel.kernel = "reduction"} {
  scf.forall (%r) in (1) {
    // expected-error @+1 {{loop.warp_reduce cannot distribute linalg.copy}}
    linalg.copy ins(%x : memref<1x64xf32>) outs(%y : memref<1x64xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
        outs(%y : memref<1x64xf32>) attrs = {tessel.warp_reduce = 32 : i64} {
    ^bb0(%o: f32):
      linalg.yield %o : f32
    }
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

func.func private @badthreads(%y: memref<1x64xf32>) attributes {tessel.kernel = "reduction"} {
  scf.forall (%r) in (1) {
    // expected-error @+1 {{loop.warp_reduce: tessel.warp_reduce must be a positive multiple of the warp size}}
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
        outs(%y : memref<1x64xf32>) attrs = {tessel.warp_reduce = 48 : i64} {
    ^bb0(%o: f32):
      linalg.yield %o : f32
    }
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// An f16 softmax row of 1024 columns over 128 threads, as the pipeline
// bufferizes it: 8 columns per thread, so they are unrolled ("register
// mode"). Each thread loads its chunk of 8 adjacent columns once, as one
// 16-byte vector; the max, exp(x - max) and the sum are computed once per
// column and kept in registers; the result goes out as one vector store.
// CHECK-LABEL: func.func private @softmax_f16
// CHECK: scf.forall (%{{.*}}) in (128) {
// CHECK-NOT: scf.for
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1x1024xf16, strided<[1024, 1], offset: ?>>, vector<8xf16>
// CHECK-COUNT-8: arith.extf
// CHECK: gpu.shuffle  xor
// CHECK-COUNT-8: math.exp
// CHECK-NOT: math.exp
// CHECK-NOT: arith.extf
// CHECK-NOT: vector.load
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<1x1024xf16, strided<[1024, 1], offset: ?>>, vector<8xf16>
// CHECK: } {mapping = [#gpu.thread<x>]}
// PTX: ld.global.v4.b32
// PTX: st.global.v4.b32
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
func.func private @softmax_f16(%arg0: memref<64x1024xf16>, %arg1: memref<64x1024xf16>) attributes {tessel.kernel = "reduction"} {
  %cst = arith.constant 0.000000e+00 : f32
  %cst_0 = arith.constant 0xFF800000 : f32
  scf.forall (%arg2) in (64) {
    %subview = memref.subview %arg0[%arg2, 0] [1, 1024] [1, 1] : memref<64x1024xf16> to memref<1x1024xf16, strided<[1024, 1], offset: ?>>
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x1024xf32>
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%subview : memref<1x1024xf16, strided<[1024, 1], offset: ?>>) outs(%alloc : memref<1x1024xf32>) {
    ^bb0(%in: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      linalg.yield %0 : f32
    }
    %alloc_1 = memref.alloc() {alignment = 64 : i64} : memref<1x1xf32>
    linalg.fill ins(%cst_0 : f32) outs(%alloc_1 : memref<1x1xf32>)
    linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%alloc : memref<1x1024xf32>) outs(%alloc_1 : memref<1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.maximumf %out, %in : f32
      linalg.yield %0 : f32
    }
    %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<1x1024xf32>
    linalg.generic {indexing_maps = [#map, #map3, #map], iterator_types = ["parallel", "parallel"]} ins(%alloc, %alloc_1 : memref<1x1024xf32>, memref<1x1xf32>) outs(%alloc_2 : memref<1x1024xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %0 = arith.subf %in, %in_5 : f32
      %1 = math.exp %0 : f32
      linalg.yield %1 : f32
    }
    memref.dealloc %alloc_1 : memref<1x1xf32>
    memref.dealloc %alloc : memref<1x1024xf32>
    %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<1x1xf32>
    linalg.fill ins(%cst : f32) outs(%alloc_3 : memref<1x1xf32>)
    linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%alloc_2 : memref<1x1024xf32>) outs(%alloc_3 : memref<1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.addf %out, %in : f32
      linalg.yield %0 : f32
    }
    %subview_4 = memref.subview %arg1[%arg2, 0] [1, 1024] [1, 1] : memref<64x1024xf16> to memref<1x1024xf16, strided<[1024, 1], offset: ?>>
    linalg.generic {indexing_maps = [#map, #map3, #map], iterator_types = ["parallel", "parallel"]} ins(%alloc_2, %alloc_3 : memref<1x1024xf32>, memref<1x1xf32>) outs(%subview_4 : memref<1x1024xf16, strided<[1024, 1], offset: ?>>) attrs =  {tessel.warp_reduce = 128 : i64} {
    ^bb0(%in: f32, %in_5: f32, %out: f16):
      %0 = arith.divf %in, %in_5 : f32
      %1 = arith.truncf %0 : f32 to f16
      linalg.yield %1 : f16
    }
    memref.dealloc %alloc_3 : memref<1x1xf32>
    memref.dealloc %alloc_2 : memref<1x1024xf32>
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A root that reduces its row into the kernel's result: the maximum of f16
// values, per thread in f16, shuffled as f32 (exact), truncated back and
// stored by thread 0.
// CHECK-LABEL: func.func private @max_f16
// CHECK: scf.forall (%{{.*}}) in (64) {
// CHECK: scf.forall (%[[T:.*]]) in (64) {
// CHECK: scf.for {{.*}} -> (f16) {
// CHECK: arith.maximumf {{.*}} : f16
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK-COUNT-5: gpu.shuffle  xor {{.*}} : f32
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK: arith.cmpi eq, %[[T]], %c0
// CHECK: scf.if
// CHECK: memref.store {{.*}} : memref<1xf16
// PTX: shfl.sync.bfly.b32
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func private @max_f16(%x: memref<64x1000xf16>, %y: memref<64xf16>) attributes {tessel.kernel = "reduction"} {
  %ninf = arith.constant 0xFC00 : f16
  scf.forall (%r) in (64) {
    %sx = memref.subview %x[%r, 0] [1, 1000] [1, 1] : memref<64x1000xf16> to memref<1x1000xf16, strided<[1000, 1], offset: ?>>
    %sy = memref.subview %y[%r] [1] [1] : memref<64xf16> to memref<1xf16, strided<[1], offset: ?>>
    linalg.fill ins(%ninf : f16) outs(%sy : memref<1xf16, strided<[1], offset: ?>>)
    linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
        ins(%sx : memref<1x1000xf16, strided<[1000, 1], offset: ?>>) outs(%sy : memref<1xf16, strided<[1], offset: ?>>) attrs = {tessel.warp_reduce = 64 : i64} {
    ^bb0(%a: f16, %m: f16):
      %0 = arith.maximumf %m, %a : f16
      linalg.yield %0 : f16
    }
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A sum of f16 values would round differently in f32 shuffles.
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func private @sum_f16(%x: memref<64x1000xf16>, %y: memref<64xf16>) attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f16
  scf.forall (%r) in (64) {
    %sx = memref.subview %x[%r, 0] [1, 1000] [1, 1] : memref<64x1000xf16> to memref<1x1000xf16, strided<[1000, 1], offset: ?>>
    %sy = memref.subview %y[%r] [1] [1] : memref<64xf16> to memref<1xf16, strided<[1], offset: ?>>
    linalg.fill ins(%zero : f16) outs(%sy : memref<1xf16, strided<[1], offset: ?>>)
    // expected-error @+1 {{loop.warp_reduce: the reduction must combine f32, i32 or i64 values with an op that has a neutral element, or take the maximum or minimum of f16 or bf16 ones}}
    linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
        ins(%sx : memref<1x1000xf16, strided<[1000, 1], offset: ?>>) outs(%sy : memref<1xf16, strided<[1], offset: ?>>) attrs = {tessel.warp_reduce = 64 : i64} {
    ^bb0(%a: f16, %s: f16):
      %0 = arith.addf %s, %a : f16
      linalg.yield %0 : f16
    }
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// The one block of loop.grid_reduce's second stage: the partials (a row of
// 256, four per thread) combined into a single value of the block's own
// buffer, which stays in a register through the scale (an op without
// loops) and is copied to the result by thread 0.
// CHECK-LABEL: func.func private @combine
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK-NOT: memref.alloc() : memref<f32>
// CHECK: scf.forall (%[[T:.*]]) in (64) {
// CHECK: vector.load {{.*}} : memref<256xf32>, vector<4xf32>
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: %[[MEAN:.*]] = arith.mulf
// CHECK: arith.cmpi eq, %[[T]], %c0
// CHECK: scf.if
// CHECK-NEXT: memref.store %[[MEAN]], %{{.*}}[] : memref<f32>
// CHECK-NOT: memref.alloc() : memref<f32>
// PTX: shfl.sync.bfly.b32
#row = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
#none = affine_map<() -> ()>
func.func private @combine(%p: memref<256xf32>, %y: memref<f32>) attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  scf.forall (%b) in (1) {
    %sum = memref.alloc() : memref<f32>
    linalg.fill ins(%zero : f32) outs(%sum : memref<f32>)
    linalg.generic {indexing_maps = [#row, #all], iterator_types = ["reduction"]}
        ins(%p : memref<256xf32>) outs(%sum : memref<f32>) attrs = {tessel.warp_reduce = 64 : i64} {
    ^bb0(%a: f32, %s: f32):
      %0 = arith.addf %a, %s : f32
      linalg.yield %0 : f32
    }
    linalg.generic {indexing_maps = [#none, #none], iterator_types = []}
        ins(%sum : memref<f32>) outs(%sum : memref<f32>) {
    ^bb0(%a: f32, %o: f32):
      %0 = arith.mulf %a, %half : f32
      linalg.yield %0 : f32
    }
    memref.copy %sum, %y : memref<f32> to memref<f32>
    memref.dealloc %sum : memref<f32>
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A row of dynamic length (loop.grid_reduce's uneven rows: block b sums its
// slice of ceil(n / 8) of the first n elements, fewer for the last): each thread walks
// columns t, t + 128, ... up to the row's length, then the warps combine.
// CHECK-LABEL: func.func private @uneven_row
// CHECK: scf.forall (%[[B:.*]]) in (8) {
// CHECK: %[[LEN:.*]] = affine.max
// CHECK: scf.forall (%[[T:.*]]) in (128) {
// CHECK: scf.for %{{.*}} = %[[T]] to %[[LEN]] step %c128
// CHECK: memref.load
// CHECK: gpu.shuffle  xor
// CHECK: scf.if
// CHECK: memref.store
// PTX: shfl.sync.bfly.b32
#row = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
func.func private @uneven_row(%x: memref<4096xf32>, %n: index, %p: memref<8xf32>) attributes {tessel.kernel = "reduction"} {
  scf.forall (%b) in (8) {
    %min = affine.min affine_map<(d0)[s0] -> (-(d0 * (s0 ceildiv 8)) + s0, s0 ceildiv 8)>(%b)[%n]
    %len = affine.max affine_map<(d0) -> (0, d0)>(%min)
    %start = affine.apply affine_map<(d0)[s0] -> (d0 * (s0 ceildiv 8))>(%b)[%n]
    %slice = memref.subview %x[%start] [%len] [1] : memref<4096xf32> to memref<?xf32, strided<[1], offset: ?>>
    %slot = memref.subview %p[%b] [1] [1] : memref<8xf32> to memref<f32, strided<[], offset: ?>>
    linalg.generic {indexing_maps = [#row, #all], iterator_types = ["reduction"]}
        ins(%slice : memref<?xf32, strided<[1], offset: ?>>) outs(%slot : memref<f32, strided<[], offset: ?>>) attrs = {tessel.warp_reduce = 128 : i64} {
    ^bb0(%a: f32, %s: f32):
      %0 = arith.addf %a, %s : f32
      linalg.yield %0 : f32
    }
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A row of dynamic length whose largest is known (tessel.row_columns, from
// loop.warp_reduce over a size symbol): each of 128 threads keeps its 4
// columns in registers, loads past the row's length give zero, the
// reduction skips them and the stores of them are guarded.
// CHECK-LABEL: func.func private @masked_row
// CHECK: scf.forall (%{{.*}}) in (128) {
// CHECK-NOT: scf.for %
// CHECK-COUNT-4: arith.cmpi ult
// CHECK: scf.if %{{.*}} -> (f32) {
// CHECK: memref.load
// CHECK: arith.select
// CHECK: gpu.shuffle  xor
// CHECK: scf.if
// CHECK-NEXT: memref.store
// PTX: shfl.sync.bfly.b32
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0, 0)>
func.func private @masked_row(%x: memref<4x512xf32>, %n: index, %y: memref<4x512xf32>) attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%r) in (4) {
    %xs = memref.subview %x[%r, 0] [1, %n] [1, 1] : memref<4x512xf32> to memref<1x?xf32, strided<[512, 1], offset: ?>>
    %ys = memref.subview %y[%r, 0] [1, %n] [1, 1] : memref<4x512xf32> to memref<1x?xf32, strided<[512, 1], offset: ?>>
    %sum = memref.alloc() : memref<1x1xf32>
    linalg.fill ins(%zero : f32) outs(%sum : memref<1x1xf32>)
    linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]}
        ins(%xs : memref<1x?xf32, strided<[512, 1], offset: ?>>) outs(%sum : memref<1x1xf32>) {
    ^bb0(%a: f32, %s: f32):
      %0 = arith.addf %a, %s : f32
      linalg.yield %0 : f32
    }
    linalg.generic {indexing_maps = [#id2, #row2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%xs, %sum : memref<1x?xf32, strided<[512, 1], offset: ?>>, memref<1x1xf32>) outs(%ys : memref<1x?xf32, strided<[512, 1], offset: ?>>)
        attrs = {tessel.warp_reduce = 128 : i64, tessel.row_columns = 512 : i64} {
    ^bb0(%a: f32, %s: f32, %o: f32):
      %0 = arith.subf %a, %s : f32
      linalg.yield %0 : f32
    }
    memref.dealloc %sum : memref<1x1xf32>
  } {mapping = [#gpu.block<x>]}
  return
}
