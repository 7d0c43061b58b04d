//===- DedupeKernelResults.cpp - one result per distinct kernel value -----===//
//
// Canonicalization can make a kernel return one value twice (select(c, x,
// x) folds to x). Such results would alias one buffer, which out-param
// bufferization cannot express (upstream's buffer-results-to-out-params
// crashes on it); this pass keeps one result per distinct value and
// rewires the calls.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/host/Calls.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

namespace tessel {
#define GEN_PASS_DEF_HOSTDEDUPEKERNELRESULTS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using tessel::recreateCalls;

namespace {

struct HostDedupeKernelResultsPass
    : tessel::impl::HostDedupeKernelResultsBase<HostDedupeKernelResultsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto kernel : module.getOps<func::FuncOp>()) {
      if (!kernel->hasAttr("tessel.kernel") || kernel.isExternal() ||
          !kernel.isPrivate())
        continue;
      auto ret = cast<func::ReturnOp>(kernel.getBody().back().getTerminator());
      llvm::MapVector<Value, unsigned> slots;
      SmallVector<unsigned> slotOf;
      for (Value v : ret.getOperands())
        slotOf.push_back(slots.try_emplace(v, slots.size()).first->second);
      if (slots.size() == ret.getNumOperands())
        continue;
      SmallVector<Value> unique = llvm::to_vector(llvm::make_first_range(slots));
      ret->setOperands(unique);
      kernel.setType(FunctionType::get(&getContext(), kernel.getArgumentTypes(),
                                       ValueRange(unique).getTypes()));
      if (failed(recreateCalls(
              kernel, module, "kernel is referenced in an unknown way",
              "kernels may only be called",
              [&](OpBuilder &, func::CallOp, func::CallOp now, unsigned i) {
                return now.getResult(slotOf[i]);
              })))
        return signalPassFailure();
    }
  }
};

} // namespace
