//===- Strategy.cpp - the strategies of each target, and what they share --===//

#include "passes/loop/strategies/Strategy.h"

#include "passes/TileAndFuseRoot.h"
#include "passes/loop/RowReduction.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace tessel;

ArrayRef<const Strategy *>
tessel::strategiesFor(const loop::TargetDescription &target) {
  // Asked in this order for a default schedule: the specialized classes
  // first, the general tiling last.
  static const Strategy *const gpu[] = {
      &tensorCoreContractionStrategy(), &gpuRowReductionStrategy(),
      &gridReductionStrategy(), &gpuPointwiseStrategy()};
  static const Strategy *const cpu[] = {
      &cpuMatmulStrategy(), &cpuContractionStrategy(),
      &cpuTransposeStrategy(), &gridReductionStrategy(), &cpuTilesStrategy()};
  if (target.isCpu())
    return cpu;
  return gpu;
}

ArrayRef<const Strategy *> tessel::allStrategies() {
  static const Strategy *const all[] = {
      &tensorCoreContractionStrategy(), &gpuRowReductionStrategy(),
      &gridReductionStrategy(),         &gpuPointwiseStrategy(),
      &cpuMatmulStrategy(),             &cpuContractionStrategy(),
      &cpuTransposeStrategy(),          &cpuTilesStrategy()};
  return all;
}

bool tessel::isSharedPrimitive(Operation *primitive) {
  return isa<loop::KnobOp, loop::TileOp, loop::SplitKOp, loop::UnrollOp>(
      primitive);
}

InFlightDiagnostic tessel::emitEmptyLoopError(Operation *at,
                                              StringRef kernel) {
  return at->emitError("kernel '")
         << kernel << "' has a loop of extent 0, which GPU schedules do not "
         << "take; graph-decompose folds zero-size tensors away";
}

const Strategy *tessel::ownerOf(const loop::TargetDescription &target,
                                Operation *primitive) {
  for (const Strategy *s : strategiesFor(target))
    if (s->owns(primitive))
      return s;
  return nullptr;
}

loop::ScheduleOp DefaultRequest::begin(OpBuilder &b) {
  b.setInsertionPointToEnd(module.getBody());
  auto schedule = loop::ScheduleOp::create(
      b, func.getLoc(), FlatSymbolRefAttr::get(func.getSymNameAttr()),
      result ? b.getI64IntegerAttr(*result) : IntegerAttr(), target);
  b.setInsertionPointToEnd(b.createBlock(&schedule.getBody()));
  return schedule;
}

Value tessel::addKnob(OpBuilder &b, Location loc, StringRef name, int64_t value,
                      ArrayRef<int64_t> choices) {
  return loop::KnobOp::create(b, loc, b.getIndexType(), b.getStringAttr(name),
                              b.getI64IntegerAttr(value),
                              b.getDenseI64ArrayAttr(choices), IntegerAttr(),
                              IntegerAttr(), IntegerAttr());
}

void tessel::addUnrollKnob(OpBuilder &b, Location loc) {
  Value factor = addKnob(b, loc, "unroll", 1, {1, 2, 4, 8});
  loop::UnrollOp::create(b, loc, ValueRange{factor},
                         b.getDenseI64ArrayAttr({ShapedType::kDynamic}));
}

SmallVector<int64_t> tessel::parallelLoops(TilingInterface root) {
  SmallVector<int64_t> parallel;
  for (auto [d, it] : llvm::enumerate(root.getLoopIteratorTypes()))
    if (it == utils::IteratorType::parallel)
      parallel.push_back(d);
  return parallel;
}

SmallVector<int64_t> tessel::powersOfTwoUpTo(int64_t extent) {
  SmallVector<int64_t> found;
  for (int64_t p = 1; p < extent; p *= 2)
    found.push_back(p);
  found.push_back(extent);
  return found;
}

int64_t tessel::pick(ArrayRef<int64_t> choices, int64_t preferred) {
  int64_t best = choices.front();
  for (int64_t c : choices)
    if (c <= preferred)
      best = c;
  return best;
}

double tessel::sizeRatio(int64_t a, int64_t b) {
  return std::max(a, b) / static_cast<double>(std::min(a, b));
}

SmallVector<int64_t> tessel::splitChoices(int64_t depth, int64_t minPart,
                                          int64_t multiple) {
  SmallVector<int64_t> found;
  for (int64_t p = 1; p <= 16; p *= 2)
    if (depth % p == 0 && depth / p >= minPart && (depth / p) % multiple == 0)
      found.push_back(p);
  return found;
}

int64_t tessel::defaultParts(ArrayRef<int64_t> choices, int64_t tiles,
                             int64_t wanted, int64_t depth, int64_t minDepth) {
  for (int64_t p : choices)
    if (tiles * p >= wanted || depth / (2 * p) < minDepth)
      return p;
  return choices.back();
}

SmallVector<int64_t>
tessel::threadChoices(const loop::TargetDescription &target) {
  SmallVector<int64_t> choices;
  for (int64_t t = target.warpSize; t <= target.maxThreadsPerBlock; t *= 2)
    choices.push_back(t);
  return choices;
}

