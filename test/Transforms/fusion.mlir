// With `report`, each group's first op gets a remark with its kind, its ops
// and the rule that brought each in (the expected-remark lines); the groups
// are the same with or without it, and without it there are no remarks.
// RUN: tessel-opt %s -graph-decompose -graph-form-fusion-groups=report -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessel-opt %s -graph-decompose -graph-form-fusion-groups -split-input-file | FileCheck %s
// RUN: tessel-opt %s -graph-decompose -graph-form-fusion-groups -split-input-file 2>&1 | FileCheck %s --check-prefix=QUIET
// QUIET-NOT: remark: fusion group

// R1: an elementwise chain is one group; values from outside are inputs.
// CHECK-LABEL: func.func @elementwise_chain
// CHECK-SAME: (%[[X:.*]]: tensor<16xf32>, %[[Y:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[G:.*]] = graph.fused elementwise(%[[X]], %[[Y]]) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<16xf32>, %[[B:.*]]: tensor<16xf32>):
// CHECK-NEXT: %[[E:.*]] = graph.exp %[[A]]
// CHECK-NEXT: %[[S:.*]] = graph.add %[[E]], %[[B]]
// CHECK-NEXT: %[[R:.*]] = graph.relu %[[S]]
// CHECK-NEXT: graph.yield %[[R]] : tensor<16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[G]]
func.func @elementwise_chain(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  // expected-remark @+1 {{fusion group 0 (elementwise, 3 ops): graph.exp [starts the group], graph.add [R1 elementwise chain], graph.relu [R1 elementwise chain]}}
  %0 = graph.exp %x : tensor<16xf32>
  %1 = graph.add %0, %y : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %2 = graph.relu %1 : tensor<16xf32>
  return %2 : tensor<16xf32>
}

// -----

// R2: a decomposed softmax (max, exp, sum, div) is one reduction group.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[G:.*]] = graph.fused reduction(%[[X]]) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x8xf32>):
// CHECK-NEXT: %[[MAX:.*]] = graph.reduce max %[[A]] axes [1] keepdims
// CHECK-NEXT: %[[SH:.*]] = graph.sub %[[A]], %[[MAX]]
// CHECK-NEXT: %[[E:.*]] = graph.exp %[[SH]]
// CHECK-NEXT: %[[SUM:.*]] = graph.reduce sum %[[E]] axes [1] keepdims
// CHECK-NEXT: %[[D:.*]] = graph.div %[[E]], %[[SUM]]
// CHECK-NEXT: graph.yield %[[D]] : tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[G]]
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{fusion group 0 (reduction, 5 ops): graph.reduce [starts the group], graph.sub [R3 epilogue of a reduction], graph.exp [R3 epilogue of a reduction], graph.reduce [R2 reduction over fused producers], graph.div [R3 epilogue of a reduction]}}
  %0 = graph.softmax %x axis -1 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A decomposed layer_norm is one reduction group too; the small epsilon
// constant is cloned into it, weight and bias are inputs.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[G:.*]] = graph.fused reduction(%[[X]], %[[W]], %[[B]]) : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<4x8xf32>, %[[GW:.*]]: tensor<8xf32>, %[[GB:.*]]: tensor<8xf32>):
// CHECK: graph.reduce mean
// CHECK: graph.reduce mean
// CHECK: %[[EPS:.*]] = graph.constant dense<9.99999974E-6> : tensor<f32>
// CHECK-NEXT: graph.add %{{.*}}, %[[EPS]]
// CHECK-NEXT: graph.rsqrt
// CHECK-NEXT: graph.mul
// CHECK-NEXT: %[[S:.*]] = graph.mul %{{.*}}, %[[GW]]
// CHECK-NEXT: %[[R:.*]] = graph.add %[[S]], %[[GB]]
// CHECK-NEXT: graph.yield %[[R]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[G]]
func.func @layer_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{fusion group 0 (reduction, 9 ops): graph.reduce [starts the group], graph.sub [R3 epilogue of a reduction], graph.mul [R3 epilogue of a reduction], graph.reduce [R2 reduction over fused producers], graph.add [R3 epilogue of a reduction], graph.rsqrt [R3 epilogue of a reduction], graph.mul [R3 epilogue of a reduction], graph.mul [R3 epilogue of a reduction], graph.add [R3 epilogue of a reduction]}}
  %0 = graph.layer_norm %x weight(%w : tensor<8xf32>) bias(%b : tensor<8xf32>) axis -1 eps 1.0e-05 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Elementwise producers of a reduction join it (R2), and so does its
