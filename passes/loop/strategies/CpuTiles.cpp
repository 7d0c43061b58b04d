//===- CpuTiles.cpp - CPU elementwise and reduction kernels in row tiles ---===//
//
// Every CPU kernel the other strategies decline: parallel tiles of about
// kCpuTilePoints points of the root, inner loops whole, so that a softmax
// tile holds whole rows and its reductions are fused, and the loops along
// which the root reads reduced values whole, so that no tile reduces the
// input again; loop.split_reduction walks the reductions along rows in
// vectors of partial results (32 lanes). Reductions to single values, long
// enough, are split in parts on all cores first (loop.grid_reduce, in the
// same schedule). A root small enough to be one tile, with nothing to
// split, gets no schedule.
//
//===----------------------------------------------------------------------===//

#include "passes/loop/strategies/Strategy.h"

#include "passes/cpu/SplitReduction.h"
#include "passes/loop/RowReduction.h"

#include "mlir/Analysis/SliceAnalysis.h"

using namespace mlir;
using namespace tessel;

namespace {

/// CPU tiles of a loop that cuts rows into strips (a column sum's columns)
/// take a quarter of the loop (kCpuMinTiles), within these bounds: a strip
/// of at least a cache line, and long runs of each row, which the
/// prefetchers follow (sum over axis 0 of 4096x4096 on the 2-core Sapphire
/// Rapids VM: 10.6 ms in strips of 64, 4.4 ms in strips of 512; softmax
/// over axis 0: 37.7 and 24.7 ms).
constexpr int64_t kCpuMinStrip = 16;
constexpr int64_t kCpuMaxStrip = 512;
/// Rows of a CPU reduction to a single value split in parts
/// (loop.grid_reduce): at least this many elements each, a few tens of
/// microseconds of one core, which dwarf a task's start.
constexpr int64_t kCpuRowPoints = 32768;
/// At most this many parts: enough tasks to even out the cores' loads.
constexpr int64_t kCpuMaxParts = 64;
/// Whether `value` is computed by a chain of its block's ops that reduces.
bool computedByReduction(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.inclusive = true;
  options.filter = [&](Operation *op) {
    return op->getBlock() == def->getBlock();
  };
  (void)getBackwardSlice(def, &slice, options);
  return llvm::any_of(slice, [](Operation *op) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    return linalgOp && linalgOp.getNumReductionLoops() > 0;
  });
}

/// Which of `iterators` are reductions.
SmallVector<bool>
reductionLoops(ArrayRef<utils::IteratorType> iterators) {
  return llvm::map_to_vector(iterators, [](utils::IteratorType it) {
    return it == utils::IteratorType::reduction;
  });
}

/// Whether `value` is a single value (a tensor of one element).
bool isSingleValue(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() && type.getNumElements() == 1;
}

/// The loops of `root` that a CPU tile keeps whole: its reductions, and
/// those along which it reads a value that the kernel reduces (a softmax's
/// row maxima, broadcast along the row; column means, along the columns):
/// tiles split along them would each reduce the whole input again. Single
/// values do not count when `singleValuesOnce` (loop.grid_reduce computes
/// them before the tiles).
SmallVector<bool> wholeLoops(TilingInterface root,
                                    bool singleValuesOnce) {
  SmallVector<bool> whole = reductionLoops(root.getLoopIteratorTypes());
  auto op = dyn_cast<linalg::LinalgOp>(root.getOperation());
  if (!op)
    return whole;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (!computedByReduction(input->get()) ||
        (singleValuesOnce && isSingleValue(input->get())))
      continue;
    AffineMap map = op.getMatchingIndexingMap(input);
    for (unsigned d = 0; d < whole.size(); ++d)
      if (!map.isFunctionOfDim(d))
        whole[d] = true;
  }
  return whole;
}