std::optional<GridParts> tessel::gridParts(func::FuncOp func,
                                           int64_t rowPoints, int64_t maxParts,
                                           bool uneven) {
  SmallVector<linalg::GenericOp> reductions = singleValueReductions(func);
  if (reductions.empty())
    return std::nullopt;
  int64_t common = 0, longest = 0;
  bool dynamic = false;
  for (linalg::GenericOp op : reductions) {
    ReducedElements elements = reducedElements(op);
    if (!elements.largest)
      return std::nullopt;
    common = std::gcd(common, elements.divisor);
    longest = std::max(longest, elements.largest);
    dynamic |= ShapedType::isDynamicShape(op.getStaticLoopRanges());
  }
  if (dynamic && !uneven)
    return std::nullopt;
  int64_t wanted = std::clamp<int64_t>(longest / rowPoints, 1, maxParts);
  int64_t parts = wanted;
  while (common % parts)
    --parts;
  // Uneven rows (GridReduce.cpp) rather than far fewer parts than wanted,
  // or one: a prime count of elements, a size symbol without a multiple.
  if (uneven && 2 * parts < wanted)
    parts = wanted;
  SmallVector<int64_t> choices = {parts};
  for (int64_t p = 1; p <= maxParts && common % p == 0; p *= 2)
    choices.push_back(p);
  llvm::sort(choices);
  choices.erase(llvm::unique(choices), choices.end());
  return GridParts{parts, choices, longest};
}

bool tessel::transposedAlong(TilingInterface root, int64_t dim) {
  auto op = dyn_cast<linalg::LinalgOp>(root.getOperation());
  if (!op)
    return false;
  unsigned innermost = op.getNumLoops() - 1;
  return llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *input) {
    AffineMap map = op.getMatchingIndexingMap(input);
    return map.getNumResults() > 0 && map.isFunctionOfDim(innermost) &&
           map.getResults().back() == getAffineDimExpr(dim, op.getContext());
  });
}

std::string tessel::valueName(ValueRange dynamic, ArrayRef<int64_t> statics,
                              unsigned index, StringRef what) {
  unsigned next = 0;
  for (auto [i, s] : llvm::enumerate(statics)) {
    if (!ShapedType::isDynamic(s))
      continue;
    if (i == index)
      return ("knob '" +
              dynamic[next].getDefiningOp<loop::KnobOp>().getName() + "'")
          .str();
    ++next;
  }
  if (statics.size() == 1)
    return what.str();
  return (what + " #" + Twine(index)).str();
}

std::string tessel::sizeName(loop::TileOp tile, unsigned index) {
  return valueName(tile.getDynamicSizes(), tile.getStaticSizes(), index,
                   "tile size");
}

LogicalResult tessel::checkOnlyBlockTile(loop::ScheduleOp schedule,
                                         Operation *primitive,
                                         loop::TileOp blockTile) {
  if (!blockTile)
    return primitive->emitError("needs a block-level loop.tile before it");
  for (auto tile : schedule.getBody().getOps<loop::TileOp>())
    if (tile != blockTile)
      return tile.emitError("cannot be combined with ")
             << primitive->getName()
             << ", which distributes the block tile itself";
  return success();
}

/// The ops of `root`'s block whose results leave the innermost loop: after
/// a level of tiling these are the kernel's returned values in that tile,
/// which the next level must yield rather than recompute.
static void collectYieldedOps(TilingInterface root,
                              llvm::SmallPtrSetImpl<Operation *> &yielded) {
  yielded.clear();
  for (Operation &op : *root->getBlock())
    for (Operation *user : op.getUsers())
      if (isa<tensor::ParallelInsertSliceOp, tensor::InsertSliceOp,
              scf::YieldOp>(user) &&
          isa<linalg::LinalgOp>(op))
        yielded.insert(&op);
}

FailureOr<TilingInterface>
tessel::tileLevels(RewriterBase &rewriter, TilingInterface root,
                   ArrayRef<Level> levels,
                   llvm::SmallPtrSetImpl<Operation *> &returned,
                   llvm::SmallPtrSetImpl<Operation *> &roots) {
  for (const Level &level : levels) {
    FailureOr<TilingInterface> tiled = tileAndFuseRoot(
        rewriter, root, level.sizes, level.sequential, level.mapping, returned);
    if (failed(tiled)) {
      InFlightDiagnostic diag =
          level.origin->emitError("could not tile the root");
      diag.attachNote(root->getLoc()) << "root: " << root->getName();
      return failure();
    }
    roots.erase(root.getOperation());
    root = *tiled;
    roots.insert(root.getOperation());
    collectYieldedOps(root, returned);
  }
  return root;
}

SmallVector<Level> tessel::pointwiseLevels(Operation *origin,
                                           const PointwiseTiling &tiling) {
  SmallVector<Level> levels = {
      {origin, tiling.blockSizes, tiling.blockMapping, false},
      {origin, tiling.threadSizes, tiling.threadMapping, false}};
  if (!tiling.pointSizes.empty())
    levels.push_back({origin, tiling.pointSizes, {}, true});
  return levels;
}

void tessel::markVectorAccess(TilingInterface root, int64_t width) {
  if (width == 1)
    return;
  Builder b(root->getContext());
  for (Operation &op : *root->getBlock())
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
        linalgOp && linalgOp.getNumParallelLoops() == linalgOp.getNumLoops())
      op.setAttr(loop::kVectorAccessAttrName, b.getI64IntegerAttr(width));
}

LogicalResult tessel::tilePointwise(RewriterBase &rewriter, Operation *origin,
                                    TilingInterface op,
                                    const PointwiseTiling &tiling,
                                    llvm::SmallPtrSetImpl<Operation *> &returned,
                                    llvm::SmallPtrSetImpl<Operation *> &roots) {
  FailureOr<TilingInterface> tiled = tileLevels(
      rewriter, op, pointwiseLevels(origin, tiling), returned, roots);
  if (failed(tiled))
    return failure();
  markVectorAccess(*tiled, tiling.vector);
  return success();
}

linalg::LinalgOp tessel::findTiledContraction(TilingInterface root) {
  linalg::LinalgOp found;
  for (Operation &op : *root->getBlock()) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp || !linalg::isaContractionOpInterface(linalgOp))
      continue;
    if (found)
      return {};
    found = linalgOp;
  }
  return found;
}
