//===- DropDestinationResults.cpp - results left in their destinations ----===//
//
// graph-to-linalg{destinations} gives each function with a dynamically
// shaped result one destination argument per result (`tessel.destinations`
// counts them) and returns what it wrote there. Once bufferized, each
// result is its destination buffer, which the caller allocated: this pass
// drops the results and has each call use its destinations instead. Unlike
// upstream's drop-equivalent-buffer-results it also drops those of the
// public entry function, whose destinations are the runtime's buffers;
// buffer-results-to-out-params could not make out-params of dynamically
// shaped results.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/host/Calls.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

namespace tessel {
#define GEN_PASS_DEF_HOSTDROPDESTINATIONRESULTS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using tessel::kDestinationsAttr;
using tessel::recreateCalls;

namespace {

struct HostDropDestinationResultsPass
    : tessel::impl::HostDropDestinationResultsBase<
          HostDropDestinationResultsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      auto count = func->getAttrOfType<IntegerAttr>(kDestinationsAttr);
      if (!count || func.isExternal())
        continue;
      if (count.getInt() != func.getNumResults() ||
          count.getInt() > func.getNumArguments()) {
        func.emitOpError("has ") << func.getNumResults() << " results but "
                                 << count.getInt() << " destinations";
        return signalPassFailure();
      }
      unsigned first = func.getNumArguments() - func.getNumResults();
      WalkResult walk = func.walk([&](func::ReturnOp ret) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          Value source = v;
          while (auto cast = source.getDefiningOp<memref::CastOp>())
            source = cast.getSource();
          if (source != func.getArgument(first + i)) {
            ret.emitOpError("returns as result ")
                << i << " a buffer that is not its destination, argument "
                << first + i;
            return WalkResult::interrupt();
          }
        }
        ret->setOperands({});
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return signalPassFailure();
      func.setType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                     {}));
      func->removeAttr(kDestinationsAttr);
      // Each call's results are the destinations it passed.
      if (failed(recreateCalls(
              func, module, "function is referenced in an unknown way",
              "functions with destinations may only be called",
              [&](OpBuilder &b, func::CallOp old, func::CallOp, unsigned i) -> Value {
                Value destination = old.getOperand(first + i);
                Type type = old.getResult(i).getType();
                if (destination.getType() == type)
                  return destination;
                return memref::CastOp::create(b, old.getLoc(), type, destination)
                    .getResult();
              })))
        return signalPassFailure();
    }
  }
};

} // namespace
