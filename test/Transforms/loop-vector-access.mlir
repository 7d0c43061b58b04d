// RUN: tessel-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(func.func(loop-vector-access),canonicalize,cse)" | FileCheck %s
// RUN: tessel-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(func.func(loop-vector-access),gpu-map-kernels,canonicalize,gpu-launch-sink-index-computations,gpu-kernel-outlining,nvvm-attach-target{chip=sm_90 features=+ptx80 O=3},gpu.module(convert-linalg-to-loops,expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv}),reconcile-unrealized-casts,gpu-module-to-binary{format=isa})" | FileCheck %s --check-prefix=PTX

// Each thread takes 4 adjacent columns (offset 4 * t within a block of 1024
// columns of rows of 4096): the row and the bias are loaded as one aligned
// 16-byte vector each, the per-row scalar once, and the 4 results stored as
// one vector.
// CHECK-LABEL: func.func private @aligned
// CHECK: scf.forall (%{{.*}}) in (256)
// CHECK-NOT: linalg.generic
// CHECK: %[[A:.*]] = vector.load %{{.*}}[%c0, %c0] {alignment = 16 : i64} : memref<1x4xf32, strided<[4096, 1], offset: ?>>, vector<4xf32>
// CHECK-COUNT-4: vector.extract %[[A]]
// CHECK: %[[B:.*]] = vector.load %{{.*}}[%c0] {alignment = 16 : i64} : memref<4xf32, strided<[1], offset: ?>>, vector<4xf32>
// CHECK-COUNT-4: vector.extract %[[B]]
// CHECK: %[[S:.*]] = memref.load %{{.*}}[%c0, %c0] : memref<1x1xf32
// CHECK-NOT: memref.load
// CHECK: arith.mulf %{{.*}}, %[[S]]
// CHECK-COUNT-3: arith.mulf %{{.*}}, %[[S]]
// CHECK: %[[R:.*]] = vector.from_elements
// CHECK: vector.store %[[R]], %{{.*}}[%c0, %c0] {alignment = 16 : i64}
// PTX-LABEL: gpu.binary @aligned_kernel
// PTX-COUNT-2: ld.global.v4.b32
// PTX: st.global.v4.b32
#blk = affine_map<(d0) -> (d0 * 1024)>
#thr = affine_map<(d0) -> (d0 * 4)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func private @aligned(%a: memref<512x4096xf32>, %b: memref<4096xf32>, %s: memref<512x1xf32>, %out: memref<512x4096xf32>) attributes {tessel.kernel = "elementwise"} {
  scf.forall (%i, %j) in (512, 4) {
    %c = affine.apply #blk(%j)
    %av = memref.subview %a[%i, %c] [1, 1024] [1, 1] : memref<512x4096xf32> to memref<1x1024xf32, strided<[4096, 1], offset: ?>>
    %bv = memref.subview %b[%c] [1024] [1] : memref<4096xf32> to memref<1024xf32, strided<[1], offset: ?>>
    %sv = memref.subview %s[%i, 0] [1, 1] [1, 1] : memref<512x1xf32> to memref<1x1xf32, strided<[1, 1], offset: ?>>
    %ov = memref.subview %out[%i, %c] [1, 1024] [1, 1] : memref<512x4096xf32> to memref<1x1024xf32, strided<[4096, 1], offset: ?>>
    scf.forall (%t) in (256) {
      %o = affine.apply #thr(%t)
      %at = memref.subview %av[0, %o] [1, 4] [1, 1] : memref<1x1024xf32, strided<[4096, 1], offset: ?>> to memref<1x4xf32, strided<[4096, 1], offset: ?>>
      %bt = memref.subview %bv[%o] [4] [1] : memref<1024xf32, strided<[1], offset: ?>> to memref<4xf32, strided<[1], offset: ?>>
      %ot = memref.subview %ov[0, %o] [1, 4] [1, 1] : memref<1x1024xf32, strided<[4096, 1], offset: ?>> to memref<1x4xf32, strided<[4096, 1], offset: ?>>
      linalg.generic {indexing_maps = [#id, #col, #row, #id], iterator_types = ["parallel", "parallel"]}
          ins(%at, %bt, %sv : memref<1x4xf32, strided<[4096, 1], offset: ?>>, memref<4xf32, strided<[1], offset: ?>>, memref<1x1xf32, strided<[1, 1], offset: ?>>)
          outs(%ot : memref<1x4xf32, strided<[4096, 1], offset: ?>>) attrs = {tessel.vector_access = 4 : i64} {
      ^bb0(%x: f32, %y: f32, %z: f32, %w: f32):
        %p = arith.addf %x, %y : f32
        %q = arith.mulf %p, %z : f32
        linalg.yield %q : f32
      }
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// A loop of 1002 points that 4 does not divide: the last thread's tile has
// 2 points and keeps the op (scalar loops); the others take the vector
// path, 8-byte vectors of 4 f16. linalg.index of the innermost loop is the
// point's position.
// CHECK-LABEL: func.func private @edge
// CHECK: %[[N:.*]] = affine.min
// CHECK: %[[FULL:.*]] = arith.cmpi eq, %[[N]], %c4
// CHECK: scf.if %[[FULL]] {
// CHECK: %[[A:.*]] = vector.load %{{.*}}[%c0] {alignment = 8 : i64} : memref<?xf16, strided<[1], offset: ?>>, vector<4xf16>
// CHECK: %[[A3:.*]] = vector.extract %[[A]][3]
// CHECK: arith.addf %[[A3]], %cst
// CHECK: vector.store %{{.*}} {alignment = 8 : i64}
// CHECK: } else {
// CHECK: linalg.generic
// CHECK-NOT: tessel.vector_access
// CHECK: linalg.index 0
// CHECK: }
// PTX-LABEL: gpu.binary @edge_kernel
// PTX: ld.global.v2.b32
// PTX: st.global.v2.b32
#thr = affine_map<(d0) -> (d0 * 4)>
#size = affine_map<(d0) -> (-d0 + 1002, 4)>
#id = affine_map<(d0) -> (d0)>
func.func private @edge(%a: memref<1002xf16>, %out: memref<1002xf16>) attributes {tessel.kernel = "elementwise"} {
  scf.forall (%t) in (251) {
    %o = affine.apply #thr(%t)
    %n = affine.min #size(%o)
    %at = memref.subview %a[%o] [%n] [1] : memref<1002xf16> to memref<?xf16, strided<[1], offset: ?>>
    %ot = memref.subview %out[%o] [%n] [1] : memref<1002xf16> to memref<?xf16, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%at : memref<?xf16, strided<[1], offset: ?>>)
        outs(%ot : memref<?xf16, strided<[1], offset: ?>>) attrs = {tessel.vector_access = 4 : i64} {
    ^bb0(%x: f16, %w: f16):
      %k = linalg.index 0 : index
      %ki = arith.index_cast %k : index to i32
      %kf = arith.sitofp %ki : i32 to f16
      %y = arith.addf %x, %kf : f16
      linalg.yield %y : f16
    }
  } {mapping = [#gpu.thread<x>]}
  return
}

// -----

// An input read transposed (its innermost index is not the loop) is loaded
// per point; the output still moves as one vector. Tiles at offsets that
// are not known multiples of the width (3 * t) stay per point.
// CHECK-LABEL: func.func private @transposed
// CHECK-NOT: vector.load
// CHECK-COUNT-4: memref.load %{{.*}} : memref<4x1xf32
// CHECK: vector.store
// CHECK-LABEL: func.func private @unknown_offset
// CHECK-NOT: vector.
// CHECK-COUNT-4: memref.store
#thr = affine_map<(d0) -> (d0 * 4)>
#thr3 = affine_map<(d0) -> (d0 * 3)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
func.func private @transposed(%a: memref<256x64xf32>, %out: memref<64x256xf32>) attributes {tessel.kernel = "elementwise"} {
  scf.forall (%i) in (64) {
    scf.forall (%t) in (64) {
      %o = affine.apply #thr(%t)
      %at = memref.subview %a[%o, %i] [4, 1] [1, 1] : memref<256x64xf32> to memref<4x1xf32, strided<[64, 1], offset: ?>>
      %ot = memref.subview %out[%i, %o] [1, 4] [1, 1] : memref<64x256xf32> to memref<1x4xf32, strided<[256, 1], offset: ?>>
      linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
          ins(%at : memref<4x1xf32, strided<[64, 1], offset: ?>>)
          outs(%ot : memref<1x4xf32, strided<[256, 1], offset: ?>>) attrs = {tessel.vector_access = 4 : i64} {
      ^bb0(%x: f32, %w: f32):
        linalg.yield %x : f32
      }
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}
func.func private @unknown_offset(%a: memref<64x256xf32>, %out: memref<64x256xf32>) attributes {tessel.kernel = "elementwise"} {
  scf.forall (%i) in (64) {
    scf.forall (%t) in (63) {
      %o = affine.apply #thr3(%t)
      %at = memref.subview %a[%i, %o] [1, 4] [1, 1] : memref<64x256xf32> to memref<1x4xf32, strided<[256, 1], offset: ?>>
      %ot = memref.subview %out[%i, %o] [1, 4] [1, 1] : memref<64x256xf32> to memref<1x4xf32, strided<[256, 1], offset: ?>>
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
          ins(%at : memref<1x4xf32, strided<[256, 1], offset: ?>>)
          outs(%ot : memref<1x4xf32, strided<[256, 1], offset: ?>>) attrs = {tessel.vector_access = 4 : i64} {
      ^bb0(%x: f32, %w: f32):
        %y = arith.negf %x : f32
        linalg.yield %y : f32
      }
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}
// -----

// Named ops are generalized first: a fill's value serves every point, and
// a copy moves one vector in and out.
// CHECK-LABEL: func.func private @named
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : vector<4xf32>
// CHECK: scf.forall
// CHECK: vector.store %[[Z]], %{{.*}} {alignment = 16 : i64}
// CHECK: %[[V:.*]] = vector.load %{{.*}} {alignment = 16 : i64}
// CHECK: vector.store %[[V]], %{{.*}} {alignment = 16 : i64}
#thr = affine_map<(d0) -> (d0 * 4)>
func.func private @named(%a: memref<64x256xf32>, %out: memref<64x256xf32>, %zeros: memref<64x256xf32>) attributes {tessel.kernel = "elementwise"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (64) {
    scf.forall (%t) in (64) {
      %o = affine.apply #thr(%t)
      %zt = memref.subview %zeros[%i, %o] [1, 4] [1, 1] : memref<64x256xf32> to memref<1x4xf32, strided<[256, 1], offset: ?>>
      linalg.fill {tessel.vector_access = 4 : i64} ins(%zero : f32) outs(%zt : memref<1x4xf32, strided<[256, 1], offset: ?>>)
      %at = memref.subview %a[%i, %o] [1, 4] [1, 1] : memref<64x256xf32> to memref<1x4xf32, strided<[256, 1], offset: ?>>
      %ot = memref.subview %out[%i, %o] [1, 4] [1, 1] : memref<64x256xf32> to memref<1x4xf32, strided<[256, 1], offset: ?>>
      linalg.copy {tessel.vector_access = 4 : i64} ins(%at : memref<1x4xf32, strided<[256, 1], offset: ?>>) outs(%ot : memref<1x4xf32, strided<[256, 1], offset: ?>>)
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// expected-error @+6 {{loop.vector_access: tessel.vector_access = 3 is not a power of two}}
#id = affine_map<(d0) -> (d0)>
func.func private @bad(%a: memref<12xf32>, %out: memref<12xf32>) attributes {tessel.kernel = "elementwise"} {
  scf.forall (%t) in (4) {
    %at = memref.subview %a[%t] [3] [1] : memref<12xf32> to memref<3xf32, strided<[1], offset: ?>>
    %ot = memref.subview %out[%t] [3] [1] : memref<12xf32> to memref<3xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%at : memref<3xf32, strided<[1], offset: ?>>)
        outs(%ot : memref<3xf32, strided<[1], offset: ?>>) attrs = {tessel.vector_access = 3 : i64} {
    ^bb0(%x: f32, %w: f32):
      linalg.yield %x : f32
    }
  } {mapping = [#gpu.thread<x>]}
  return
}

// -----

// A transpose's thread tile of 4x4 points: the input is contiguous along
// the tile's outer loop, the output along its inner one, so the thread
// loads four 16-byte vectors of input columns and stores four of output
// rows, each output vector gathering one lane of every input vector.
// CHECK-LABEL: func.func private @square
// CHECK-COUNT-4: vector.load %{{.*}} {alignment = 16 : i64} : memref<4x4xf32, strided<[64, 1], offset: ?>>, vector<4xf32>
// CHECK-NOT: memref.load
// CHECK: %[[ROW:.*]] = vector.from_elements
// CHECK: vector.store %[[ROW]], %{{.*}}[%c0, %c0] {alignment = 16 : i64}
// CHECK-COUNT-3: vector.store
// CHECK-NOT: memref.store
// PTX-LABEL: gpu.binary @square_kernel
// PTX-COUNT-4: ld.global.v4.b32
// PTX-COUNT-4: st.global.v4.b32
#blk = affine_map<(d0) -> (d0 * 4)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @square(%a: memref<64x64xf32>, %out: memref<64x64xf32>) attributes {tessel.kernel = "elementwise"} {
  scf.forall (%i) in (16) {
    %r = affine.apply #blk(%i)
    scf.forall (%t) in (16) {
      %c = affine.apply #blk(%t)
      %at = memref.subview %a[%c, %r] [4, 4] [1, 1] : memref<64x64xf32> to memref<4x4xf32, strided<[64, 1], offset: ?>>
      %ot = memref.subview %out[%r, %c] [4, 4] [1, 1] : memref<64x64xf32> to memref<4x4xf32, strided<[64, 1], offset: ?>>
      linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
          ins(%at : memref<4x4xf32, strided<[64, 1], offset: ?>>)
          outs(%ot : memref<4x4xf32, strided<[64, 1], offset: ?>>) attrs = {tessel.vector_access = 4 : i64} {
      ^bb0(%x: f32, %o: f32):
        linalg.yield %x : f32
      }
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}
