// The schedules are for 4 cores (the default is this machine's), and for 2
// where the prefix is TWO.
// RUN: tessel-opt %s --loop-default-schedule="target=cpu vector-bits=256 cores=4" --split-input-file | FileCheck %s
// RUN: tessel-opt %s --split-input-file -pass-pipeline='builtin.module(loop-default-schedule{target=cpu vector-bits=256 cores=4},loop-validate,loop-apply-schedule,canonicalize,cse)' | FileCheck %s --check-prefix=APPLY
// RUN: tessel-opt %s --loop-default-schedule="target=cpu vector-bits=512 cores=4" --split-input-file | FileCheck %s --check-prefix=AVX512
// RUN: tessel-opt %s --loop-default-schedule="target=cpu vector-bits=256 cores=2" --split-input-file | FileCheck %s --check-prefix=TWO

// A row-wise reduction kernel (a softmax): parallel tiles of about 16K
// points keep rows whole: 16 rows of 1024. The root (the division) is tiled
// and both reductions and the exp are fused into the tile, so a tile's rows
// stay in cache between the passes. Each reduction walks the tile row by
// row, keeping 32 partial results (four AVX2 vectors) across its loop, and
// combines them after it.
// On 2 cores the kernel (64K points) is small: one task per core, of 32
// rows (more tasks' starts cost more than they even out).
// TWO-LABEL: loop.schedule @softmax_rows target "cpu" {
// TWO-NEXT: loop.knob "tile_0" = 32
// CHECK-LABEL: func.func private @softmax_rows
// CHECK: loop.schedule @softmax_rows target "cpu" {
// CHECK-NEXT: %[[T:.*]] = loop.knob "tile_0" = 16 choices [1, 2, 4, 8, 16, 32, 64]
// CHECK-NEXT: %[[L:.*]] = loop.knob "lanes" = 32 choices [1, 8, 16, 32, 64]
// CHECK-NEXT: loop.tile [%[[T]], 0] parallel
// CHECK-NEXT: loop.split_reduction lanes [%[[L]]]
// CHECK-NEXT: }
// APPLY-LABEL: func.func private @softmax_rows
// APPLY: scf.forall (%{{.*}}) = (0) to (64) step (16) shared_outs
// APPLY-NOT: mapping
// APPLY: scf.for {{.*}} to %c16 step %c1
// APPLY: scf.for {{.*}} step %c32 iter_args({{.*}}) -> (vector<1x1x32xf32>)
// APPLY: arith.maximumf {{.*}} : vector<1x1x32xf32>
// APPLY: linalg.reduce
// APPLY: scf.for {{.*}} to %c16 step %c1
// APPLY: scf.for {{.*}} step %c32 iter_args({{.*}}) -> (vector<1x1x32xf32>)
// APPLY: math.exp {{.*}} : vector<1x1x32xf32>
// APPLY: arith.addf {{.*}} : vector<1x1x32xf32>
// APPLY: linalg.reduce
// APPLY: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// APPLY: arith.divf
// APPLY: scf.forall.in_parallel
// APPLY-NOT: linalg.generic
// APPLY: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#red_in = affine_map<(d0, d1, d2) -> (d0, d2)>
#red_out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func private @softmax_rows(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> attributes {tessel.kernel = "reduction"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64x1xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<64x1xf32>) -> tensor<64x1xf32>
  %m = linalg.generic {indexing_maps = [#red_in, #red_out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<64x1024xf32>) outs(%m0 : tensor<64x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.maximumf %acc, %in : f32
    linalg.yield %0 : f32
  } -> tensor<64x1xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x1xf32>) -> tensor<64x1xf32>
  %s = linalg.generic {indexing_maps = [#red_in, #red_out, #red_out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %m : tensor<64x1024xf32>, tensor<64x1xf32>) outs(%s0 : tensor<64x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %acc: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %acc, %1 : f32
    linalg.yield %2 : f32
  } -> tensor<64x1xf32>
  %e2 = tensor.empty() : tensor<64x1024xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %m, %s : tensor<64x1024xf32>, tensor<64x1xf32>, tensor<64x1xf32>) outs(%e2 : tensor<64x1024xf32>) {
  ^bb0(%in: f32, %mx: f32, %sum: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.divf %1, %sum : f32
    linalg.yield %2 : f32
  } -> tensor<64x1024xf32>
  return %r : tensor<64x1024xf32>
}

