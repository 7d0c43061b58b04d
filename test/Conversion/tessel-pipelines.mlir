// Whole compiles by name: what tessel.compile runs (test/python/test_tools.py
// checks the PTX is the same), with the target's facts from the table.
// RUN: tessel-opt %s --tessel-cuda-pipeline=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: tessel-opt %s --tessel-cuda-pipeline=chip=sm_90a | FileCheck %s --check-prefix=SM90A
// RUN: tessel-opt %s --tessel-cpu-pipeline | FileCheck %s --check-prefix=CPU
// RUN: tessel-opt %s --tessel-cpu-pipeline=chip=sm_80 | FileCheck %s --check-prefix=CPU
// RUN: not tessel-opt %s --tessel-cuda-pipeline=chip=sm_99 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tessel-opt %s --tessel-cuda-pipeline=chip=cpu 2>&1 | FileCheck %s --check-prefix=NOTGPU

// The kernel launches its GPU kernel, whose PTX is for the chip, and the
// host program calls the kernel.
// SM80: func.func private @mlp_kernel0(
// SM80: gpu.launch_func @mlp_kernel0_kernel::@mlp_kernel0_kernel
// SM80: gpu.binary @mlp_kernel0_kernel
// SM80-SAME: chip = "sm_80", features = "+ptx70"
// SM80-SAME: .version 7.0
// SM80-SAME: .target sm_80
// SM80-SAME: .entry mlp_kernel0_kernel
// SM80: func.func @mlp(
// SM80-NEXT: call @mlp_kernel0(

// sm_90a has wgmma: the arch-specific chip and PTX 8.0.
// SM90A: gpu.binary @mlp_kernel0_kernel
// SM90A-SAME: .version 8.3
// SM90A-SAME: .target sm_90a

// CPU-NOT: gpu.
// CPU: llvm.func @mlp

// UNKNOWN: tessel-cuda-pipeline: unknown target 'sm_99'; expected one of: cpu, sm_80, sm_86, sm_89, sm_90, sm_90a
// NOTGPU: tessel-cuda-pipeline: 'cpu' is not a GPU

func.func @mlp(%x: tensor<32x64xf32>, %w: tensor<64x48xf32>, %b: tensor<48xf32>) -> tensor<32x48xf32> {
  %0 = graph.matmul %x, %w : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  %1 = graph.add %0, %b : (tensor<32x48xf32>, tensor<48xf32>) -> tensor<32x48xf32>
  %2 = graph.relu %1 : tensor<32x48xf32>
  return %2 : tensor<32x48xf32>
}
