// RUN: tessel-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(loop-validate,loop-apply-schedule,canonicalize)' | FileCheck %s

// A CPU schedule of a matmul kernel: parallel tiles of 8x16 (an scf.forall
// without mapping: tasks of the async runtime), K in blocks of 32 (B blocks
// packed: the tile's two row blocks of 4 read each), then 4x16x8 register
// blocks that are vector.contracts whose accumulator is a loop-carried
// vector (read before, written after the depth loop).
// CHECK-LABEL: func.func private @matmul
// (The one-tile row loop folds away.)
// CHECK: scf.forall (%{{.*}}) = (0) to (32) step (16)
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c32
// The K block's B slice is packed, a row segment at a time, into rows one
// cache line (16 f32) longer; A is read in place.
// CHECK: %[[A:.*]] = tensor.extract_slice %arg0[0, %{{.*}}] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
// CHECK-NOT: into tensor<8x32xf32>
// CHECK: %[[B:.*]] = tensor.empty() : tensor<32x32xf32>
// CHECK: tensor.extract_slice %[[B]][0, 0] [32, 16] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} : tensor<1x16xf32> into tensor<32x16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c4
// CHECK: %[[AROWS:.*]] = tensor.extract_slice %[[A]][%{{.*}}, 0] [4, 32] [1, 1]
// CHECK: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<4x16xf32>, vector<4x16xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ACC]]) -> (vector<4x16xf32>)
// CHECK: tensor.extract_slice %[[AROWS]]
// CHECK: vector.contract {{.*}} : vector<4x8xf32>, vector<8x16xf32> into vector<4x16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<4x16xf32>, tensor<4x16xf32>
// CHECK-NOT: loop.schedule
func.func private @matmul(%a: tensor<8x64xf32>, %b: tensor<64x32xf32>) -> tensor<8x32xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<8x64xf32>, tensor<64x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %mm : tensor<8x32xf32>
}

loop.schedule @matmul target "cpu" {
  %rows = loop.knob "reg_m" = 4 choices [1, 2, 4, 8]
  loop.tile [8, 16, 0] parallel
  loop.vectorize [%rows, 16, 8] depth [32] rows [4]
}

// -----

// Without a loop.tile, loop.vectorize takes the whole matmul; a depth of K
// or more leaves K unblocked, and rows covering the matmul's leave B read
// once, in place (nothing packed).
// CHECK-LABEL: func.func private @whole
// CHECK-NOT: scf.forall
// CHECK-NOT: linalg.copy
// CHECK: vector.contract {{.*}} : vector<2x4xf32>, vector<4x4xf32> into vector<2x4xf32>
func.func private @whole(%a: tensor<6x8xf32>, %b: tensor<8x12xf32>, %c: tensor<6x12xf32>) -> tensor<6x12xf32> attributes {tessel.kernel = "contraction"} {
  %mm = linalg.matmul ins(%a, %b : tensor<6x8xf32>, tensor<8x12xf32>) outs(%c : tensor<6x12xf32>) -> tensor<6x12xf32>
  return %mm : tensor<6x12xf32>
}
loop.schedule @whole target "cpu" {
  loop.vectorize [2, 4, 4] depth [8] rows [8]
}

// -----

