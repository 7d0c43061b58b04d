// RUN: tessel-opt %s --split-input-file --verify-diagnostics --gpu-map-kernels --canonicalize | FileCheck %s
// RUN: tessel-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(gpu-map-kernels,canonicalize,gpu-launch-sink-index-computations,gpu-pass-dynamic-buffers,gpu-kernel-outlining,convert-linalg-to-loops,memref-expand-shapes-as-casts,expand-strided-metadata,lower-affine,convert-scf-to-cf,nvvm-attach-target{chip=sm_90 features=+ptx80},gpu.module(convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv}),reconcile-unrealized-casts,gpu-module-to-binary{format=isa})" | FileCheck %s --check-prefix=PTX

// The grid is the block forall's trip counts (x innermost), the block size
// the thread forall's. A buffer allocated per thread goes on its stack; the
// reshaped view of an argument moves into the launch, so that the kernel
// takes the argument itself.
// CHECK-LABEL: func.func private @k
// CHECK-NOT: memref.collapse_shape
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c4, %{{.*}} = %c512, %{{.*}} = %c1) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c250, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK: memref.collapse_shape
// CHECK: gpu.block_id x
// CHECK: gpu.thread_id x
// CHECK: memref.alloca() : memref<4xf32>
// CHECK-NOT: memref.dealloc
// CHECK: gpu.terminator

