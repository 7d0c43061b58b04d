// RUN: tessel-opt %s --pass-pipeline="builtin.module(gpu.module(gpu-cap-registers))" | FileCheck %s

// A kernel whose warpgroups move registers (setmaxnreg) gets a register
// cap at entry (one block per SM); others, and functions that are not
// kernels, are left as they are.
// CHECK-LABEL: gpu.func @moves
// CHECK-SAME: nvvm.minctasm = 1 : i32
// CHECK-LABEL: gpu.func @plain
// CHECK-NOT: nvvm.minctasm
// CHECK-LABEL: gpu.func @helper
// CHECK-NOT: nvvm.minctasm
gpu.module @m {
  gpu.func @moves() kernel {
    nvvm.setmaxregister decrease 40
    gpu.return
  }
  gpu.func @plain() kernel {
    gpu.return
  }
  gpu.func @helper() {
    nvvm.setmaxregister increase 232
    gpu.return
  }
}
