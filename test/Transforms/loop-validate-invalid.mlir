// RUN: tessel-opt %s --split-input-file --verify-diagnostics --loop-validate

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @k(%a: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<1024x1024xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<1024x1024xf32>) outs(%e : tensor<1024x1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<1024x1024xf32>
  return %0 : tensor<1024x1024xf32>
}
loop.schedule @k target "sm_90" {
  loop.tile [64, 64] mapping [#gpu.block<y>, #gpu.block<x>]
  // expected-error @below {{gives 4096 threads per block on target 'sm_90'; the limit is 1024}}
  loop.tile [1, 1] mapping [#gpu.thread<y>, #gpu.thread<x>]
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @k(%a: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<1024x1024xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<1024x1024xf32>) outs(%e : tensor<1024x1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<1024x1024xf32>
  return %0 : tensor<1024x1024xf32>
}
loop.schedule @k target "sm_90" {
  %w = loop.knob "warps" = 64 choices [1, 2, 64]
  loop.tile [1, 1024] mapping [#gpu.block<y>, #gpu.block<x>]
  // Warps count 32 threads each: 64 warps are 2048 threads.
  // expected-error @below {{gives 2048 threads per block on target 'sm_90'; the limit is 1024}}
  loop.tile [0, 16] mapping [#gpu.warp<linear_dim_0>]
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @k(%a: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
loop.schedule @k target "sm_90" {
  // expected-error @below {{maps loops to #gpu.thread<x> before any loop is mapped to blocks}}
  loop.tile [0, 1] mapping [#gpu.thread<x>]
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @k(%a: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
loop.schedule @k target "sm_90" {
  %bm = loop.knob "block_m" = 128 choices [32, 128]
  // expected-error @below {{knob 'block_m' = 128 exceeds its loop's extent 64}}
  loop.tile [%bm, 64] mapping [#gpu.block<y>, #gpu.block<x>]
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @k(%a: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
loop.schedule @k target "sm_90" {
  // expected-error @below {{has 3 sizes but the kernel's root has 2 loops}}
  loop.tile [8, 8, 8] mapping [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @k(%a: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
// expected-error @below {{a schedule for GPU target 'sm_90' must map a loop to blocks}}
loop.schedule @k target "sm_90" {
  loop.tile [8, 8]
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @k(%a: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
loop.schedule @k target "sm_90" {
  loop.tile [8, 8] mapping [#gpu.block<y>, #gpu.block<x>]
  // expected-error @below {{maps loops to blocks a second time}}
  loop.tile [4, 4] mapping [#gpu.block<y>, #gpu.block<x>]
}

// -----

#id1 = affine_map<(d0) -> (d0)>
func.func private @k(%a: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<16xf32>
  %neg = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  %abs = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%neg : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.absf %x : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  return %abs, %neg : tensor<16xf32>, tensor<16xf32>
}
// Result 1 is computed inside the root of result 0.
// expected-error @below {{result 1 of kernel 'k' is not a root; roots compute results 0}}
loop.schedule @k result 1 target "sm_90" {
  loop.tile [8] mapping [#gpu.block<x>]
}

// -----

llvm.func @k()
// expected-error @below {{schedules 'k', which is not a func.func}}
loop.schedule @k target "sm_90" {
  loop.tile [8] mapping [#gpu.block<x>]
}