/// The inputs of `root` that a linalg op of the kernel computes by
/// reducing, with that op; but single values when `singleValuesOnce`.
SmallVector<std::pair<OpOperand *, linalg::LinalgOp>>
reducedInputs(linalg::LinalgOp root, bool singleValuesOnce) {
  SmallVector<std::pair<OpOperand *, linalg::LinalgOp>> found;
  for (OpOperand *input : root.getDpsInputOperands())
    if (auto producer = input->get().getDefiningOp<linalg::LinalgOp>();
        producer && producer.getNumReductionLoops() > 0 &&
        !(singleValuesOnce && isSingleValue(input->get())))
      found.push_back({input, producer});
  return found;
}

/// Points that the reductions fused into a CPU tile of `root` (no extent
/// of which is 0) walk per point of the root's loops beyond those it keeps
/// whole (a mean's sum: the reduced extent; a softmax's row sums: 1, the
/// row being whole). `singleValuesOnce` as for wholeLoops.
int64_t fusedReductionWork(linalg::LinalgOp root,
                                  ArrayRef<int64_t> extents,
                                  bool singleValuesOnce) {
  int64_t work = 1;
  for (auto [input, producer] : reducedInputs(root, singleValuesOnce)) {
    int64_t reduced = 1, broadcast = 1;
    for (auto [extent, it] : llvm::zip(producer.getStaticLoopRanges(),
                                       producer.getIteratorTypesArray()))
      if (it == utils::IteratorType::reduction)
        reduced *= extent;
    AffineMap read = root.getMatchingIndexingMap(input);
    for (auto [d, extent] : llvm::enumerate(extents))
      if (!read.isFunctionOfDim(d))
        broadcast *= extent;
    work = std::max(work, reduced / broadcast);
  }
  return work;
}

/// The loops of `root` along which CPU tiles would cut an operand into
/// strips of its rows: the operand, of the root or of a reduction fused
/// into it, is contiguous along the loop and read whole along another (a
/// column sum's input). Such strips are tiled wide (kCpuMaxStrip).
/// `singleValuesOnce` as for wholeLoops.
SmallVector<bool> stripLoops(linalg::LinalgOp root, ArrayRef<bool> whole,
                                    bool singleValuesOnce) {
  SmallVector<bool> strips(root.getNumLoops(), false);
  // Marks the loops of `op` (through `toRoot`, as the root's) along which
  // an operand read whole along a loop of `opWhole` is contiguous.
  auto mark = [&](linalg::LinalgOp op, ArrayRef<bool> opWhole,
                  function_ref<std::optional<unsigned>(unsigned)> toRoot) {
    for (AffineMap map : op.getIndexingMapsArray()) {
      if (map.getNumResults() == 0)
        continue;
      auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
      if (!last || !llvm::any_of(llvm::seq<unsigned>(opWhole.size()),
                                 [&](unsigned d) {
                                   return opWhole[d] && map.isFunctionOfDim(d);
                                 }))
        continue;
      if (std::optional<unsigned> d = toRoot(last.getPosition()))
        strips[*d] = true;
    }
  };
  mark(root, whole, [](unsigned d) { return std::optional<unsigned>(d); });
  for (auto [input, producer] : reducedInputs(root, singleValuesOnce)) {
    SmallVector<bool> reduced =
        reductionLoops(producer.getIteratorTypesArray());
    AffineMap read = root.getMatchingIndexingMap(input);
    AffineMap written =
        producer.getIndexingMapMatchingResult(cast<OpResult>(input->get()));
    // The root's loop that reads the result dimension the producer's loop
    // `p` writes.
    mark(producer, reduced, [&](unsigned p) -> std::optional<unsigned> {
      for (auto [r, w] : llvm::zip(read.getResults(), written.getResults()))
        if (w == getAffineDimExpr(p, root.getContext()))
          if (auto d = dyn_cast<AffineDimExpr>(r))
            return d.getPosition();
      return std::nullopt;
    });
  }
  return strips;
}

struct CpuTiles final : Strategy {
  StringRef name() const override { return "CPU tiles"; }

  bool owns(Operation *op) const override {
    return isa<loop::SplitReductionOp>(op);
  }
  // Its lanes.
  bool writesTileLoops(Operation *) const override { return true; }

