// RUN: tessel-opt %s --split-input-file -pass-pipeline='builtin.module(func.func(linalg-im2col),loop-default-schedule{target=cpu vector-bits=256 cores=4},loop-validate,loop-apply-schedule,canonicalize,cse)' | FileCheck %s
// RUN: tessel-opt %s --split-input-file -pass-pipeline='builtin.module(func.func(linalg-im2col),loop-default-schedule{target=cpu vector-bits=256 cores=4})' | FileCheck %s --check-prefix=SCHED

// The B blocks of a convolution computed as a matmul (linalg-im2col, NCHW)
// are gathered straight from the input by loop.vectorize
// (cpu/PackPatches.cpp): a row of a block, one (channel, kh, kw), is one
// run of an input row per output row, a vector each, into the packed block
// (rows one cache line longer); the gather generic, no longer read, is
// gone, and with it its element-by-element tensor.extract.

// Stride 1: each run contiguous, at input row oh + kh and column kw.
// CHECK-LABEL: func.func private @stride1
// CHECK-NOT: tensor.extract %
// CHECK: tensor.empty() : tensor<36x80xf32>
// CHECK: scf.for %[[R:.*]] = %c0 to %c36 step %c1
// CHECK: %[[KW:.*]] = arith.remui %[[R]], %c3
// CHECK: %[[T:.*]] = arith.divui %[[R]], %c3
// CHECK: %[[KH:.*]] = arith.remui %[[T]], %c3
// CHECK: %[[C:.*]] = arith.divui %[[T]], %c3
// CHECK: scf.for %[[RI:.*]] = %c0 to %c8 step %c1
// CHECK: %[[COL:.*]] = arith.muli %[[RI]], %c8
// CHECK: %[[IH:.*]] = arith.addi %[[RI]], %[[KH]]
// CHECK: %[[V:.*]] = vector.transfer_read %arg0[%{{.*}}, %[[C]], %[[IH]], %[[KW]]], %{{.*}} {in_bounds = [true]} : tensor<2x4x10x10xf32>, vector<8xf32>
// CHECK: vector.transfer_write %[[V]], %{{.*}}[%[[R]], %[[COL]]] {in_bounds = [true]} : vector<8xf32>, tensor<36x64xf32>
// CHECK: vector.contract
// CHECK-NOT: tensor.extract %
func.func private @stride1(%x: tensor<2x4x10x10xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<2x8x8x8xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw
      ins(%x, %w : tensor<2x4x10x10xf32>, tensor<8x4x3x3xf32>) outs(%f : tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  return %c : tensor<2x8x8x8xf32>
}

// -----

// Stride 2: a run reads the span of its lanes and keeps every other one.
// CHECK-LABEL: func.func private @stride2
// CHECK: %[[V:.*]] = vector.transfer_read %arg0[{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<1x4x17x17xf32>, vector<15xf32>
// CHECK: vector.shuffle %[[V]], %[[V]] [0, 2, 4, 6, 8, 10, 12, 14] : vector<15xf32>, vector<15xf32>
// CHECK-NOT: tensor.extract %
func.func private @stride2(%x: tensor<1x4x17x17xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x4x17x17xf32>, tensor<8x4x3x3xf32>) outs(%f : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %c : tensor<1x8x8x8xf32>
}

// -----

// 49 pixels: 6 register blocks of 8 columns and a tail block of 1 (not 7
// blocks, the last padded with 7 columns of zeros), which reads the last
// column of the same B block, its 7 runs of 7 gathered once. (K, 36, is
// not whole vectors of 8: the tail is a register block one column wide.)
// CHECK-LABEL: func.func private @ragged
// CHECK: %[[B:.*]] = tensor.extract_slice %{{.*}}[0, 0] [36, 49] [1, 1] : tensor<36x65xf32> to tensor<36x49xf32>
// CHECK-NOT: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<36x
// CHECK: %[[G:.*]] = scf.for %{{.*}} = %c0 to %c36 step %c1 iter_args(%{{.*}} = %[[B]])
// CHECK: scf.for %{{.*}} = %c0 to %c7 step %c1
// CHECK: vector.transfer_read {{.*}} : tensor<1x4x9x9xf32>, vector<7xf32>
// CHECK: tensor.extract_slice %[[G]][0, 0] [36, 48] [1, 1]
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c8
// CHECK: vector.contract {{.*}} : vector<8x4xf32>, vector<4x8xf32> into vector<8x8xf32>
// CHECK: tensor.extract_slice %[[G]][0, 48] [36, 1] [1, 1]
// CHECK: vector.contract {{.*}} : vector<8x4xf32>, vector<4x1xf32> into vector<8x1xf32>
// CHECK: tensor.insert_slice %{{.*}}[0, 48] [16, 1] [1, 1] : tensor<16x1xf32> into tensor<16x49xf32>
// CHECK-NOT: tensor.extract %
func.func private @ragged(%x: tensor<1x4x9x9xf32>, %w: tensor<16x4x3x3xf32>) -> tensor<1x16x7x7xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x7x7xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  %c = linalg.conv_2d_nchw_fchw
      ins(%x, %w : tensor<1x4x9x9xf32>, tensor<16x4x3x3xf32>) outs(%f : tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  return %c : tensor<1x16x7x7xf32>
}

// -----

// A long K over a single tile: a matmul's would be split in parts, but
// tiling could not fuse the patch gather through the split's reshape.
// SCHED-LABEL: func.func private @long_depth
// SCHED-NOT: split_k
// SCHED: loop.tile
// CHECK-LABEL: func.func private @long_depth
// CHECK: vector.transfer_read {{.*}} : tensor<1x128x6x6xf32>, vector<4xf32>
func.func private @long_depth(%x: tensor<1x128x6x6xf32>, %w: tensor<16x128x3x3xf32>) -> tensor<1x16x4x4xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw
      ins(%x, %w : tensor<1x128x6x6xf32>, tensor<16x128x3x3xf32>) outs(%f : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  return %c : tensor<1x16x4x4xf32>
}

// -----

// As @ragged, K 72: the last column is dot products of A's rows with the
// B block's last column, copied contiguous once, 8 of K at a time into
// vectors of partial sums for 8 rows, each reduced once at the end.
// CHECK-LABEL: func.func private @last_column
// CHECK: %[[G:.*]] = scf.for %{{.*}} = %c0 to %c72 step %c1
// CHECK: vector.contract {{.*}} : vector<8x4xf32>, vector<4x8xf32> into vector<8x8xf32>
// CHECK: %[[B:.*]] = tensor.extract_slice %[[G]][0, 48] [72, 1] [1, 1]
// CHECK: %[[E:.*]] = tensor.empty() : tensor<72xf32>
// CHECK: %[[COL:.*]] = scf.for %[[K:.*]] = %c0 to %c72 step %c8 iter_args(%[[C:.*]] = %[[E]])
// CHECK: %[[V:.*]] = vector.transfer_read %[[B]][%[[K]], %c0], %{{.*}} {in_bounds = [true], permutation_map = #{{.*}}} : tensor<72x1xf32>, vector<8xf32>
// CHECK: vector.transfer_write %[[V]], %[[C]][%[[K]]]
// CHECK: scf.for %[[R:.*]] = %c0 to %c16 step %c8
// CHECK: %[[P:.*]] = scf.for %[[K2:.*]] = %c0 to %c72 step %c8 iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<8x8xf32>)
// CHECK: %[[A:.*]] = vector.transfer_read %{{.*}}[%[[R]], %[[K2]]], %{{.*}} : tensor<16x72xf32>, vector<8x8xf32>
// CHECK: %[[BV:.*]] = vector.transfer_read %[[COL]][%[[K2]]]
// CHECK: %[[BB:.*]] = vector.broadcast %[[BV]] : vector<8xf32> to vector<8x8xf32>
// CHECK: vector.fma %[[A]], %[[BB]], %[[ACC]] : vector<8x8xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<16x1xf32>, vector<8x1xf32>
// CHECK-COUNT-8: vector.reduction <add>
// CHECK: vector.from_elements {{.*}} : vector<8x1xf32>
// CHECK: vector.transfer_write {{.*}} : vector<8x1xf32>, tensor<16x1xf32>
func.func private @last_column(%x: tensor<1x8x9x9xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x16x7x7xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x7x7xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  %c = linalg.conv_2d_nchw_fchw
      ins(%x, %w : tensor<1x8x9x9xf32>, tensor<16x8x3x3xf32>) outs(%f : tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  return %c : tensor<1x16x7x7xf32>
}

// -----

// 15 pixels, padded to 16 columns (a tail of 7 would be a whole block of
// 8): the column past the pixels is zeros, the rest its 3 runs of 5 (K is
// not padded: no rows are zeroed).
// CHECK-LABEL: func.func private @ragged_padded
// CHECK: %[[B:.*]] = tensor.extract_slice %{{.*}}[0, 0] [36, 16] [1, 1] : tensor<36x32xf32> to tensor<36x16xf32>
// CHECK: %[[P:.*]] = tensor.extract_slice %[[B]][0, 15] [36, 1] [1, 1]
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[P]] : tensor<36x1xf32>)
// CHECK: %[[I:.*]] = tensor.insert_slice %[[Z]] into %[[B]][0, 15] [36, 1] [1, 1]
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.*}} = %c0 to %c36 step %c1 iter_args(%{{.*}} = %[[I]])
// CHECK: scf.for %{{.*}} = %c0 to %c3 step %c1
// CHECK: vector.transfer_read {{.*}} : tensor<1x4x5x7xf32>, vector<5xf32>
// CHECK-NOT: tensor.extract %
func.func private @ragged_padded(%x: tensor<1x4x5x7xf32>, %w: tensor<16x4x3x3xf32>) -> tensor<1x16x3x5xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x3x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x3x5xf32>) -> tensor<1x16x3x5xf32>
  %c = linalg.conv_2d_nchw_fchw
      ins(%x, %w : tensor<1x4x5x7xf32>, tensor<16x4x3x3xf32>) outs(%f : tensor<1x16x3x5xf32>) -> tensor<1x16x3x5xf32>
  return %c : tensor<1x16x3x5xf32>
}
