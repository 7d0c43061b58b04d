// RUN: tessel-opt %s -cpu-expand-strided-copies | FileCheck %s
// RUN: tessel-opt %s -cpu-expand-strided-copies=parallel-bytes=0 | FileCheck %s --check-prefix=SERIAL

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

// A kernel's copy of 256 KiB or more (a concatenation's part placed into the
// result) runs as chunks of rows under an scf.parallel: 16 rows of 4 KiB,
// the last chunk cut short; smaller copies, and copies outside kernels,
// stay whole; parallel-bytes=0 keeps every copy whole.
// SERIAL-NOT: scf.parallel
// CHECK-LABEL: func.func @concat_part
// CHECK: scf.parallel (%[[I:.*]]) = (%c0) to (%c300) step (%c16) {
// CHECK: %[[N:.*]] = affine.min #{{.*}}(%[[I]])
// CHECK: %[[S:.*]] = memref.subview %arg0[%[[I]], 0] [%[[N]], 1024] [1, 1]
// CHECK: %[[T:.*]] = memref.subview %{{.*}}[%[[I]], 0] [%[[N]], 1024] [1, 1]
// CHECK: linalg.copy ins(%[[S]] : {{.*}}) outs(%[[T]] : {{.*}})
// CHECK-NOT: scf.parallel
// CHECK: linalg.copy
// CHECK-LABEL: func.func @host_copy
// CHECK-NOT: scf.parallel
func.func @concat_part(%a: memref<300x1024xf32>, %small: memref<8x8xf32>, %out: memref<300x2048xf32>, %out2: memref<8x16xf32>) attributes {tessel.kernel = "elementwise"} {
  %dst = memref.subview %out[0, 0] [300, 1024] [1, 1] : memref<300x2048xf32> to memref<300x1024xf32, strided<[2048, 1]>>
  memref.copy %a, %dst : memref<300x1024xf32> to memref<300x1024xf32, strided<[2048, 1]>>
  %dst2 = memref.subview %out2[0, 8] [8, 8] [1, 1] : memref<8x16xf32> to memref<8x8xf32, strided<[16, 1], offset: 8>>
  memref.copy %small, %dst2 : memref<8x8xf32> to memref<8x8xf32, strided<[16, 1], offset: 8>>
  return
}
func.func @host_copy(%a: memref<300x1024xf32>, %out: memref<300x2048xf32>) {
  %dst = memref.subview %out[0, 0] [300, 1024] [1, 1] : memref<300x2048xf32> to memref<300x1024xf32, strided<[2048, 1]>>
  memref.copy %a, %dst : memref<300x1024xf32> to memref<300x1024xf32, strided<[2048, 1]>>
  return
}

// A padded input's interior at batch 1 splits along its first dim of more
// than one index (the channels): 64 channels of 16 KiB, 4 per chunk.
// CHECK-LABEL: func.func @padded_interior
// CHECK: scf.parallel (%[[C:.*]]) = (%c0) to (%c64) step (%c4) {
// CHECK: %[[N:.*]] = affine.min #{{.*}}(%[[C]])
// CHECK: %[[S:.*]] = memref.subview %arg0[0, %[[C]], 0, 0] [1, %[[N]], 64, 64] [1, 1, 1, 1]
// CHECK: %[[T:.*]] = memref.subview %{{.*}}[0, %[[C]], 0, 0] [1, %[[N]], 64, 64] [1, 1, 1, 1]
// CHECK: linalg.copy ins(%[[S]] : {{.*}}) outs(%[[T]] : {{.*}})
func.func @padded_interior(%a: memref<1x64x64x64xf32>, %out: memref<1x64x66x66xf32>) attributes {tessel.kernel = "contraction"} {
  %dst = memref.subview %out[0, 0, 1, 1] [1, 64, 64, 64] [1, 1, 1, 1] : memref<1x64x66x66xf32> to memref<1x64x64x64xf32, strided<[278784, 4356, 66, 1], offset: 67>>
  memref.copy %a, %dst : memref<1x64x64x64xf32> to memref<1x64x64x64xf32, strided<[278784, 4356, 66, 1], offset: 67>>
  return
}

// A 3x3 convolution's padded input of 401 KiB (128x28x28) splits; one of
// 196 KiB (64x28x28) is copied whole.
// CHECK-LABEL: func.func @padded_interiors
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c128) step (%c20) {
// CHECK: linalg.copy
// CHECK-NOT: scf.parallel
// CHECK: linalg.copy
func.func @padded_interiors(%a: memref<1x128x28x28xf32>, %out: memref<1x128x30x30xf32>, %b: memref<1x64x28x28xf32>, %out2: memref<1x64x30x30xf32>) attributes {tessel.kernel = "contraction"} {
  %dst = memref.subview %out[0, 0, 1, 1] [1, 128, 28, 28] [1, 1, 1, 1] : memref<1x128x30x30xf32> to memref<1x128x28x28xf32, strided<[115200, 900, 30, 1], offset: 31>>
  memref.copy %a, %dst : memref<1x128x28x28xf32> to memref<1x128x28x28xf32, strided<[115200, 900, 30, 1], offset: 31>>
  %dst2 = memref.subview %out2[0, 0, 1, 1] [1, 64, 28, 28] [1, 1, 1, 1] : memref<1x64x30x30xf32> to memref<1x64x28x28xf32, strided<[57600, 900, 30, 1], offset: 31>>
  memref.copy %b, %dst2 : memref<1x64x28x28xf32> to memref<1x64x28x28xf32, strided<[57600, 900, 30, 1], offset: 31>>
  return
}
