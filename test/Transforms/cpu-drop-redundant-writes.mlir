// RUN: tessel-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(cpu-drop-redundant-writes))' | FileCheck %s

// A bufferized tensor.pad: the buffer filled, then the source copied into
// its interior. Only the border is filled: per padded dim, the slabs before
// and after the interior, across the interior of the dims before it.
// CHECK-LABEL: func.func @pad
// CHECK: %[[B:.*]] = memref.alloc() : memref<2x6x7xf32>
// CHECK: %[[TOP:.*]] = memref.subview %[[B]][0, 0, 0] [2, 1, 7] [1, 1, 1]
// CHECK: linalg.fill ins(%[[V:.*]] : f32) outs(%[[TOP]]
// CHECK: %[[BOTTOM:.*]] = memref.subview %[[B]][0, 5, 0] [2, 1, 7] [1, 1, 1]
// CHECK: linalg.fill ins(%[[V]] : f32) outs(%[[BOTTOM]]
// CHECK: %[[LEFT:.*]] = memref.subview %[[B]][0, 1, 0] [2, 4, 2] [1, 1, 1]
// CHECK: linalg.fill ins(%[[V]] : f32) outs(%[[LEFT]]
// CHECK: %[[RIGHT:.*]] = memref.subview %[[B]][0, 1, 6] [2, 4, 1] [1, 1, 1]
// CHECK: linalg.fill ins(%[[V]] : f32) outs(%[[RIGHT]]
// CHECK-NOT: linalg.map
// CHECK: memref.copy %arg0
func.func @pad(%src: memref<2x4x4xf32>, %v: f32) -> memref<2x6x7xf32> {
  %b = memref.alloc() : memref<2x6x7xf32>
  linalg.map outs(%b : memref<2x6x7xf32>)
    (%init: f32) {
      linalg.yield %v : f32
    }
  %in = memref.subview %b[0, 1, 2] [2, 4, 4] [1, 1, 1] : memref<2x6x7xf32> to memref<2x4x4xf32, strided<[42, 7, 1], offset: 9>>
  memref.copy %src, %in : memref<2x4x4xf32> to memref<2x4x4xf32, strided<[42, 7, 1], offset: 9>>
  return %b : memref<2x6x7xf32>
}

// -----

// A fill that a copy then overwrites whole goes; the buffer is read (by
// the return) only after the copy.
// CHECK-LABEL: func.func @overwritten
// CHECK-NOT: linalg.fill
// CHECK: memref.copy
func.func @overwritten(%src: memref<4x8xf32, strided<[16, 1]>>) -> memref<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %b = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<4x8xf32>)
  memref.copy %src, %b : memref<4x8xf32, strided<[16, 1]>> to memref<4x8xf32>
  return %b : memref<4x8xf32>
}

// -----

// Fills stay where the buffer is read before the copy (through a view), the
// copy writes only part of it from a dynamic box, the buffer is not the
// kernel's own allocation, or the copy reads the filled buffer itself.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: linalg.fill ins(%{{.*}} : f32) outs(%{{[a-z0-9_]+}} : memref<4x8xf32>)
func.func @kept(%src: memref<4x8xf32>, %part: memref<2x?xf32>, %arg: memref<4x8xf32>, %n: index, %out: memref<2x8xf32>) -> (memref<4x8xf32>, memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<4x8xf32>)
  %rows = memref.subview %a[0, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1]>>
  memref.copy %rows, %out : memref<2x8xf32, strided<[8, 1]>> to memref<2x8xf32>
  memref.copy %src, %a : memref<4x8xf32> to memref<4x8xf32>
  %b = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<4x8xf32>)
  %box = memref.subview %b[1, 0] [2, %n] [1, 1] : memref<4x8xf32> to memref<2x?xf32, strided<[8, 1], offset: 8>>
  memref.copy %part, %box : memref<2x?xf32> to memref<2x?xf32, strided<[8, 1], offset: 8>>
  linalg.fill ins(%zero : f32) outs(%arg : memref<4x8xf32>)
  memref.copy %src, %arg : memref<4x8xf32> to memref<4x8xf32>
  %c = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x8xf32>)
  %top = memref.subview %c[0, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1]>>
  %bottom = memref.subview %c[2, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 16>>
  memref.copy %top, %bottom : memref<2x8xf32, strided<[8, 1]>> to memref<2x8xf32, strided<[8, 1], offset: 16>>
  return %a, %b : memref<4x8xf32>, memref<4x8xf32>
}

