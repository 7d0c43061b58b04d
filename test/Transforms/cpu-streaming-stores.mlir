// RUN: tessel-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(cpu-streaming-stores{vector-bits=512 min-bytes=16384}))' | FileCheck %s
// RUN: tessel-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(cpu-streaming-stores{vector-bits=512}))' | FileCheck %s --check-prefix=SMALL

// The tile's elementwise op writing a result: one vector at a time, stored
// non-temporally when the result's buffer is aligned; as it was otherwise.
// Below min-bytes (32 MiB by default) nothing changes.
// CHECK-LABEL: func.func private @rows
// CHECK: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK: %[[MIS:.*]] = arith.remui %[[PTR]], %c64
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[MIS]]
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK: %[[DST:.*]] = memref.subview %arg1[%[[I]], 0] [4, 64]
// CHECK: scf.if %[[OK]] {
// CHECK: scf.for %[[R:.*]] =
// CHECK: scf.for %[[C:.*]] = {{.*}} step %c16
// CHECK: vector.transfer_read {{.*}} {in_bounds = [true, true]} : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<1x16xf32>
// CHECK: %[[SUM:.*]] = memref.load
// CHECK-NEXT: vector.broadcast %[[SUM]] : f32 to vector<1x16xf32>
// CHECK-NOT: vector.transfer_read
// CHECK: math.exp {{.*}} : vector<1x16xf32>
// CHECK: %[[V:.*]] = vector.shape_cast {{.*}} : vector<1x16xf32> to vector<16xf32>
// CHECK: vector.store %[[V]], %[[DST]][%[[R]], %[[C]]] {alignment = 64 : i64, nontemporal = true}
// CHECK: llvm.fence seq_cst
// CHECK: } else {
// CHECK: linalg.generic
// SMALL-LABEL: func.func private @rows
// SMALL-NOT: scf.if
// SMALL-NOT: vector.store
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func private @rows(%in: memref<64x64xf32>, %out: memref<64x64xf32>) attributes {tessel.kernel = "reduction"} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c4 = arith.constant 4 : index
  %sums = memref.alloc() : memref<4x1xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c4) {
    %src = memref.subview %in[%i, 0] [4, 64] [1, 1] : memref<64x64xf32> to memref<4x64xf32, strided<[64, 1], offset: ?>>
    %dst = memref.subview %out[%i, 0] [4, 64] [1, 1] : memref<64x64xf32> to memref<4x64xf32, strided<[64, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%src, %sums : memref<4x64xf32, strided<[64, 1], offset: ?>>, memref<4x1xf32>) outs(%dst : memref<4x64xf32, strided<[64, 1], offset: ?>>) {
    ^bb0(%a: f32, %s: f32, %o: f32):
      %e = math.exp %a : f32
      %d = arith.divf %e, %s : f32
      linalg.yield %d : f32
    }
    scf.reduce
  }
  return
}

// -----

// Tiles of a flat result at offsets that are multiples of the lanes
// (through affine.apply, as tiling makes them).
// CHECK-LABEL: func.func private @flat
// CHECK: scf.if
// CHECK: vector.store {{.*}} {alignment = 64 : i64, nontemporal = true} : memref<256xf32, strided<[1], offset: ?>>, vector<16xf32>
func.func private @flat(%in: memref<8192xf32>, %out: memref<8192xf32>) attributes {tessel.kernel = "elementwise"} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%t) = (%c0) to (%c32) step (%c1) {
    %off = affine.apply affine_map<(d0) -> (d0 * 256)>(%t)
    %src = memref.subview %in[%off] [256] [1] : memref<8192xf32> to memref<256xf32, strided<[1], offset: ?>>
    %dst = memref.subview %out[%off] [256] [1] : memref<8192xf32> to memref<256xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%src : memref<256xf32, strided<[1], offset: ?>>) outs(%dst : memref<256xf32, strided<[1], offset: ?>>) {
    ^bb0(%a: f32, %o: f32):
      %d = arith.addf %a, %a : f32
      linalg.yield %d : f32
    }
    scf.reduce
  }
  return
}

// -----

