// RUN: tessel-opt %s --host-drop-destination-results -split-input-file -verify-diagnostics | FileCheck %s

// After bufferization, functions in destination-passing style return their
// destinations: the results go, the public one's too, and calls use the
// destinations they pass.

// CHECK-LABEL: func.func private @kernel(%{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>) {
// CHECK-NEXT: return
// CHECK-LABEL: func.func @host(
// CHECK-SAME: %[[X:.*]]: memref<?xf32>, %[[OUT:.*]]: memref<?xf32>) {
// CHECK-NEXT: call @kernel(%[[X]], %[[OUT]]) : (memref<?xf32>, memref<?xf32>) -> ()
// CHECK-NEXT: return
func.func private @kernel(%x: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> attributes {tessel.destinations = 1 : i64} {
  return %out : memref<?xf32>
}
func.func @host(%x: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> attributes {tessel.destinations = 1 : i64} {
  %0 = call @kernel(%x, %out) : (memref<?xf32>, memref<?xf32>) -> memref<?xf32>
  return %0 : memref<?xf32>
}

// -----

func.func @not_its_destination(%x: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> attributes {tessel.destinations = 1 : i64} {
  // expected-error @+1 {{returns as result 0 a buffer that is not its destination, argument 1}}
  return %x : memref<?xf32>
}
