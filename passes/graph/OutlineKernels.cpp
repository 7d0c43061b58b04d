//===- OutlineKernels.cpp - each fusion group becomes a kernel function ---===//
//
// graph.fused @ in function @f becomes `func.func private @f_kernel<N>`
// (marked `tessel.kernel` with its fusion kind) and a func.call. What
// remains of @f is the host program: constants and kernel calls in order.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/Graph.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

namespace tessel {
#define GEN_PASS_DEF_GRAPHOUTLINEKERNELS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;
using namespace tessel::graph;

namespace {

struct GraphOutlineKernelsPass
    : tessel::impl::GraphOutlineKernelsBase<GraphOutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> hosts(module.getOps<func::FuncOp>());
    for (func::FuncOp host : hosts) {
      SmallVector<FusedOp> groups;
      host.walk([&](FusedOp op) { groups.push_back(op); });
      for (auto [i, group] : llvm::enumerate(groups)) {
        OpBuilder b(host);
        Location loc = group.getLoc();
        auto type = b.getFunctionType(group.getInputs().getTypes(),
                                      group.getResultTypes());
        auto kernel = func::FuncOp::create(
            b, loc, (host.getSymName() + "_kernel" + Twine(i)).str(), type);
        kernel.setPrivate();
        // The ranges of the size symbols its types name.
        if (Attribute dims = host->getAttr("graph.dims"))
          kernel->setAttr("graph.dims", dims);
        kernel->setAttr("tessel.kernel",
                        b.getStringAttr(stringifyFusionKind(group.getKind())));
        symbols.insert(kernel);
        kernel.getBody().takeBody(group.getBody());
        Block &body = kernel.getBody().front();
        auto yield = cast<YieldOp>(body.getTerminator());
        OpBuilder kb(yield);
        func::ReturnOp::create(kb, yield.getLoc(), yield.getValues());
        yield.erase();

        b.setInsertionPoint(group);
        auto call = func::CallOp::create(b, loc, kernel, group.getInputs());
        group.replaceAllUsesWith(call.getResults());
        group.erase();
      }
    }
  }
};

} // namespace
