//===- SerializeInnerForalls.cpp - one level of CPU parallelism -----------===//
//
// A GPU schedule nests foralls (blocks, then threads). Run on the CPU to
// check its semantics, only the outermost level becomes async-runtime
// tasks: a task that waited on nested tasks could hold every worker and
// deadlock, so inner foralls become sequential scf.for loops.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/SCF/Transforms/Transforms.h"

namespace tessel {
#define GEN_PASS_DEF_CPUSERIALIZEINNERFORALLS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

struct CpuSerializeInnerForallsPass
    : tessel::impl::CpuSerializeInnerForallsBase<
          CpuSerializeInnerForallsPass> {
  void runOnOperation() override {
    SmallVector<scf::ForallOp> inner;
    getOperation()->walk([&](scf::ForallOp forall) {
      if (forall->getParentOfType<scf::ForallOp>())
        inner.push_back(forall);
    });
    IRRewriter rewriter(&getContext());
    // Post-order: innermost first, so each conversion sees a forall whose
    // nested ones are already loops.
    for (scf::ForallOp forall : inner) {
      // Upstream's conversion takes foralls without results only.
      if (forall.getNumResults() != 0) {
        forall.emitError("cpu-serialize-inner-foralls runs after "
                         "bufferization; this nested scf.forall still has "
                         "tensor results");
        return signalPassFailure();
      }
      rewriter.setInsertionPoint(forall);
      if (failed(scf::forallToForLoop(rewriter, forall))) {
        forall.emitError("could not serialize this nested scf.forall");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
