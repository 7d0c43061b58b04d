// RUN: tessel-opt %s --loop-default-schedule=target=sm_90 --split-input-file | FileCheck %s
// RUN: tessel-opt %s --loop-default-schedule="target=sm_90 allow-tf32=true" --split-input-file | FileCheck %s --check-prefix=TF32

// An elementwise kernel: outer loops one index per block; each thread takes
// a vector of 16 bytes (4 f32) along the inner loop, which 4 divides, and
// blocks hold 256 threads' worth of it (1000 <= 1024: the whole loop). The
// width is a knob that the thread tile shares, up to 4 (16 bytes).
// CHECK-LABEL: func.func private @ew
// CHECK: loop.schedule @ew target "sm_90" {
// CHECK-NEXT: loop.tile [1, 1000] mapping [#gpu.block<y>, #gpu.block<x>]
// CHECK-NEXT: %[[V:.*]] = loop.knob "vector" = 4 choices [1, 2, 4]
// CHECK-NEXT: loop.tile [0, %[[V]]] mapping [#gpu.thread<x>]
// CHECK-NEXT: loop.vector_access width [%[[V]]]
// CHECK-NEXT: }
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @ew(%a: tensor<512x1000xf32>) -> tensor<512x1000xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<512x1000xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<512x1000xf32>) outs(%e : tensor<512x1000xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<512x1000xf32>
  return %0 : tensor<512x1000xf32>
}

// -----

// The widest element sets the width: a cast of f16 to f32 moves 4 points
// (8 bytes of f16, 16 of f32). Blocks of 1024 points (a divisor of 8192),
// so a width of 1 would still fit the 1024-thread limit.
// CHECK-LABEL: func.func private @cast
// CHECK: loop.tile [1, 1024] mapping [#gpu.block<y>, #gpu.block<x>]
// CHECK-NEXT: %[[V:.*]] = loop.knob "vector" = 4 choices [1, 2, 4]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @cast(%a: tensor<64x8192xf16>) -> tensor<64x8192xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x8192xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x8192xf16>) outs(%e : tensor<64x8192xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<64x8192xf32>
  return %0 : tensor<64x8192xf32>
}

// -----

// f16 alone takes 8 points; blocks of 2048 points, which a width below 2
// would give more than 1024 threads.
// CHECK-LABEL: func.func private @half
// CHECK: loop.tile [2048] mapping [#gpu.block<x>]
// CHECK-NEXT: %[[V:.*]] = loop.knob "vector" = 8 choices [2, 4, 8]
// CHECK-NEXT: loop.tile [%[[V]]] mapping [#gpu.thread<x>]
// CHECK-NEXT: loop.vector_access width [%[[V]]]
#id1 = affine_map<(d0) -> (d0)>
func.func private @half(%a: tensor<65536xf16>) -> tensor<65536xf16> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<65536xf16>
  %0 = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : tensor<65536xf16>) outs(%e : tensor<65536xf16>) {
  ^bb0(%x: f16, %o: f16):
    %y = arith.negf %x : f16
    linalg.yield %y : f16
  } -> tensor<65536xf16>
  return %0 : tensor<65536xf16>
}

// -----

// Four loops: the grid takes the inner three, and a vector thread walks the
// outermost a point at a time (a sequential tile of 1), so that its tile is
// one vector. The inner loop's 64 points are 8 threads' vectors, so blocks
// take 16 points of the next loop too, on threads along y (128 threads).
// CHECK-LABEL: func.func private @heads
// CHECK: loop.tile [0, 1, 16, 64] mapping [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]
// CHECK-NEXT: %[[V:.*]] = loop.knob "vector" = 8 choices [1, 2, 4, 8]
// CHECK-NEXT: loop.tile [0, 0, 1, %[[V]]] mapping [#gpu.thread<y>, #gpu.thread<x>]
// CHECK-NEXT: loop.tile [1, 0, 0, 0]{{$}}
// CHECK-NEXT: loop.vector_access width [%[[V]]]
#in = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func private @heads(%a: tensor<8x16x12x64xf16>) -> tensor<8x12x16x64xf16> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<8x12x16x64xf16>
  %0 = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : tensor<8x16x12x64xf16>) outs(%e : tensor<8x12x16x64xf16>) {
  ^bb0(%x: f16, %o: f16):
    linalg.yield %x : f16
  } -> tensor<8x12x16x64xf16>
  return %0 : tensor<8x12x16x64xf16>
}

// -----

