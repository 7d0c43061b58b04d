// RUN: tessel-opt %s -cpu-prefer-vector-width=bits=512 | FileCheck %s
// RUN: tessel-opt %s -cpu-prefer-vector-width | FileCheck %s --check-prefix=DEFAULT

// Defined functions get the width; declarations and functions that already
// say one keep theirs. bits=0 (the default) changes nothing.
// CHECK-LABEL: llvm.func @kernel
// CHECK-SAME: prefer_vector_width = "512"
// DEFAULT-LABEL: llvm.func @kernel
// DEFAULT-NOT: prefer_vector_width
// DEFAULT: llvm.func @narrow
llvm.func @kernel(%arg0: f32) -> f32 {
  llvm.return %arg0 : f32
}

// CHECK-LABEL: llvm.func @narrow
// CHECK-SAME: prefer_vector_width = "128"
llvm.func @narrow() attributes {prefer_vector_width = "128"} {
  llvm.return
}

// CHECK: llvm.func @expf(f32) -> f32
// CHECK-NOT: prefer_vector_width
llvm.func @expf(f32) -> f32
