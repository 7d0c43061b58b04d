//===- GatherRows.cpp - a gather's index read once per row ----------------===//
//
// A gather (an embedding lookup: out[i, j, :] = table[ids[i, j], :]) is a
// linalg.generic whose body reads a tensor at an index computed from one of
// its inputs. Lowered to loops, that input is loaded at every point of the
// innermost loop, and LLVM cannot hoist the load: the output might alias
// it. So every point recomputes the index and the row is copied element by
// element. Here the generic is tiled to one point of every loop but the
// innermost (scf.for), its unit dims dropped, and the inputs that no longer
// vary (the ids) read once before the row's loop, which LLVM then
// vectorizes into a row copy.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_CPUGATHERROWS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

/// Rows shorter than this are left as they are: a row's loop of a few points
/// gains nothing from reading the index once.
constexpr int64_t kMinRow = 16;

/// A parallel generic on tensors whose body reads a tensor (tensor.extract),
/// with an input that is the same along the innermost loop (the index) and
/// an innermost loop of static extent kMinRow or more.
bool isRowGather(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() < 2 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      op.getBody()->getOps<tensor::ExtractOp>().empty())
    return false;
  int64_t row = op.getStaticLoopRanges().back();
  if (ShapedType::isDynamic(row) || row < kMinRow)
    return false;
  unsigned inner = op.getNumLoops() - 1;
  return llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *input) {
    AffineMap map = op.getMatchingIndexingMap(input);
    return map.getNumResults() > 0 &&
           !map.isFunctionOfDim(inner) && !map.isConstant();
  });
}

struct CpuGatherRowsPass
    : tessel::impl::CpuGatherRowsBase<CpuGatherRowsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    SmallVector<linalg::GenericOp> gathers;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (isRowGather(op))
        gathers.push_back(op);
    });
    IRRewriter rewriter(ctx);
    SmallVector<Operation *> rows;
    for (linalg::GenericOp op : gathers) {
      SmallVector<int64_t> sizes(op.getNumLoops(), 1);
      sizes.back() = 0;
      FailureOr<scf::SCFTilingResult> tiled = tessel::tileInLoops(
          rewriter, cast<TilingInterface>(op.getOperation()), sizes);
      if (failed(tiled)) {
        op.emitError("cpu-gather-rows could not tile this gather by rows");
        return signalPassFailure();
      }
      auto row = cast<linalg::GenericOp>(tiled->tiledOps.front());
      // Slices, not reshapes, drop the unit dims: the row stays a view of
      // the tile.
      linalg::ControlDropUnitDims control;
      control.rankReductionStrategy = linalg::ControlDropUnitDims::
          RankReductionStrategy::ExtractInsertSlice;
      rewriter.setInsertionPoint(row);
      FailureOr<linalg::DropUnitDimsResult> dropped =
          linalg::dropUnitDims(rewriter, row, control);
      if (failed(dropped)) {
        row.emitError("cpu-gather-rows could not drop the unit dims of a "
                      "gather's row");
        return signalPassFailure();
      }
      rewriter.replaceOp(row, dropped->replacements);
      // The inputs that do not vary along the row are now rank-0: read them
      // once, before the row (upstream's constant-operand inlining reads
      // them in the body, at every point), then drop them.
      auto rowOp = cast<linalg::GenericOp>(dropped->resultOp.getOperation());
      rewriter.setInsertionPoint(rowOp);
      for (OpOperand *input : rowOp.getDpsInputOperands()) {
        if (rowOp.getMatchingIndexingMap(input).getNumResults() != 0)
          continue;
        Value once = tensor::ExtractOp::create(rewriter, rowOp.getLoc(),
                                               input->get(), ValueRange{});
        rewriter.replaceAllUsesWith(rowOp.getMatchingBlockArgument(input),
                                    once);
      }
      rows.push_back(rowOp);
    }
    RewritePatternSet patterns(ctx);
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    (void)applyOpPatternsGreedily(rows, std::move(patterns));
  }
};

} // namespace