  Default addDefault(DefaultRequest r) const override {
    OpBuilder sb(r.func.getContext());
    Location loc = r.func.getLoc();
    SmallVector<int64_t> parallel = parallelLoops(r.root);
    SmallVector<int64_t> sizes(r.extents.size(), 0);
    // Reductions to single values (a sum, a 1-D softmax's), long enough,
    // in parts on all cores (loop.grid_reduce), which the first root's
    // schedule holds; they are then computed before the tiles.
    std::optional<GridParts> grid;
    if (r.mayCoverKernel) {
      grid = gridParts(r.func, kCpuRowPoints, kCpuMaxParts,
                       /*uneven=*/false);
      if (grid && (grid->parts == 1 ||
                   !gridReductionUnfit(r.func, grid->parts, /*gpu=*/false)
                        .empty()))
        grid.reset();
    }
    // Tiles of about kCpuTilePoints: the loops that must stay whole
    // (wholeLoops), then inner loops whole, the first that overflows split
    // (its tile size is the knob), outer ones by 1.
    SmallVector<bool> whole = wholeLoops(r.root, grid.has_value());
    auto linalgRoot = dyn_cast<linalg::LinalgOp>(r.root.getOperation());
    int64_t volume =
        linalgRoot ? fusedReductionWork(linalgRoot, r.extents, grid.has_value())
                   : 1;
    for (auto [d, w] : llvm::enumerate(whole))
      if (w)
        volume *= r.extents[d];
    std::optional<int64_t> split;
    for (int64_t d : llvm::reverse(parallel)) {
      if (whole[d])
        continue;
      if (split) {
        sizes[d] = 1;
      } else if (volume * r.extents[d] > kCpuTilePoints) {
        split = d;
        sizes[d] = ShapedType::kDynamic;
      } else {
        volume *= r.extents[d];
      }
    }
    // Reductions over the innermost loop keep vectors of partial results;
    // the lane counts are those that fit every such reduction (a remainder
    // is reduced after the vectors).
    SmallVector<int64_t> lanes = {1, 8, 16, 32, 64};
    bool reduces = false;
    int64_t shortestRow = std::numeric_limits<int64_t>::max();
    r.func.walk([&](linalg::LinalgOp op) {
      if (!isSplittableReduction(op))
        return;
      reduces = true;
      int64_t extent = op.getStaticLoopRanges().back();
      shortestRow = std::min(shortestRow, extent);
      lanes = llvm::filter_to_vector(lanes,
                                     [&](int64_t l) { return l <= extent; });
    });
    bool splitsReductions = reduces && lanes.size() > 1;
    if (!split && !splitsReductions && !grid)
      return Default::Done;
    r.begin(sb);
    Value tile, lanesKnob;
    if (grid) {
      Value parts = addKnob(sb, loc, "parts", grid->parts, grid->choices);
      loop::GridReduceOp::create(
          sb, loc, ValueRange{parts},
          sb.getDenseI64ArrayAttr({ShapedType::kDynamic}), ValueRange{},
          sb.getDenseI64ArrayAttr({}));
    }
    if (split) {
      SmallVector<int64_t> choices = powersOfTwoUpTo(r.extents[*split]);
      int64_t preferred = std::max<int64_t>(1, kCpuTilePoints / volume);
      if (linalgRoot &&
          stripLoops(linalgRoot, whole, grid.has_value())[*split])
        preferred = std::max(
            preferred, std::clamp(r.extents[*split] / kCpuMinTiles, kCpuMinStrip,
                                  kCpuMaxStrip));
      // A small kernel in one task per core: a task per tile of
      // kCpuTilePoints costs more in starts than it evens out (layer_norm
      // 256x768 in 16 tiles: 0.083 ms; in 2, tuned: 0.042).
      int64_t cores = r.cores, outer = 1;
      for (int64_t d : parallel)
        if (d < *split && !whole[d])
          outer *= r.extents[d];
      if (volume * r.extents[*split] * outer <= cores * kCpuSmallTaskPoints)
        preferred = std::max<int64_t>(
            preferred, llvm::divideCeil(r.extents[*split] * outer, cores));
      // A pooling's tiles of static size, which cpu-vectorize-convolutions
      // takes: the divisor of the loop nearest the preferred size (a 3x3
      // max pooling over 64x112x112 in rows of 32 of 56, loops over
      // scalars: 0.74 ms; of 28, vectors: 0.13).
      int64_t size = pick(choices, preferred);
      int64_t extent = r.extents[*split];
      if (linalgRoot && linalg::isaConvolutionOpInterface(linalgRoot) &&
          extent % size != 0) {
        size = 1;
        for (int64_t d = 2; d <= extent; ++d)
          if (extent % d == 0 &&
              sizeRatio(d, preferred) < sizeRatio(size, preferred))
            size = d;
        choices.push_back(size);
        llvm::sort(choices);
        choices.erase(llvm::unique(choices), choices.end());
      }
      tile = addKnob(sb, loc, ("tile_" + Twine(*split)).str(), size, choices);
    }
    // Four AVX2 vectors of partial results: independent adds enough to
    // cover the add latency (8 lanes: softmax 4096^2 20.6-23.7 ms, 32
    // lanes: 17.7-19.8 ms on the 2-core EPYC VM); for short rows, enough
    // steps of them that the vectors' final reduction stays small (rows
    // of 128: 8 lanes, tuned 1.4x faster than 32).
    if (splitsReductions)
      lanesKnob = addKnob(sb, loc, "lanes",
                          pick(lanes, std::clamp<int64_t>(shortestRow / 16, 8, 32)),
                          lanes);
    if (tile)
      loop::TileOp::create(sb, loc, ValueRange{tile},
                           sb.getDenseI64ArrayAttr(sizes), ArrayAttr(),
                           sb.getUnitAttr());
    if (lanesKnob)
      loop::SplitReductionOp::create(
          sb, loc, ValueRange{lanesKnob},
          sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    return Default::Done;
  }

  /// loop.split_reduction: the kernel has reductions over an innermost
  /// loop, and the lane count is at most each one's extent.
  LogicalResult validate(ScheduleCheck check) const override {
    for (auto split :
         check.schedule.getBody().getOps<loop::SplitReductionOp>()) {
      bool any = false;
      WalkResult walk = check.func.walk([&](linalg::LinalgOp op) {
        if (!isSplittableReduction(op))
          return WalkResult::advance();
        any = true;
        int64_t extent = op.getStaticLoopRanges().back();
        if (split.getResolvedLanes() <= extent)
          return WalkResult::advance();
        InFlightDiagnostic diag =
            split.emitError(valueName(split.getDynamicLanes(),
                                      split.getStaticLanes(), 0, "lanes"))
            << " = " << split.getResolvedLanes()
            << " exceeds the extent " << extent << " of a reduction";
        diag.attachNote(op->getLoc()) << "the reduction";
        return WalkResult::interrupt();
      });
      if (walk.wasInterrupted())
        return failure();
      if (!any)
        return split.emitError("kernel '")
               << check.schedule.getKernel()
               << "' has no reduction over an innermost loop to split";
    }
    return success();
  }

  /// The root's own reductions: itself and those it reads in its block,
  /// but not another schedule's root, which its own schedule splits (a
  /// kernel with several roots has a schedule each); those that take the
  /// lanes (takesLanes).
  LogicalResult apply(ApplyState &state, Operation *op) const override {
    auto split = cast<loop::SplitReductionOp>(op);
    TilingInterface root = state.root;
    SetVector<Operation *> producers;
    BackwardSliceOptions options;
    options.filter = [&](Operation *other) {
      return other->getBlock() == root->getBlock();
    };
    (void)getBackwardSlice(root.getOperation(), &producers, options);
    producers.insert(root);
    SmallVector<linalg::LinalgOp> reductions;
    for (Operation *producer : producers)
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(producer);
          linalgOp && takesLanes(linalgOp, split.getResolvedLanes()) &&
          (producer == root.getOperation() || !state.roots.contains(producer)))
        reductions.push_back(linalgOp);
    for (linalg::LinalgOp reduction : reductions)
      if (failed(splitReduction(state.rewriter, reduction,
                                split.getResolvedLanes())))
        return failure();
    return success();
  }
};

} // namespace

const Strategy &tessel::cpuTilesStrategy() {
  static const CpuTiles strategy;
  return strategy;
}
