// RUN: tessel-opt %s --gpu-pass-dynamic-buffers -split-input-file -verify-diagnostics | FileCheck %s

// A launch that reads a buffer over size symbols reads a view of its
// largest static extent (n * 64 <= 128 * 64), rebuilt inside with the size
// read outside: outlining then passes a static buffer and the size.
// CHECK-LABEL: func.func private @k(
// CHECK-SAME: %[[X:[^:]*]]: memref<?x64xf32>
// CHECK: %[[N:.*]] = memref.dim %[[X]], %c0
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [8192], strides: [1] : memref<?x64xf32> to memref<8192xf32>
// CHECK: gpu.launch
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %[[FLAT]] to offset: [0], sizes: [%[[N]], 64], strides: [64, 1] : memref<8192xf32> to memref<?x64xf32>
// CHECK: memref.load %[[VIEW]]
func.func private @k(%x: memref<?x64xf32> {graph.shape = #graph.shape<[n, 64]>})
    attributes {graph.dims = {n = #graph.dim<1, 128>}, tessel.kernel = "elementwise"} {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %c1, %g1 = %c1, %g2 = %c1) threads(%t0, %t1, %t2) in (%s0 = %c1, %s1 = %c1, %s2 = %c1) {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0, %c0] : memref<?x64xf32>
    memref.store %v, %x[%c0, %c0] : memref<?x64xf32>
    gpu.terminator
  }
  return
}

// -----

func.func private @no_range(%x: memref<?xf32>) attributes {tessel.kernel = "elementwise"} {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{a kernel reads a buffer of dynamic shape, 'memref<?xf32>', whose largest size the kernel's size symbols (graph.dims) do not give}}
  gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %c1, %g1 = %c1, %g2 = %c1) threads(%t0, %t1, %t2) in (%s0 = %c1, %s1 = %c1, %s2 = %c1) {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<?xf32>
    gpu.terminator
  }
  return
}
