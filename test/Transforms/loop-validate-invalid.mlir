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

// -----

func.func private @mm(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>) -> tensor<512x512xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%acc : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %mm : tensor<512x512xf32>
}
loop.schedule @mm target "sm_90" {
  %wm = loop.knob "warp_m" = 24 range [8, 64] step 8
  loop.tile [128, 128, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [8]
  // expected-error @below {{knob 'warp_m' = 24 is not a multiple of 16 (the m of mma.m16n8k16)}}
  loop.mma [%wm, 64, 32] shape [16, 8, 16]
}

// -----

// Edge tiles are masked, so tiles need not divide M or N; copies still move
// 16-byte rows, so N must be a multiple of 8.
func.func private @n100(%a: tensor<512x256xf16>, %b: tensor<256x100xf16>) -> tensor<512x100xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x100xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x100xf32>) -> tensor<512x100xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x100xf16>) outs(%acc : tensor<512x100xf32>) -> tensor<512x100xf32>
  return %mm : tensor<512x100xf32>
}
loop.schedule @n100 target "sm_90" {
  %bn = loop.knob "block_n" = 64 choices [64, 128]
  loop.tile [192, %bn, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [8]
  // expected-error @below {{knob 'block_n' = 64 tiles N = 100, which is not a multiple of 8 (16-byte rows of B for cp.async)}}
  loop.mma [64, 64, 32] shape [16, 8, 16]
}

// -----

func.func private @mm(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>) -> tensor<512x512xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%acc : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %mm : tensor<512x512xf32>
}
loop.schedule @mm target "sm_90" {
  %st = loop.knob "stages" = 8 range [1, 8] step 1
  loop.tile [256, 256, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [8]
  loop.pipeline stages [%st]
  // expected-error @below {{knob 'stages' = 8 needs 565248 bytes of shared memory per block; the limit on sm_90 is 232448}}
  loop.mma [128, 128, 64] shape [16, 8, 16]
}

// -----

func.func private @mm(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>) -> tensor<512x512xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%acc : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %mm : tensor<512x512xf32>
}
loop.schedule @mm target "sm_90" {
  loop.tile [128, 128, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [8]
  // expected-error @below {{loop.mma size #0 = 16 gives 2048 threads per block; the limit is 1024}}
  loop.mma [16, 16, 32] shape [16, 8, 16]
}

// -----

func.func private @mm(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>) -> tensor<512x512xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%acc : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %mm : tensor<512x512xf32>
}
loop.schedule @mm target "sm_90" {
  loop.tile [128, 128, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  // expected-error @below {{needs loop.promote inputs [0, 1]: ldmatrix reads its fragments from shared memory}}
  loop.mma [64, 64, 32] shape [16, 8, 16]
}

// -----

func.func private @mm(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>) -> tensor<512x512xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%acc : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %mm : tensor<512x512xf32>
}
loop.schedule @mm target "sm_90" {
  loop.tile [128, 128, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [8]
  // expected-error @below {{shape [16, 8, 8] is not supported; f16 or bf16 operands with f32 accumulation use [16, 8, 16]}}
  loop.mma [64, 64, 32] shape [16, 8, 8]
}

// -----

func.func private @mm(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>) -> tensor<512x512xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%acc : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %mm : tensor<512x512xf32>
}
loop.schedule @mm target "sm_90" {
  loop.tile [128, 128, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  // expected-error @below {{cannot be combined with loop.mma, which distributes the block tile itself}}
  loop.tile [32, 32, 0] mapping [#gpu.thread<y>, #gpu.thread<x>]
  loop.promote inputs [0, 1] pad [8]
  loop.mma [64, 64, 32] shape [16, 8, 16]
}

// -----

// Tensor cores take f32 operands as tf32, in m16n8k8 steps.
func.func private @f32mm(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %mm : tensor<64x64xf32>
}
loop.schedule @f32mm target "sm_90" {
  loop.tile [64, 64, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [4]
  // expected-error @below {{shape [16, 8, 16] is not supported; f32 operands (as tf32) with f32 accumulation use [16, 8, 8]}}
  loop.mma [32, 32, 32] shape [16, 8, 16]
}

// -----

// Integer matmuls have no tensor-core schedule; the kernel is named.
func.func private @i32mm(%a: tensor<64x64xi32>, %b: tensor<64x64xi32>) -> tensor<64x64xi32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<64x64xi32>
  %acc = linalg.fill ins(%zero : i32) outs(%e : tensor<64x64xi32>) -> tensor<64x64xi32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x64xi32>, tensor<64x64xi32>) outs(%acc : tensor<64x64xi32>) -> tensor<64x64xi32>
  return %mm : tensor<64x64xi32>
}
loop.schedule @i32mm target "sm_90" {
  loop.tile [64, 64, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [8]
  // expected-error @below {{cannot apply to kernel 'i32mm': loop.mma takes a (batched) matmul of f16, bf16 or f32 into f32, A row-major (m, k) and B (k, n)}}
  loop.mma [32, 32, 32] shape [16, 8, 16]
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @rows(%a: tensor<64x1000xf32>) -> tensor<64x1000xf32> attributes {tessel.kernel = "reduction"} {
  %e = tensor.empty() : tensor<64x1000xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x1000xf32>) outs(%e : tensor<64x1000xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x1000xf32>
  return %0 : tensor<64x1000xf32>
}
loop.schedule @rows target "sm_90" {
  // expected-error @below {{tile size #1 = 500 splits the rows that loop.warp_reduce shares among threads; leave it 0}}
  loop.tile [1, 500] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.warp_reduce threads [128]
}

// -----

func.func private @mm(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %mm : tensor<64x64xf32>
}
loop.schedule @mm target "sm_90" {
  loop.tile [1, 0, 0] mapping [#gpu.block<x>]
  // expected-error @below {{cannot apply to kernel 'mm': 'linalg.matmul' is not a generic}}
  loop.warp_reduce threads [128]
}

// -----

// CPU schedules: `parallel` tiles only, loop.vectorize tiles that divide
// the matmul, register blocks that divide the tiles.
func.func private @cpu_mm(%a: tensor<96x64xf32>, %b: tensor<64x80xf32>) -> tensor<96x80xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<96x64xf32>, tensor<64x80xf32>) outs(%acc : tensor<96x80xf32>) -> tensor<96x80xf32>
  return %mm : tensor<96x80xf32>
}
loop.schedule @cpu_mm target "cpu" {
  // expected-error @below {{maps loops to GPU ids, but the target is 'cpu'; CPU schedules tile in parallel with `parallel`}}
  loop.tile [32, 16, 0] mapping [#gpu.block<y>, #gpu.block<x>]
}

// -----

func.func private @cpu_mm(%a: tensor<96x64xf32>, %b: tensor<64x80xf32>) -> tensor<96x80xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<96x64xf32>, tensor<64x80xf32>) outs(%acc : tensor<96x80xf32>) -> tensor<96x80xf32>
  return %mm : tensor<96x80xf32>
}
loop.schedule @cpu_mm target "sm_90" {
  // expected-error @below {{is `parallel`, which is for CPU schedules; GPU schedules map loops with `mapping`}}
  loop.tile [32, 16, 0] parallel
}

// -----

func.func private @cpu_mm(%a: tensor<96x64xf32>, %b: tensor<64x80xf32>) -> tensor<96x80xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<96x64xf32>, tensor<64x80xf32>) outs(%acc : tensor<96x80xf32>) -> tensor<96x80xf32>
  return %mm : tensor<96x80xf32>
}
loop.schedule @cpu_mm target "cpu" {
  %rn = loop.knob "reg_n" = 32 choices [16, 32]
  loop.tile [32, 16, 0] parallel
  // expected-error @below {{knob 'reg_n' = 32 exceeds the tile's 16 columns}}
  loop.vectorize [8, %rn, 8] depth [32] rows [8]
}

