//===- PreferVectorWidth.cpp - LLVM's vectorizer at full vector width -----===//
//
// Sets `prefer_vector_width` on the module's LLVM functions, so that the
// loops LLVM vectorizes use the same vector width as tessel's schedules.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace tessel {
#define GEN_PASS_DEF_CPUPREFERVECTORWIDTH
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {
struct CpuPreferVectorWidthPass
    : tessel::impl::CpuPreferVectorWidthBase<CpuPreferVectorWidthPass> {
  using Base::Base;

  void runOnOperation() override {
    if (bits == 0)
      return;
    StringAttr width =
        StringAttr::get(&getContext(), std::to_string(bits.getValue()));
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      if (!func.isExternal() && !func.getPreferVectorWidthAttr())
        func.setPreferVectorWidthAttr(width);
    });
  }
};
} // namespace
