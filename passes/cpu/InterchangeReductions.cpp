//===- InterchangeReductions.cpp - reductions across rows, along rows -----===//
//
// A reduction over an outer axis (a column sum) walks its input across rows
// in its innermost loop: one element per line, and per page. With the loop
// along the rows innermost instead, each step updates a row of results from
// a row of the input, which LLVM vectorizes, and the results stay in L1.
// The reduction order of each result is unchanged.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/cpu/SplitReduction.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"

namespace tessel {
#define GEN_PASS_DEF_CPUINTERCHANGEREDUCTIONS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {
struct CpuInterchangeReductionsPass
    : tessel::impl::CpuInterchangeReductionsBase<CpuInterchangeReductionsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      std::optional<unsigned> along = tessel::acrossRowsLoop(op);
      if (!along)
        continue;
      // New loop order: the others as they were, then `along`.
      SmallVector<unsigned> order;
      for (unsigned d = 0, e = op.getNumLoops(); d < e; ++d)
        if (d != *along)
          order.push_back(d);
      order.push_back(*along);
      rewriter.setInsertionPoint(op);
      if (failed(linalg::interchangeGenericOp(rewriter, op, order)))
        return signalPassFailure();
    }
  }
};
} // namespace