// An odd inner loop has no vector width that divides it: one point per
// thread, blocks of 256 (999 has no divisor in [128, 256]).
// CHECK-LABEL: func.func private @odd
// CHECK: loop.schedule @odd target "sm_90" {
// CHECK-NEXT: loop.tile [1, 256] mapping [#gpu.block<y>, #gpu.block<x>]
// CHECK-NEXT: loop.tile [0, 1] mapping [#gpu.thread<x>]
// CHECK-NEXT: }
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @odd(%a: tensor<512x999xf32>) -> tensor<512x999xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<512x999xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<512x999xf32>) outs(%e : tensor<512x999xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<512x999xf32>
  return %0 : tensor<512x999xf32>
}

// -----

// A reduction kernel whose root is elementwise over the reduced rows (the
// end of a softmax): one row per block, its 1000 columns shared by 128
// threads (about four or more each, at most 256), reductions through warp
// shuffles.
// CHECK-LABEL: func.func private @rows
// CHECK: loop.schedule @rows target "sm_90" {
// CHECK-NEXT: %[[T:.*]] = loop.knob "threads" = 128 choices [32, 64, 128, 256, 512, 1024]
// CHECK-NEXT: loop.tile [1, 0] mapping [#gpu.block<x>]
// CHECK-NEXT: loop.warp_reduce threads [%[[T]]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#in = affine_map<(d0, d1, d2) -> (d0, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func private @rows(%a: tensor<512x1000xf32>) -> tensor<512x1000xf32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<512x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<512x1xf32>) -> tensor<512x1xf32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : tensor<512x1000xf32>) outs(%f : tensor<512x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<512x1xf32>
  %e = tensor.empty() : tensor<512x1000xf32>
  %0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %s : tensor<512x1000xf32>, tensor<512x1xf32>) outs(%e : tensor<512x1000xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %y = arith.divf %x, %t : f32
    linalg.yield %y : f32
  } -> tensor<512x1000xf32>
  return %0 : tensor<512x1000xf32>
}

// -----

// Rows whose reduction is an f16 sum (f32 shuffles would round it
// differently) keep the fallback: each thread walks one whole row, 64 rows
// per block.
// CHECK-LABEL: func.func private @introws
// CHECK: loop.schedule @introws target "sm_90" {
// CHECK-NEXT: loop.tile [64, 0] mapping [#gpu.block<x>]
// CHECK-NEXT: loop.tile [1, 0] mapping [#gpu.thread<x>]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#in = affine_map<(d0, d1, d2) -> (d0, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func private @introws(%a: tensor<512x1000xf16>) -> tensor<512x1000xf16> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f16
  %e1 = tensor.empty() : tensor<512x1xf16>
  %f = linalg.fill ins(%zero : f16) outs(%e1 : tensor<512x1xf16>) -> tensor<512x1xf16>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : tensor<512x1000xf16>) outs(%f : tensor<512x1xf16>) {
  ^bb0(%x: f16, %acc: f16):
    %y = arith.addf %acc, %x : f16
    linalg.yield %y : f16
  } -> tensor<512x1xf16>
  %e = tensor.empty() : tensor<512x1000xf16>
  %0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %s : tensor<512x1000xf16>, tensor<512x1xf16>) outs(%e : tensor<512x1000xf16>) {
  ^bb0(%x: f16, %t: f16, %o: f16):
    %y = arith.divf %x, %t : f16
    linalg.yield %y : f16
  } -> tensor<512x1000xf16>
  return %0 : tensor<512x1000xf16>
}

// -----

// A root that reduces rows (a sum over the last axis, keeping it): one
// block per row, whose threads share it (loop.warp_reduce) rather than one
// thread per row reading it with strides.
// CHECK-LABEL: func.func private @sum
// CHECK: loop.schedule @sum target "sm_90" {
// CHECK-NEXT: %[[T:.*]] = loop.knob "threads" = 128
// CHECK-NEXT: loop.tile [1, 1, 0] mapping [#gpu.block<y>, #gpu.block<x>]
// CHECK-NEXT: loop.warp_reduce threads [%[[T]]]
#in = affine_map<(d0, d1, d2) -> (d0, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func private @sum(%a: tensor<512x1000xf32>) -> tensor<512x1xf32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<512x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<512x1xf32>) -> tensor<512x1xf32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : tensor<512x1000xf32>) outs(%f : tensor<512x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<512x1xf32>
  return %s : tensor<512x1xf32>
}

// -----

