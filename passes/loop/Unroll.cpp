//===- Unroll.cpp - carry out loop.unroll on bufferized kernels ----------===//
//
// loop.unroll marks the linalg ops of a schedule's innermost tile; once on
// buffers they become loops here, before any generic lowering to loops, so
// that their innermost loop can be unrolled.
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"

namespace tessel {
#define GEN_PASS_DEF_LOOPUNROLL
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

struct LoopUnrollPass : tessel::impl::LoopUnrollBase<LoopUnrollPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> marked;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(tessel::loop::kUnrollAttrName))
        marked.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : marked) {
      auto factor =
          op->getAttrOfType<IntegerAttr>(tessel::loop::kUnrollAttrName);
      if (!factor || factor.getInt() < 1 || !op.hasPureBufferSemantics()) {
        op.emitError("loop.unroll: expected a bufferized op with a positive ")
            << tessel::loop::kUnrollAttrName << " factor";
        return signalPassFailure();
      }
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::LinalgLoops> loops =
          linalg::linalgOpToLoops(rewriter, op);
      if (failed(loops)) {
        op.emitError("loop.unroll could not lower this op to loops");
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
      auto innermost =
          loops->empty() ? scf::ForOp() : dyn_cast<scf::ForOp>(loops->back());
      // A factor beyond the trip count unrolls the loop fully.
      int64_t by = factor.getInt();
      if (innermost)
        if (std::optional<APInt> trips = innermost.getStaticTripCount())
          by = std::min<int64_t>(by, std::max<int64_t>(trips->getSExtValue(), 1));
      if (innermost && by > 1 &&
          failed(loopUnrollByFactor(innermost, by))) {
        innermost.emitError("loop.unroll could not unroll this loop by ")
            << by;
        return signalPassFailure();
      }
    }
  }
};

} // namespace
