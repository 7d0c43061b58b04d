// RUN: tessel-opt %s -split-input-file -verify-diagnostics

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{knob 'block_m' = 96 is outside its domain choices [64, 128, 256]}}
  %bm = loop.knob "block_m" = 96 choices [64, 128, 256]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{knob 'stages' = 6 is outside its domain range [1, 5] step 1}}
  %s = loop.knob "stages" = 6 range [1, 5] step 1
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{knob 'block_k' = 24 is outside its domain range [16, 64] step 16}}
  %s = loop.knob "block_k" = 24 range [16, 64] step 16
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{knob 'x' needs exactly one domain: choices or range}}
  %s = loop.knob "x" = 1
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{knob 'x' needs exactly one domain: choices or range}}
  %s = loop.knob "x" = 1 choices [1, 2] range [1, 2] step 1
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{knob 'x' has no choices}}
  %s = loop.knob "x" = 1 choices []
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{knob 'x' has step 0; the step must be positive}}
  %s = loop.knob "x" = 1 range [1, 4] step 0
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{knob 'x' has an empty range [8, 4]}}
  %s = loop.knob "x" = 8 range [8, 4] step 1
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  %a = loop.knob "tile" = 8 choices [8]
  // expected-error @+1 {{knob name 'tile' is already used in this schedule}}
  %b = loop.knob "tile" = 8 choices [8]
}

// -----

func.func @k() { return }
// expected-error @+1 {{unknown target 'sm_70'; expected one of: cpu, sm_80, sm_86, sm_89, sm_90, sm_90a}}
loop.schedule @k target "sm_70" {
}

// -----

// expected-error @+1 {{schedules 'missing', which is not defined in this module}}
loop.schedule @missing target "sm_90" {
}

// -----

memref.global "private" @not_a_function : memref<4xf32>
// expected-error @+1 {{schedules 'not_a_function', which is not a function}}
loop.schedule @not_a_function target "sm_90" {
}

// -----

func.func @k() {
  // expected-error @+1 {{expects parent op 'loop.schedule'}}
  %s = loop.knob "x" = 1 choices [1]
  return
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{tiles no loop: every size is 0}}
  loop.tile [0, 0, 0]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{tile size -4 is negative}}
  loop.tile [-4, 0]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{has 2 tiled loops but 1 mapping entries; give one entry per non-zero size}}
  loop.tile [64, 64, 0] mapping [#gpu.block<x>]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{mixes block and thread mappings; tile each level with its own loop.tile}}
  loop.tile [64, 64] mapping [#gpu.block<x>, #gpu.thread<x>]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{maps two loops to #gpu.block<x>}}
  loop.tile [64, 64] mapping [#gpu.block<x>, #gpu.block<x>]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{mapping must use #gpu.block, #gpu.warpgroup, #gpu.warp, #gpu.thread or #gpu.lane}}
  loop.tile [64] mapping [#gpu.memory_space<workgroup>]
}

// -----

func.func @k(%n: index) { return }
loop.schedule @k target "sm_90" {
^bb0(%n: index):
  // expected-error @+1 {{tile sizes must be constants or loop.knob values}}
  loop.tile [%n, 0]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{input 2 is not a contraction input (0 is A, 1 is B)}}
  loop.promote inputs [0, 2] pad [8]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{needs 1 pad value, got 2}}
  loop.promote inputs [0, 1] pad [8, 8]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{needs at least one stage}}
  loop.pipeline stages [0]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{needs 3 sizes (warp_m, warp_n, k), got 2}}
  loop.mma [64, 64] shape [16, 8, 16]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{sizes must be positive}}
  loop.mma [64, 0, 32] shape [16, 8, 16]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{threads = 48 is not a positive multiple of the warp size 32}}
  loop.warp_reduce threads [48]
}

// -----

func.func @k() { return }
loop.schedule @k target "cpu" {
  // expected-error @+1 {{is either mapped to GPU ids or `parallel` on the CPU, not both}}
  loop.tile [4, 0] mapping [#gpu.block<x>] parallel
}

// -----

func.func @k() { return }
loop.schedule @k target "cpu" {
  // expected-error @+1 {{needs 3 sizes (rows, columns, depth), got 2}}
  loop.vectorize [8, 16] depth [64] rows [8]
}

// -----

func.func @k() { return }
loop.schedule @k target "cpu" {
  // expected-error @+1 {{sizes, depth and rows must be positive}}
  loop.vectorize [8, 16, 8] depth [0] rows [8]
}

// -----

func.func @k() { return }
loop.schedule @k target "cpu" {
  // expected-error @+1 {{sizes, depth and rows must be positive}}
  loop.vectorize [8, 16, 8] depth [64] rows [0]
}

// -----

func.func @k() { return }
loop.schedule @k target "cpu" {
  // expected-error @+1 {{needs 1 rows value, got 2}}
  loop.vectorize [8, 16, 8] depth [64] rows [8, 8]
}

// -----

func.func @k() { return }
loop.schedule @k target "cpu" {
  // expected-error @+1 {{needs at least one lane}}
  loop.split_reduction lanes [0]
}

// -----

func.func @k() { return }
loop.schedule @k target "cpu" {
  // expected-error @+1 {{needs at least one part}}
  loop.split_k parts [0]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{input 2 is not a contraction input (0 is A, 1 is B)}}
  loop.materialize inputs [2]
}