// -----

// A matmul kernel with an epilogue: knobs for the parts of K (parts of at
// least 16; too short a K to split by default), the result blocks (powers of
// two and divisors of M and N; 128 rows, as 256 would leave fewer than 4
// tiles; 64 columns, as 128 would leave 2 tiles for the 4 cores), the K
// block, the row block (by default one register block) and the register
// block; the matmul is fused into each parallel tile and vectorized, K
// (32) in one block: its register blocks start from the fill's zeros and
// go through the epilogue (the ReLU) on their way out.
// CHECK-LABEL: func.func private @matmul_relu
// CHECK: loop.schedule @matmul_relu target "cpu" {
// CHECK-NEXT: %[[SK:.*]] = loop.knob "split_k" = 1 choices [1, 2]
// CHECK-NEXT: %[[BM:.*]] = loop.knob "block_m" = 128 choices [8, 16, 32, 64, 128]
// CHECK-NEXT: %[[BN:.*]] = loop.knob "block_n" = 64 choices [8, 16, 32, 64, 128, 256]
// CHECK-NEXT: %[[BK:.*]] = loop.knob "block_k" = 32 choices [16, 32]
// CHECK-NEXT: %[[CM:.*]] = loop.knob "cache_m" = 8 choices [8, 16, 32, 64, 128]
// CHECK-NEXT: %[[RM:.*]] = loop.knob "reg_m" = 4 choices [1, 2, 4, 6, 8, 12, 16]
// CHECK-NEXT: %[[RN:.*]] = loop.knob "reg_n" = 16 choices [1, 2, 4, 8, 16, 24, 32, 48, 64]
// CHECK-NEXT: %[[RK:.*]] = loop.knob "reg_k" = 4 choices [1, 2, 4, 8, 16]
// CHECK-NEXT: loop.split_k parts [%[[SK]]]
// CHECK-NEXT: loop.tile [%[[BM]], %[[BN]]] parallel
// CHECK-NEXT: loop.vectorize [%[[RM]], %[[RN]], %[[RK]]] depth [%[[BK]]] rows [%[[CM]]]
// With AVX-512's 32 vector registers, register blocks of 8x32 (16 of them
// accumulators) and result blocks 256 columns wide (no narrower block of
// whole register blocks makes 4 tiles).
// AVX512-LABEL: loop.schedule @matmul_relu target "cpu" {
// AVX512: loop.knob "block_n" = 256
// AVX512: loop.knob "reg_m" = 8
// AVX512-NEXT: loop.knob "reg_n" = 32
// APPLY-LABEL: func.func private @matmul_relu
// APPLY: scf.forall (%{{.*}}) = (0) to (256) step (64)
// APPLY-NOT: linalg.fill
// APPLY: vector.contract {{.*}} : vector<4x4xf32>, vector<4x16xf32> into vector<4x16xf32>
// APPLY: arith.maximumf {{.*}} : vector<16xf32>
// APPLY-NOT: linalg.generic
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func private @matmul_relu(%a: tensor<128x32xf32>, %b: tensor<32x256xf32>) -> tensor<128x256xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x256xf32>) -> tensor<128x256xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<128x32xf32>, tensor<32x256xf32>) outs(%f : tensor<128x256xf32>) -> tensor<128x256xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<128x256xf32>) outs(%e : tensor<128x256xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %zero : f32
    linalg.yield %0 : f32
  } -> tensor<128x256xf32>
  return %r : tensor<128x256xf32>
}

// -----

