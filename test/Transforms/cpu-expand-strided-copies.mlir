// RUN: tessel-opt %s -cpu-expand-strided-copies | FileCheck %s

// A copy between contiguous buffers stays a memref.copy (LLVM lowers it to
// memcpy); one with a strided side becomes a linalg.copy (loops).
// CHECK-LABEL: func.func @copies
// CHECK: memref.copy %arg0, %arg1 : memref<4x8xf32> to memref<4x8xf32>
// CHECK: linalg.copy ins(%{{.*}} : memref<4x?xf32, strided<[16, 1]>>) outs(%{{.*}} : memref<4x?xf32, strided<[8, 1]>>)
// CHECK-NOT: memref.copy
func.func @copies(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<4x16xf32>, %n: index) {
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  %src = memref.subview %c[0, 0] [4, %n] [1, 1] : memref<4x16xf32> to memref<4x?xf32, strided<[16, 1]>>
  %dst = memref.subview %b[0, 0] [4, %n] [1, 1] : memref<4x8xf32> to memref<4x?xf32, strided<[8, 1]>>
  memref.copy %src, %dst : memref<4x?xf32, strided<[16, 1]>> to memref<4x?xf32, strided<[8, 1]>>
  return
}

// A copy between unranked buffers has no linalg.copy form and stays.
// CHECK-LABEL: func.func @unranked
// CHECK: memref.copy %arg0, %arg1 : memref<*xf32> to memref<*xf32>
func.func @unranked(%a: memref<*xf32>, %b: memref<*xf32>) {
  memref.copy %a, %b : memref<*xf32> to memref<*xf32>
  return
}
