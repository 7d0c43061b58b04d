// RUN: tessel-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(func.func(gpu-lower-mma),canonicalize)" | FileCheck %s
// RUN: tessel-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(func.func(gpu-lower-mma),gpu-map-kernels,canonicalize,gpu-launch-sink-index-computations,gpu-kernel-outlining,nvvm-attach-target{chip=sm_90 features=+ptx80 O=3},gpu.module(convert-linalg-to-loops,convert-nvgpu-to-nvvm,expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv}),reconcile-unrealized-casts,gpu-module-to-binary{format=isa})" | FileCheck %s --check-prefix=PTX

// A 64x64 block tile of a matmul with a bias epilogue (what
// loop-apply-schedule and bufferization make of loop.mma [32, 32, 32]
// with two stages): four warps copy A and B tiles with cp.async into two
// padded workgroup buffers each, accumulate 2x4 m16n8 tiles each with
// ldmatrix + mma.sync, and run the epilogue on the registers; the lanes
// of each quad exchange their results (shuffles) so that each stores 16
// bytes of consecutive columns as one vector.
// CHECK-LABEL: func.func private @k
// CHECK-DAG: memref.alloc() : memref<2x64x40xf16, #gpu.address_space<workgroup>>
// CHECK-DAG: memref.alloc() : memref<2x32x72xf16, #gpu.address_space<workgroup>>
// CHECK: scf.forall (%{{.*}}) in (128) {
// CHECK-COUNT-2: nvgpu.device_async_copy {{.*}}, 8 {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK: scf.for {{.*}} iter_args
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK: gpu.barrier
// CHECK: nvgpu.device_async_copy
// CHECK-COUNT-4: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-8: nvgpu.mma.sync
// CHECK: scf.yield
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK: gpu.shuffle xor
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<64x64xf32, strided<[128, 1], offset: ?>>, vector<4xf32>
// CHECK: } {mapping = [#gpu.thread<x>]}
// CHECK-NOT: linalg.matmul
// CHECK-NOT: linalg.generic
// PTX: cp.async.cg.shared.global
// PTX: cp.async.commit_group
// PTX: cp.async.wait_group
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX: shfl.sync.bfly.b32
// PTX: st.global.v4.b32
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func private @k(%a: memref<128x256xf16>, %b: memref<256x128xf16>, %bias: memref<128xf32>, %out: memref<128x128xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i, %j) = (0, 0) to (128, 128) step (64, 64) {
    %sa = memref.subview %a[%i, 0] [64, 256] [1, 1] : memref<128x256xf16> to memref<64x256xf16, strided<[256, 1], offset: ?>>
    %sb = memref.subview %b[0, %j] [256, 64] [1, 1] : memref<256x128xf16> to memref<256x64xf16, strided<[128, 1], offset: ?>>
    %acc = memref.alloc() : memref<64x64xf32>
    linalg.fill ins(%zero : f32) outs(%acc : memref<64x64xf32>)
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90", block_m = 64, block_n = 64, warp_m = 32, warp_n = 32, k = 32, stages = 2, pad = 8>}
        ins(%sa, %sb : memref<64x256xf16, strided<[256, 1], offset: ?>>, memref<256x64xf16, strided<[128, 1], offset: ?>>) outs(%acc : memref<64x64xf32>)
    %sbias = memref.subview %bias[%j] [64] [1] : memref<128xf32> to memref<64xf32, strided<[1], offset: ?>>
    %so = memref.subview %out[%i, %j] [64, 64] [1, 1] : memref<128x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
        ins(%acc, %sbias : memref<64x64xf32>, memref<64xf32, strided<[1], offset: ?>>) outs(%so : memref<64x64xf32, strided<[128, 1], offset: ?>>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    }
    memref.dealloc %acc : memref<64x64xf32>
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// A marked matmul in a form the rewrite does not take is an error, not
// wrong code.
func.func private @integer(%a: memref<64x64xi32>, %b: memref<64x64xi32>, %out: memref<64x64xi32>) attributes {tessel.kernel = "contraction"} {
  scf.forall (%i, %j) = (0, 0) to (64, 64) step (64, 64) {
    // expected-error @+1 {{loop.mma cannot lower this contraction: expected a bufferized (batched) matmul of f16, bf16 or f32 into f32}}
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90", block_m = 64, block_n = 64, warp_m = 32, warp_n = 32, k = 32, stages = 2, pad = 8>}
        ins(%a, %b : memref<64x64xi32>, memref<64x64xi32>) outs(%out : memref<64x64xi32>)
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// A batched contraction (attention's probabilities @ V): the block tile
// keeps an outer batch of 2, which becomes a loop around the GEMM with a
// barrier before each batch index refills the buffers; operands are
// indexed after the batch indices.
// CHECK-LABEL: func.func private @batched
// CHECK: scf.forall (%{{.*}}) in (128) {
// CHECK: scf.for %[[B:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.device_async_copy %{{.*}}[%[[B]], %c0, %{{.*}}, %{{.*}}]
// CHECK: nvgpu.mma.sync
// CHECK: vector.store %{{.*}}, %{{.*}}[%[[B]], %c0, %{{.*}}, %{{.*}}]
#a = affine_map<(b, h, m, n, k) -> (b, h, m, k)>
#b = affine_map<(b, h, m, n, k) -> (b, h, k, n)>
#c = affine_map<(b, h, m, n, k) -> (b, h, m, n)>
func.func private @batched(%p: memref<2x4x64x64xf16>, %v: memref<2x4x64x64xf16>, %out: memref<2x4x64x64xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%h) in (4) {
    %sp = memref.subview %p[0, %h, 0, 0] [2, 1, 64, 64] [1, 1, 1, 1] : memref<2x4x64x64xf16> to memref<2x1x64x64xf16, strided<[16384, 4096, 64, 1], offset: ?>>
    %sv = memref.subview %v[0, %h, 0, 0] [2, 1, 64, 64] [1, 1, 1, 1] : memref<2x4x64x64xf16> to memref<2x1x64x64xf16, strided<[16384, 4096, 64, 1], offset: ?>>
    %so = memref.subview %out[0, %h, 0, 0] [2, 1, 64, 64] [1, 1, 1, 1] : memref<2x4x64x64xf32> to memref<2x1x64x64xf32, strided<[16384, 4096, 64, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%so : memref<2x1x64x64xf32, strided<[16384, 4096, 64, 1], offset: ?>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"],
                    tessel.mma = #loop.mma_config<target = "sm_90", block_m = 64, block_n = 64, warp_m = 32, warp_n = 32, k = 32, stages = 3, pad = 8>}
        ins(%sp, %sv : memref<2x1x64x64xf16, strided<[16384, 4096, 64, 1], offset: ?>>, memref<2x1x64x64xf16, strided<[16384, 4096, 64, 1], offset: ?>>)
        outs(%so : memref<2x1x64x64xf32, strided<[16384, 4096, 64, 1], offset: ?>>) {
    ^bb0(%x: f16, %y: f16, %acc: f32):
      %xf = arith.extf %x : f16 to f32
      %yf = arith.extf %y : f16 to f32
      %prod = arith.mulf %xf, %yf : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    }
  } {mapping = [#gpu.block<z>]}
  return
}

// -----

// A part of a loop.split_k: A is read at (m, part, k) (its K expanded into
// [parts, K / parts]); a transposed view puts the part first, so copies
// index it like any batched operand.
// CHECK-LABEL: func.func private @split
// CHECK: %[[A:.*]] = memref.transpose %{{.*}} (d0, d1, d2) -> (d1, d0, d2)
// CHECK: scf.forall (%{{.*}}) in (128) {
// CHECK: nvgpu.device_async_copy %[[A]][%c0, %{{.*}}, %{{.*}}]
// CHECK: nvgpu.mma.sync
#a = affine_map<(p, m, n, k) -> (m, p, k)>
#b = affine_map<(p, m, n, k) -> (p, k, n)>
#c = affine_map<(p, m, n, k) -> (p, m, n)>
func.func private @split(%a: memref<64x4x128xf16>, %b: memref<4x128x64xf16>, %ws: memref<4x64x64xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%p) in (4) {
    %sa = memref.subview %a[0, %p, 0] [64, 1, 128] [1, 1, 1] : memref<64x4x128xf16> to memref<64x1x128xf16, strided<[512, 128, 1], offset: ?>>
    %sb = memref.subview %b[%p, 0, 0] [1, 128, 64] [1, 1, 1] : memref<4x128x64xf16> to memref<1x128x64xf16, strided<[8192, 64, 1], offset: ?>>
    %so = memref.subview %ws[%p, 0, 0] [1, 64, 64] [1, 1, 1] : memref<4x64x64xf32> to memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%so : memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"],
                    tessel.mma = #loop.mma_config<target = "sm_90", block_m = 64, block_n = 64, warp_m = 32, warp_n = 32, k = 32, stages = 3, pad = 8>}
        ins(%sa, %sb : memref<64x1x128xf16, strided<[512, 128, 1], offset: ?>>, memref<1x128x64xf16, strided<[8192, 64, 1], offset: ?>>)
        outs(%so : memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>>) {
    ^bb0(%x: f16, %y: f16, %acc: f32):
      %xf = arith.extf %x : f16 to f32
      %yf = arith.extf %y : f16 to f32
      %prod = arith.mulf %xf, %yf : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    }
  } {mapping = [#gpu.block<z>]}
  return
}

// -----

// A broadcast operand (a convolution's filter, shared by the batch): its
// copies index it without the batch index, B's with it.
// CHECK-LABEL: func.func private @broadcast
// CHECK: nvgpu.device_async_copy %{{.*}}[%{{[^,]*}}, %{{[^,]*}}], %{{.*}} : memref<32x64xf16> to
// CHECK: nvgpu.device_async_copy %{{.*}}[%c0, %{{[^,]*}}, %{{[^,]*}}], %{{.*}} : memref<1x64x32xf16, {{.*}}> to
// CHECK: nvgpu.mma.sync
#a = affine_map<(b, m, n, k) -> (m, k)>
#b = affine_map<(b, m, n, k) -> (b, k, n)>
#c = affine_map<(b, m, n, k) -> (b, m, n)>
func.func private @broadcast(%w: memref<32x64xf16>, %cols: memref<2x64x32xf16>, %out: memref<2x32x32xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (2) {
    %sb = memref.subview %cols[%i, 0, 0] [1, 64, 32] [1, 1, 1] : memref<2x64x32xf16> to memref<1x64x32xf16, strided<[2048, 32, 1], offset: ?>>
    %so = memref.subview %out[%i, 0, 0] [1, 32, 32] [1, 1, 1] : memref<2x32x32xf32> to memref<1x32x32xf32, strided<[1024, 32, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%so : memref<1x32x32xf32, strided<[1024, 32, 1], offset: ?>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"],
                    tessel.mma = #loop.mma_config<target = "sm_90", block_m = 32, block_n = 32, warp_m = 16, warp_n = 16, k = 32, stages = 2, pad = 8>}
        ins(%w, %sb : memref<32x64xf16>, memref<1x64x32xf16, strided<[2048, 32, 1], offset: ?>>)
        outs(%so : memref<1x32x32xf32, strided<[1024, 32, 1], offset: ?>>) {
    ^bb0(%x: f16, %y: f16, %acc: f32):
      %xf = arith.extf %x : f16 to f32
      %yf = arith.extf %y : f16 to f32
      %prod = arith.mulf %xf, %yf : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    }
  } {mapping = [#gpu.block<z>]}
  return
}

// -----

// An epilogue chain: bias + residual is a result, and its f32 cast (for a
// following layer_norm) another; the cast reads the first in registers.
// The last result goes out in 16-byte stores after the quads' exchange.
// CHECK-LABEL: func.func private @chain
// CHECK: nvgpu.mma.sync
// CHECK: %[[SUM0:.*]] = arith.addf
// CHECK: %[[SUM1:.*]] = arith.addf
// CHECK-NEXT: %[[SUMS:.*]] = vector.from_elements %[[SUM0]], %[[SUM1]] : vector<2xf16>
// CHECK-NEXT: vector.store %[[SUMS]], %{{.*}} {alignment = 4 : i64} : memref<64x64xf16>, vector<2xf16>
// CHECK-NEXT: %[[WIDE0:.*]] = arith.extf %[[SUM0]]
// CHECK-NEXT: %[[WIDE1:.*]] = arith.extf %[[SUM1]]
// CHECK: gpu.shuffle xor
// CHECK: vector.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : memref<64x64xf32>, vector<4xf32>
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @chain(%a: memref<64x128xf16>, %b: memref<128x64xf16>, %res: memref<64x64xf16>, %out: memref<64x64xf16>, %wide: memref<64x64xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (1) {
    %acc = memref.alloc() : memref<64x64xf32>
    linalg.fill ins(%zero : f32) outs(%acc : memref<64x64xf32>)
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90", block_m = 64, block_n = 64, warp_m = 32, warp_n = 32, k = 32, stages = 2, pad = 8>}
        ins(%a, %b : memref<64x128xf16>, memref<128x64xf16>) outs(%acc : memref<64x64xf32>)
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%acc, %res : memref<64x64xf32>, memref<64x64xf16>) outs(%out : memref<64x64xf16>) {
    ^bb0(%x: f32, %r: f16, %o: f16):
      %t = arith.truncf %x : f32 to f16
      %s = arith.addf %t, %r : f16
      linalg.yield %s : f16
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%out : memref<64x64xf16>) outs(%wide : memref<64x64xf32>) {
    ^bb0(%x: f16, %o: f32):
      %w = arith.extf %x : f16 to f32
      linalg.yield %w : f32
    }
    memref.dealloc %acc : memref<64x64xf32>
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// Edge tiles: M = 200 in tiles of 64 leaves a 8-row tile, K = 104 in steps
// of 32 a partial last step. Copies past the tile's rows or K read nothing
// and zero-fill, from a clamped address; stores past the rows are skipped.
// CHECK-LABEL: func.func private @edges
// CHECK: %[[ROWS:.*]] = affine.min
// CHECK: scf.forall (%{{.*}}) in (128) {
// CHECK: arith.cmpi ult, %{{.*}}, %[[ROWS]]
// CHECK: arith.minui
// CHECK: arith.select
// CHECK: nvgpu.device_async_copy {{.*}}, 8, %{{.*}} {bypassL1}
// CHECK: scf.for {{.*}} to %c4 step
// CHECK: nvgpu.mma.sync
// CHECK: scf.if
// CHECK: vector.store
#min = affine_map<(d0) -> (-d0 + 200, 64)>
func.func private @edges(%a: memref<200x104xf16>, %b: memref<104x64xf16>, %out: memref<200x64xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) = (0) to (200) step (64) {
    %rows = affine.min #min(%i)
    %sa = memref.subview %a[%i, 0] [%rows, 104] [1, 1] : memref<200x104xf16> to memref<?x104xf16, strided<[104, 1], offset: ?>>
    %so = memref.subview %out[%i, 0] [%rows, 64] [1, 1] : memref<200x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%so : memref<?x64xf32, strided<[64, 1], offset: ?>>)
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90", block_m = 64, block_n = 64, warp_m = 32, warp_n = 32, k = 32, stages = 3, pad = 8>}
        ins(%sa, %b : memref<?x104xf16, strided<[104, 1], offset: ?>>, memref<104x64xf16>) outs(%so : memref<?x64xf32, strided<[64, 1], offset: ?>>)
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// The attribute is loop-apply-schedule's #loop.mma_config; anything else is
// an error.
func.func private @malformed(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %out: memref<64x64xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (1) {
    linalg.fill ins(%zero : f32) outs(%out : memref<64x64xf32>)
    // expected-error @+1 {{loop.mma: tessel.mma is {k = 32 : i64}, not a #loop.mma_config}}
    linalg.matmul {tessel.mma = {k = 32 : i64}} ins(%a, %b : memref<64x64xf16>, memref<64x64xf16>) outs(%out : memref<64x64xf32>)
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A configuration is verified where it is made (or parsed).
func.func private @no_stages(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %out: memref<64x64xf32>) {
  // expected-error @+1 {{mma_config: stages = 0 is not positive}}
  linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90", block_m = 64, block_n = 64, warp_m = 32, warp_n = 32, k = 32, stages = 0, pad = 8>} ins(%a, %b : memref<64x64xf16>, memref<64x64xf16>) outs(%out : memref<64x64xf32>)
  return
}

// -----

func.func private @no_target(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %out: memref<64x64xf32>) {
  // expected-error @+2 {{unknown target 'sm_1'}}
  // expected-error @+1 {{failed to parse Loop_MmaConfigAttr parameter 'target'}}
  linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_1", block_m = 64, block_n = 64, warp_m = 32, warp_n = 32, k = 32, stages = 2, pad = 8>} ins(%a, %b : memref<64x64xf16>, memref<64x64xf16>) outs(%out : memref<64x64xf32>)
  return
}

// -----

// f32 operands multiply as tf32: 16-byte copies of 4 elements, A fragments
// by ldmatrix of 16-byte rows, B fragments by two loads per n8 tile, and
// mma.m16n8k8.
// CHECK-LABEL: func.func private @tf32
// CHECK-DAG: memref.alloc() : memref<2x64x36xf32, #gpu.address_space<workgroup>>
// CHECK-DAG: memref.alloc() : memref<2x32x68xf32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}}, 4 {bypassL1}
// CHECK: scf.for
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false} : memref<2x64x36xf32, #gpu.address_space<workgroup>> -> vector<4x1xf32>
// CHECK: memref.load {{.*}} : memref<2x32x68xf32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 8], tf32Enabled}
// CHECK: vector.store {{.*}} : memref<64x64xf32, strided<[128, 1], offset: ?>>, vector<4xf32>
// PTX: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
func.func private @tf32(%a: memref<128x256xf32>, %b: memref<256x128xf32>, %out: memref<128x128xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i, %j) = (0, 0) to (128, 128) step (64, 64) {
    %sa = memref.subview %a[%i, 0] [64, 256] [1, 1] : memref<128x256xf32> to memref<64x256xf32, strided<[256, 1], offset: ?>>
    %sb = memref.subview %b[0, %j] [256, 64] [1, 1] : memref<256x128xf32> to memref<256x64xf32, strided<[128, 1], offset: ?>>
    %so = memref.subview %out[%i, %j] [64, 64] [1, 1] : memref<128x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%so : memref<64x64xf32, strided<[128, 1], offset: ?>>)
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90", block_m = 64, block_n = 64, warp_m = 32, warp_n = 32, k = 32, stages = 2, pad = 4>}
        ins(%sa, %sb : memref<64x256xf32, strided<[256, 1], offset: ?>>, memref<256x64xf32, strided<[128, 1], offset: ?>>) outs(%so : memref<64x64xf32, strided<[128, 1], offset: ?>>)
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}