// -----

func.func private @cpu_mm(%a: tensor<96x64xf32>, %b: tensor<64x80xf32>) -> tensor<96x80xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<96x64xf32>, tensor<64x80xf32>) outs(%acc : tensor<96x80xf32>) -> tensor<96x80xf32>
  return %mm : tensor<96x80xf32>
}
loop.schedule @cpu_mm target "sm_90" {
  loop.tile [32, 16, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  // expected-error @below {{is for the CPU, not target 'sm_90'}}
  loop.vectorize [8, 16, 8] depth [32] rows [8]
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @cpu_ew(%a: tensor<64x1000xf32>) -> tensor<64x1000xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x1000xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x1000xf32>) outs(%e : tensor<64x1000xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x1000xf32>
  return %0 : tensor<64x1000xf32>
}
loop.schedule @cpu_ew target "cpu" {
  loop.tile [4, 0] parallel
  // expected-error @below {{cannot apply to kernel 'cpu_ew': the kernel has 0 contractions, not exactly one}}
  loop.vectorize [8, 16, 8] depth [32] rows [8]
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @cpu_ew(%a: tensor<64x1000xf32>) -> tensor<64x1000xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x1000xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x1000xf32>) outs(%e : tensor<64x1000xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x1000xf32>
  return %0 : tensor<64x1000xf32>
}
loop.schedule @cpu_ew target "cpu" {
  loop.tile [1, 0] parallel
  // expected-error @below {{is for GPU targets, not target 'cpu'}}
  loop.warp_reduce threads [128]
}

// -----

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func private @row_sums(%a: tensor<64x1000xf32>) -> tensor<64xf32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  // expected-note @below {{the reduction}}
  %0 = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<64x1000xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  return %0 : tensor<64xf32>
}
loop.schedule @row_sums target "cpu" {
  %lanes = loop.knob "lanes" = 2048 choices [8, 2048]
  // expected-error @below {{knob 'lanes' = 2048 exceeds the extent 1000 of a reduction}}
  loop.split_reduction lanes [%lanes]
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @no_reduction(%a: tensor<64x1000xf32>) -> tensor<64x1000xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x1000xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x1000xf32>) outs(%e : tensor<64x1000xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x1000xf32>
  return %0 : tensor<64x1000xf32>
}
loop.schedule @no_reduction target "cpu" {
  // expected-error @below {{kernel 'no_reduction' has no reduction over an innermost loop to split}}
  loop.split_reduction lanes [8]
}