// epilogue.
// CHECK-LABEL: func.func @reduction_over_producers
// CHECK-NEXT: graph.fused reduction
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.exp
// CHECK-NEXT: graph.reduce sum
// CHECK-NEXT: graph.div
// CHECK-NEXT: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @reduction_over_producers(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{fusion group 0 (reduction, 3 ops): graph.exp [starts the group], graph.reduce [R2 reduction over fused producers], graph.div [R3 epilogue of a reduction]}}
  %0 = graph.exp %x : tensor<4x8xf32>
  %1 = graph.reduce sum %0 axes [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %2 = graph.div %0, %1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// A reduction over a different iteration space ([4] instead of [4, 8])
// starts its own group.
// CHECK-LABEL: func.func @reduction_spaces
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[G0:.*]] = graph.fused reduction(%[[X]]) : (tensor<4x8xf32>) -> tensor<4xf32> {
// CHECK: graph.reduce sum
// CHECK-NEXT: graph.exp
// CHECK-NEXT: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[G1:.*]] = graph.fused reduction(%[[G0]]) : (tensor<4xf32>) -> tensor<f32> {
// CHECK: graph.reduce max
// CHECK-NEXT: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[G1]]
func.func @reduction_spaces(%x: tensor<4x8xf32>) -> tensor<f32> {
  // expected-remark @+1 {{fusion group 0 (reduction, 2 ops): graph.reduce [starts the group], graph.exp [R3 epilogue of a reduction]}}
  %0 = graph.reduce sum %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %1 = graph.exp %0 : tensor<4xf32>
  // expected-remark @+1 {{fusion group 1 (reduction, 1 ops): graph.reduce [starts the group]}}
  %2 = graph.reduce max %1 axes [0] : tensor<4xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// R3: bias, activation and residual add are the epilogue of the matmul.
// CHECK-LABEL: func.func @matmul_epilogue
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[G:.*]] = graph.fused contraction(%[[X]], %[[W]], %[[B]]) : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%[[GX:.*]]: tensor<4x8xf32>, %[[GW:.*]]: tensor<8x8xf32>, %[[GB:.*]]: tensor<8xf32>):
// CHECK-NEXT: %[[M:.*]] = graph.matmul %[[GX]], %[[GW]]
// CHECK-NEXT: %[[A:.*]] = graph.add %[[M]], %[[GB]]
// CHECK-NEXT: %[[GE:.*]] = graph.gelu %[[A]] approximate tanh
// CHECK-NEXT: %[[R:.*]] = graph.add %[[GE]], %[[GX]]
// CHECK-NEXT: graph.yield %[[R]] : tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[G]]
func.func @matmul_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{fusion group 0 (contraction, 4 ops): graph.matmul [starts the group], graph.add [R3 epilogue of a contraction], graph.gelu [R3 epilogue of a contraction], graph.add [R3 epilogue of a contraction]}}
  %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = graph.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = graph.gelu %1 approximate tanh : tensor<4x8xf32>
  %3 = graph.add %2, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// A linear layer decomposes into transpose + matmul + bias: the transpose of
// the weight is its own (elementwise) group, the matmul takes its result.
// CHECK-LABEL: func.func @linear_relu
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<16x8xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[T:.*]] = graph.fused elementwise(%[[W]]) : (tensor<16x8xf32>) -> tensor<8x16xf32> {
// CHECK: graph.transpose
// CHECK: }
// CHECK-NEXT: %[[G:.*]] = graph.fused contraction(%[[X]], %[[T]], %[[B]])
// CHECK: graph.matmul
// CHECK-NEXT: graph.add
// CHECK-NEXT: graph.relu
// CHECK-NEXT: graph.yield
func.func @linear_relu(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-remark @+2 {{fusion group 0 (elementwise, 1 ops): graph.transpose [starts the group]}}
  // expected-remark @+1 {{fusion group 1 (contraction, 3 ops): graph.matmul [starts the group], graph.add [R3 epilogue of a contraction], graph.relu [R3 epilogue of a contraction]}}
  %0 = graph.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = graph.relu %0 : tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

// conv2d is a contraction; an op that broadcasts its result to a larger
// shape is not an epilogue and starts a new group.
// CHECK-LABEL: func.func @conv_epilogue
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[R:.*]]: tensor<2x1x4x6x6xf32>)
// CHECK-NEXT: %[[G0:.*]] = graph.fused contraction(%[[X]], %[[W]]) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
// CHECK: graph.conv2d
// CHECK-NEXT: graph.relu
// CHECK-NEXT: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[G1:.*]] = graph.fused elementwise(%[[G0]], %[[R]]) : (tensor<1x4x6x6xf32>, tensor<2x1x4x6x6xf32>) -> tensor<2x1x4x6x6xf32> {
// CHECK: graph.add
// CHECK-NEXT: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[G1]]
func.func @conv_epilogue(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %r: tensor<2x1x4x6x6xf32>) -> tensor<2x1x4x6x6xf32> {
  // expected-remark @+1 {{fusion group 0 (contraction, 2 ops): graph.conv2d [starts the group], graph.relu [R3 epilogue of a contraction]}}
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = graph.relu %0 : tensor<1x4x6x6xf32>
  // expected-remark @+1 {{fusion group 1 (elementwise, 1 ops): graph.add [starts the group]}}
  %2 = graph.add %1, %r : (tensor<1x4x6x6xf32>, tensor<2x1x4x6x6xf32>) -> tensor<2x1x4x6x6xf32>
  return %2 : tensor<2x1x4x6x6xf32>
}