// K in one block of whole register blocks, the tile unpadded, the result
// read only by an elementwise epilogue: the register blocks' accumulators
// start from the fill's value (no fill, no read of the tile), and each row
// of a block goes through the epilogue (bias of its row broadcast, the
// residual's row read as a vector) and is written to the epilogue's output
// slice, which the tile computes into; the epilogue generic is gone.
// CHECK-LABEL: func.func private @register_epilogue
// CHECK-DAG: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : vector<4x16xf32>
// CHECK: scf.forall (%[[I:.*]], %[[J:.*]]) = (0, 0) to (16, 32) step (8, 16) shared_outs(%[[OUT:.*]] = %{{.*}})
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[BIAS:.*]] = tensor.extract_slice %arg2[%[[I]]] [8] [1]
// CHECK-DAG: %[[SKIP:.*]] = tensor.extract_slice %arg3[%[[I]], %[[J]]] [8, 16] [1, 1]
// CHECK-DAG: %[[TILE:.*]] = tensor.extract_slice %[[OUT]][%[[I]], %[[J]]] [8, 16] [1, 1]
// CHECK: scf.for %[[R:.*]] = %c0 to %c8 step %c4 iter_args(%{{.*}} = %[[TILE]])
// CHECK: %[[ACC:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[ZEROS]]) -> (vector<4x16xf32>)
// CHECK: vector.contract
// CHECK: %[[ROW0:.*]] = vector.extract %[[ACC]][0] : vector<16xf32> from vector<4x16xf32>
// CHECK: tensor.extract %[[BIAS]][%[[R]]]
// CHECK: vector.transfer_read %[[SKIP]][%[[R]], %c0]
// CHECK: arith.maximumf
// CHECK: vector.transfer_write %{{.*}}[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, tensor<4x16xf32>
// CHECK-COUNT-3: vector.transfer_write {{.*}} : vector<16xf32>, tensor<4x16xf32>
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func private @register_epilogue(%a: tensor<16x8xf32>, %b: tensor<8x32xf32>, %bias: tensor<16xf32>, %skip: tensor<16x32xf32>) -> tensor<16x32xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x32xf32>) outs(%f : tensor<16x32xf32>) -> tensor<16x32xf32>
  %out = tensor.empty() : tensor<16x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias, %skip : tensor<16x32xf32>, tensor<16xf32>, tensor<16x32xf32>) outs(%out : tensor<16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %s: f32, %o: f32):
    %t = arith.addf %x, %y : f32
    %u = arith.maximumf %t, %zero : f32
    %v = arith.addf %u, %s : f32
    linalg.yield %v : f32
  } -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}
loop.schedule @register_epilogue target "cpu" {
  loop.tile [8, 16] parallel
  loop.vectorize [4, 16, 4] depth [8] rows [8]
}

// -----

// K in one block, rows in blocks of 4: each of the two row blocks reads the
// whole B, which is first copied into rows one cache line longer (12 + 16).
// CHECK-LABEL: func.func private @row_blocks
// CHECK: %[[B:.*]] = tensor.empty() : tensor<8x28xf32>
// CHECK: tensor.extract_slice %[[B]][0, 0] [8, 12] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} : tensor<1x4xf32> into tensor<8x12xf32>
// CHECK: %[[ROWS:.*]] = scf.for %{{.*}} = %c0 to %c8 step %c4
// CHECK-NOT: tensor.empty
// CHECK: vector.contract {{.*}} : vector<4x4xf32>, vector<4x4xf32> into vector<4x4xf32>
// CHECK: return %[[ROWS]]
func.func private @row_blocks(%a: tensor<8x8xf32>, %b: tensor<8x12xf32>, %c: tensor<8x12xf32>) -> tensor<8x12xf32> attributes {tessel.kernel = "contraction"} {
  %mm = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x12xf32>) outs(%c : tensor<8x12xf32>) -> tensor<8x12xf32>
  return %mm : tensor<8x12xf32>
}
loop.schedule @row_blocks target "cpu" {
  loop.vectorize [4, 4, 4] depth [8] rows [4]
}

// -----

