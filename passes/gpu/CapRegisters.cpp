//===- CapRegisters.cpp - a register cap for setmaxnreg kernels -----------===//
//
// setmaxnreg moves registers between a block's warpgroups at run time, out
// of a pool ptxas sized at the kernel's entry; ptxas honors it only in a
// kernel with a register cap at entry (".minnctapersm" or ".maxnreg"),
// measured: without one it warns that it cannot determine the register
// count at entry, ignores the moves and serializes wgmma.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

namespace tessel {
#define GEN_PASS_DEF_GPUCAPREGISTERS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

struct GpuCapRegistersPass
    : tessel::impl::GpuCapRegistersBase<GpuCapRegistersPass> {
  void runOnOperation() override {
    Builder b(&getContext());
    getOperation().walk([&](gpu::GPUFuncOp kernel) {
      bool moves = kernel
                       .walk([](NVVM::SetMaxRegisterOp) {
                         return WalkResult::interrupt();
                       })
                       .wasInterrupted();
      // One block per SM: each thread starts at its share of the SM.
      if (moves && kernel.isKernel())
        kernel->setAttr("nvvm.minctasm", b.getI32IntegerAttr(1));
    });
  }
};

} // namespace