// -----

// A copy onto itself, through a collapse and its expansion back (a 1x1
// convolution's tile computed into its slice of the result), goes; one
// from another buffer so viewed stays.
// CHECK-LABEL: func.func @onto_itself
// CHECK-NOT: memref.copy
// CHECK-LABEL: func.func @other_buffer
// CHECK: memref.copy
func.func @onto_itself(%out: memref<1x8x4x4xf32>) {
  %slice = memref.subview %out[0, 2, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1] : memref<1x8x4x4xf32> to memref<1x4x4x4xf32, strided<[128, 16, 4, 1], offset: 32>>
  %c = memref.collapse_shape %slice [[0, 1], [2, 3]] : memref<1x4x4x4xf32, strided<[128, 16, 4, 1], offset: 32>> into memref<4x16xf32, strided<[16, 1], offset: 32>>
  %e = memref.expand_shape %c [[0, 1], [2, 3]] output_shape [1, 4, 4, 4] : memref<4x16xf32, strided<[16, 1], offset: 32>> into memref<1x4x4x4xf32, strided<[64, 16, 4, 1], offset: 32>>
  memref.copy %e, %slice : memref<1x4x4x4xf32, strided<[64, 16, 4, 1], offset: 32>> to memref<1x4x4x4xf32, strided<[128, 16, 4, 1], offset: 32>>
  return
}
func.func @other_buffer(%x: memref<2x2x4xf32>, %y: memref<2x2x4xf32>) {
  %c = memref.collapse_shape %y [[0, 1], [2]] : memref<2x2x4xf32> into memref<4x4xf32>
  %e = memref.expand_shape %c [[0, 1], [2]] output_shape [2, 2, 4] : memref<4x4xf32> into memref<2x2x4xf32>
  memref.copy %e, %x : memref<2x2x4xf32> to memref<2x2x4xf32>
  return
}

// -----

// In a kernel, whose arguments are distinct buffers, a fill of its result
// (a view of an argument: a batched matmul's head) that the copy out of the
// padded tile then overwrites goes; one whose result is read before the
// copy, through another view of the argument, stays.
// CHECK-LABEL: func.func @kernel_result
// CHECK-NOT: linalg.fill
// CHECK: memref.copy
// CHECK-LABEL: func.func @kernel_result_read
// CHECK: linalg.fill
func.func @kernel_result(%tile: memref<8x8xf32>, %out: memref<2x5x5xf32>, %h: index) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %head = memref.subview %out[%h, 0, 0] [1, 5, 5] [1, 1, 1] : memref<2x5x5xf32> to memref<5x5xf32, strided<[5, 1], offset: ?>>
  linalg.fill ins(%zero : f32) outs(%head : memref<5x5xf32, strided<[5, 1], offset: ?>>)
  %live = memref.subview %tile[0, 0] [5, 5] [1, 1] : memref<8x8xf32> to memref<5x5xf32, strided<[8, 1]>>
  memref.copy %live, %head : memref<5x5xf32, strided<[8, 1]>> to memref<5x5xf32, strided<[5, 1], offset: ?>>
  return
}
func.func @kernel_result_read(%tile: memref<8x8xf32>, %out: memref<2x5x5xf32>, %h: index, %first: memref<5xf32>) attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %head = memref.subview %out[%h, 0, 0] [1, 5, 5] [1, 1, 1] : memref<2x5x5xf32> to memref<5x5xf32, strided<[5, 1], offset: ?>>
  linalg.fill ins(%zero : f32) outs(%head : memref<5x5xf32, strided<[5, 1], offset: ?>>)
  %row = memref.subview %out[0, 0, 0] [1, 1, 5] [1, 1, 1] : memref<2x5x5xf32> to memref<5xf32, strided<[1]>>
  memref.copy %row, %first : memref<5xf32, strided<[1]>> to memref<5xf32>
  %live = memref.subview %tile[0, 0] [5, 5] [1, 1] : memref<8x8xf32> to memref<5x5xf32, strided<[8, 1]>>
  memref.copy %live, %head : memref<5x5xf32, strided<[8, 1]>> to memref<5x5xf32, strided<[5, 1], offset: ?>>
  return
}