// -----

func.func @k() { return }
loop.schedule @k target "cpu" {
  // expected-error @+1 {{needs a factor of at least one}}
  loop.unroll factor [0]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{width = 3 is not a power of two}}
  loop.vector_access width [3]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90" {
  // expected-error @+1 {{needs a width of at least one}}
  loop.vector_access width [0]
}

// -----

// Primitives apply in the order written: loop.split_k splits the
// contraction that the levels tile.
func.func @k() { return }
loop.schedule @k target "cpu" {
  loop.tile [64, 64, 0] parallel
  // expected-error @+1 {{'loop.split_k' op comes after loop.tile, but primitives apply in the order written}}
  loop.split_k parts [2]
}

// -----

// loop.split_k reshapes the inputs that loop.materialize computes.
func.func @k() { return }
loop.schedule @k target "sm_90" {
  loop.split_k parts [2]
  // expected-error @+1 {{'loop.materialize' op comes after loop.split_k}}
  loop.materialize inputs [1]
}

// -----

// What acts on the innermost tile follows the levels.
func.func @k() { return }
loop.schedule @k target "sm_90" {
  %v = loop.knob "vector" = 4 choices [1, 2, 4]
  loop.vector_access width [%v]
  // expected-error @+1 {{'loop.tile' op comes after loop.vector_access}}
  loop.tile [1, 256] mapping [#gpu.block<y>, #gpu.block<x>]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90a" {
  // expected-error @+1 {{producers is 0 or 1, not 2}}
  loop.warp_specialize producers [2]
}

// -----

func.func @k() { return }
loop.schedule @k target "sm_90a" {
  // expected-error @+1 {{group_m -1 is negative}}
  loop.persistent group_m [-1]
}

// -----

func.func @bad_box(%a: memref<64x64xf16>) {
  // expected-error @+1 {{box has 1 dims; the buffer has 2}}
  %m = loop.tensor_map %a box [64] swizzle "128B" : memref<64x64xf16> -> memref<128xi8>
  return
}

// -----

func.func @bad_swizzle(%a: memref<64x64xf16>) {
  // expected-error @+1 {{swizzle is one of none, 32B, 64B, 128B, not '256B'}}
  %m = loop.tensor_map %a box [64, 64] swizzle "256B" : memref<64x64xf16> -> memref<128xi8>
  return
}

// -----

func.func @wide_box(%a: memref<64x128xf16>) {
  // expected-error @+1 {{the box's innermost dim is 256 bytes, more than the 128B swizzle}}
  %m = loop.tensor_map %a box [64, 128] swizzle "128B" : memref<64x128xf16> -> memref<128xi8>
  return
}

// -----

func.func @not_a_map(%a: memref<64x64xf16>) {
  // expected-error @+1 {{result must be a memref<128xi8>: an encoded tensor map}}
  %m = loop.tensor_map %a box [64, 64] swizzle "128B" : memref<64x64xf16> -> memref<64xi8>
  return
}

// -----

func.func @view(%a: memref<64x64xf16, strided<[128, 1]>>) {
  // expected-error @+1 {{takes a whole row-major buffer, not a view of}}
  %m = loop.tensor_map %a box [64, 64] swizzle "128B" : memref<64x64xf16, strided<[128, 1]>> -> memref<128xi8>
  return
}

// -----

func.func @bad_producers(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %out: memref<64x64xf32>) {
  // expected-error @+1 {{mma_config: producers = 2 is not 0 or 1}}
  linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90a", block_m = 64, block_n = 64, warp_m = 64, warp_n = 64, k = 64, stages = 2, pad = 0, shape_m = 64, shape_n = 64, producers = 2>} ins(%a, %b : memref<64x64xf16>, memref<64x64xf16>) outs(%out : memref<64x64xf32>)
  return
}

// -----

func.func @bad_group(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %out: memref<64x64xf32>) {
  // expected-error @+1 {{mma_config: group_m = -1 is negative}}
  linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90a", block_m = 64, block_n = 64, warp_m = 64, warp_n = 64, k = 64, stages = 2, pad = 0, shape_m = 64, shape_n = 64, producers = 1, group_m = -1>} ins(%a, %b : memref<64x64xf16>, memref<64x64xf16>) outs(%out : memref<64x64xf32>)
  return
}