// Prime sizes: blocks are powers of two below the extent or the extent
// itself; the register block is 8x8x4, not 4x16x4, as 53 columns pad to
// 56 in blocks of 8 and to 64 in blocks of 16; the tile's 37 rows are one
// row block (B read in place); loop.vectorize pads the tile to whole
// register blocks.
// CHECK-LABEL: func.func private @prime
// CHECK: loop.knob "block_m" = 37 choices [8, 16, 32, 37]
// CHECK-NEXT: loop.knob "block_n" = 53 choices [8, 16, 32, 53]
// CHECK-NEXT: loop.knob "block_k" = 29 choices [16, 29]
// CHECK-NEXT: loop.knob "cache_m" = 37 choices [8, 16, 32, 37]
// CHECK-NEXT: loop.knob "reg_m" = 8
// CHECK-NEXT: loop.knob "reg_n" = 8
// CHECK-NEXT: loop.knob "reg_k" = 4
// APPLY-LABEL: func.func private @prime
// APPLY: } : tensor<37x29xf32> to tensor<40x32xf32>
// APPLY: } : tensor<29x53xf32> to tensor<32x56xf32>
// APPLY: vector.contract {{.*}} : vector<8x4xf32>, vector<4x8xf32> into vector<8x8xf32>
// APPLY: tensor.extract_slice %{{.*}}[0, 0] [37, 53] [1, 1] : tensor<40x56xf32> to tensor<37x53xf32>
func.func private @prime(%a: tensor<37x29xf32>, %b: tensor<29x53xf32>) -> tensor<37x53xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37x53xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<37x53xf32>) -> tensor<37x53xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<37x29xf32>, tensor<29x53xf32>) outs(%f : tensor<37x53xf32>) -> tensor<37x53xf32>
  return %mm : tensor<37x53xf32>
}

// -----

// Where the power-of-two block would leave a padded edge tile and a divisor
// of the extent within a factor of two is whole register blocks, the
// divisor (the largest below the power of two first):
// 3136 columns (a 3x3 convolution's 56x56 pixels) in blocks of 112 (AVX2,
// 16-column register blocks) or 224 (AVX-512, 32), not 128 or 256. The
// 96 rows are one block, but where that leaves tiles that the 4 cores
// cannot share evenly (14 of 224 columns), blocks of 48 (28 tiles).
// CHECK-LABEL: func.func private @divisor_blocks
// CHECK: loop.knob "block_m" = 96 choices
// CHECK-NEXT: loop.knob "block_n" = 112 choices
// AVX512-LABEL: func.func private @divisor_blocks
// AVX512: loop.knob "block_m" = 48 choices
// AVX512-NEXT: loop.knob "block_n" = 224 choices
func.func private @divisor_blocks(%a: tensor<96x576xf32>, %b: tensor<576x3136xf32>) -> tensor<96x3136xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x3136xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<96x3136xf32>) -> tensor<96x3136xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<96x576xf32>, tensor<576x3136xf32>) outs(%f : tensor<96x3136xf32>) -> tensor<96x3136xf32>
  return %mm : tensor<96x3136xf32>
}

// -----

// No divisor of 784 columns (a 1x1 convolution over 28x28) near the default
// is whole AVX-512 register blocks (32), so the widest divisor that is
// whole half blocks (112 = 7 x 16), in 16x16 register blocks, not 392
// padded to 400: unpadded tiles compute their epilogue on the register
// blocks. (AVX2's 16-column blocks take 112 anyway.)
// CHECK-LABEL: func.func private @half_blocks
// CHECK: loop.knob "block_n" = 112 choices
// AVX512-LABEL: func.func private @half_blocks
// AVX512: loop.knob "block_n" = 112 choices
// AVX512: loop.knob "reg_m" = 16 choices
// AVX512-NEXT: loop.knob "reg_n" = 16 choices
func.func private @half_blocks(%a: tensor<192x32xf32>, %b: tensor<32x784xf32>) -> tensor<192x784xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<192x784xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<192x784xf32>) -> tensor<192x784xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<192x32xf32>, tensor<32x784xf32>) outs(%f : tensor<192x784xf32>) -> tensor<192x784xf32>
  return %mm : tensor<192x784xf32>
}

// -----

// 1000 is a multiple of no power-of-two block. Rows in blocks that divide
// it in whole register blocks, so that every tile is whole (AVX2: 500 =
// 125 x 4; AVX-512: 200 = 25 x 8); no divisor near the default is whole
// register blocks of columns (16; 32), so columns in power-of-two blocks
// (128; 256), whose partial edge tile alone loop.vectorize pads. K in 2
// equal blocks of 500 (of at most 512, in whole register blocks of 4).
// CHECK-LABEL: func.func private @thousand
// CHECK: loop.knob "block_m" = 500 choices
// CHECK-NEXT: loop.knob "block_n" = 128 choices
// APPLY-LABEL: func.func private @thousand
// APPLY: scf.forall ({{.*}}) = (0, 0) to (1000, 1000) step (500, 128)
// APPLY: scf.if
// APPLY: scf.for %{{.*}} = %c0 to %c1000 step %c500
// APPLY: } else {
// APPLY: tensor.pad
// AVX512-LABEL: func.func private @thousand
// AVX512: loop.knob "block_m" = 200 choices
// AVX512-NEXT: loop.knob "block_n" = 256 choices
func.func private @thousand(%a: tensor<1000x1000xf32>, %b: tensor<1000x1000xf32>) -> tensor<1000x1000xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1000x1000xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1000x1000xf32>) -> tensor<1000x1000xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<1000x1000xf32>, tensor<1000x1000xf32>) outs(%f : tensor<1000x1000xf32>) -> tensor<1000x1000xf32>
  return %mm : tensor<1000x1000xf32>
}