// Tiles that do not divide the matmul (10x20 in 8x16 tiles): under an
// scf.if on the tile's sizes, a full tile (8x16) is cast to its static shape
// and read in place; a partial edge tile is computed as a full one on
// padded copies: its C (zeros: a fill), each K block's B copied, its
// columns past the tile's zero, row blocks over its rows with their A
// padded, register blocks below its columns rounded up, and the unpadded
// slice of the result written into the tile's own C. K = 24 in blocks of
// at most 16 is two equal blocks of 12, which need no padding (blocks of
// 16 would pad K to 32).
// CHECK-LABEL: func.func private @edges
// CHECK: scf.forall (%[[I:.*]], %[[J:.*]]) = (0, 0) to (10, 20) step (8, 16) shared_outs(%[[OUT:.*]] = %{{.*}})
// CHECK: %[[M:.*]] = affine.min
// CHECK: %[[N:.*]] = affine.min
// CHECK: %[[C:.*]] = tensor.extract_slice %[[OUT]][%[[I]], %[[J]]] [%[[M]], %[[N]]]
// CHECK: %[[ZEROS:.*]] = linalg.fill {{.*}} outs(%[[C]] : tensor<?x?xf32>)
// CHECK: %[[FULL_M:.*]] = arith.cmpi eq, %[[M]], %c8
// CHECK: %[[FULL_N:.*]] = arith.cmpi eq, %[[N]], %c16
// CHECK: %[[FULL:.*]] = arith.andi %[[FULL_M]], %[[FULL_N]]
// CHECK: %[[TILE:.*]] = scf.if %[[FULL]] -> (tensor<?x?xf32>) {
// CHECK-NOT: tensor.pad
// CHECK: tensor.cast %[[ZEROS]] : tensor<?x?xf32> to tensor<8x16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c24 step %c12
// CHECK: vector.contract {{.*}} : vector<4x4xf32>, vector<4x16xf32> into vector<4x16xf32>
// CHECK: } else {
// CHECK: %[[LIVE:.*]] = affine.apply {{.*}}(%[[N]])
// CHECK: linalg.fill {{.*}} -> tensor<8x16xf32>
// CHECK: %[[ACC:.*]] = scf.for %[[KB:.*]] = %c0 to %c24 step %c12 iter_args
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<12x32xf32>
// CHECK: %[[BUF:.*]] = tensor.extract_slice %[[EMPTY]][0, 0] [12, 16] [1, 1]
// CHECK: %[[BSRC:.*]] = tensor.extract_slice %{{.*}}[%[[KB]], 0] [12, %[[N]]] [1, 1]
// CHECK: %[[ZB:.*]] = linalg.fill {{.*}} outs(%[[BUF]] : tensor<12x16xf32>)
// CHECK: tensor.insert_slice %[[BSRC]] into %[[ZB]][0, 0] [12, %[[N]]] [1, 1]
// CHECK: scf.for %{{.*}} = %c0 to %[[M]] step %c8 iter_args
// CHECK: tensor.pad
// CHECK: } : tensor<?x12xf32> to tensor<8x12xf32>
// CHECK: scf.for %{{.*}} = %c0 to %[[LIVE]] step %c16
// CHECK: vector.contract {{.*}} : vector<4x4xf32>, vector<4x16xf32> into vector<4x16xf32>
// CHECK: %[[SLICE:.*]] = tensor.extract_slice %[[ACC]][0, 0] [%[[M]], %[[N]]] [1, 1] : tensor<8x16xf32> to tensor<?x?xf32>
// CHECK: bufferization.materialize_in_destination %[[SLICE]] in %[[ZEROS]]
// CHECK: tensor.parallel_insert_slice %[[TILE]] into %[[OUT]][%[[I]], %[[J]]] [%[[M]], %[[N]]]
func.func private @edges(%a: tensor<10x24xf32>, %b: tensor<24x20xf32>) -> tensor<10x20xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<10x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<10x20xf32>) -> tensor<10x20xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<10x24xf32>, tensor<24x20xf32>) outs(%f : tensor<10x20xf32>) -> tensor<10x20xf32>
  return %mm : tensor<10x20xf32>
}
loop.schedule @edges target "cpu" {
  loop.tile [8, 16, 0] parallel
  loop.vectorize [4, 16, 4] depth [16] rows [8]
}

// -----