// Rows whose length is a size symbol are shared by a block's threads as
// static ones are, the thread count from their largest length.
// CHECK-LABEL: func.func private @sum_over_symbol
// CHECK: loop.schedule @sum_over_symbol target "sm_90" {
// CHECK-NEXT: %[[T:.*]] = loop.knob "threads" = 512
// CHECK-NEXT: loop.tile [1, 1, 0] mapping [#gpu.block<y>, #gpu.block<x>]
// CHECK-NEXT: loop.warp_reduce threads [%[[T]]]
#in = affine_map<(d0, d1, d2) -> (d0, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func private @sum_over_symbol(%a: tensor<512x?xf32> {graph.shape = #graph.shape<[512, s]>}) -> tensor<512x1xf32>
    attributes {graph.dims = {s = #graph.dim<1, 8192>}, tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<512x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<512x1xf32>) -> tensor<512x1xf32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : tensor<512x?xf32>) outs(%f : tensor<512x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<512x1xf32>
  return %s : tensor<512x1xf32>
}

// -----

// A root that reduces columns: a thread per column, which walks it (the
// threads of a warp read adjacent columns) and may unroll the walk (a knob
// left at 1).
// CHECK-LABEL: func.func private @column_sum
// CHECK: loop.schedule @column_sum target "sm_90" {
// CHECK-NEXT: loop.tile [256, 0] mapping [#gpu.block<x>]
// CHECK-NEXT: loop.tile [1, 0] mapping [#gpu.thread<x>]
// CHECK-NEXT: %[[U:.*]] = loop.knob "unroll" = 1 choices [1, 2, 4, 8]
// CHECK-NEXT: loop.unroll factor [%[[U]]]
#in = affine_map<(d0, d1) -> (d1, d0)>
#out = affine_map<(d0, d1) -> (d0)>
func.func private @column_sum(%a: tensor<1000x512xf32>) -> tensor<512xf32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<512xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<512xf32>) -> tensor<512xf32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<1000x512xf32>) outs(%f : tensor<512xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<512xf32>
  return %s : tensor<512xf32>
}

// -----