// -----

// A kernel that fits one tile gets no schedule and is left whole; functions
// that are not kernels are never scheduled.
// CHECK-LABEL: func.func private @small
// CHECK-NOT: loop.schedule
// APPLY-LABEL: func.func private @small
// APPLY-NOT: scf.forall
// APPLY-LABEL: func.func @host
// APPLY-NOT: scf.forall
#id3 = affine_map<(d0) -> (d0)>
func.func private @small(%x: tensor<16xf32>) -> tensor<16xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
func.func @host(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %e = tensor.empty() : tensor<4096xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel"]} ins(%x : tensor<4096xf32>) outs(%e : tensor<4096xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<4096xf32>
  return %r : tensor<4096xf32>
}

// -----

// A contraction other than linalg.matmul (batched, as a generic): blocks of
// the last two parallel loops, batch by 1, no vectorization. A fused
// producer the kernel also returns is yielded by the loop.
// CHECK-LABEL: func.func private @returned_producer
// CHECK: loop.schedule @returned_producer target "cpu" {
// CHECK-NEXT: %[[BM:.*]] = loop.knob "block_m" = 4 choices [1, 2, 4]
// CHECK-NEXT: %[[BN:.*]] = loop.knob "block_n" = 3 choices [1, 2, 3]
// CHECK-NEXT: loop.tile [1, %[[BM]], %[[BN]]] parallel
// APPLY-LABEL: func.func private @returned_producer
// APPLY: %[[L:.*]]:2 = scf.forall
// APPLY: return %[[L]]#{{.*}}, %[[L]]#{{.*}}
#c_in = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#c_w = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#c_out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#e = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func private @returned_producer(%x: tensor<2x4x5xf32>, %w: tensor<2x5x3xf32>) -> (tensor<2x4x3xf32>, tensor<2x4x3xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %mm = linalg.generic {indexing_maps = [#c_in, #c_w, #c_out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<2x4x5xf32>, tensor<2x5x3xf32>) outs(%f : tensor<2x4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %c, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x4x3xf32>
  %n = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel", "parallel"]} ins(%mm : tensor<2x4x3xf32>) outs(%e : tensor<2x4x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %0 = arith.negf %a : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x3xf32>
  return %mm, %n : tensor<2x4x3xf32>, tensor<2x4x3xf32>
}

// -----

