// RUN: tessel-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(func.func(gpu-lower-mma),canonicalize)" | FileCheck %s
// RUN: tessel-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(func.func(gpu-lower-mma),gpu-map-kernels,canonicalize,gpu-launch-sink-index-computations,gpu-kernel-outlining,nvvm-attach-target{chip=sm_90a features=+ptx83 O=3},gpu.module(convert-linalg-to-loops,convert-nvgpu-to-nvvm,expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv},convert-nvvm-to-llvm,gpu-extern-dynamic-shared),reconcile-unrealized-casts,gpu-module-to-binary{format=isa})" | FileCheck %s --check-prefix=PTX

// A 128x128 block tile on sm_90a with loop.mma [64, 128, 64] shape
// [64, 128, 16] and three stages: tensor maps of A and B (boxes of 128x64
// and 64x64, 128-byte swizzle) for the runtime to encode; two warpgroups
// (256 threads); thread 0 initializes an mbarrier per stage and starts the
// TMA copies of each K step (one box of A, two of B) on its stage's
// mbarrier, predicated rather than branched; every thread waits for the
// step's phase and its warpgroup issues four wgmma.m64n128k16 (K-major A,
// N-major B from the swizzled tiles), one group left running while the
// next step's copies start; the steps that refill nothing run in a loop of
// their own; the bias epilogue runs on the accumulator registers, whose
// results the lanes of each quad exchange to store 16 bytes each.
// CHECK-LABEL: func.func private @k
// CHECK-DAG: loop.tensor_map %arg0 box [128, 64] swizzle "128B" : memref<256x512xf16> -> memref<128xi8>
// CHECK-DAG: loop.tensor_map %arg1 box [64, 64] swizzle "128B" : memref<512x256xf16> -> memref<128xi8>
// CHECK: memref.alloc() : memref<98304xi8, #gpu.address_space<workgroup>>
// CHECK: scf.forall (%{{.*}}) in (256) {
// CHECK: nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
// CHECK: nvgpu.tma.fence.descriptor
// CHECK: nvgpu.mbarrier.init {{.*}}, predicate =
// CHECK: nvgpu.mbarrier.arrive.expect_tx {{.*}}, %c32768, predicate =
// CHECK-COUNT-3: nvgpu.tma.async.load
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} iter_args
// CHECK: gpu.barrier
// CHECK: nvgpu.mbarrier.arrive.expect_tx
// CHECK-COUNT-3: nvgpu.tma.async.load
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: llvm.inline_asm has_side_effects "", "=f,
// CHECK-NEXT: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <row>]
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: scf.yield
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.extractvalue
// CHECK: arith.addf
// CHECK: gpu.shuffle xor
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<128x128xf32, strided<[256, 1], offset: ?>>, vector<4xf32>
// CHECK: } {mapping = [#gpu.thread<x>]}
// CHECK-NOT: linalg.matmul
// PTX: .extern .shared .align 1024 .b8 __dynamic_shmem__0[];
// PTX: fence.proxy.tensormap::generic.acquire
// PTX: mbarrier.init.shared.b64
// PTX: mbarrier.arrive.expect_tx.shared.b64
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: wgmma.fence.sync.aligned
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// PTX: wgmma.commit_group.sync.aligned
// PTX: wgmma.wait_group.sync.aligned \091;
// PTX: shfl.sync.bfly.b32
// PTX: st.global.v4.b32
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func private @k(%a: memref<256x512xf16>, %b: memref<512x256xf16>, %bias: memref<256xf32>, %out: memref<256x256xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i, %j) = (0, 0) to (256, 256) step (128, 128) {
    %sa = memref.subview %a[%i, 0] [128, 512] [1, 1] : memref<256x512xf16> to memref<128x512xf16, strided<[512, 1], offset: ?>>
    %sb = memref.subview %b[0, %j] [512, 128] [1, 1] : memref<512x256xf16> to memref<512x128xf16, strided<[256, 1], offset: ?>>
    %acc = memref.alloc() : memref<128x128xf32>
    linalg.fill ins(%zero : f32) outs(%acc : memref<128x128xf32>)
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90a", block_m = 128, block_n = 128, warp_m = 64, warp_n = 128, k = 64, stages = 3, pad = 0, shape_m = 64, shape_n = 128>}
        ins(%sa, %sb : memref<128x512xf16, strided<[512, 1], offset: ?>>, memref<512x128xf16, strided<[256, 1], offset: ?>>) outs(%acc : memref<128x128xf32>)
    %sbias = memref.subview %bias[%j] [128] [1] : memref<256xf32> to memref<128xf32, strided<[1], offset: ?>>
    %so = memref.subview %out[%i, %j] [128, 128] [1, 1] : memref<256x256xf32> to memref<128x128xf32, strided<[256, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
        ins(%acc, %sbias : memref<128x128xf32>, memref<128xf32, strided<[1], offset: ?>>) outs(%so : memref<128x128xf32, strided<[256, 1], offset: ?>>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    }
    memref.dealloc %acc : memref<128x128xf32>
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// With a producer warpgroup (producers = 1): 384 threads; full and empty
// mbarriers per stage; the last warpgroup's first thread fills each stage
// once the consumers released it (a fresh mbarrier's phase before its
// first counts as complete: the first fills pass at once); the consumers
// wait for full stages, compute, release the stage before once its wgmma
// group retired, with no block-wide barrier in their loop, and the last
// stage after their last wait.
// CHECK-LABEL: func.func private @specialized
// CHECK: scf.forall (%{{.*}}) in (384) {
// CHECK: %[[FULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
// CHECK: %[[EMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
// CHECK: nvgpu.mbarrier.init %[[EMPTY]][%{{.*}}], %c256, predicate =
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: scf.if
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTY]]
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[FULL]]
// CHECK: } else {
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]]
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: scf.for
// CHECK-NOT: gpu.barrier
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]]
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]]
// CHECK: scf.yield
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]]
// CHECK: vector.store
// PTX: mbarrier.arrive.shared.b64
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
func.func private @specialized(%a: memref<256x512xf16>, %b: memref<512x256xf16>, %out: memref<256x256xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i, %j) = (0, 0) to (256, 256) step (128, 128) {
    %sa = memref.subview %a[%i, 0] [128, 512] [1, 1] : memref<256x512xf16> to memref<128x512xf16, strided<[512, 1], offset: ?>>
    %sb = memref.subview %b[0, %j] [512, 128] [1, 1] : memref<512x256xf16> to memref<512x128xf16, strided<[256, 1], offset: ?>>
    %so = memref.subview %out[%i, %j] [128, 128] [1, 1] : memref<256x256xf32> to memref<128x128xf32, strided<[256, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%so : memref<128x128xf32, strided<[256, 1], offset: ?>>)
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90a", block_m = 128, block_n = 128, warp_m = 64, warp_n = 128, k = 64, stages = 3, pad = 0, shape_m = 64, shape_n = 128, producers = 1>}
        ins(%sa, %sb : memref<128x512xf16, strided<[512, 1], offset: ?>>, memref<512x128xf16, strided<[256, 1], offset: ?>>) outs(%so : memref<128x128xf32, strided<[256, 1], offset: ?>>)
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// A block tile over two batch indices, warp-specialized: the mbarriers are
// set up once, before either index; the producer and the consumers each
// walk both indices, the steps (4 per index) counting on across them, so
// that a stage's phase and parity follow its fills (step 4 * batch + t in
// stage (4 * batch + t) mod 3); the producer's boxes are at the batch
// index, the consumers' stores too. No block-wide barrier between indices:
// the roles meet only at the mbarriers.
// CHECK-LABEL: func.func private @batches
// CHECK: scf.forall (%{{.*}}) in (256) {
// CHECK: %[[FULL:.*]] = nvgpu.mbarrier.create
// CHECK-COUNT-3: nvgpu.mbarrier.init %[[FULL]]
// CHECK: %[[EMPTY:.*]] = nvgpu.mbarrier.create
// CHECK-COUNT-3: nvgpu.mbarrier.init %[[EMPTY]]
// CHECK: gpu.barrier
// CHECK: scf.for %[[BATCH:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT: scf.for %[[STEP:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: affine.apply #{{.*}}(%[[STEP]], %[[BATCH]])
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTY]]
// CHECK: nvgpu.tma.async.load %{{.*}}[%{{.*}}, %{{.*}}, %[[BATCH]]], %[[FULL]]
// CHECK: } else {
// CHECK-NEXT: scf.for %[[INDEX:.*]] = %c0 to %c2 step %c1 {
// CHECK-NOT: gpu.barrier
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]]
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]]
// CHECK: vector.store %{{.*}}, %{{.*}}[%[[INDEX]],
// CHECK-NOT: nvgpu.mbarrier.init
// PTX: mbarrier.arrive.shared.b64
func.func private @batches(%a: memref<2x128x256xf16>, %b: memref<2x256x128xf16>, %out: memref<2x128x128xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i, %j) = (0, 0) to (128, 128) step (64, 128) {
    %sa = memref.subview %a[0, %i, 0] [2, 64, 256] [1, 1, 1] : memref<2x128x256xf16> to memref<2x64x256xf16, strided<[32768, 256, 1], offset: ?>>
    %sb = memref.subview %b[0, 0, %j] [2, 256, 128] [1, 1, 1] : memref<2x256x128xf16> to memref<2x256x128xf16, strided<[32768, 128, 1], offset: ?>>
    %so = memref.subview %out[0, %i, %j] [2, 64, 128] [1, 1, 1] : memref<2x128x128xf32> to memref<2x64x128xf32, strided<[16384, 128, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%so : memref<2x64x128xf32, strided<[16384, 128, 1], offset: ?>>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%sa, %sb : memref<2x64x256xf16, strided<[32768, 256, 1], offset: ?>>, memref<2x256x128xf16, strided<[32768, 128, 1], offset: ?>>) outs(%so : memref<2x64x128xf32, strided<[16384, 128, 1], offset: ?>>)
        attrs = {tessel.mma = #loop.mma_config<target = "sm_90a", block_m = 64, block_n = 128, warp_m = 64, warp_n = 128, k = 64, stages = 3, pad = 0, shape_m = 64, shape_n = 128, producers = 1>} {
    ^bb0(%x: f16, %y: f16, %acc: f32):
      %xf = arith.extf %x : f16 to f32
      %yf = arith.extf %y : f16 to f32
      %p = arith.mulf %xf, %yf : f32
      %sum = arith.addf %acc, %p : f32
      linalg.yield %sum : f32
    }
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// A persistent grid (group_m = 8) over the 2 x 2 whole tiles of 128 x 256:
// one block per SM of sm_90a (132) replaces the block loop; each walks the
// tiles block, block + 132, ... The producer gives registers to the two
// consumer warpgroups (setmaxnreg 40 / 232) and fills stages across tiles,
// counting the block's steps; the consumers compute each tile on a clone of
// the block loop's body at its origin and release its last stage after
// their last wait.
// CHECK-LABEL: func.func private @persistent
// CHECK: scf.forall (%[[BLOCK:.*]]) in (132) {
// CHECK: scf.forall (%{{.*}}) in (384) {
// CHECK: scf.if
// CHECK-NEXT: nvvm.setmaxregister decrease 40
// CHECK: scf.for %[[TILE:.*]] = %[[BLOCK]] to %c4 step %c132 iter_args
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: nvgpu.tma.async.load
// CHECK: } else {
// CHECK-NEXT: nvvm.setmaxregister increase 232
// CHECK: scf.for %{{.*}} = %[[BLOCK]] to %c4 step %c132 iter_args
// CHECK: memref.subview %arg2
// CHECK: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvgpu.mbarrier.arrive
// CHECK: vector.store
// CHECK: } {mapping = [#gpu.thread<x>]}
// CHECK-NEXT: } {mapping = [#gpu.block<x>]}
// CHECK-NOT: #gpu.block<y>
func.func private @persistent(%a: memref<256x512xf16>, %b: memref<512x512xf16>, %out: memref<256x512xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i, %j) = (0, 0) to (256, 512) step (128, 256) {
    %sa = memref.subview %a[%i, 0] [128, 512] [1, 1] : memref<256x512xf16> to memref<128x512xf16, strided<[512, 1], offset: ?>>
    %sb = memref.subview %b[0, %j] [512, 256] [1, 1] : memref<512x512xf16> to memref<512x256xf16, strided<[512, 1], offset: ?>>
    %so = memref.subview %out[%i, %j] [128, 256] [1, 1] : memref<256x512xf32> to memref<128x256xf32, strided<[512, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%so : memref<128x256xf32, strided<[512, 1], offset: ?>>)
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90a", block_m = 128, block_n = 256, warp_m = 64, warp_n = 256, k = 64, stages = 4, pad = 0, shape_m = 64, shape_n = 256, producers = 1, group_m = 8>}
        ins(%sa, %sb : memref<128x512xf16, strided<[512, 1], offset: ?>>, memref<512x256xf16, strided<[512, 1], offset: ?>>) outs(%so : memref<128x256xf32, strided<[512, 1], offset: ?>>)
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// A's view takes half of its buffer's K in whole boxes (512 of 1024, K
// steps of 64): the boxes stay inside the half, so TMA copies it.
// CHECK-LABEL: func.func private @half_k
// CHECK: loop.tensor_map %arg0 box [128, 64] swizzle "128B" : memref<256x1024xf16> -> memref<128xi8>
// CHECK: nvgpu.tma.async.load
// CHECK-NOT: nvgpu.device_async_copy
func.func private @half_k(%a: memref<256x1024xf16>, %b: memref<512x256xf16>, %out: memref<256x256xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i, %j) = (0, 0) to (256, 256) step (128, 128) {
    %sa = memref.subview %a[%i, 0] [128, 512] [1, 1] : memref<256x1024xf16> to memref<128x512xf16, strided<[1024, 1], offset: ?>>
    %sb = memref.subview %b[0, %j] [512, 128] [1, 1] : memref<512x256xf16> to memref<512x128xf16, strided<[256, 1], offset: ?>>
    %so = memref.subview %out[%i, %j] [128, 128] [1, 1] : memref<256x256xf32> to memref<128x128xf32, strided<[256, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%so : memref<128x128xf32, strided<[256, 1], offset: ?>>)
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90a", block_m = 128, block_n = 128, warp_m = 64, warp_n = 128, k = 64, stages = 3, pad = 0, shape_m = 64, shape_n = 128>}
        ins(%sa, %sb : memref<128x512xf16, strided<[1024, 1], offset: ?>>, memref<512x128xf16, strided<[256, 1], offset: ?>>) outs(%so : memref<128x128xf32, strided<[256, 1], offset: ?>>)
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// A's view takes 520 of its buffer's 1040 K columns, which K steps of 64
// do not divide: the last box would read on into the other half. Threads
// copy both operands with cp.async into the swizzled tiles instead (the
// last K step's chunks past 520 zero-filled), and fence the copies for the
// async proxy.
// CHECK-LABEL: func.func private @ragged_half_k
// CHECK-NOT: loop.tensor_map
// CHECK: memref.alloc() : memref<49152xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}}, 8, %{{.*}} {bypassL1}
// CHECK: scf.for {{.*}} iter_args
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.wgmma.mma_async
// PTX: cp.async.cg.shared.global
// PTX: fence.proxy.async.shared::cta
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
func.func private @ragged_half_k(%a: memref<256x1040xf16>, %b: memref<520x256xf16>, %out: memref<256x256xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i, %j) = (0, 0) to (256, 256) step (128, 128) {
    %sa = memref.subview %a[%i, 0] [128, 520] [1, 1] : memref<256x1040xf16> to memref<128x520xf16, strided<[1040, 1], offset: ?>>
    %sb = memref.subview %b[0, %j] [520, 128] [1, 1] : memref<520x256xf16> to memref<520x128xf16, strided<[256, 1], offset: ?>>
    %so = memref.subview %out[%i, %j] [128, 128] [1, 1] : memref<256x256xf32> to memref<128x128xf32, strided<[256, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%so : memref<128x128xf32, strided<[256, 1], offset: ?>>)
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90a", block_m = 128, block_n = 128, warp_m = 64, warp_n = 128, k = 64, stages = 3, pad = 0, shape_m = 64, shape_n = 128>}
        ins(%sa, %sb : memref<128x520xf16, strided<[1040, 1], offset: ?>>, memref<520x128xf16, strided<[256, 1], offset: ?>>) outs(%so : memref<128x128xf32, strided<[256, 1], offset: ?>>)
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// f32 operands as tf32 (shape [64, 128, 8], K steps of 32): wgmma reads
// them K-major only, so A is copied in 16-byte chunks as a 16-bit A is, and
// B, row-major in memory, element by element (4-byte cp.async, which cannot
// bypass L1) into a K-major tile of 128-byte swizzled rows, one per column;
// no TMA. The instructions read B K-major ("col").
// CHECK-LABEL: func.func private @tf32
// CHECK-NOT: loop.tensor_map
// CHECK: memref.alloc() : memref<12288xf32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}}, 4 {bypassL1} : memref<64x64xf32
// CHECK: nvgpu.device_async_copy {{.*}}, 1 : memref<64x128xf32
// CHECK: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
// PTX: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 4
// PTX: wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32
func.func private @tf32(%a: memref<128x64xf32>, %b: memref<64x128xf32>, %out: memref<128x128xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i, %j) = (0, 0) to (128, 128) step (64, 128) {
    %sa = memref.subview %a[%i, 0] [64, 64] [1, 1] : memref<128x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
    %sb = memref.subview %b[0, %j] [64, 128] [1, 1] : memref<64x128xf32> to memref<64x128xf32, strided<[128, 1], offset: ?>>
    %so = memref.subview %out[%i, %j] [64, 128] [1, 1] : memref<128x128xf32> to memref<64x128xf32, strided<[128, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%so : memref<64x128xf32, strided<[128, 1], offset: ?>>)
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90a", block_m = 64, block_n = 128, warp_m = 64, warp_n = 128, k = 32, stages = 2, pad = 0, shape_m = 64, shape_n = 128>}
        ins(%sa, %sb : memref<64x64xf32, strided<[64, 1], offset: ?>>, memref<64x128xf32, strided<[128, 1], offset: ?>>) outs(%so : memref<64x128xf32, strided<[128, 1], offset: ?>>)
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// wgmma's rules are checked where the config is lowered: the K step is one
// swizzled 128-byte row, and the target must have the instruction.
func.func private @short_k(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %out: memref<64x64xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (1) {
    linalg.fill ins(%zero : f32) outs(%out : memref<64x64xf32>)
    // expected-error @+1 {{loop.mma: block_k = 32 is not 64: wgmma reads K in 128-byte swizzled rows}}
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90a", block_m = 64, block_n = 64, warp_m = 64, warp_n = 64, k = 32, stages = 2, pad = 0, shape_m = 64, shape_n = 64>} ins(%a, %b : memref<64x64xf16>, memref<64x64xf16>) outs(%out : memref<64x64xf32>)
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

func.func private @no_wgmma(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %out: memref<64x64xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (1) {
    linalg.fill ins(%zero : f32) outs(%out : memref<64x64xf32>)
    // expected-error @+1 {{loop.mma: target 'sm_90' has no wgmma instructions, which loop.mma of shape m64 (wgmma) needs}}
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90", block_m = 64, block_n = 64, warp_m = 64, warp_n = 64, k = 64, stages = 2, pad = 0, shape_m = 64, shape_n = 64>} ins(%a, %b : memref<64x64xf16>, memref<64x64xf16>) outs(%out : memref<64x64xf32>)
  } {mapping = [#gpu.block<x>]}
  return
}
