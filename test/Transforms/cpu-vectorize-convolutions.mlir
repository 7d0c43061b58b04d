// RUN: tessel-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cpu-vectorize-convolutions),canonicalize,cse)' | FileCheck %s

// A depthwise 3x3 convolution (as graph-to-linalg writes a grouped one:
// loops n, g, f, oh, ow, c, kh, kw) becomes loops over n, g and oh around
// one vector of the 8 output columns: read once, 9 FMAs of an input row's
// run with a broadcast weight, written once.
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT: linalg.generic
// CHECK: scf.for %[[G:.*]] = %c0 to %c4 step %c1
// CHECK: scf.for %[[OH:.*]] = %c0 to %c8 step %c1
// CHECK: %[[ACC:.*]] = vector.transfer_read %{{.*}}[%c0, %[[G]], %c0, %[[OH]], %c0], %{{.*}} {in_bounds = [true]} : tensor<1x4x1x8x8xf32>, vector<8xf32>
// CHECK: %[[ROW:.*]] = vector.transfer_read %arg0[%c0, %[[G]], %c0, %[[OH]], %c0], %{{.*}} {in_bounds = [true]} : tensor<1x4x1x10x10xf32>, vector<8xf32>
// CHECK: %[[W:.*]] = tensor.extract %arg1[%[[G]], %c0, %c0, %c0, %c0] : tensor<4x1x1x3x3xf32>
// CHECK: %[[WV:.*]] = vector.broadcast %[[W]] : f32 to vector<8xf32>
// CHECK: %[[S:.*]] = vector.fma %[[ROW]], %[[WV]], %[[ACC]] : vector<8xf32>
// CHECK-COUNT-8: vector.fma
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%c0, %[[G]], %c0, %[[OH]], %c0] {in_bounds = [true]} : vector<8xf32>, tensor<1x4x1x8x8xf32>
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#filter = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
func.func @depthwise(%x: tensor<1x4x1x10x10xf32>, %w: tensor<4x1x1x3x3xf32>, %o: tensor<1x4x1x8x8xf32>) -> tensor<1x4x1x8x8xf32> {
  %r = linalg.generic {indexing_maps = [#in, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x4x1x10x10xf32>, tensor<4x1x1x3x3xf32>) outs(%o : tensor<1x4x1x8x8xf32>) {
  ^bb0(%in: f32, %f: f32, %out: f32):
    %m = arith.mulf %in, %f : f32
    %a = arith.addf %out, %m : f32
    linalg.yield %a : f32
  } -> tensor<1x4x1x8x8xf32>
  return %r : tensor<1x4x1x8x8xf32>
}

// -----

// Stride 2, two channels per group: a run reads twice its lanes (not their
// span of 7, which LLVM would load in pieces) and keeps every other one,
// masked where that passes the row's end (the last tap's, from column 2 of
// 9); the group's input channels are a loop.
// CHECK-LABEL: func.func @strided
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<4xf32>)
// CHECK: %[[ROW:.*]] = vector.transfer_read %arg0{{.*}}, %c0], %{{.*}} {in_bounds = [true]} : tensor<1x2x2x9x9xf32>, vector<8xf32>
// CHECK: vector.shuffle %[[ROW]], %[[ROW]] [0, 2, 4, 6] : vector<8xf32>, vector<8xf32>
// CHECK: %[[LAST:.*]] = vector.transfer_read %arg0{{.*}}, %c2], %{{[^ ]*}} : tensor<1x2x2x9x9xf32>, vector<8xf32>
// CHECK: vector.shuffle %[[LAST]], %[[LAST]] [0, 2, 4, 6] : vector<8xf32>, vector<8xf32>
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 * 2 + d6, d4 * 2 + d7)>
#filter = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
func.func @strided(%x: tensor<1x2x2x9x9xf32>, %w: tensor<2x1x2x3x3xf32>, %o: tensor<1x2x1x4x4xf32>) -> tensor<1x2x1x4x4xf32> {
  %r = linalg.generic {indexing_maps = [#in, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x2x2x9x9xf32>, tensor<2x1x2x3x3xf32>) outs(%o : tensor<1x2x1x4x4xf32>) {
  ^bb0(%in: f32, %f: f32, %out: f32):
    %m = arith.mulf %in, %f : f32
    %a = arith.addf %out, %m : f32
    linalg.yield %a : f32
  } -> tensor<1x2x1x4x4xf32>
  return %r : tensor<1x2x1x4x4xf32>
}

// -----

// A tile of a padded image (one channel, as loop-apply-schedule leaves a
// depthwise convolution) reads the image itself: a row out of its bounds is
// read clamped and selected away, and the columns out of bounds (known for
// each tap) are the padding: before the row, shuffled in, after it, masked
// (a whole vector is read: 7 columns would be loaded in pieces, and the
// centre tap reads the same vector). The padded copy is not read.
// CHECK-LABEL: func.func @padded
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x8x8xf32>, %{{.*}}: tensor<2x3x3xf32>, %{{.*}}: tensor<1x1x8x8xf32>, %[[C:.*]]: index)
// CHECK-DAG: %[[FILL:.*]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-NOT: tensor.pad
// CHECK: scf.for %[[OH:.*]] = %c0 to %c8 step %c1
// CHECK: %[[R:.*]] = arith.subi %[[OH]], %c1 : index
// CHECK: %[[BELOW:.*]] = arith.cmpi slt, %[[R]], %c8 : index
// CHECK: %[[ABOVE:.*]] = arith.cmpi sge, %[[R]], %c0 : index
// CHECK: %[[IN:.*]] = arith.andi %[[ABOVE]], %[[BELOW]] : i1
// CHECK: %[[LOW:.*]] = arith.maxsi %[[R]], %c0 : index
// CHECK: %[[ROW:.*]] = arith.minsi %[[LOW]], %c7 : index
// CHECK: %[[LEFT:.*]] = vector.transfer_read %[[X]][%c0, %[[C]], %[[ROW]], %c0], %{{.*}} {in_bounds = [true]} : tensor<1x2x8x8xf32>, vector<8xf32>
// CHECK: %[[SHIFTED:.*]] = vector.shuffle %[[LEFT]], %[[FILL]] [8, 0, 1, 2, 3, 4, 5, 6] : vector<8xf32>, vector<8xf32>
// CHECK: arith.select %[[IN]], %[[SHIFTED]], %[[FILL]] : vector<8xf32>
// CHECK: arith.select %[[IN]], %[[LEFT]], %[[FILL]] : vector<8xf32>
// CHECK: %[[RIGHT:.*]] = vector.transfer_read %[[X]][%c0, %[[C]], %[[ROW]], %c1], %{{[^ ]*}} : tensor<1x2x8x8xf32>, vector<8xf32>
// CHECK-NOT: vector.shuffle %[[RIGHT]]
// CHECK: arith.select %[[IN]], %[[RIGHT]], %[[FILL]] : vector<8xf32>
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
#filter = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
func.func @padded(%x: tensor<1x2x8x8xf32>, %w: tensor<2x3x3xf32>, %o: tensor<1x1x8x8xf32>, %c: index) -> tensor<1x1x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %s = tensor.extract_slice %p[0, %c, 0, 0] [1, 1, 10, 10] [1, 1, 1, 1] : tensor<1x2x10x10xf32> to tensor<1x1x10x10xf32>
  %ws = tensor.extract_slice %w[%c, 0, 0] [1, 3, 3] [1, 1, 1] : tensor<2x3x3xf32> to tensor<1x3x3xf32>
  %r = linalg.generic {indexing_maps = [#in, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%s, %ws : tensor<1x1x10x10xf32>, tensor<1x3x3xf32>) outs(%o : tensor<1x1x8x8xf32>) {
  ^bb0(%in: f32, %f: f32, %out: f32):
    %m = arith.mulf %in, %f : f32
    %a = arith.addf %out, %m : f32
    linalg.yield %a : f32
  } -> tensor<1x1x8x8xf32>
  return %r : tensor<1x1x8x8xf32>
}

