// RUN: tessel-opt %s -pass-pipeline='builtin.module(func.func(optimize-allocation-liveness,host-reuse-buffers))' -split-input-file | FileCheck %s

// The last kernel writes the output argument directly; the third
// intermediate reuses the first one's buffer, freed after its last use.
// CHECK-LABEL: func.func @host
// CHECK-SAME: (%[[X:.*]]: memref<64xf32>, %[[OUT:.*]]: memref<64xf32>)
// CHECK: %[[A:.*]] = memref.alloc() : memref<64xf32>
// CHECK: call @k(%[[X]], %[[A]])
// CHECK: %[[B:.*]] = memref.alloc() : memref<64xf32>
// CHECK: call @k(%[[A]], %[[B]])
// CHECK-NOT: memref.alloc
// CHECK: call @k(%[[B]], %[[A]])
// CHECK: memref.dealloc %[[B]]
// CHECK: call @k(%[[A]], %[[OUT]])
// CHECK: memref.dealloc %[[A]]
// CHECK-NOT: memref.copy
func.func private @k(memref<64xf32>, memref<64xf32>) attributes {tessel.kernel = "elementwise"}
func.func @host(%x: memref<64xf32>, %out: memref<64xf32>) {
  %a = memref.alloc() : memref<64xf32>
  call @k(%x, %a) : (memref<64xf32>, memref<64xf32>) -> ()
  %b = memref.alloc() : memref<64xf32>
  call @k(%a, %b) : (memref<64xf32>, memref<64xf32>) -> ()
  %c = memref.alloc() : memref<64xf32>
  call @k(%b, %c) : (memref<64xf32>, memref<64xf32>) -> ()
  %d = memref.alloc() : memref<64xf32>
  call @k(%c, %d) : (memref<64xf32>, memref<64xf32>) -> ()
  memref.copy %d, %out : memref<64xf32> to memref<64xf32>
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %b : memref<64xf32>
  memref.dealloc %c : memref<64xf32>
  memref.dealloc %d : memref<64xf32>
  return
}

// -----

// An output argument that is also read elsewhere is not written early, and
// buffers of different types are not shared.
// CHECK-LABEL: func.func @no_reuse
// CHECK: memref.alloc() : memref<64xf32>
// CHECK: memref.alloc() : memref<32xf32>
// CHECK: memref.copy
func.func private @k2(memref<64xf32>, memref<32xf32>)
func.func @no_reuse(%x: memref<64xf32>, %out: memref<32xf32>) {
  %a = memref.alloc() : memref<64xf32>
  call @k(%x, %a) : (memref<64xf32>, memref<64xf32>) -> ()
  memref.dealloc %a : memref<64xf32>
  %b = memref.alloc() : memref<32xf32>
  call @k2(%x, %b) : (memref<64xf32>, memref<32xf32>) -> ()
  call @k2(%x, %out) : (memref<64xf32>, memref<32xf32>) -> ()
  memref.copy %b, %out : memref<32xf32> to memref<32xf32>
  memref.dealloc %b : memref<32xf32>
  return
}
func.func private @k(memref<64xf32>, memref<64xf32>)

// -----

// A kernel whose result leaves through a reshape (a transpose then a merge
// of heads) writes into the matching view of its output argument instead of
// a buffer that is then copied.
// CHECK-LABEL: func.func private @merge_heads
// CHECK-SAME: (%[[X:.*]]: memref<2x4x16xf32>, %[[OUT:.*]]: memref<2x64xf32>)
// CHECK-NOT: memref.alloc
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[OUT]] {{\[}}[0], [1, 2]] output_shape [2, 16, 4] : memref<2x64xf32> into memref<2x16x4xf32>
// CHECK: scf.forall
// CHECK: linalg.transpose ins(%[[X]] : memref<2x4x16xf32>) outs(%[[VIEW]] : memref<2x16x4xf32>)
// CHECK-NOT: memref.copy
// CHECK-NOT: memref.dealloc
func.func private @merge_heads(%x: memref<2x4x16xf32>, %out: memref<2x64xf32>) attributes {tessel.kernel = "elementwise"} {
  %a = memref.alloc() : memref<2x16x4xf32>
  scf.forall (%i) in (1) {
    linalg.transpose ins(%x : memref<2x4x16xf32>) outs(%a : memref<2x16x4xf32>) permutation = [0, 2, 1]
  }
  %flat = memref.collapse_shape %a [[0], [1, 2]] : memref<2x16x4xf32> into memref<2x64xf32>
  memref.copy %flat, %out : memref<2x64xf32> to memref<2x64xf32>
  memref.dealloc %a : memref<2x16x4xf32>
  return
}