// -----

// The matmul result is also reduced outside its group: it becomes a second
// result of the group, and the matmul is not duplicated.
// CHECK-LABEL: func.func @second_consumer
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x8xf32>)
// CHECK-NEXT: %[[G:.*]]:2 = graph.fused contraction(%[[X]], %[[W]]) : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[M:.*]] = graph.matmul
// CHECK-NEXT: %[[R:.*]] = graph.relu %[[M]]
// CHECK-NEXT: graph.yield %[[M]], %[[R]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[S:.*]] = graph.fused reduction(%[[G]]#0) : (tensor<4x8xf32>) -> tensor<4xf32> {
// CHECK-NOT: graph.matmul
// CHECK: graph.reduce sum
// CHECK-NEXT: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[G]]#1, %[[S]]
func.func @second_consumer(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  // expected-remark @+1 {{fusion group 0 (contraction, 2 ops): graph.matmul [starts the group], graph.relu [R3 epilogue of a contraction]}}
  %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = graph.relu %0 : tensor<4x8xf32>
  // expected-remark @+1 {{fusion group 1 (reduction, 1 ops): graph.reduce [starts the group]}}
  %2 = graph.reduce sum %0 axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %1, %2 : tensor<4x8xf32>, tensor<4xf32>
}

// -----

// %e uses the matmul group (A) and the reduction group (B), which depends on
// A. Joining A would make A and B depend on each other, so %e joins B even
// though a contraction group is preferred.
// CHECK-LABEL: func.func @no_cycle
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x8xf32>)
// CHECK-NEXT: %[[A:.*]] = graph.fused contraction(%[[X]], %[[W]]) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
// CHECK: graph.matmul
// CHECK-NEXT: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[B:.*]] = graph.fused reduction(%[[A]]) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%[[M:.*]]: tensor<4x8xf32>):
// CHECK-NEXT: %[[R:.*]] = graph.reduce sum %[[M]]
// CHECK-NEXT: %[[E:.*]] = graph.add %[[M]], %[[R]]
// CHECK-NEXT: graph.yield %[[E]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[B]]
func.func @no_cycle(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{fusion group 0 (contraction, 1 ops): graph.matmul [starts the group]}}
  %a = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{fusion group 1 (reduction, 2 ops): graph.reduce [starts the group], graph.add [R3 epilogue of a reduction]}}
  %r = graph.reduce sum %a axes [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %e = graph.add %a, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

// Contractions always start a group: two matmuls in sequence are two groups,
// the relu between them is the first one's epilogue.
// CHECK-LABEL: func.func @two_matmuls
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W1:.*]]: tensor<8x8xf32>, %[[W2:.*]]: tensor<8x8xf32>)
// CHECK-NEXT: %[[G0:.*]] = graph.fused contraction(%[[X]], %[[W1]])
// CHECK: graph.matmul
// CHECK-NEXT: graph.relu
// CHECK-NEXT: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[G1:.*]] = graph.fused contraction(%[[G0]], %[[W2]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.matmul
// CHECK-NEXT: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[G1]]
func.func @two_matmuls(%x: tensor<4x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{fusion group 0 (contraction, 2 ops): graph.matmul [starts the group], graph.relu [R3 epilogue of a contraction]}}
  %0 = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = graph.relu %0 : tensor<4x8xf32>
  // expected-remark @+1 {{fusion group 1 (contraction, 1 ops): graph.matmul [starts the group]}}
  %2 = graph.matmul %1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// max pooling is a reduction that takes no producers and that no reduction