// -----

// The elementwise consumer of a tile (bias, ReLU6, a residual) is computed
// on each vector as it leaves the registers and written to its output; the
// accumulators start from the fill's value. Neither the fill nor the
// convolution's result is left.
// CHECK-LABEL: func.func @epilogue
// CHECK-SAME: (%{{.*}}: tensor<1x2x10x10xf32>, %{{.*}}: tensor<2x3x3xf32>, %[[B:.*]]: tensor<2xf32>, %[[R:.*]]: tensor<1x2x8x8xf32>, %[[O:.*]]: tensor<1x2x8x8xf32>)
// CHECK-DAG: %[[SIX:.*]] = arith.constant dense<6.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-NOT: linalg.
// CHECK: scf.for %[[C:.*]] = %c0 to %c2 step %c1 iter_args(%{{.*}} = %[[O]])
// CHECK: scf.for %[[OH:.*]] = %c0 to %c8 step %c1 iter_args(%[[OUT:.*]] = %{{.*}})
// CHECK: %[[FIRST:.*]] = vector.fma %{{.*}}, %{{.*}}, %[[ZERO]] : vector<8xf32>
// CHECK-COUNT-8: vector.fma
// CHECK: %[[BIAS:.*]] = tensor.extract %[[B]][%[[C]]] : tensor<2xf32>
// CHECK: %[[BIASES:.*]] = vector.broadcast %[[BIAS]] : f32 to vector<8xf32>
// CHECK: %[[RES:.*]] = vector.transfer_read %[[R]][%c0, %[[C]], %[[OH]], %c0], %{{.*}} {in_bounds = [true]} : tensor<1x2x8x8xf32>, vector<8xf32>
// CHECK: %[[S:.*]] = arith.addf %{{.*}}, %[[BIASES]] : vector<8xf32>
// CHECK: %[[LO:.*]] = arith.maximumf %[[S]], %[[ZERO]] : vector<8xf32>
// CHECK: %[[HI:.*]] = arith.minimumf %[[LO]], %[[SIX]] : vector<8xf32>
// CHECK: %[[T:.*]] = arith.addf %[[HI]], %[[RES]] : vector<8xf32>
// CHECK: vector.transfer_write %[[T]], %[[OUT]][%c0, %[[C]], %[[OH]], %c0] {in_bounds = [true]} : vector<8xf32>, tensor<1x2x8x8xf32>
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
#filter = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#channel = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @epilogue(%x: tensor<1x2x10x10xf32>, %w: tensor<2x3x3xf32>, %b: tensor<2xf32>, %r: tensor<1x2x8x8xf32>, %o: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %c = linalg.generic {indexing_maps = [#in, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : tensor<1x2x10x10xf32>, tensor<2x3x3xf32>) outs(%f : tensor<1x2x8x8xf32>) {
  ^bb0(%in: f32, %fl: f32, %acc: f32):
    %m = arith.mulf %in, %fl : f32
    %a = arith.addf %acc, %m : f32
    linalg.yield %a : f32
  } -> tensor<1x2x8x8xf32>
  %six = arith.constant 6.0 : f32
  %y = linalg.generic {indexing_maps = [#id, #channel, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %b, %r : tensor<1x2x8x8xf32>, tensor<2xf32>, tensor<1x2x8x8xf32>) outs(%o : tensor<1x2x8x8xf32>) {
  ^bb0(%v: f32, %bias: f32, %res: f32, %unused: f32):
    %s = arith.addf %v, %bias : f32
    %z = arith.constant 0.0 : f32
    %lo = arith.maximumf %s, %z : f32
    %hi = arith.minimumf %lo, %six : f32
    %t = arith.addf %hi, %res : f32
    linalg.yield %t : f32
  } -> tensor<1x2x8x8xf32>
  return %y : tensor<1x2x8x8xf32>
}