// A partial edge tile of several row blocks (50 rows in tiles of 32: 18
// rows and 4 columns): one B block per K step for all of them, row blocks
// of 8 over its 18 rows.
// CHECK-LABEL: func.func private @packed_edges
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (50, 20) step (32, 16)
// CHECK: %[[M:.*]] = affine.min
// CHECK: %[[N:.*]] = affine.min
// CHECK: } else {
// CHECK: linalg.fill {{.*}} -> tensor<32x16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c24 step %c12 iter_args
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [12, %[[N]]] [1, 1]
// CHECK-NOT: tensor.insert_slice {{.*}} [12, %[[N]]]
// CHECK: scf.for %{{.*}} = %c0 to %[[M]] step %c8 iter_args
// CHECK: vector.contract {{.*}} : vector<4x4xf32>, vector<4x16xf32> into vector<4x16xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, 0] [%[[M]], %[[N]]] [1, 1] : tensor<32x16xf32> to tensor<?x?xf32>
func.func private @packed_edges(%a: tensor<50x24xf32>, %b: tensor<24x20xf32>) -> tensor<50x20xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<50x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<50x20xf32>) -> tensor<50x20xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<50x24xf32>, tensor<24x20xf32>) outs(%f : tensor<50x20xf32>) -> tensor<50x20xf32>
  return %mm : tensor<50x20xf32>
}
loop.schedule @packed_edges target "cpu" {
  loop.tile [32, 16, 0] parallel
  loop.vectorize [4, 16, 4] depth [16] rows [8]
}

// -----

// Lanes that do not divide a reduction whose body reads the reduction's
// index: the remainder cannot be a copy of the reduction (its index would
// restart), so the split is refused, naming why.
#ix_in = affine_map<(d0, d1) -> (d0, d1)>
#ix_out = affine_map<(d0, d1) -> (d0)>
func.func private @indexed(%a: tensor<4x11xf32>) -> tensor<4xf32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  // expected-error @below {{loop.split_reduction lanes = 8 do not divide this reduction's extent 11, and its remainder cannot be split off (the body reads the reduction's index)}}
  %0 = linalg.generic {indexing_maps = [#ix_in, #ix_out], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x11xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %i = linalg.index 1 : index
    %w = arith.index_cast %i : index to i32
    %wf = arith.sitofp %w : i32 to f32
    %p = arith.mulf %x, %wf : f32
    %y = arith.addf %acc, %p : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
loop.schedule @indexed target "cpu" {
  loop.split_reduction lanes [8]
}

// -----

// A batched matmul whose B is broadcast over the batch: tiles of two batch
// indices, walked one at a time (scf.for), each a 2-D matmul of the batch
// dims collapsed away, vectorized as any matmul.
#bA = affine_map<(b, m, n, k) -> (b, m, k)>
#bB = affine_map<(b, m, n, k) -> (k, n)>
#bC = affine_map<(b, m, n, k) -> (b, m, n)>
// CHECK-LABEL: func.func private @batched
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (3, 8, 32) step (2, 4, 16)
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK: tensor.collapse_shape {{.*}} into tensor<4x16xf32>
// CHECK: vector.contract {{.*}} : vector<4x4xf32>, vector<4x16xf32> into vector<4x16xf32>
// CHECK: tensor.expand_shape {{.*}} into tensor<1x4x16xf32>
func.func private @batched(%a: tensor<3x8x16xf32>, %b: tensor<16x32xf32>) -> tensor<3x8x32xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x8x32xf32>) -> tensor<3x8x32xf32>
  %0 = linalg.generic {indexing_maps = [#bA, #bB, #bC], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<3x8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<3x8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x8x32xf32>
  return %0 : tensor<3x8x32xf32>
}
loop.schedule @batched target "cpu" {
  loop.tile [2, 4, 16, 0] parallel
  loop.vectorize [4, 16, 4] depth [16] rows [4]
}

// -----

// loop.split_k: K = 256 in 4 parts of 64. A and B read K as (part, k)
// through expand_shapes; the parallel tiles of the partial products take
// one part each (a third forall dim) and are vectorized with K = 64 (two
// blocks of 32); the sum of the parts (the part loop outermost) and the
// bias follow in a second forall of the same 16x16 tiles.
// CHECK-LABEL: func.func private @split
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [20, 4, 64] : tensor<20x256xf32> into tensor<20x4x64xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [4, 64, 24] : tensor<256x24xf32> into tensor<4x64x24xf32>
// CHECK: %[[WS:.*]] = tensor.empty() : tensor<4x20x24xf32>
// CHECK: %[[PARTS:.*]] = scf.forall (%[[P:.*]], %[[I:.*]], %[[J:.*]]) = (0, 0, 0) to (4, 20, 24) step (1, 16, 16) shared_outs(%{{.*}} = %[[WS]])
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c32
// CHECK: vector.contract {{.*}} : vector<4x4xf32>, vector<4x16xf32> into vector<4x16xf32>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[P]], %[[I]], %[[J]]]
// CHECK: scf.forall (%[[I2:.*]], %[[J2:.*]]) = (0, 0) to (20, 24) step (16, 16)
// CHECK: %[[TILE:.*]] = tensor.extract_slice %[[PARTS]][0, %[[I2]], %[[J2]]] [4, %{{.*}}, %{{.*}}] [1, 1, 1] : tensor<4x20x24xf32> to tensor<4x?x?xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[TILE]] : tensor<4x?x?xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.addf
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func private @split(%a: tensor<20x256xf32>, %b: tensor<256x24xf32>, %bias: tensor<24xf32>) -> tensor<20x24xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<20x24xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<20x24xf32>) -> tensor<20x24xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<20x256xf32>, tensor<256x24xf32>) outs(%f : tensor<20x24xf32>) -> tensor<20x24xf32>
  %r = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<20x24xf32>, tensor<24xf32>) outs(%e : tensor<20x24xf32>) {
  ^bb0(%in: f32, %y: f32, %out: f32):
    %0 = arith.addf %in, %y : f32
    linalg.yield %0 : f32
  } -> tensor<20x24xf32>
  return %r : tensor<20x24xf32>
}
loop.schedule @split target "cpu" {
  loop.split_k parts [4]
  loop.tile [16, 16] parallel
  loop.vectorize [4, 16, 4] depth [32] rows [4]
}

