//===- ExternDynamicShared.cpp - dynamic shared memory as the ABI's extern ===//
//
// convert-gpu-to-nvvm gives gpu.dynamic_shared_memory an internal,
// zero-sized workgroup global. NVPTX then "demotes" it into the kernel as a
// one-byte `.shared .b8 __dynamic_shmem__0;`, and the kernel indexes
// kilobytes past that byte: right only if the driver happens to place the
// dynamic region exactly there, and wrong as soon as the kernel also has
// static shared memory. The CUDA ABI names the dynamic region with an
// `.extern .shared` array of unknown size; an external global of zero
// elements is what NVPTX prints as one. It is aligned to 1 KiB, where the
// 128-byte swizzle of wgmma's tiles repeats (the swizzle is a function of
// the address).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/gpu/Buffers.h"

namespace tessel {
#define GEN_PASS_DEF_GPUEXTERNDYNAMICSHARED
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

struct GpuExternDynamicSharedPass
    : tessel::impl::GpuExternDynamicSharedBase<GpuExternDynamicSharedPass> {
  void runOnOperation() override {
    getOperation()->walk([](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (global.getAddrSpace() ==
              static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared) &&
          array && array.getNumElements() == 0) {
        global.setLinkage(LLVM::Linkage::External);
        global.setAlignment(tessel::kSharedAlignment);
      }
    });
  }
};

} // namespace