// Rows of 1000 in 32 lanes: the reduction splits the first 992 columns
// into vectors of partial results; the last 8 are reduced after them, by a
// copy of the reduction that starts from their sum. A tile's points count
// the reduced columns: 16 rows of 1000.
// CHECK-LABEL: func.func private @row_sums_remainder
// CHECK: loop.knob "tile_0" = 16
// CHECK: loop.knob "lanes" = 32 choices [1, 8, 16, 32, 64]
// APPLY-LABEL: func.func private @row_sums_remainder
// APPLY: scf.forall (%{{.*}}) = (0) to (64) step (16)
// APPLY: %[[ROWS:.*]] = tensor.extract_slice %arg0[%{{.*}}, 0] [16, 1000] [1, 1]
// APPLY: %[[HEAD:.*]] = tensor.extract_slice %[[ROWS]][0, 0] [16, 992] [1, 1]
// APPLY: %[[SUMS:.*]] = scf.for
// APPLY: scf.for {{.*}} to %c992 step %c32 iter_args({{.*}}) -> (vector<1x32xf32>)
// APPLY: linalg.reduce
// APPLY: %[[TAIL:.*]] = tensor.extract_slice %[[ROWS]][0, 992] [16, 8] [1, 1]
// APPLY: linalg.generic {{.*}} ins(%[[TAIL]] : tensor<16x8xf32>) outs(%[[SUMS]] : tensor<16xf32>)
#rs_in = affine_map<(d0, d1) -> (d0, d1)>
#rs_out = affine_map<(d0, d1) -> (d0)>
func.func private @row_sums_remainder(%a: tensor<64x1000xf32>) -> tensor<64xf32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %0 = linalg.generic {indexing_maps = [#rs_in, #rs_out], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<64x1000xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

// Two roots, a row max (result 0) and an elementwise op on the same input:
// each gets a schedule with loop.split_reduction, and the reduction is
// split once, by its own root's schedule (11 columns: 8 lanes, then 3).
// CHECK-LABEL: func.func private @two_roots
// CHECK: loop.schedule @two_roots target "cpu" {
// CHECK: loop.split_reduction
// CHECK: loop.schedule @two_roots result 0 target "cpu" {
// CHECK: loop.split_reduction
// APPLY-LABEL: func.func private @two_roots
// APPLY: arith.maxsi {{.*}} : vector<1x8xi32>
// APPLY-NOT: arith.maxsi {{.*}} : vector
// APPLY: linalg.generic {{.*}} ins(%{{.*}} : tensor<6x3xi32>)
// APPLY: return
#tr_in = affine_map<(d0, d1) -> (d0, d1)>
#tr_out = affine_map<(d0, d1) -> (d0)>
func.func private @two_roots(%a: tensor<6x11xi32>) -> (tensor<6xi32>, tensor<6x11xi32>) attributes {tessel.kernel = "reduction"} {
  %min = arith.constant -2147483648 : i32
  %e = tensor.empty() : tensor<6xi32>
  %f = linalg.fill ins(%min : i32) outs(%e : tensor<6xi32>) -> tensor<6xi32>
  %max = linalg.generic {indexing_maps = [#tr_in, #tr_out], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<6x11xi32>) outs(%f : tensor<6xi32>) {
  ^bb0(%x: i32, %acc: i32):
    %y = arith.maxsi %acc, %x : i32
    linalg.yield %y : i32
  } -> tensor<6xi32>
  %e2 = tensor.empty() : tensor<6x11xi32>
  %abs = linalg.generic {indexing_maps = [#tr_in, #tr_in], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<6x11xi32>) outs(%e2 : tensor<6x11xi32>) {
  ^bb0(%x: i32, %o: i32):
    %y = math.absi %x : i32
    linalg.yield %y : i32
  } -> tensor<6x11xi32>
  return %max, %abs : tensor<6xi32>, tensor<6x11xi32>
}

// -----

// A root that walks its input across rows (x.T + 1 per batch): square
// tiles of its innermost loop and of the loop along the input's rows, the
// batch by 1, so each tile reads 64 whole lines of 64 rows, not one line
// per point as tiles of whole result rows would.
// A small one is one tile.
// CHECK-LABEL: func.func private @small_transpose
// CHECK: loop.schedule @transposing target "cpu" {
// CHECK-NEXT: %[[A:.*]] = loop.knob "tile_1" = 64 choices [1, 2, 4, 8, 16, 32, 64, 128, 256]
// CHECK-NEXT: %[[B:.*]] = loop.knob "tile_2" = 64 choices [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]
// CHECK-NEXT: loop.tile [1, %[[A]], %[[B]]] parallel
// CHECK-NEXT: }
// CHECK-NOT: loop.schedule
// APPLY-LABEL: func.func private @transposing
// APPLY: scf.forall ({{.*}}) = (0, 0, 0) to (2, 256, 300) step (1, 64, 64)
// APPLY: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x?x64xf32>) outs(%{{.*}} : tensor<1x64x?xf32>)
#tp_in = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#tp_id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func private @transposing(%x: tensor<2x300x256xf32>) -> tensor<2x256x300xf32> attributes {tessel.kernel = "elementwise"} {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<2x256x300xf32>
  %r = linalg.generic {indexing_maps = [#tp_in, #tp_id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x300x256xf32>) outs(%e : tensor<2x256x300xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %one : f32
    linalg.yield %0 : f32
  } -> tensor<2x256x300xf32>
  return %r : tensor<2x256x300xf32>
}
func.func private @small_transpose(%x: tensor<64x32xf32>) -> tensor<32x64xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<32x64xf32>
  %r = linalg.transpose ins(%x : tensor<64x32xf32>) outs(%e : tensor<32x64xf32>) permutation = [1, 0]
  return %r : tensor<32x64xf32>
}

// -----

// x - mean(x, axis=0): the column sums are broadcast along the rows, so a
// tile keeps the rows whole (tiles of a few rows would each sum the whole
// input again) and takes strips of the columns: a quarter of them, wide
// runs of each row. The column sum reduces across rows: no vectors of
// partial results along them (loop.split_reduction), which would gather an
// element per row.
// CHECK-LABEL: func.func private @centered
// CHECK: loop.schedule @centered target "cpu" {
// CHECK-NEXT: %[[T:.*]] = loop.knob "tile_1" = 256 choices [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
// CHECK-NEXT: loop.tile [0, %[[T]]] parallel
// CHECK-NEXT: }
// APPLY-LABEL: func.func private @centered
// APPLY: scf.forall (%[[J:.*]]) = (0) to (1024) step (256)
// APPLY: linalg.generic {{.*}} ins(%{{.*}} : tensor<256x256xf32>) outs(%{{.*}} : tensor<1x256xf32>)
// APPLY: arith.addf
// APPLY: linalg.generic {{.*}} outs(%{{.*}} : tensor<256x256xf32>)
// APPLY: arith.subf
#c_in = affine_map<(d0, d1, d2) -> (d2, d1)>
#c_out = affine_map<(d0, d1, d2) -> (d0, d1)>
#c_id = affine_map<(d0, d1) -> (d0, d1)>
#c_bc = affine_map<(d0, d1) -> (0, d1)>
func.func private @centered(%x: tensor<256x1024xf32>) -> tensor<256x1024xf32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 3.906250e-03 : f32
  %e1 = tensor.empty() : tensor<1x1024xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %s = linalg.generic {indexing_maps = [#c_in, #c_out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<256x1024xf32>) outs(%f : tensor<1x1024xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  } -> tensor<1x1024xf32>
  %e2 = tensor.empty() : tensor<256x1024xf32>
  %r = linalg.generic {indexing_maps = [#c_id, #c_bc, #c_id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<256x1024xf32>, tensor<1x1024xf32>) outs(%e2 : tensor<256x1024xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %0 = arith.mulf %sum, %scale : f32
    %1 = arith.subf %in, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<256x1024xf32>
  return %r : tensor<256x1024xf32>
}

// -----

// A row mean: the root scales 64 sums, but each of its points carries a
// reduction of 1000 fused into its tile: tiles of 16 rows.
// CHECK-LABEL: func.func private @row_means
// CHECK: loop.schedule @row_means target "cpu" {
// CHECK-NEXT: %[[T:.*]] = loop.knob "tile_0" = 16
// CHECK-NEXT: %[[L:.*]] = loop.knob "lanes" = 32
// CHECK-NEXT: loop.tile [%[[T]]] parallel
// CHECK-NEXT: loop.split_reduction lanes [%[[L]]]
#m_in = affine_map<(d0, d1) -> (d0, d1)>
#m_out = affine_map<(d0, d1) -> (d0)>
#m_id = affine_map<(d0) -> (d0)>
func.func private @row_means(%x: tensor<64x1000xf32>) -> tensor<64xf32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 1.000000e-03 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#m_in, #m_out], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x1000xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  } -> tensor<64xf32>
  %r = linalg.generic {indexing_maps = [#m_id, #m_id], iterator_types = ["parallel"]} ins(%s : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %scale : f32
    linalg.yield %0 : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

// A 1-D softmax of 2^20 points: its max and sum reduce to single values,
// each split into 32 rows of 32768 (loop.grid_reduce) and walked in lanes;
// computed once, they no longer keep the root's loop whole, which is tiled
// like an elementwise kernel.
// CHECK-LABEL: func.func private @softmax_1d
// CHECK: loop.schedule @softmax_1d target "cpu" {
// CHECK-NEXT: %[[P:.*]] = loop.knob "parts" = 32 choices [1, 2, 4, 8, 16, 32, 64]
// CHECK-NEXT: loop.grid_reduce parts [%[[P]]]{{$}}
// CHECK-NEXT: %[[T:.*]] = loop.knob "tile_0" = 16384
// CHECK-NEXT: %[[L:.*]] = loop.knob "lanes" = 32
// CHECK-NEXT: loop.tile [%[[T]]] parallel
// CHECK-NEXT: loop.split_reduction lanes [%[[L]]]
// APPLY-LABEL: func.func private @softmax_1d
// APPLY: scf.forall (%{{.*}}) in (32) {{.*}} -> (tensor<32xf32>)
// APPLY: arith.maximumf %{{.*}} : vector<1x32xf32>
// APPLY: linalg.generic {{.*}}iterator_types = ["reduction"]
// APPLY: scf.forall (%{{.*}}) in (32) {{.*}} -> (tensor<32xf32>)
// APPLY: math.exp
// APPLY: arith.addf %{{.*}} : vector<1x32xf32>
// APPLY: linalg.generic {{.*}}iterator_types = ["reduction"]
// APPLY: scf.forall (%{{.*}}) = (0) to (1048576) step (16384)
// APPLY: math.exp
// APPLY: arith.divf
#s_in = affine_map<(d0) -> (d0)>
#s_out = affine_map<(d0) -> ()>
func.func private @softmax_1d(%x: tensor<1048576xf32>) -> tensor<1048576xf32> attributes {tessel.kernel = "reduction"} {
  %lowest = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %fm = linalg.fill ins(%lowest : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %m = linalg.generic {indexing_maps = [#s_in, #s_out], iterator_types = ["reduction"]} ins(%x : tensor<1048576xf32>) outs(%fm : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.maximumf %acc, %in : f32
    linalg.yield %0 : f32
  } -> tensor<f32>
  %e = tensor.empty() : tensor<1048576xf32>
  %ex = linalg.generic {indexing_maps = [#s_in, #s_out, #s_in], iterator_types = ["parallel"]} ins(%x, %m : tensor<1048576xf32>, tensor<f32>) outs(%e : tensor<1048576xf32>) {
  ^bb0(%in: f32, %max: f32, %out: f32):
    %0 = arith.subf %in, %max : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1048576xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#s_in, #s_out], iterator_types = ["reduction"]} ins(%ex : tensor<1048576xf32>) outs(%fs : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  } -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#s_in, #s_out, #s_in], iterator_types = ["parallel"]} ins(%ex, %s : tensor<1048576xf32>, tensor<f32>) outs(%e : tensor<1048576xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %0 = arith.divf %in, %sum : f32
    linalg.yield %0 : f32
  } -> tensor<1048576xf32>
  return %r : tensor<1048576xf32>
}

// -----

// A sum of 2^17 - 1 points, a prime: no part count divides it, so one core
// sums it in vectors of partial results.
// CHECK-LABEL: func.func private @odd_sum
// CHECK: loop.schedule @odd_sum target "cpu" {
// CHECK-NEXT: %[[L:.*]] = loop.knob "lanes" = 32
// CHECK-NEXT: loop.split_reduction lanes [%[[L]]]
// CHECK-NEXT: }
#o_in = affine_map<(d0) -> (d0)>
#o_out = affine_map<(d0) -> ()>
func.func private @odd_sum(%x: tensor<131071xf32>) -> tensor<f32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#o_in, #o_out], iterator_types = ["reduction"]} ins(%x : tensor<131071xf32>) outs(%f : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A pooling's tiles are whole rows of the divisor of its 56 rows nearest
// the preferred 32, so that they are static (cpu-vectorize-convolutions
// takes only those).
// CHECK-LABEL: func.func private @max_pooling
// CHECK: loop.knob "tile_2" = 28 choices [1, 2, 4, 8, 16, 28, 32, 56]
// APPLY-LABEL: func.func private @max_pooling
// APPLY: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 56) step (1, 28)
// APPLY: linalg.pooling_nchw_max {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x1x57x113xf32>, tensor<3x3xf32>) outs(%{{.*}} : tensor<1x1x28x56xf32>)
func.func private @max_pooling(%x: tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32> attributes {tessel.kernel = "reduction"} {
  %inf = arith.constant 0xFF800000 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %inf : f32
  } : tensor<1x64x112x112xf32> to tensor<1x64x114x114xf32>
  %w = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<1x64x56x56xf32>
  %f = linalg.fill ins(%inf : f32) outs(%e : tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32>
  %r = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%p, %w : tensor<1x64x114x114xf32>, tensor<3x3xf32>) outs(%f : tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32>
  return %r : tensor<1x64x56x56xf32>
}