// -----

// A returned intermediate that the root also reads, reached through a
// reshape placed before the root: the tile loop yields it and the reshape
// moves after the loop, so nothing is left untiled (computed twice).
// CHECK-LABEL: func.func private @reshaped_result
// CHECK-NOT: linalg.generic
// CHECK: %[[LOOP:.*]]:2 = scf.forall
// CHECK: linalg.generic
// CHECK: arith.negf
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: %[[R:.*]] = tensor.expand_shape %[[LOOP]]#1
// CHECK: return %[[R]], %[[LOOP]]#0
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @reshaped_result(%a: tensor<64x32xf32>) -> (tensor<4x16x32xf32>, tensor<64x32xf32>) attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x32xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<64x32xf32>
  %r = tensor.expand_shape %x [[0, 1], [2]] output_shape [4, 16, 32] : tensor<64x32xf32> into tensor<4x16x32xf32>
  %e2 = tensor.empty() : tensor<64x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x32xf32>) outs(%e2 : tensor<64x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = math.exp %v : f32
    linalg.yield %n : f32
  } -> tensor<64x32xf32>
  return %r, %y : tensor<4x16x32xf32>, tensor<64x32xf32>
}
loop.schedule @reshaped_result target "cpu" {
  loop.tile [16, 0] parallel
}

// -----