// -----

// loop.split_k: the parts must divide K.
func.func private @split(%a: tensor<16x100xf32>, %b: tensor<100x16xf32>) -> tensor<16x16xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<16x100xf32>, tensor<100x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %mm : tensor<16x16xf32>
}
loop.schedule @split target "cpu" {
  %parts = loop.knob "split_k" = 8 choices [1, 2, 4, 8]
  // expected-error @below {{knob 'split_k' = 8 does not divide the contraction's K = 100}}
  loop.split_k parts [%parts]
  loop.tile [8, 8, 0] parallel
}

// -----

// A kernel without a contraction has no K to split.
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
loop.schedule @k target "cpu" {
  // expected-error @below {{cannot apply to kernel 'k': the kernel has 0 contractions, not exactly one}}
  loop.split_k parts [2]
  loop.tile [8, 0] parallel
}

// -----

// On GPUs the parts take grid z, which a batched block tile may use.
#a = affine_map<(b, m, n, k) -> (b, m, k)>
#b = affine_map<(b, m, n, k) -> (b, k, n)>
#c = affine_map<(b, m, n, k) -> (b, m, n)>
func.func private @batched(%a: tensor<4x64x256xf32>, %b: tensor<4x256x64xf32>) -> tensor<4x64x64xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x64x256xf32>, tensor<4x256x64xf32>) outs(%f : tensor<4x64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x64x64xf32>
  return %mm : tensor<4x64x64xf32>
}
loop.schedule @batched target "sm_90" {
  // expected-error @below {{puts the parts on grid z, which the block tile already maps a loop to}}
  loop.split_k parts [2]
  loop.tile [1, 1, 64, 0] mapping [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]
  loop.tile [0, 0, 1, 0] mapping [#gpu.thread<x>]
}

// -----

// Tensor cores copy their tiles from memory: a computed input must be
// materialized.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#a = affine_map<(b, m, n, k) -> (m, k)>
#b = affine_map<(b, m, n, k) -> (b, k, n)>
#c = affine_map<(b, m, n, k) -> (b, m, n)>
func.func private @patches(%x: tensor<2x72x32xf16>, %w: tensor<32x72xf16>) -> tensor<2x32x32xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x72x32xf16>
  %cols = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x72x32xf16>) outs(%e : tensor<2x72x32xf16>) {
  ^bb0(%v: f16, %o: f16):
    %n = arith.negf %v : f16
    linalg.yield %n : f16
  } -> tensor<2x72x32xf16>
  %acc0 = tensor.empty() : tensor<2x32x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc0 : tensor<2x32x32xf32>) -> tensor<2x32x32xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %cols : tensor<32x72xf16>, tensor<2x72x32xf16>) outs(%acc : tensor<2x32x32xf32>) {
  ^bb0(%p: f16, %q: f16, %r: f32):
    %pf = arith.extf %p : f16 to f32
    %qf = arith.extf %q : f16 to f32
    %m = arith.mulf %pf, %qf : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x32x32xf32>
  return %mm : tensor<2x32x32xf32>
}
loop.schedule @patches target "sm_90" {
  loop.tile [1, 32, 32, 0] mapping [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [8]
  // expected-error @below {{copies its tiles from memory, but input 1 of the contraction is computed in the kernel; add loop.materialize inputs [1]}}
  loop.mma [16, 16, 32] shape [16, 8, 16]
}

// -----

// The filter is an argument: nothing to materialize.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#a = affine_map<(b, m, n, k) -> (m, k)>
#b = affine_map<(b, m, n, k) -> (b, k, n)>
#c = affine_map<(b, m, n, k) -> (b, m, n)>
func.func private @patches(%x: tensor<2x72x32xf16>, %w: tensor<32x72xf16>) -> tensor<2x32x32xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x72x32xf16>
  %cols = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x72x32xf16>) outs(%e : tensor<2x72x32xf16>) {
  ^bb0(%v: f16, %o: f16):
    %n = arith.negf %v : f16
    linalg.yield %n : f16
  } -> tensor<2x72x32xf16>
  %acc0 = tensor.empty() : tensor<2x32x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc0 : tensor<2x32x32xf32>) -> tensor<2x32x32xf32>
  %mm = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %cols : tensor<32x72xf16>, tensor<2x72x32xf16>) outs(%acc : tensor<2x32x32xf32>) {
  ^bb0(%p: f16, %q: f16, %r: f32):
    %pf = arith.extf %p : f16 to f32
    %qf = arith.extf %q : f16 to f32
    %m = arith.mulf %pf, %qf : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x32x32xf32>
  return %mm : tensor<2x32x32xf32>
}
loop.schedule @patches target "sm_90" {
  // expected-error @below {{input 0 of the contraction is not computed by a linalg op of the kernel; there is nothing to materialize}}
  loop.materialize inputs [0, 1]
  loop.tile [1, 32, 32, 0] mapping [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [8]
  loop.mma [16, 16, 32] shape [16, 8, 16]
}

// -----

// loop.vectorize writes its loops itself: loop.unroll does not combine.
func.func private @mm(%a: tensor<16x64xf32>, %b: tensor<64x16xf32>) -> tensor<16x16xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<16x64xf32>, tensor<64x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %mm : tensor<16x16xf32>
}
loop.schedule @mm target "cpu" {
  loop.tile [8, 8, 0] parallel
  loop.vectorize [4, 8, 4] depth [64] rows [8]
  // expected-error @below {{cannot be combined with loop.vectorize, which writes the tile's loops itself}}
  loop.unroll factor [4]
}