// joins; elementwise ops after it are its epilogue.
// CHECK-LABEL: func.func @pooling
// CHECK-NEXT: %[[G0:.*]] = graph.fused elementwise
// CHECK: graph.relu
// CHECK: %[[G1:.*]] = graph.fused reduction(%[[G0]])
// CHECK: graph.pool2d max
// CHECK-NEXT: graph.neg
// CHECK: %[[G2:.*]] = graph.fused reduction(%[[G1]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.pool2d avg
// CHECK-NEXT: graph.yield
// CHECK: return %[[G2]]
func.func @pooling(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x2x2xf32> {
  // expected-remark @+1 {{fusion group 0 (elementwise, 1 ops): graph.relu [starts the group]}}
  %0 = graph.relu %x : tensor<1x2x8x8xf32>
  // expected-remark @+1 {{fusion group 1 (reduction, 2 ops): graph.pool2d [starts the group], graph.neg [R3 epilogue of a reduction]}}
  %1 = graph.pool2d max nchw %0 kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  %2 = graph.neg %1 : tensor<1x2x4x4xf32>
  // expected-remark @+1 {{fusion group 2 (reduction, 1 ops): graph.pool2d [starts the group]}}
  %3 = graph.pool2d avg nchw %2 kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32>
  return %3 : tensor<1x2x2x2xf32>
}

// -----

// Splat constants and constants of up to 16 elements are cloned into the
// group; a 17-element one is a group input and stays in the function.
// CHECK-LABEL: func.func @constants
// CHECK-SAME: (%[[X:.*]]: tensor<17xf32>)
// CHECK-NEXT: %[[BIG:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00, {{.*}}, 1.700000e+01]> : tensor<17xf32>
// CHECK-NEXT: %[[G:.*]] = graph.fused reduction(%[[X]], %[[BIG]]) : (tensor<17xf32>, tensor<17xf32>) -> tensor<17xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<17xf32>, %[[C:.*]]: tensor<17xf32>):
// CHECK-NEXT: %[[SPLAT:.*]] = graph.constant dense<2.000000e+00> : tensor<17xf32>
// CHECK-NEXT: %[[M:.*]] = graph.mul %[[A]], %[[SPLAT]]
// CHECK-NEXT: %[[SMALL:.*]] = graph.constant dense<{{\[}}[1.000000e+00], {{.*}}, [1.600000e+01]]> : tensor<16x1xf32>
// CHECK-NEXT: %[[P:.*]] = graph.add %[[M]], %[[SMALL]] : (tensor<17xf32>, tensor<16x1xf32>) -> tensor<16x17xf32>
// CHECK-NEXT: %[[R:.*]] = graph.reduce
// CHECK: %[[S:.*]] = graph.sub %[[R]], %[[C]]
// CHECK-NEXT: graph.yield %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[G]]
func.func @constants(%x: tensor<17xf32>) -> tensor<17xf32> {
  %splat = graph.constant dense<2.0> : tensor<17xf32>
  %small = graph.constant dense<[[1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0], [8.0], [9.0], [10.0], [11.0], [12.0], [13.0], [14.0], [15.0], [16.0]]> : tensor<16x1xf32>
  %big = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0]> : tensor<17xf32>
  // expected-remark @+1 {{fusion group 0 (reduction, 4 ops): graph.mul [starts the group], graph.add [R1 elementwise chain], graph.reduce [R2 reduction over fused producers], graph.sub [R3 epilogue of a reduction]}}
  %0 = graph.mul %x, %splat : (tensor<17xf32>, tensor<17xf32>) -> tensor<17xf32>
  %1 = graph.add %0, %small : (tensor<17xf32>, tensor<16x1xf32>) -> tensor<16x17xf32>
  %2 = graph.reduce sum %1 axes [0] : tensor<16x17xf32> -> tensor<17xf32>
  %3 = graph.sub %2, %big : (tensor<17xf32>, tensor<17xf32>) -> tensor<17xf32>
  return %3 : tensor<17xf32>
}

// -----

