// RUN: tessel-opt %s -cpu-approximate-math | FileCheck %s

// Transcendentals become inline polynomials (no libm calls), so the loops
// around them vectorize.
// CHECK-LABEL: func.func @transcendentals
// CHECK-NOT: math.tanh
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK: math.fma
// CHECK: return
func.func @transcendentals(%x: vector<8xf32>) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>) {
  %0 = math.tanh %x : vector<8xf32>
  %1 = math.exp %x : vector<8xf32>
  %2 = math.erf %x : vector<8xf32>
  return %0, %1, %2 : vector<8xf32>, vector<8xf32>, vector<8xf32>
}