// A kernel that already has a schedule keeps it.
// CHECK-LABEL: func.func private @mine
// CHECK: loop.schedule @mine target "sm_90" {
// CHECK-NEXT: loop.tile [32, 32] mapping [#gpu.block<y>, #gpu.block<x>]
// CHECK-NEXT: }
// CHECK-NOT: loop.schedule
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @mine(%a: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
loop.schedule @mine target "sm_90" {
  loop.tile [32, 32] mapping [#gpu.block<y>, #gpu.block<x>]
}

// -----

// A sum to a scalar: loop.grid_reduce, in one part (a single block) when
// short, in rows of 4096 points when long.
// CHECK-LABEL: func.func private @scalar
// CHECK-LABEL: func.func private @long_scalar
// CHECK-LABEL: func.func private @f16_scalar
// CHECK: loop.schedule @scalar target "sm_90" {
// CHECK-NEXT: %[[P:.*]] = loop.knob "parts" = 1 choices [1, 2, 4, 8]
// CHECK-NEXT: %[[T:.*]] = loop.knob "threads" = 128 choices [32, 64, 128, 256, 512, 1024]
// CHECK-NEXT: loop.grid_reduce parts [%[[P]]] threads [%[[T]]]
// CHECK: loop.schedule @long_scalar target "sm_90" {
// CHECK-NEXT: loop.knob "parts" = 128 choices [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
// CHECK-NEXT: loop.knob "threads" = 256
// An f16 sum is not shuffled: nothing to distribute, no schedule; the
// kernel runs in one thread.
// CHECK-NOT: loop.schedule @f16_scalar
#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
#in2 = affine_map<(d0, d1) -> (d0, d1)>
#out2 = affine_map<(d0, d1) -> ()>
func.func private @scalar(%a: tensor<1000xf32>) -> tensor<f32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%a : tensor<1000xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
func.func private @long_scalar(%a: tensor<512x1024xf32>) -> tensor<f32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#in2, #out2], iterator_types = ["reduction", "reduction"]}
      ins(%a : tensor<512x1024xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
func.func private @f16_scalar(%a: tensor<1000xf16>) -> tensor<f16> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<f16>
  %f = linalg.fill ins(%zero : f16) outs(%e : tensor<f16>) -> tensor<f16>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%a : tensor<1000xf16>) outs(%f : tensor<f16>) {
  ^bb0(%x: f16, %acc: f16):
    %y = arith.addf %acc, %x : f16
    linalg.yield %y : f16
  } -> tensor<f16>
  return %s : tensor<f16>
}

// -----

// Sibling results (neither computes the other) are separate roots: the last
// result's schedule names no result, the other's names its index.
// CHECK-LABEL: func.func private @siblings
// CHECK: loop.schedule @siblings target "sm_90" {
// CHECK-NEXT: loop.tile [8] mapping [#gpu.block<x>]
// CHECK: loop.schedule @siblings result 0 target "sm_90" {
// CHECK-NEXT: loop.tile [8] mapping [#gpu.block<x>]
#id1 = affine_map<(d0) -> (d0)>
func.func private @siblings(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %1 = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.absf %x : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// An f16 matmul with an elementwise epilogue gets a tensor-core schedule:
// the largest tile (four 2x2 warps, four stages) that gives every SM a
// block; at 1024x2048 that is 128x64 (8 x 32 = 256 blocks), so K is not
// split (one part), though it may be.
// CHECK-LABEL: func.func private @mma
// CHECK: loop.schedule @mma target "sm_90" {
// CHECK-NEXT: %[[BM:.*]] = loop.knob "block_m" = 128 choices [32, 64, 128, 256]
// CHECK-NEXT: %[[BN:.*]] = loop.knob "block_n" = 64 choices [32, 64, 128, 192, 256]
// CHECK-NEXT: %[[BK:.*]] = loop.knob "block_k" = 32 choices [16, 32, 64]
// CHECK-NEXT: %[[WM:.*]] = loop.knob "warp_m" = 64 choices [16, 32, 64, 128]
// CHECK-NEXT: %[[WN:.*]] = loop.knob "warp_n" = 32 choices [16, 32, 64, 128, 192, 256]
// CHECK-NEXT: %[[ST:.*]] = loop.knob "stages" = 4 choices [1, 2, 3, 4, 5]
// CHECK-NEXT: %[[PAD:.*]] = loop.knob "pad" = 8 choices [0, 8, 16]
// CHECK-NEXT: %[[SK:.*]] = loop.knob "split_k" = 1 choices [1, 2, 4, 8, 16]
// CHECK-NEXT: loop.split_k parts [%[[SK]]]
// CHECK-NEXT: loop.tile [%[[BM]], %[[BN]]] mapping [#gpu.block<y>, #gpu.block<x>]
// CHECK-NEXT: loop.promote inputs [0, 1] pad [%[[PAD]]]
// CHECK-NEXT: loop.pipeline stages [%[[ST]]]
// CHECK-NEXT: loop.mma [%[[WM]], %[[WN]], %[[BK]]] shape [16, 8, 16]
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func private @mma(%a: tensor<1024x512xf16>, %b: tensor<512x2048xf16>, %bias: tensor<2048xf32>) -> tensor<1024x2048xf16> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x2048xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x2048xf32>) -> tensor<1024x2048xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<1024x512xf16>, tensor<512x2048xf16>) outs(%acc : tensor<1024x2048xf32>) -> tensor<1024x2048xf32>
  %e16 = tensor.empty() : tensor<1024x2048xf16>
  %0 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<1024x2048xf32>, tensor<2048xf32>) outs(%e16 : tensor<1024x2048xf16>) {
  ^bb0(%x: f32, %y: f32, %o: f16):
    %s = arith.addf %x, %y : f32
    %t = arith.truncf %s : f32 to f16
    linalg.yield %t : f16
  } -> tensor<1024x2048xf16>
  return %0 : tensor<1024x2048xf16>
}

// -----

// An f32 matmul stays exact f32 (one point per thread) unless allow-tf32
// lets tensor cores take it as tf32: mma.m16n8k8, pads of 16-byte rows.
// CHECK-LABEL: func.func private @f32mm
// CHECK-NOT: loop.mma
// TF32-LABEL: func.func private @f32mm
// TF32: loop.knob "pad" = 4 choices [0, 4, 8]
// TF32: loop.promote inputs [0, 1]
// TF32: loop.mma [%{{.*}}, %{{.*}}, %{{.*}}] shape [16, 8, 8]
func.func private @f32mm(%a: tensor<1024x512xf32>, %b: tensor<512x2048xf32>) -> tensor<1024x2048xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x2048xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x2048xf32>) -> tensor<1024x2048xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<1024x512xf32>, tensor<512x2048xf32>) outs(%acc : tensor<1024x2048xf32>) -> tensor<1024x2048xf32>
  return %mm : tensor<1024x2048xf32>
}

// -----