// Ops that are not graph ops stay outside groups; the groups are placed in
// dependency order around them.
// CHECK-LABEL: func.func @foreign_ops
// CHECK: %[[G:.*]] = graph.fused elementwise
// CHECK: graph.exp
// CHECK: graph.neg
// CHECK: }
// CHECK-NEXT: %[[E:.*]] = tensor.extract %[[G]]
// CHECK-NEXT: return %[[E]]
func.func @foreign_ops(%x: tensor<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-remark @+1 {{fusion group 0 (elementwise, 2 ops): graph.exp [starts the group], graph.neg [R1 elementwise chain]}}
  %0 = graph.exp %x : tensor<4xf32>
  %1 = graph.neg %0 : tensor<4xf32>
  %2 = tensor.extract %1[%c0] : tensor<4xf32>
  return %2 : f32
}

// -----

// Dependencies are computed on current membership: when %b2 joins %b's group
// it makes that group (and the slice group %c, which uses %b) depend on %d's
// group through %t, so %e = %d + %c must not join %d's group.
// CHECK-LABEL: func.func @late_dependency
// CHECK-COUNT-4: graph.fused
func.func @late_dependency(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<8x8xf32>) -> (tensor<4x16xf32>, tensor<4x8xf32>) {
  // expected-remark @+1 {{fusion group 0 (contraction, 1 ops): graph.matmul [starts the group]}}
  %d = graph.matmul %x, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{fusion group 1 (contraction, 2 ops): graph.matmul [starts the group], graph.add [R3 epilogue of a contraction]}}
  %b = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  // expected-remark @+1 {{fusion group 2 (elementwise, 2 ops): graph.slice [starts the group], graph.add [R1 elementwise chain]}}
  %c = graph.slice %b[[0, 0] : [4, 16] : [1, 2]] : tensor<4x16xf32> -> tensor<4x8xf32>
  // expected-remark @+1 {{fusion group 3 (elementwise, 1 ops): graph.concat [starts the group]}}
  %t = graph.concat %d, %d axis 1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  %b2 = graph.add %b, %t : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %e = graph.add %d, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %b2, %e : tensor<4x16xf32>, tensor<4x8xf32>
}

// -----

// A dependency through a non-graph op also counts: %1 must not join %0's
// group, since it uses %t, which uses %0.
// CHECK-LABEL: func.func @dependency_through_foreign_op
// CHECK-COUNT-2: graph.fused
func.func @dependency_through_foreign_op(%x: tensor<4xf32>, %f: f32) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  // expected-remark @+1 {{fusion group 0 (elementwise, 1 ops): graph.exp [starts the group]}}
  %0 = graph.exp %x : tensor<4xf32>
  %t = tensor.insert %f into %0[%c0] : tensor<4xf32>
  // expected-remark @+1 {{fusion group 1 (elementwise, 1 ops): graph.add [starts the group]}}
  %1 = graph.add %0, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// A cast keeps the contraction's shape, so it is an epilogue (R3).
// CHECK-LABEL: func.func @cast_epilogue
// CHECK-COUNT-1: graph.fused contraction
// CHECK-NOT: graph.fused
func.func @cast_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf16> {
  // expected-remark @+1 {{fusion group 0 (contraction, 3 ops): graph.matmul [starts the group], graph.relu [R3 epilogue of a contraction], graph.cast [R3 epilogue of a contraction]}}
  %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = graph.relu %0 : tensor<4x16xf32>
  %2 = graph.cast %1 to f16 : tensor<4x16xf32>
  return %2 : tensor<4x16xf16>
}

// -----

// Declarations have nothing to group.
// CHECK-LABEL: func.func private @declaration
func.func private @declaration(tensor<4xf32>) -> tensor<4xf32>

// -----

// An iota is cloned into the group that reads it, as a small constant is:
// the causal mask is computed inside the softmax's group, never stored.
// CHECK-LABEL: func.func @iota_cloned
// CHECK: graph.fused
// CHECK: graph.iota dim 0
// CHECK: graph.iota dim 1
// CHECK: graph.compare ge
// CHECK: graph.select
// CHECK-NOT: graph.fused
// CHECK: return
func.func @iota_cloned(%s: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %rows = graph.iota dim 0 : tensor<8x1xi64>
  %cols = graph.iota dim 1 : tensor<1x8xi64>
  // expected-remark @+1 {{fusion group 0 (elementwise, 2 ops): graph.compare [starts the group], graph.select [R1 elementwise chain]}}
  %mask = graph.compare ge, %rows, %cols : (tensor<8x1xi64>, tensor<1x8xi64>) -> tensor<8x8xi1>
  %inf = graph.constant dense<0xFF800000> : tensor<f32>
  %0 = graph.select %mask, %s, %inf : (tensor<8x8xi1>, tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
