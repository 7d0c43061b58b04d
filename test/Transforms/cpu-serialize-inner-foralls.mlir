// RUN: tessel-opt %s --cpu-serialize-inner-foralls | FileCheck %s

// The block level stays a forall (parallel tasks on the CPU); the thread
// level nested in it becomes a sequential loop.
// CHECK-LABEL: func.func @nest
// CHECK: scf.forall (%{{.*}}) in (4)
// CHECK-NOT: scf.forall
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK: memref.store
// CHECK: } {mapping = [#gpu.block<x>]}
func.func @nest(%out: memref<4x8xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (4) {
    scf.forall (%j) in (8) {
      memref.store %one, %out[%i, %j] : memref<4x8xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}