// -----

// A max pooling's window: each tap a max of the input run with the
// accumulator, its window (a shape) never read.
// CHECK-LABEL: func.func @pooling
// CHECK-NOT: linalg.generic
// CHECK-NOT: tensor.extract %arg1
// CHECK: %[[V:.*]] = vector.transfer_read %arg0{{.*}} : tensor<1x2x10x10xf32>, vector<8xf32>
// CHECK: arith.maximumf %{{.*}}, %[[V]] : vector<8xf32>
// CHECK-NOT: vector.fma
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
#window = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
func.func @pooling(%x: tensor<1x2x10x10xf32>, %w: tensor<3x3xf32>, %o: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %r = linalg.generic {indexing_maps = [#in, #window, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : tensor<1x2x10x10xf32>, tensor<3x3xf32>) outs(%o : tensor<1x2x8x8xf32>) {
  ^bb0(%in: f32, %f: f32, %out: f32):
    %a = arith.maximumf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<1x2x8x8xf32>
  return %r : tensor<1x2x8x8xf32>
}

// -----

// Neither a multiply-accumulate nor a max (a min pooling's window): left
// as it is.
// CHECK-LABEL: func.func @min_pooling
// CHECK: linalg.generic
// CHECK-NOT: vector
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
#window = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
func.func @min_pooling(%x: tensor<1x2x10x10xf32>, %w: tensor<3x3xf32>, %o: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %r = linalg.generic {indexing_maps = [#in, #window, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : tensor<1x2x10x10xf32>, tensor<3x3xf32>) outs(%o : tensor<1x2x8x8xf32>) {
  ^bb0(%in: f32, %f: f32, %out: f32):
    %a = arith.minimumf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<1x2x8x8xf32>
  return %r : tensor<1x2x8x8xf32>
}

// -----

// The named max pooling of a tile (ResNet's 3x3 stride 2 after its stem)
// over a slice of its padded image: read from the image itself, the
// columns before the row shuffled in as the padding (-inf), the run at
// stride 2 read as whole vectors and shuffled, from a fill of -inf.
// CHECK-LABEL: func.func @named_max_pooling
// CHECK-NOT: tensor.pad
// CHECK-NOT: linalg.pooling_nchw_max
// CHECK: %[[INF:.*]] = arith.constant dense<0xFF800000> : vector<8xf32>
// CHECK: vector.transfer_read %arg0{{.*}} : tensor<1x2x16x16xf32>, vector<16xf32>
// CHECK: vector.shuffle
// CHECK: arith.maximumf
// CHECK: vector.transfer_write {{.*}} : vector<8xf32>, tensor<1x1x4x8xf32>
func.func @named_max_pooling(%x: tensor<1x2x16x16xf32>, %row: index) -> tensor<1x1x4x8xf32> {
  %inf = arith.constant 0xFF800000 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %inf : f32
  } : tensor<1x2x16x16xf32> to tensor<1x2x18x18xf32>
  %s = tensor.extract_slice %p[0, 1, %row, 0] [1, 1, 9, 17] [1, 1, 1, 1] : tensor<1x2x18x18xf32> to tensor<1x1x9x17xf32>
  %w = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<1x1x4x8xf32>
  %f = linalg.fill ins(%inf : f32) outs(%e : tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %r = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%s, %w : tensor<1x1x9x17xf32>, tensor<3x3xf32>) outs(%f : tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %r : tensor<1x1x4x8xf32>
}

// -----

// Seven output columns: each run is read as a whole vector of 8 (7 lanes
// LLVM would load in pieces of 4, 2 and 1), masked where it passes the
// row's end (the last tap's, from column 2 of 9), and its first 7 lanes
// kept.
// CHECK-LABEL: func.func @seven_columns
// CHECK: %[[ROW:.*]] = vector.transfer_read %arg0[%c0, %{{.*}}, %c0, %{{.*}}, %c0], %{{.*}} {in_bounds = [true]} : tensor<1x4x1x10x9xf32>, vector<8xf32>
// CHECK: vector.shuffle %[[ROW]], %[[ROW]] [0, 1, 2, 3, 4, 5, 6] : vector<8xf32>, vector<8xf32>
// CHECK: %[[LAST:.*]] = vector.transfer_read %arg0[%c0, %{{.*}}, %c0, %{{.*}}, %c2], %{{[^ ]*}} : tensor<1x4x1x10x9xf32>, vector<8xf32>
// CHECK: vector.shuffle %[[LAST]], %[[LAST]] [0, 1, 2, 3, 4, 5, 6] : vector<8xf32>, vector<8xf32>
// CHECK: vector.transfer_write %{{.*}} {in_bounds = [true]} : vector<7xf32>, tensor<1x4x1x8x7xf32>
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#filter = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
func.func @seven_columns(%x: tensor<1x4x1x10x9xf32>, %w: tensor<4x1x1x3x3xf32>, %o: tensor<1x4x1x8x7xf32>) -> tensor<1x4x1x8x7xf32> {
  %r = linalg.generic {indexing_maps = [#in, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x4x1x10x9xf32>, tensor<4x1x1x3x3xf32>) outs(%o : tensor<1x4x1x8x7xf32>) {
  ^bb0(%in: f32, %f: f32, %out: f32):
    %m = arith.mulf %in, %f : f32
    %a = arith.addf %out, %m : f32
    linalg.yield %a : f32
  } -> tensor<1x4x1x8x7xf32>
  return %r : tensor<1x4x1x8x7xf32>
}