// Tensor-core copies move 16-byte rows of B: N = 250 is not a multiple of
// 8, so this matmul falls back to one point per thread.
// CHECK-LABEL: func.func private @odd
// CHECK: loop.schedule @odd target "sm_90" {
// CHECK-NEXT: loop.tile [1, 250, 0] mapping [#gpu.block<y>, #gpu.block<x>]
// CHECK-NOT: loop.mma
func.func private @odd(%a: tensor<250x512xf16>, %b: tensor<512x250xf16>) -> tensor<250x250xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<250x250xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<250x250xf32>) -> tensor<250x250xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<250x512xf16>, tensor<512x250xf16>) outs(%acc : tensor<250x250xf32>) -> tensor<250x250xf32>
  return %mm : tensor<250x250xf32>
}

// -----

// A batched contraction (batch, heads, m, n, k): heads go to grid z, the
// batch stays whole in the block, m and n are tiled for tensor cores.
// CHECK-LABEL: func.func private @attention_pv
// CHECK: loop.schedule @attention_pv target "sm_90" {
// CHECK: loop.tile [0, 1, %{{.*}}, %{{.*}}, 0] mapping [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]
// CHECK: loop.mma
#a = affine_map<(b, h, m, n, k) -> (b, h, m, k)>
#b = affine_map<(b, h, m, n, k) -> (b, h, k, n)>
#c = affine_map<(b, h, m, n, k) -> (b, h, m, n)>
func.func private @attention_pv(%p: tensor<8x12x1024x1024xf16>, %v: tensor<8x12x1024x64xf16>) -> tensor<8x12x1024x64xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x12x1024x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x12x1024x64xf32>) -> tensor<8x12x1024x64xf32>
  %0 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<8x12x1024x1024xf16>, tensor<8x12x1024x64xf16>) outs(%acc : tensor<8x12x1024x64xf32>) {
  ^bb0(%x: f16, %y: f16, %o: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %prod = arith.mulf %xf, %yf : f32
    %sum = arith.addf %o, %prod : f32
    linalg.yield %sum : f32
  } -> tensor<8x12x1024x64xf32>
  return %0 : tensor<8x12x1024x64xf32>
}

// -----

// A contraction whose B the kernel computes (a convolution's patches): the
// tensor-core schedule materializes it first (cp.async copies read memory);
// A, the filter, is shared by the batch.
// CHECK-LABEL: func.func private @patches
// CHECK: loop.schedule @patches target "sm_90" {
// CHECK: %[[PAD:.*]] = loop.knob "pad"
// CHECK-NEXT: loop.materialize inputs [1]
// CHECK-NEXT: loop.tile [1, %{{.*}}, %{{.*}}, 0] mapping [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]
// CHECK: loop.mma
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

// -----

// A kernel without a root (it only concatenates its inputs) gets an empty
// schedule: the target, so that loop-apply-schedule gives its copies
// threads.
// CHECK-LABEL: loop.schedule @concat target "sm_90" {
// CHECK-NEXT: }
func.func private @concat(%a: tensor<8x32xf32>, %b: tensor<8x16xf32>) -> tensor<8x48xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<8x48xf32>
  %c0 = tensor.insert_slice %a into %e[0, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<8x48xf32>
  %c1 = tensor.insert_slice %b into %c0[0, 32] [8, 16] [1, 1] : tensor<8x16xf32> into tensor<8x48xf32>
  return %c1 : tensor<8x48xf32>
}

// -----

// A transpose: its input is contiguous along the output's outer loop, so
// each thread takes a square of vector points, on threads along y and x
// (both sides set by the one knob, whose smaller values would need over
// 1024 threads), reading vectors of the input and writing vectors of the
// output.
// CHECK-LABEL: loop.schedule @transpose target "sm_90" {
// CHECK-NEXT: loop.tile [64, 64] mapping [#gpu.block<y>, #gpu.block<x>]
// CHECK-NEXT: %[[V:.*]] = loop.knob "vector" = 4 choices [2, 4]
// CHECK-NEXT: loop.tile [%[[V]], %[[V]]] mapping [#gpu.thread<y>, #gpu.thread<x>]
// CHECK-NEXT: loop.vector_access width [%[[V]]]
func.func private @transpose(%a: tensor<64x128xf32>) -> tensor<128x64xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<128x64xf32>
  %t = linalg.transpose ins(%a : tensor<64x128xf32>) outs(%e : tensor<128x64xf32>) permutation = [1, 0]
  return %t : tensor<128x64xf32>
}