// loop.grid_reduce on the CPU: the mean's two loops merged and split into
// 4 rows of 1536, a task each (an scf.forall without mapping); the
// combination and the scaling are computed once, in a one-iteration forall
// (which canonicalization inlines), not in the tiles of the subtraction
// that reads the mean, which its own loop.tile tiles in parallel.
// CHECK-LABEL: func.func private @centered
// CHECK: %[[ROWS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [4, 1536]
// CHECK: %[[PARTS:.*]] = scf.forall (%[[I:[a-z0-9_]+]]) in (4) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<4xf32>)
// CHECK: tensor.extract_slice %[[ROWS]][%[[I]], 0] [1, 1536]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-NOT: mapping
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK-SAME: ins(%[[PARTS]] : tensor<4xf32>)
// CHECK: %[[MEAN:.*]] = linalg.generic
// CHECK: arith.mulf
// CHECK-NOT: mapping
// CHECK: scf.forall (%{{.*}}) = (0) to (64) step (16) shared_outs
// CHECK: linalg.generic
// CHECK-SAME: %[[MEAN]]
// CHECK: arith.subf
// CHECK-NOT: mapping
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
loop.schedule @centered target "cpu" {
  loop.grid_reduce parts [4]
  loop.tile [16, 0] parallel
}

// -----

// A sum to a scalar: its schedule's root is the sum itself, which the rows
// and their combination now compute; nothing is left to tile. Each row of
// 128 is walked in 16 lanes.
// CHECK-LABEL: func.func private @total
// CHECK: %[[PARTS:.*]] = scf.forall (%{{.*}}) in (8) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<8xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c128 step %c16
// CHECK: arith.addf %{{.*}} : vector<1x16xf32>
// CHECK: linalg.reduce
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK-SAME: ins(%[[PARTS]] : tensor<8xf32>)
// CHECK: return %[[SUM]]
#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
func.func private @total(%a: tensor<1024xf32>) -> tensor<f32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%a : tensor<1024xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
loop.schedule @total target "cpu" {
  loop.grid_reduce parts [8]
  loop.split_reduction lanes [16]
}

// -----

// Rows over a size symbol: besides the full and the partial tile, a tile of
// a single row and all the columns (a decoding step) reads B in place in
// register blocks of one row, 16 columns wide here (the tile's width). The
// partial tile's B block, which its columns and K fill, is copied row by
// row into its padded buffer, which the register blocks read.
// CHECK-LABEL: func.func private @single_row
// CHECK: %[[M:.*]] = affine.min
// CHECK: scf.if %{{.*}} -> (tensor<?x16xf32>) {
// CHECK: vector.contract {{.*}} : vector<4x4xf32>, vector<4x16xf32> into vector<4x16xf32>
// CHECK: } else {
// CHECK: %[[ONE:.*]] = arith.cmpi eq, %{{.*}}, %c1 : index
// CHECK: scf.if %[[ONE]] -> (tensor<?x16xf32>) {
// CHECK-NOT: tensor.insert_slice
// CHECK: vector.contract {{.*}} : vector<1x4xf32>, vector<4x16xf32> into vector<1x16xf32>
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %c0 to %c24 step %c12
// CHECK: %[[BUF:.*]] = tensor.extract_slice %{{.*}}[0, 0] [12, 16] [1, 1] : tensor<12x32xf32> to tensor<12x16xf32>
// CHECK: %[[PACKED:.*]] = scf.for %[[ROW:.*]] = %c0 to %c12 step %c1 iter_args(%{{.*}} = %[[BUF]])
// CHECK: tensor.insert_slice {{.*}}[%[[ROW]], 0] [1, 16] [1, 1] : tensor<1x16xf32> into tensor<12x16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c8
// CHECK: tensor.extract_slice %[[PACKED]]
// CHECK: vector.contract {{.*}} : vector<4x4xf32>, vector<4x16xf32> into vector<4x16xf32>
func.func private @single_row(%a: tensor<?x24xf32> {graph.shape = #graph.shape<[m, 24]>}, %b: tensor<24x16xf32>) -> tensor<?x16xf32> attributes {graph.dims = {m = #graph.dim<1, 64>}, tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x24xf32>
  %e = tensor.empty(%m) : tensor<?x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<?x24xf32>, tensor<24x16xf32>) outs(%f : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %mm : tensor<?x16xf32>
}
loop.schedule @single_row target "cpu" {
  loop.tile [8, 16, 0] parallel
  loop.vectorize [4, 16, 4] depth [16] rows [8]
}