// Left alone: rows that are not whole vectors, a tile whose column offset
// breaks the alignment, a result computed into a local buffer, and a
// function that is not a kernel.
// CHECK-LABEL: func.func private @odd_rows
// CHECK-NOT: scf.if
// CHECK-NOT: vector.store
// CHECK-LABEL: func.func private @shifted
// CHECK-NOT: scf.if
// CHECK-NOT: vector.store
// CHECK-LABEL: func.func private @local
// CHECK-NOT: scf.if
// CHECK-NOT: vector.store
// CHECK-LABEL: func.func @host
// CHECK-NOT: scf.if
// CHECK-NOT: vector.store
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @odd_rows(%in: memref<128x60xf32>, %out: memref<128x60xf32>) attributes {tessel.kernel = "elementwise"} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%in : memref<128x60xf32>) outs(%out : memref<128x60xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.addf %a, %a : f32
    linalg.yield %d : f32
  }
  return
}
func.func private @shifted(%in: memref<64x64xf32>, %out: memref<64x72xf32>) attributes {tessel.kernel = "elementwise"} {
  %dst = memref.subview %out[0, 8] [64, 64] [1, 1] : memref<64x72xf32> to memref<64x64xf32, strided<[72, 1], offset: 8>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%in : memref<64x64xf32>) outs(%dst : memref<64x64xf32, strided<[72, 1], offset: 8>>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.addf %a, %a : f32
    linalg.yield %d : f32
  }
  return
}
func.func private @local(%in: memref<64x64xf32>, %out: memref<64x64xf32>) attributes {tessel.kernel = "elementwise"} {
  %tmp = memref.alloc() : memref<64x64xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%in : memref<64x64xf32>) outs(%tmp : memref<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.addf %a, %a : f32
    linalg.yield %d : f32
  }
  memref.copy %tmp, %out : memref<64x64xf32> to memref<64x64xf32>
  return
}
func.func @host(%in: memref<64x64xf32>, %out: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%in : memref<64x64xf32>) outs(%out : memref<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.addf %a, %a : f32
    linalg.yield %d : f32
  }
  return
}

// -----

// Left alone: rows of 72 floats put every other row's vectors off the
// 64-byte boundary, though the tile itself starts on one.
// CHECK-LABEL: func.func private @ragged_rows
// CHECK-NOT: scf.if
// CHECK-NOT: vector.store
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @ragged_rows(%in: memref<64x64xf32>, %out: memref<64x72xf32>) attributes {tessel.kernel = "elementwise"} {
  %dst = memref.subview %out[0, 0] [64, 64] [1, 1] : memref<64x72xf32> to memref<64x64xf32, strided<[72, 1]>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%in : memref<64x64xf32>) outs(%dst : memref<64x64xf32, strided<[72, 1]>>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.addf %a, %a : f32
    linalg.yield %d : f32
  }
  return
}

// -----

// A result over a size symbol (n <= 1024 rows of 64: 256 KiB at the
// largest) is streamed when this call's is large enough: the aligned test
// also compares its bytes with min-bytes.
// CHECK-LABEL: func.func private @dynamic_rows
// CHECK: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK: %[[MIS:.*]] = arith.remui %[[PTR]], %c64
// CHECK: %[[ALIGNED:.*]] = arith.cmpi eq, %[[MIS]]
// CHECK: %[[N:.*]] = memref.dim %arg1, %c0
// CHECK: %[[BYTES:.*]] = arith.muli %c256, %[[N]]
// CHECK: %[[LARGE:.*]] = arith.cmpi uge, %[[BYTES]], %c16384
// CHECK: %[[OK:.*]] = arith.andi %[[ALIGNED]], %[[LARGE]]
// CHECK: scf.if %[[OK]] {
// CHECK: vector.store {{.*}} {alignment = 64 : i64, nontemporal = true}
// SMALL-LABEL: func.func private @dynamic_rows
// SMALL-NOT: scf.if
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func private @dynamic_rows(%in: memref<?x64xf32> {graph.shape = #graph.shape<[n, 64]>}, %out: memref<?x64xf32> {graph.shape = #graph.shape<[n, 64]>})
    attributes {graph.dims = {n = #graph.dim<1, 1024>}, tessel.kernel = "elementwise"} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %in, %c0 : memref<?x64xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c4) {
    %src = memref.subview %in[%i, 0] [4, 64] [1, 1] : memref<?x64xf32> to memref<4x64xf32, strided<[64, 1], offset: ?>>
    %dst = memref.subview %out[%i, 0] [4, 64] [1, 1] : memref<?x64xf32> to memref<4x64xf32, strided<[64, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%src : memref<4x64xf32, strided<[64, 1], offset: ?>>) outs(%dst : memref<4x64xf32, strided<[64, 1], offset: ?>>) {
    ^bb0(%a: f32, %o: f32):
      %e = math.exp %a : f32
      linalg.yield %e : f32
    }
    scf.reduce
  }
  return
}
