// RUN: tessel-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(cpu-vectorize-copies))' | FileCheck %s

// The transpose merging attention's heads over symbolic sizes keeps its
// innermost 64 elements innermost: loops over the output's outer dims,
// not unrolled, move one row of 64 as one vector. The input's dims are
// indexed through the permutation.
// CHECK: #[[UNROLL:.*]] = #llvm.loop_unroll<disable = true>
// CHECK: #[[NOUNROLL:.*]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// CHECK-LABEL: func.func @merge_heads
// CHECK-SAME: (%[[IN:.*]]: memref<?x4x?x64xf32>, %[[OUT:.*]]: memref<?x?x4x64xf32>)
// CHECK: scf.for %[[B:.*]] =
// CHECK: scf.for %[[S:.*]] =
// CHECK: scf.for %[[H:.*]] =
// CHECK: %[[ROW:.*]] = vector.load %[[IN]][%[[B]], %[[H]], %[[S]], %c0] : memref<?x4x?x64xf32>, vector<64xf32>
// CHECK: vector.store %[[ROW]], %[[OUT]][%[[B]], %[[S]], %[[H]], %c0] : memref<?x?x4x64xf32>, vector<64xf32>
// CHECK: } {loop_annotation = #[[NOUNROLL]]}
// CHECK-NOT: linalg.transpose
func.func @merge_heads(%in: memref<?x4x?x64xf32>, %out: memref<?x?x4x64xf32>) {
  linalg.transpose ins(%in : memref<?x4x?x64xf32>) outs(%out : memref<?x?x4x64xf32>) permutation = [0, 2, 1, 3]
  return
}

// -----

// A copy between strided views whose rows are contiguous.
// CHECK-LABEL: func.func @copy_rows
// CHECK: scf.for %[[I:.*]] =
// CHECK: vector.load %{{.*}}[%[[I]], %c0] : memref<?x16xbf16, strided<[64, 1], offset: ?>>, vector<16xbf16>
// CHECK: vector.store %{{.*}}[%[[I]], %c0] : memref<?x16xbf16, strided<[16, 1]>>, vector<16xbf16>
func.func @copy_rows(%in: memref<?x16xbf16, strided<[64, 1], offset: ?>>, %out: memref<?x16xbf16, strided<[16, 1]>>) {
  linalg.copy ins(%in : memref<?x16xbf16, strided<[64, 1], offset: ?>>) outs(%out : memref<?x16xbf16, strided<[16, 1]>>)
  return
}

// -----

// Left as they are: a transpose that moves the innermost dim, a dynamic
// innermost dim, a row longer than max-bytes (1 KiB), a strided innermost
// dim, booleans, rows of 8 bytes and of 27 elements (not a power of two),
// and tensors.
// CHECK-LABEL: func.func @not_rows
// CHECK-NOT: vector.
// CHECK-COUNT-3: linalg.transpose
// CHECK-NEXT: linalg.copy
// CHECK-NEXT: linalg.transpose
// CHECK-NEXT: linalg.copy
// CHECK-NEXT: linalg.copy
// CHECK-NEXT: linalg.copy
func.func @not_rows(%a: memref<8x16xf32>, %b: memref<16x8xf32>, %c: memref<4x?xf32>, %d: memref<4x?xf32>,
                    %e: memref<2x512xf32>, %f: memref<2x512xf32>, %g: memref<4x8xf32, strided<[1, 4]>>,
                    %h: memref<4x8xi1>, %i: memref<4x8xi1>, %j: memref<4x8xf32>, %k: memref<4x2xf32>,
                    %l: memref<4x27xbf16>, %t: tensor<4x8xf32>) -> tensor<4x8xf32> {
  linalg.transpose ins(%a : memref<8x16xf32>) outs(%b : memref<16x8xf32>) permutation = [1, 0]
  linalg.transpose ins(%c : memref<4x?xf32>) outs(%d : memref<4x?xf32>) permutation = [0, 1]
  linalg.transpose ins(%e : memref<2x512xf32>) outs(%f : memref<2x512xf32>) permutation = [0, 1]
  linalg.copy ins(%g : memref<4x8xf32, strided<[1, 4]>>) outs(%j : memref<4x8xf32>)
  linalg.transpose ins(%h : memref<4x8xi1>) outs(%i : memref<4x8xi1>) permutation = [0, 1]
  linalg.copy ins(%k : memref<4x2xf32>) outs(%k : memref<4x2xf32>)
  linalg.copy ins(%l : memref<4x27xbf16>) outs(%l : memref<4x27xbf16>)
  %r = linalg.copy ins(%t : tensor<4x8xf32>) outs(%t : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