// -----

// loop.vector_access needs the thread tile to be its width of points of
// the innermost loop.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @ew(%a: tensor<64x1024xf32>) -> tensor<64x1024xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x1024xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x1024xf32>) outs(%e : tensor<64x1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x1024xf32>
  return %0 : tensor<64x1024xf32>
}
loop.schedule @ew target "sm_90" {
  %vector = loop.knob "vector" = 4 choices [1, 2, 4]
  loop.tile [1, 1024] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.tile [0, 2] mapping [#gpu.thread<x>]
  // expected-error @below {{knob 'vector' = 4 differs from the thread tile's 2 points of the innermost loop; tile it by the same knob}}
  loop.vector_access width [%vector]
}

// -----

// Vectors of at most 16 bytes: 8 f32 is 32.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @ew(%a: tensor<64x1024xf32>) -> tensor<64x1024xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x1024xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x1024xf32>) outs(%e : tensor<64x1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x1024xf32>
  return %0 : tensor<64x1024xf32>
}
loop.schedule @ew target "sm_90" {
  loop.tile [1, 1024] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.tile [0, 8] mapping [#gpu.thread<x>]
  // expected-error @below {{width = 8 moves 32 bytes of 'f32' per vector; the limit is 16}}
  loop.vector_access width [8]
}

// -----

// A thread tile with points of an outer loop, but not a square of the
// width (as a transposed operand's loop has).
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @ew(%a: tensor<64x1024xf32>) -> tensor<64x1024xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x1024xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x1024xf32>) outs(%e : tensor<64x1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x1024xf32>
  return %0 : tensor<64x1024xf32>
}
loop.schedule @ew target "sm_90" {
  loop.tile [2, 1024] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.tile [0, 4] mapping [#gpu.thread<x>]
  // expected-error @below {{needs a thread tile of one point in every loop but the innermost and at most one other of width points; loop 0 keeps 2}}
  loop.vector_access width [4]
}

// -----

// A root that reduces.
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func private @sum(%a: tensor<64x1024xf32>) -> tensor<64xf32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %0 = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<64x1024xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %o : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  return %0 : tensor<64xf32>
}
loop.schedule @sum target "sm_90" {
  loop.tile [64, 0] mapping [#gpu.block<x>]
  loop.tile [1, 0] mapping [#gpu.thread<x>]
  // expected-error @below {{needs an elementwise root; the root of kernel 'sum' has reduction loops}}
  loop.vector_access width [4]
}

// -----

// A CPU schedule.
#id = affine_map<(d0) -> (d0)>
func.func private @ew(%a: tensor<1024xf32>) -> tensor<1024xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<1024xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<1024xf32>
  return %0 : tensor<1024xf32>
}
loop.schedule @ew target "cpu" {
  loop.tile [256] parallel
  // expected-error @below {{is for GPU targets, not target 'cpu'}}
  loop.vector_access width [4]
}

// -----

// Only an empty schedule fits a kernel without a root.
func.func private @k(%a: tensor<8x32xf32>) -> tensor<16x32xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<16x32xf32>
  %c0 = tensor.insert_slice %a into %e[0, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<16x32xf32>
  %c1 = tensor.insert_slice %a into %c0[8, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<16x32xf32>
  return %c1 : tensor<16x32xf32>
}
// expected-error @below {{kernel 'k' has no linalg root to schedule}}
loop.schedule @k target "sm_90" {
  loop.tile [8, 32] mapping [#gpu.block<y>, #gpu.block<x>]
}

// -----

#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
#t = affine_map<(d0, d1) -> (d1, d0)>
#out2 = affine_map<(d0, d1) -> ()>
func.func private @tiled(%a: tensor<1000xf32>) -> tensor<f32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%a : tensor<1000xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
loop.schedule @tiled target "sm_90" {
  loop.grid_reduce parts [1] threads [128]
  // expected-error @below {{cannot be combined with loop.grid_reduce, which schedules the whole kernel}}
  loop.tile [500] mapping [#gpu.block<x>]
}

// -----

#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
#t = affine_map<(d0, d1) -> (d1, d0)>
#out2 = affine_map<(d0, d1) -> ()>
func.func private @halves(%a: tensor<1000xf16>) -> tensor<f16> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<f16>
  %f = linalg.fill ins(%zero : f16) outs(%e : tensor<f16>) -> tensor<f16>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%a : tensor<1000xf16>) outs(%f : tensor<f16>) {
  ^bb0(%x: f16, %acc: f16):
    %y = arith.addf %acc, %x : f16
    linalg.yield %y : f16
  } -> tensor<f16>
  return %s : tensor<f16>
}
loop.schedule @halves target "sm_90" {
  // expected-error @below {{cannot apply to kernel 'halves': a reduction to a single value does not combine f32, i32 or i64 values with an op that has a neutral element, nor take the maximum or minimum of f16 or bf16 ones}}
  loop.grid_reduce parts [1] threads [128]
}

// -----

#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
#t = affine_map<(d0, d1) -> (d1, d0)>
#out2 = affine_map<(d0, d1) -> ()>
func.func private @transposed(%a: tensor<10x20xf32>) -> tensor<f32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#t, #out2], iterator_types = ["reduction", "reduction"]}
      ins(%a : tensor<10x20xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
loop.schedule @transposed target "sm_90" {
  // expected-error @below {{cannot apply to kernel 'transposed': a reduction to a single value reads its loops out of order, in part or not last (a transposed or broadcast input)}}
  loop.grid_reduce parts [1] threads [128]
}

// -----

#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
#t = affine_map<(d0, d1) -> (d1, d0)>
#out2 = affine_map<(d0, d1) -> ()>
func.func private @host(%a: tensor<1000xf32>) -> tensor<f32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%a : tensor<1000xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
loop.schedule @host target "cpu" {
  // expected-error @below {{takes no `threads` on the CPU, whose rows are walked in vectors by loop.split_reduction}}
  loop.grid_reduce parts [1] threads [128]
}

// -----

#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
func.func private @threadless(%a: tensor<1000xf32>) -> tensor<f32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%a : tensor<1000xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
loop.schedule @threadless target "sm_90" {
  // expected-error @below {{needs `threads` on GPU targets}}
  loop.grid_reduce parts [8]
}

// -----

#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
func.func private @two_grids(%a: tensor<1000xf32>) -> tensor<f32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%a : tensor<1000xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
loop.schedule @two_grids target "cpu" {
  // expected-error @below {{is one of several in the schedule; one splits all the kernel's reductions to single values}}
  loop.grid_reduce parts [4]
  loop.grid_reduce parts [8]
}

// -----

// On the CPU, one schedule of a kernel splits all its reductions to single
// values; the others tile its other roots.
#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
func.func private @split_twice(%a: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<f32>) attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%a : tensor<1000xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  %ev = tensor.empty() : tensor<1000xf32>
  %n = linalg.generic {indexing_maps = [#in, #in], iterator_types = ["parallel"]}
      ins(%a : tensor<1000xf32>) outs(%ev : tensor<1000xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<1000xf32>
  return %n, %s : tensor<1000xf32>, tensor<f32>
}
// expected-error @below {{kernel 'split_twice' has loop.grid_reduce in another schedule, but it splits all the kernel's reductions to single values}}
loop.schedule @split_twice target "cpu" {
  loop.grid_reduce parts [4]
}
// expected-error @below {{kernel 'split_twice' has loop.grid_reduce in another schedule, but it splits all the kernel's reductions to single values}}
loop.schedule @split_twice result 0 target "cpu" {
  loop.grid_reduce parts [2]
  loop.tile [100] parallel
}

// -----

#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
#t = affine_map<(d0, d1) -> (d1, d0)>
#out2 = affine_map<(d0, d1) -> ()>
func.func private @wide(%a: tensor<1000xf32>) -> tensor<f32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%a : tensor<1000xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
loop.schedule @wide target "sm_90" {
  // expected-error @below {{threads = 2048 exceeds the limit of 1024 threads per block}}
  loop.grid_reduce parts [1] threads [2048]
}

// -----

#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
#t = affine_map<(d0, d1) -> (d1, d0)>
#out2 = affine_map<(d0, d1) -> ()>
func.func private @twice(%a: tensor<1000xf32>) -> tensor<f32> attributes {tessel.kernel = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction"]}
      ins(%a : tensor<1000xf32>) outs(%f : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
// expected-error @below {{kernel 'twice' has other schedules, but loop.grid_reduce schedules all of it}}
loop.schedule @twice target "sm_90" {
  loop.grid_reduce parts [1] threads [128]
}
loop.schedule @twice result 0 target "sm_90" {
  // expected-error @below {{tile size = 500 tiles reduction loop 0 across parallel processors}}
  loop.tile [500] mapping [#gpu.block<x>]
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @pointwise(%a: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<64x64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
loop.schedule @pointwise target "sm_90" {
  // expected-error @below {{cannot apply to kernel 'pointwise': it has no reduction to a single value}}
  loop.grid_reduce parts [1] threads [128]
}

// -----

// Tiles of a reduction loop run in parallel would race on the result.
func.func private @mm(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
loop.schedule @mm target "cpu" {
  // expected-error @below {{tile size #2 = 8 tiles reduction loop 2 across parallel workers}}
  loop.tile [8, 0, 8] parallel
}

// -----

func.func private @mm(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
loop.schedule @mm target "sm_90" {
  // expected-error @below {{tile size #2 = 16 tiles reduction loop 2 across parallel processors}}
  loop.tile [16, 16, 16] mapping [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @empty(%a: tensor<4x0xf32>) -> tensor<4x0xf32> attributes {tessel.kernel = "elementwise"} {
  %e = tensor.empty() : tensor<4x0xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x0xf32>) outs(%e : tensor<4x0xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<4x0xf32>
  return %0 : tensor<4x0xf32>
}
// expected-error @below {{kernel 'empty' has a loop of extent 0, which GPU schedules do not take}}
loop.schedule @empty target "sm_90" {
  loop.tile [1, 0] mapping [#gpu.block<x>]
}

// -----

// A producer warpgroup copies with TMA for wgmma; mma.sync warps copy their
// own tiles.
func.func private @mm(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>) -> tensor<512x512xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%acc : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %mm : tensor<512x512xf32>
}
loop.schedule @mm target "sm_90a" {
  %p = loop.knob "producers" = 1 choices [0, 1]
  loop.tile [128, 128, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [8]
  loop.warp_specialize producers [%p]
  // expected-error @below {{knob 'producers' = 1 needs loop.mma of shape m64 (wgmma): mma.sync warps copy their own tiles}}
  loop.mma [64, 64, 32] shape [16, 8, 16]
}

// -----

// A persistent grid needs a producer warpgroup.
func.func private @mm(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>) -> tensor<512x512xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%acc : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %mm : tensor<512x512xf32>
}
loop.schedule @mm target "sm_90a" {
  %g = loop.knob "group_m" = 8 choices [1, 8]
  loop.tile [128, 256, 0] mapping [#gpu.block<y>, #gpu.block<x>]
  loop.promote inputs [0, 1] pad [0]
  loop.pipeline stages [4]
  loop.persistent group_m [%g]
  // expected-error @below {{knob 'group_m' = 8 makes the grid persistent, which needs a producer warpgroup (loop.warp_specialize producers [1])}}
  loop.mma [64, 256, 64] shape [64, 256, 16]
}