// Bare-pointer ABI: one pointer per memref argument.
// PTX: gpu.binary @k_kernel
// PTX-SAME: .visible .entry k_kernel(
// PTX-SAME: .param .u64 .ptr .align 1 k_kernel_param_0,
// PTX-SAME: .param .u64 .ptr .align 1 k_kernel_param_1\0A)
// PTX-SAME: %ctaid.x
// PTX-SAME: %tid.x
// PTX-SAME: ld.global
// PTX-SAME: neg.f32
// PTX-SAME: st.global
#map = affine_map<(d0) -> (d0 * 250)>
func.func private @k(%a: memref<512x2x500xf32>, %out: memref<512x1000xf32>) attributes {tessel.kernel = "elementwise"} {
  %flat = memref.collapse_shape %a [[0], [1, 2]] : memref<512x2x500xf32> into memref<512x1000xf32>
  scf.forall (%i, %j) in (512, 4) {
    scf.forall (%t) in (250) {
      %c0 = arith.constant 0 : index
      %col = affine.apply #map(%j)
      %c = arith.addi %col, %t : index
      %tmp = memref.alloc() : memref<4xf32>
      %x = memref.load %flat[%i, %c] : memref<512x1000xf32>
      memref.store %x, %tmp[%c0] : memref<4xf32>
      %y = memref.load %tmp[%c0] : memref<4xf32>
      %z = arith.negf %y : f32
      memref.store %z, %out[%i, %c] : memref<512x1000xf32>
      memref.dealloc %tmp : memref<4xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// Nothing mapped: the kernel runs as one thread of one block.
// CHECK-LABEL: func.func private @scalar
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c1, %{{.*}} = %c1, %{{.*}} = %c1) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c1, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK: scf.for
// CHECK: gpu.terminator
// CHECK: return
// PTX: gpu.binary @scalar_kernel
// PTX-SAME: .visible .entry scalar_kernel(
func.func private @scalar(%a: memref<1000xf32>, %out: memref<f32>) attributes {tessel.kernel = "reduction"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %c1000 step %c1 iter_args(%acc = %zero) -> f32 {
    %x = memref.load %a[%i] : memref<1000xf32>
    %y = arith.addf %acc, %x : f32
    scf.yield %y : f32
  }
  memref.store %s, %out[] : memref<f32>
  return
}

// -----

// Workgroup buffers become views of the launch's dynamic shared memory at
// 16-byte aligned offsets (100 floats take 400 bytes, so the next starts at
// 400); the launch records the total. Threads read what others wrote.
// CHECK-LABEL: func.func private @shared
// CHECK: %[[BYTES:.*]] = arith.constant 656 : i32
// CHECK: gpu.launch {{.*}} dynamic_shared_memory_size %[[BYTES]]
// CHECK: %[[BASE:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: memref.view %[[BASE]][%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<100xf32, #gpu.address_space<workgroup>>
// CHECK: memref.view %[[BASE]][%c400{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128xf16, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.alloc
// PTX: gpu.binary @shared_kernel
// PTX-SAME: .shared .align 16 .b8 __dynamic_shmem__0
func.func private @shared(%a: memref<100xf32>, %b: memref<128xf16>, %out: memref<100xf32>) attributes {tessel.kernel = "elementwise"} {
  scf.forall (%i) in (1) {
    %sa = memref.alloc() : memref<100xf32, #gpu.address_space<workgroup>>
    %sb = memref.alloc() : memref<128xf16, #gpu.address_space<workgroup>>
    scf.forall (%t) in (100) {
      %x = memref.load %a[%t] : memref<100xf32>
      memref.store %x, %sa[%t] : memref<100xf32, #gpu.address_space<workgroup>>
      %h = memref.load %b[%t] : memref<128xf16>
      memref.store %h, %sb[%t] : memref<128xf16, #gpu.address_space<workgroup>>
      gpu.barrier
      %c99 = arith.constant 99 : index
      %r = arith.subi %c99, %t : index
      %y = memref.load %sa[%r] : memref<100xf32, #gpu.address_space<workgroup>>
      %g = memref.load %sb[%r] : memref<128xf16, #gpu.address_space<workgroup>>
      %e = arith.extf %g : f16 to f32
      %s = arith.addf %y, %e : f32
      memref.store %s, %out[%t] : memref<100xf32>
    } {mapping = [#gpu.thread<x>]}
    memref.dealloc %sa : memref<100xf32, #gpu.address_space<workgroup>>
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// Blocks of 256 over 997 columns: the last block's thread forall has a
// dynamic trip count (997 - 768). The block still has 256 threads (the
// count's upper bound); each runs its iteration only below the count.
// CHECK-LABEL: func.func private @partial_block
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c4, %{{.*}} = %c8, %{{.*}} = %c1) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK: %[[N:.*]] = affine.min
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[T]], %[[N]] : index
// CHECK: scf.if %[[IN]] {
// CHECK: arith.negf
// PTX: gpu.binary @partial_block_kernel
// PTX-SAME: setp.
// PTX-SAME: neg.f32
#start = affine_map<(d0) -> (d0 * 256)>
#count = affine_map<(d0) -> (d0 * -256 + 997, 256)>
#col = affine_map<(d0, d1) -> (d0 * 256 + d1)>
func.func private @partial_block(%a: memref<8x997xf32>, %out: memref<8x997xf32>) attributes {tessel.kernel = "elementwise"} {
  scf.forall (%i, %j) in (8, 4) {
    %n = affine.min #count(%j)
    scf.forall (%t) in (%n) {
      %c = affine.apply #col(%j, %t)
      %x = memref.load %a[%i, %c] : memref<8x997xf32>
      %y = arith.negf %x : f32
      memref.store %y, %out[%i, %c] : memref<8x997xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<y>, #gpu.block<x>]}
  return
}

// -----

// A thread count with no constant upper bound cannot be one static block.
func.func private @unbounded(%a: memref<?xf32>, %n: index) attributes {tessel.kernel = "elementwise"} {
  scf.forall (%j) in (4) {
    // expected-error @below {{a thread-level scf.forall has a dynamic trip count without a constant upper bound; block sizes must be static}}
    scf.forall (%t) in (%n) {
      %x = memref.load %a[%t] : memref<?xf32>
      %y = arith.negf %x : f32
      memref.store %y, %a[%t] : memref<?xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A thread forall that steps by 4 over columns and has a dynamic trip count
// over rows (the last block of 51 rows in blocks of 42) is normalized
// (upstream's normalization asserts on such mixed bounds), then runs its
// constant bound of 42 x 6 threads, those past the rows idle.
// CHECK-LABEL: func.func private @mixed
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c2, %{{.*}} = %c1, %{{.*}} = %c1) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c6, %{{.*}} = %c42, %{{.*}} = %c1)
// CHECK: gpu.thread_id x
// CHECK: %[[TY:.*]] = gpu.thread_id y
// CHECK: arith.cmpi ult, %[[TY]]
// CHECK: scf.if
// CHECK: memref.subview %{{.*}} [1, 4]
#rows = affine_map<(d0) -> (-d0 + 51, 42)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @mixed(%a: memref<51x24xf32>, %out: memref<51x24xf32>) attributes {tessel.kernel = "elementwise"} {
  scf.forall (%i) = (0) to (51) step (42) {
    %n = affine.min #rows(%i)
    scf.forall (%r, %c) = (0, 0) to (%n, 24) step (1, 4) {
      %row = arith.addi %i, %r : index
      %at = memref.subview %a[%row, %c] [1, 4] [1, 1] : memref<51x24xf32> to memref<1x4xf32, strided<[24, 1], offset: ?>>
      %ot = memref.subview %out[%row, %c] [1, 4] [1, 1] : memref<51x24xf32> to memref<1x4xf32, strided<[24, 1], offset: ?>>
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
          ins(%at : memref<1x4xf32, strided<[24, 1], offset: ?>>) outs(%ot : memref<1x4xf32, strided<[24, 1], offset: ?>>) {
      ^bb0(%x: f32, %o: f32):
        %y = arith.negf %x : f32
        linalg.yield %y : f32
      }
    } {mapping = [#gpu.thread<y>, #gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A block forall over a size symbol launches as many blocks as its trip
// count, counted on the host; a thread's buffer over one is its largest
// size on the stack (n <= 64 in graph.dims), viewed at its size.
// CHECK-LABEL: func.func private @dynamic
// CHECK-SAME: %[[X:[^:]*]]: memref<?xf32>
// CHECK: %[[N:.*]] = memref.dim %[[X]], %c0
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[N]], %{{.*}} = %c1, %{{.*}} = %c1) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK: %[[STACK:.*]] = memref.alloca() : memref<64xf32>
// CHECK: memref.reinterpret_cast %[[STACK]] to offset: [0], sizes: [%[[N]]], strides: [1] : memref<64xf32> to memref<?xf32>
// CHECK: memref.load %[[X]][%[[B]]]

// Buffers over a size symbol reach the kernel as pointers to their largest
// extent, each with its size (gpu-pass-dynamic-buffers).
// PTX: gpu.binary @dynamic_kernel
// PTX-SAME: .visible .entry dynamic_kernel(
// PTX-SAME: .param .u64 .ptr .align 1 dynamic_kernel_param_0,
// PTX-SAME: .param .u64 dynamic_kernel_param_1,
// PTX-SAME: .param .u64 .ptr .align 1 dynamic_kernel_param_2,
// PTX-SAME: .param .u64 dynamic_kernel_param_3\0A)
func.func private @dynamic(%x: memref<?xf32> {graph.shape = #graph.shape<[n]>}, %out: memref<?xf32> {graph.shape = #graph.shape<[n]>})
    attributes {graph.dims = {n = #graph.dim<1, 64>}, tessel.kernel = "elementwise"} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.forall (%i) in (%n) {
    scf.forall (%t) in (32) {
      %tmp = memref.alloc(%n) : memref<?xf32>
      %v = memref.load %x[%i] : memref<?xf32>
      memref.store %v, %tmp[%t] : memref<?xf32>
      %w = memref.load %tmp[%t] : memref<?xf32>
      memref.store %w, %out[%i] : memref<?xf32>
      memref.dealloc %tmp : memref<?xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// Scalar arithmetic of sizes (a mean's 1 / count) is recreated in the
// launch that reads it, not computed in a one-thread launch of its own,
// whose value no other launch could see.
// CHECK-LABEL: func.func private @scale
// CHECK-NOT: arith.divf
// CHECK: gpu.launch
// CHECK: arith.index_cast
// CHECK: arith.uitofp
// CHECK: arith.divf
// CHECK: arith.mulf
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
func.func private @scale(%x: memref<?xf32> {graph.shape = #graph.shape<[n]>}, %out: memref<?xf32> {graph.shape = #graph.shape<[n]>})
    attributes {graph.dims = {n = #graph.dim<1, 64>}, tessel.kernel = "elementwise"} {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  %i = arith.index_cast %n : index to i64
  %f = arith.uitofp %i : i64 to f32
  %r = arith.divf %one, %f : f32
  scf.forall (%b) in (%n) {
    scf.forall (%t) in (32) {
      %v = memref.load %x[%b] : memref<?xf32>
      %w = arith.mulf %v, %r : f32
      memref.store %w, %out[%b] : memref<?xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A scalar computed from a loaded value is computation: it stays in the
// one-thread launch with the load and the store.
// CHECK-LABEL: func.func private @loaded
// CHECK: gpu.launch
// CHECK: memref.load
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
func.func private @loaded(%x: memref<4xf32>, %out: memref<4xf32>) attributes {tessel.kernel = "reduction"} {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  %w = arith.mulf %v, %v : f32
  memref.store %w, %out[%c0] : memref<4xf32>
  return
}

// -----

// A tensor map (TMA) stays on the host, beside its buffer: the CUDA backend
// records it in the manifest and the runtime encodes it; the kernel gets
// its address as an argument, as it gets a buffer's.
// CHECK-LABEL: func.func private @tensor_map
// CHECK: %[[MAP:.*]] = loop.tensor_map %arg0 box [128, 64] swizzle "128B"
// CHECK-NEXT: gpu.launch
// CHECK: memref.extract_aligned_pointer_as_index %[[MAP]]
// PTX: .visible .entry tensor_map_kernel({{.*}}.param .u64 .ptr .align 1 tensor_map_kernel_param_0,{{.*}}.param .u64 .ptr .align 1 tensor_map_kernel_param_1{{.*}})
func.func private @tensor_map(%a: memref<256x512xf16>, %out: memref<2xi64>) attributes {tessel.kernel = "contraction"} {
  %map = loop.tensor_map %a box [128, 64] swizzle "128B" : memref<256x512xf16> -> memref<128xi8>
  scf.forall (%i) in (2) {
    %p = memref.extract_aligned_pointer_as_index %map : memref<128xi8> -> index
    %v = arith.index_cast %p : index to i64
    memref.store %v, %out[%i] : memref<2xi64>
  } {mapping = [#gpu.block<x>]}
  return
}
