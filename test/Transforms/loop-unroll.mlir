// RUN: tessel-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(loop-unroll),canonicalize)' | FileCheck %s

// A marked op becomes loops whose innermost (K, 10 steps) is unrolled by 4:
// a loop of 2 steps of 4 copies of the body, and the remaining 2 steps.
// CHECK-LABEL: func.func @matvec
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1 {
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c4 {
// CHECK-COUNT-4: arith.mulf
// CHECK: }
// CHECK: scf.for %{{.*}} = %c8 to %c10 step %c1 {
// CHECK: arith.mulf
// CHECK-NOT: tessel.unroll
func.func @matvec(%a: memref<4x10xf32>, %x: memref<10xf32>, %y: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>],
                  iterator_types = ["parallel", "reduction"], tessel.unroll = 4 : i64}
      ins(%a, %x : memref<4x10xf32>, memref<10xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Unmarked ops are left to convert-linalg-to-loops.
// CHECK-LABEL: func.func @unmarked
// CHECK: linalg.generic
func.func @unmarked(%a: memref<4xf32>, %b: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%p: f32, %o: f32):
    %n = arith.negf %p : f32
    linalg.yield %n : f32
  }
  return
}

// -----

// A factor below one is an error, not a silent no-op.
func.func @bad(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-error @+1 {{loop.unroll: expected a bufferized op with a positive tessel.unroll factor}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"], tessel.unroll = 0 : i64}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%p: f32, %o: f32):
    linalg.yield %p : f32
  }
  return
}
