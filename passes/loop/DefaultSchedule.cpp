//===- DefaultSchedule.cpp - a loop.schedule for every kernel --------------===//
//
// GPU targets: a contraction that tensor cores can take (an f16 or bf16
// matmul, or with allow-tf32 an f32 one; maybe batched, maybe with an
// elementwise epilogue; K and N in whole 16-byte rows) gets a loop.mma
// schedule; edge tiles are masked. Row reductions get
// loop.warp_reduce. Every other kernel gets blocks over the root's parallel
// loops, each thread computing one point (or, in reduction kernels whose
// root is elementwise over the reduced rows, one whole row). A kernel with
// no loop to distribute gets no schedule and runs in a single thread. The
// fallback is correct for every kernel class, and slow for contractions.
// Inputs the kernel computes (a convolution's patches) are materialized
// for tensor cores; a long K over too few tiles is split (loop.split_k).
//
// CPU: parallel tiles of about 16K points of the root (inner loops whole,
// so a softmax tile holds whole rows and its reductions are fused; loops
// along which the root reads reduced values whole, so no tile reduces the
// input again), with loop.split_reduction for the reductions along rows
// (32 lanes); square tiles for roots that read an input transposed; (batched)
// matmul kernels get blocks of the result plus loop.vectorize (and
// loop.split_k for a long K over fewer than 4 tiles), other contractions
// (grouped convolutions) blocks of their last two parallel loops.
//
// Threads or tiles that walk a loop get a loop.unroll knob, left at 1.
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/cpu/SplitReduction.h"
#include "passes/cpu/VectorizeMatmul.h"
#include "passes/linalg/Contractions.h"
#include "passes/loop/Alignment.h"
#include "passes/loop/DefaultSchedule.h"
#include "passes/loop/MmaConfig.h"
#include "passes/loop/RowReduction.h"

#include "mlir/Analysis/SliceAnalysis.h"

#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringMap.h"

namespace tessel {
#define GEN_PASS_DEF_LOOPDEFAULTSCHEDULE
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// Threads per block of the default schedule: a multiple of the warp size
/// that keeps several blocks resident per SM.
constexpr int64_t kThreadsPerBlock = 256;
/// Rows per block when each thread walks a whole row.
constexpr int64_t kRowsPerBlock = 64;

const gpu::MappingId kBlockIds[] = {gpu::MappingId::DimX, gpu::MappingId::DimY,
                                    gpu::MappingId::DimZ};

/// The domain of a `threads` knob: powers of two from a warp to the most a
/// block may have.
SmallVector<int64_t> threadChoices(const loop::TargetDescription &target) {
  SmallVector<int64_t> choices;
  for (int64_t t = target.warpSize; t <= target.maxThreadsPerBlock; t *= 2)
    choices.push_back(t);
  return choices;
}

/// CPU tiles hold about this many points of the root's parallel loops: a
/// softmax tile of whole rows then stays in L2 between its passes.
constexpr int64_t kCpuTilePoints = 16384;
/// CPU tiles of a loop that cuts rows into strips (a column sum's columns)
/// take a quarter of the loop (kCpuMinTiles), within these bounds: a strip
/// of at least a cache line, and long runs of each row, which the
/// prefetchers follow (sum over axis 0 of 4096x4096 on the 2-core Sapphire
/// Rapids VM: 10.6 ms in strips of 64, 4.4 ms in strips of 512; softmax
/// over axis 0: 37.7 and 24.7 ms).
constexpr int64_t kCpuMinStrip = 16;
constexpr int64_t kCpuMaxStrip = 512;
/// The sides of a CPU transpose's square tiles.
constexpr int64_t kCpuTransposeTile = 64;
/// Rows of a CPU reduction to a single value split in parts
/// (loop.grid_reduce): at least this many elements each, a few tens of
/// microseconds of one core, which dwarf a task's start.
constexpr int64_t kCpuRowPoints = 32768;
/// At most this many parts: enough tasks to even out the cores' loads.
constexpr int64_t kCpuMaxParts = 64;
/// Parallel tiles a CPU matmul should have at least (a few cores' worth):
/// fewer, and its K is split (loop.split_k) when long enough.
constexpr int64_t kCpuMinTiles = 4;

/// Block sizes for a loop of `extent`: the powers of two in [lo, hi] below
/// it, its divisors in [lo, hi], and `extent` itself when at most `hi`.
SmallVector<int64_t> blockChoices(int64_t extent, int64_t lo, int64_t hi) {
  SmallVector<int64_t> found;
  for (int64_t p = 1; p <= hi && p < extent; p *= 2)
    if (p >= lo)
      found.push_back(p);
  for (int64_t d = lo; d <= std::min(hi, extent); ++d)
    if (extent % d == 0)
      found.push_back(d);
  if (extent <= hi || found.empty())
    found.push_back(std::min(extent, hi));
  llvm::sort(found);
  found.erase(llvm::unique(found), found.end());
  return found;
}

/// Powers of two below `extent`, and `extent` itself.
SmallVector<int64_t> powersOfTwoUpTo(int64_t extent) {
  SmallVector<int64_t> found;
  for (int64_t p = 1; p < extent; p *= 2)
    found.push_back(p);
  found.push_back(extent);
  return found;
}

/// The largest of `choices` (ascending) that is at most `preferred`, else
/// the smallest choice.
int64_t pick(ArrayRef<int64_t> choices, int64_t preferred) {
  int64_t best = choices.front();
  for (int64_t c : choices)
    if (c <= preferred)
      best = c;
  return best;
}

/// pick(choices, preferred), unless that does not divide `extent`: then,
/// of it and the divisors of `extent` among `choices` within a factor of
/// two of `preferred`, the one that pads fewest points. loop.vectorize pads
/// a tile to whole register blocks of `multiple`, copying its A and B
/// blocks, and pads a partial edge tile (of dynamic size) to a full one; a
/// full tile of whole register blocks it reads in place. Ties go to blocks
/// of whole register blocks (only an edge tile is copied), then to the
/// largest at most `preferred`, then the smallest above. 1000^3 on the
/// 2-core Sapphire Rapids VM: 128x256 blocks, every tile padded, ~50 ms of
/// CPU time, 200x250 with blocks of K that divide it ~30 ms; 200x256, the
/// edge tiles alone padded, 7.6 -> 6.9 ms against 200x250; a 3x3
/// convolution's 3136 output pixels in blocks of 224, not 256: 6-10%
/// faster; 197 rows in one block padded to 200, not 128 and 69 padded to
/// 128.
int64_t pickDividing(ArrayRef<int64_t> choices, int64_t extent,
                     int64_t preferred, int64_t multiple) {
  int64_t best = pick(choices, preferred);
  if (extent % best == 0)
    return best;
  auto rank = [&](int64_t c) {
    int64_t padded =
        llvm::divideCeil(extent, c) * llvm::alignTo(c, multiple) - extent;
    return std::make_tuple(padded, c % multiple != 0, c > preferred,
                           c > preferred ? c : -c);
  };
  int64_t found = best;
  for (int64_t c : choices)
    if (extent % c == 0 && 2 * c > preferred && c <= 2 * preferred &&
        rank(c) < rank(found))
      found = c;
  return found;
}

/// Part counts of loop.split_k for a K of `depth`: those up to 16 that
/// divide it into parts of at least `minPart`, whole multiples of `multiple`.
SmallVector<int64_t> splitChoices(int64_t depth, int64_t minPart,
                                  int64_t multiple) {
  SmallVector<int64_t> found;
  for (int64_t p = 1; p <= 16; p *= 2)
    if (depth % p == 0 && depth / p >= minPart && (depth / p) % multiple == 0)
      found.push_back(p);
  return found;
}

/// The fewest parts of `choices` that give `tiles` tiles at least `wanted`
/// parallel ones, each part keeping at least `minDepth` of K.
int64_t defaultParts(ArrayRef<int64_t> choices, int64_t tiles, int64_t wanted,
                     int64_t depth, int64_t minDepth) {
  for (int64_t p : choices)
    if (tiles * p >= wanted || depth / (2 * p) < minDepth)
      return p;
  return choices.back();
}

/// The block size of a loop of `n` points, at most `limit`: a divisor of
/// `n` when one is at least half the limit (every block full), else the
/// limit itself, the last block's surplus threads idle (gpu-map-kernels
/// guards them), rather than blocks of a few threads for a prime `n`.
int64_t blockSizeFor(int64_t n, int64_t limit) {
  if (n <= limit)
    return n;
  for (int64_t d = limit; d >= limit / 2; --d)
    if (n % d == 0)
      return d;
  return limit;
}

/// Part counts of loop.grid_reduce for a kernel's reductions to single
/// values: the default, its choices, and the longest reduction's elements.
struct GridParts {
  int64_t parts;
  SmallVector<int64_t> choices;
  int64_t longest;
};

/// Parts of at least `rowPoints` elements of the longest reduction to a
/// single value of `func`, at most `maxParts`, dividing every such
/// reduction; the choices are the powers of two up to `maxParts` that
/// divide them all, and the default. None when the kernel has no such
/// reduction.
std::optional<GridParts> gridParts(func::FuncOp func, int64_t rowPoints,
                                   int64_t maxParts) {
  SmallVector<linalg::GenericOp> reductions = singleValueReductions(func);
  if (reductions.empty())
    return std::nullopt;
  int64_t common = 0, longest = 0;
  for (linalg::GenericOp op : reductions) {
    common = std::gcd(common, reducedElements(op));
    longest = std::max(longest, reducedElements(op));
  }
  int64_t parts = std::clamp<int64_t>(longest / rowPoints, 1, maxParts);
  while (common % parts)
    --parts;
  SmallVector<int64_t> choices = {parts};
  for (int64_t p = 1; p <= maxParts && common % p == 0; p *= 2)
    choices.push_back(p);
  llvm::sort(choices);
  choices.erase(llvm::unique(choices), choices.end());
  return GridParts{parts, choices, longest};
}

} // namespace

/// Whether an input of `root` that walks its innermost loop is contiguous
/// along loop `dim` instead (a transpose's input).
static bool transposedAlong(TilingInterface root, int64_t dim) {
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

/// Whether `value` is computed by a chain of its block's ops that reduces.
static bool computedByReduction(Value value) {
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
static SmallVector<bool>
reductionLoops(ArrayRef<utils::IteratorType> iterators) {
  return llvm::map_to_vector(iterators, [](utils::IteratorType it) {
    return it == utils::IteratorType::reduction;
  });
}

/// Whether `value` is a single value (a tensor of one element).
static bool isSingleValue(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() && type.getNumElements() == 1;
}

/// The loops of `root` that a CPU tile keeps whole: its reductions, and
/// those along which it reads a value that the kernel reduces (a softmax's
/// row maxima, broadcast along the row; column means, along the columns):
/// tiles split along them would each reduce the whole input again. Single
/// values do not count when `singleValuesOnce` (loop.grid_reduce computes
/// them before the tiles).
static SmallVector<bool> wholeLoops(TilingInterface root,
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
static SmallVector<std::pair<OpOperand *, linalg::LinalgOp>>
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
static int64_t fusedReductionWork(linalg::LinalgOp root,
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
static SmallVector<bool> stripLoops(linalg::LinalgOp root, ArrayRef<bool> whole,
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

std::optional<PointwiseTiling>
tessel::gpuPointwiseTiling(TilingInterface root, bool rowwise,
                           const loop::TargetDescription &target) {
  std::optional<SmallVector<int64_t>> maybeExtents = staticLoopExtents(root);
  if (!maybeExtents)
    return std::nullopt;
  ArrayRef<int64_t> extents = *maybeExtents;
  SmallVector<utils::IteratorType> iterators = root.getLoopIteratorTypes();
  // Unit loops (kept reduced dims) are skipped unless nothing else is left
  // to distribute.
  SmallVector<int64_t> parallel, unit;
  for (int64_t d = extents.size() - 1; d >= 0; --d) {
    if (iterators[d] != utils::IteratorType::parallel ||
        (rowwise && d == static_cast<int64_t>(extents.size()) - 1))
      continue;
    (extents[d] == 1 ? unit : parallel).push_back(d);
  }
  if (parallel.empty() && !unit.empty())
    parallel.push_back(unit.front());
  if (parallel.empty())
    return std::nullopt;
  PointwiseTiling tiling;
  // An elementwise root's threads take vectors along its innermost loop:
  // the most points that divide it, up to 16 bytes of the widest element.
  int64_t innermost = parallel.front();
  bool elementwise = llvm::all_of(iterators, [](utils::IteratorType it) {
    return it == utils::IteratorType::parallel;
  });
  Type widest = widestElement(root);
  if (elementwise && widest &&
      innermost == static_cast<int64_t>(extents.size()) - 1)
    tiling.vector = std::min(loop::kMaxVectorBytes / elementBytes(widest),
                             extents[innermost] & -extents[innermost]);
  // Blocks: the innermost distributed loop in chunks of one block's
  // threads (in whole vectors, so that every block starts aligned), outer
  // ones one index per block (at most 3 grid dims, so further outer loops
  // stay whole within a block's thread). When the innermost loop is too
  // short to fill a block, the block also takes points of the next loop,
  // on threads along y.
  int64_t perBlock = rowwise ? kRowsPerBlock : kThreadsPerBlock;
  tiling.blockSizes.assign(extents.size(), 0);
  tiling.threadSizes.assign(extents.size(), 0);
  MLIRContext *ctx = root->getContext();
  int64_t threadsX = blockSizeFor(extents[innermost] / tiling.vector, perBlock);
  // An input contiguous along the next loop (a transpose's) makes the
  // thread tile square: vectors of that loop are read, vectors of the
  // innermost written.
  int64_t square = parallel.size() > 1 &&
                           transposedAlong(root, parallel[1]) &&
                           extents[parallel[1]] % tiling.vector == 0
                       ? tiling.vector
                       : 1;
  int64_t rows = 1;
  for (auto [i, d] : llvm::enumerate(parallel)) {
    if (i == 3)
      break;
    bool rowThreads = !rowwise && 2 * threadsX <= kThreadsPerBlock;
    if (i == 0) {
      tiling.blockSizes[d] = threadsX * tiling.vector;
    } else if (i == 1 && (rowThreads || square > 1)) {
      if (rowThreads)
        rows = blockSizeFor(extents[d] / square, kThreadsPerBlock / threadsX);
      tiling.blockSizes[d] = rows * square;
      tiling.threadSizes[d] = square;
      tiling.threadMapping.push_back(
          gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimY));
    } else {
      tiling.blockSizes[d] = 1;
    }
    tiling.blockMapping.push_back(
        gpu::GPUBlockMappingAttr::get(ctx, kBlockIds[i]));
  }
  tiling.threadSizes[innermost] = tiling.vector;
  tiling.threadMapping.push_back(
      gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX));
  // Loops beyond the grid's dims stay in each thread; a vector thread
  // walks them a point at a time.
  if (tiling.vector > 1 && parallel.size() > 3) {
    tiling.pointSizes.assign(extents.size(), 0);
    for (int64_t d : ArrayRef(parallel).drop_front(3))
      tiling.pointSizes[d] = 1;
  }
  // Mapping entries follow the order of the tiled loops (outer first).
  std::reverse(tiling.blockMapping.begin(), tiling.blockMapping.end());
  if (square > 1)
    tiling.squareLoop = parallel[1];
  // The knob sets both sides of a square tile.
  for (int64_t w = 1; w <= tiling.vector; w *= 2)
    if (llvm::divideCeil(tiling.blockSizes[innermost], w) *
            (square > 1 ? tiling.blockSizes[parallel[1]] / w : rows) <=
        target.maxThreadsPerBlock)
      tiling.vectorChoices.push_back(w);
  return tiling;
}

namespace {

struct LoopDefaultSchedulePass
    : tessel::impl::LoopDefaultScheduleBase<LoopDefaultSchedulePass> {
  using LoopDefaultScheduleBase::LoopDefaultScheduleBase;

  loop::TargetAttr targetAttr;
  const loop::TargetDescription *info = nullptr;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    targetAttr = loop::TargetAttr::lookup(&getContext(), target);
    if (!targetAttr) {
      module.emitError("loop-default-schedule: unknown target '")
          << target << "'; expected one of: "
          << llvm::join(loop::targetNames(), ", ");
      return signalPassFailure();
    }
    info = &targetAttr.getDescription();
    if (!vectorBits)
      vectorBits = info->vectorBits;
    // (kernel, result) pairs that already have a schedule; a schedule
    // without `result` covers the kernel's first root.
    llvm::StringMap<llvm::SmallSet<int64_t, 4>> scheduled;
    for (auto schedule : module.getOps<loop::ScheduleOp>())
      scheduled[schedule.getKernel()].insert(
          schedule.getResult() ? static_cast<int64_t>(*schedule.getResult())
                               : -1);
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!func->hasAttr("tessel.kernel") || func.isExternal())
        continue;
      auto kind = func->getAttrOfType<StringAttr>("tessel.kernel");
      auto roots = findKernelRoots(func);
      // On GPUs, an empty schedule gives the ops of a kernel without roots
      // (one that only concatenates its inputs) threads.
      if (roots.empty() && info->isGpu() &&
          !scheduled.contains(func.getSymName())) {
        OpBuilder sb = OpBuilder::atBlockEnd(module.getBody());
        createSchedule(sb, func, std::nullopt);
      }
      const auto &done = scheduled.lookup(func.getSymName());
      for (auto [i, indexAndRoot] : llvm::enumerate(roots)) {
        auto [index, root] = indexAndRoot;
        if (done.contains(index) || (i == 0 && done.contains(-1)))
          continue;
        FailureOr<bool> wholeKernel =
            addSchedule(func, root, kind,
                        i == 0 ? std::nullopt : std::optional(index),
                        /*mayCoverKernel=*/i == 0 && done.empty());
        if (failed(wholeKernel))
          return signalPassFailure();
        if (*wholeKernel)
          break;
      }
    }
  }

  /// A new empty schedule of `func` (for `result`) at the module's end.
  loop::ScheduleOp createSchedule(OpBuilder &sb, func::FuncOp func,
                                  std::optional<unsigned> result) {
    auto schedule = loop::ScheduleOp::create(
        sb, func.getLoc(), FlatSymbolRefAttr::get(func.getSymNameAttr()),
        result ? sb.getI64IntegerAttr(*result) : IntegerAttr(),
        targetAttr);
    sb.setInsertionPointToEnd(sb.createBlock(&schedule.getBody()));
    return schedule;
  }

  /// A knob of the schedule being built at `sb`'s insertion point.
  Value knob(OpBuilder &sb, Location loc, StringRef name, int64_t value,
             ArrayRef<int64_t> choices) {
    return loop::KnobOp::create(sb, loc, sb.getIndexType(),
                                sb.getStringAttr(name),
                                sb.getI64IntegerAttr(value),
                                sb.getDenseI64ArrayAttr(choices), IntegerAttr(),
                                IntegerAttr(), IntegerAttr());
  }

  /// loop.unroll of the tile's innermost loops, a knob left at 1 (LLVM
  /// and ptxas unroll on their own; the tuner may find better).
  void addUnrollKnob(OpBuilder &sb, Location loc) {
    Value factor = knob(sb, loc, "unroll", 1, {1, 2, 4, 8});
    loop::UnrollOp::create(sb, loc, ValueRange{factor},
                           sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
  }

  /// Square parallel tiles for a root whose innermost loop walks an input
  /// across its rows (a transpose): tiles of whole rows would read one
  /// cache line, and one page, per point of the input; a tile of its
  /// innermost loop and of the loop that walks the input's rows reads and
  /// writes whole lines that stay in L1. False, and no schedule, for any
  /// other root, one that reduces, or one small enough to be one tile.
  bool addCpuTransposeSchedule(OpBuilder &sb, func::FuncOp func,
                               TilingInterface root, ArrayRef<int64_t> extents,
                               ArrayRef<int64_t> parallel,
                               std::optional<unsigned> result) {
    int64_t inner = static_cast<int64_t>(extents.size()) - 1;
    if (parallel.empty() || parallel.back() != inner)
      return false;
    auto across = llvm::find_if(llvm::reverse(parallel.drop_back()),
                                [&](int64_t d) {
                                  return transposedAlong(root, d);
                                });
    if (across == llvm::reverse(parallel.drop_back()).end())
      return false;
    int64_t points = 1;
    for (int64_t d : parallel)
      points *= extents[d];
    bool reduces = false;
    func.walk([&](linalg::LinalgOp op) {
      reduces |= op.getNumReductionLoops() > 0;
    });
    if (points <= kCpuTilePoints || reduces)
      return false;
    SmallVector<int64_t> sizes(extents.size(), 0);
    for (int64_t d : parallel)
      sizes[d] = 1;
    createSchedule(sb, func, result);
    Location loc = func.getLoc();
    SmallVector<Value> tiles;
    for (int64_t d : {*across, inner}) {
      SmallVector<int64_t> choices = powersOfTwoUpTo(extents[d]);
      tiles.push_back(knob(sb, loc, ("tile_" + Twine(d)).str(),
                           pick(choices, kCpuTransposeTile), choices));
      sizes[d] = ShapedType::kDynamic;
    }
    loop::TileOp::create(sb, loc, tiles, sb.getDenseI64ArrayAttr(sizes),
                         ArrayAttr(), sb.getUnitAttr());
    return true;
  }

  /// The CPU schedule of `root`: parallel tiles, plus loop.vectorize for a
  /// matmul kernel. A root small enough to be one tile gets none (unless it
  /// is a matmul, which is vectorized whole).
  void addCpuSchedule(func::FuncOp func, TilingInterface root,
                      ArrayRef<int64_t> extents, StringAttr kind,
                      std::optional<unsigned> result, bool mayCoverKernel) {
    // An empty root (a loop of extent 0) has nothing to schedule.
    if (llvm::is_contained(extents, 0))
      return;
    OpBuilder sb = OpBuilder::atBlockEnd(getOperation().getBody());
    Location loc = func.getLoc();
    SmallVector<utils::IteratorType> iterators = root.getLoopIteratorTypes();
    SmallVector<int64_t> parallel;
    for (auto [d, it] : llvm::enumerate(iterators))
      if (it == utils::IteratorType::parallel)
        parallel.push_back(d);
    SmallVector<Value> knobs;
    SmallVector<int64_t> sizes(extents.size(), 0);
    std::string why;
    if (linalg::LinalgOp matmul = findVectorizableMatmul(func, root, why)) {
      // Register blocks two vectors wide, unrolled 4 deep, whose
      // accumulators take half the vector registers, leaving the rest for
      // the B row and the A broadcasts. AVX2, 16 registers: 4x16 (8x16
      // spills; 1024^3 on the 2-core EPYC VM: 30.6 ms with 8x16x8, 26.3 ms
      // with 4x16x4). AVX-512, 32: 8x32 (2-core Sapphire Rapids VM: 24.6
      // ms with 4x16 and 128 columns per block, 14.7 ms with 8x32 and 256).
      // Tiles of the most rows (512, 256, else 128) that leave the cores 4
      // tiles, so that a B block of 512x256 (which stays in L2) is copied
      // once for as many rows as may be, walked in row blocks of 8 (one
      // AVX-512 register block; their A rows stay in L1). On the Sapphire
      // Rapids VM, against 128x256 tiles, K blocks of 256 and the A of a
      // whole tile per B strip: 1024^3 8.0 -> 6.9 ms, 2048^3 64 -> 54,
      // 256x1024x1024 2.02 -> 1.81 (torch 6.6, 48, 1.83).
      // Blocks that do not divide the matmul are padded (loop.vectorize:
      // the partial edge tiles), so sizes are powers of two whatever the
      // shape, plus the divisors that tile it exactly. A batched matmul's
      // tiles hold one batch index.
      int64_t regN = 2 * std::max<int64_t>(vectorBits / 32, 1);
      int64_t regM = vectorBits >= 512 ? 8 : 4;
      unsigned batch = *matmulBatchLoops(matmul, /*broadcast=*/true);
      SmallVector<int64_t> bmChoices = blockChoices(extents[batch], 8, 512);
      SmallVector<int64_t> bnChoices =
          blockChoices(extents[batch + 1], 8, 512);
      SmallVector<int64_t> bkChoices =
          blockChoices(matmul.getStaticLoopRanges()[batch + 2], 16, 1024);
      int64_t bn = pickDividing(bnChoices, extents[batch + 1], 8 * regN, regN);
      int64_t batchTiles = 1;
      for (int64_t b = 0; b < batch; ++b)
        batchTiles *= extents[b];
      auto tilesOf = [&](int64_t bm) {
        return batchTiles * llvm::divideCeil(extents[batch], bm) *
               llvm::divideCeil(extents[batch + 1], bn);
      };
      // Larger tiles only where they are whole and unpadded: a padded edge
      // tile of 488 rows of 512 computes and copies more than the 200-row
      // tiles of 1000 rows (1000^3: 7.2 ms against 6.9).
      int64_t bm = pickDividing(bmChoices, extents[batch], 128, regM);
      for (int64_t preferred : {512, 256}) {
        int64_t larger =
            pickDividing(bmChoices, extents[batch], preferred, regM);
        if (tilesOf(larger) >= kCpuMinTiles &&
            extents[batch] % larger == 0 && larger % regM == 0) {
          bm = std::max(bm, larger);
          break;
        }
      }
      int64_t bk = pick(bkChoices, 512);
      SmallVector<int64_t> rmChoices = {1, 2, 4, 6, 8, 12, 16};
      SmallVector<int64_t> rnChoices = {1, 2, 4, 8, 16, 24, 32, 48, 64};
      SmallVector<int64_t> rkChoices = {1, 2, 4, 8, 16};
      createSchedule(sb, func, result);
      // Parts of K computed in parallel when the blocks of the result are
      // too few for the cores (a long K of a small result).
      int64_t depth = matmul.getStaticLoopRanges()[batch + 2];
      SmallVector<int64_t> parts = splitChoices(depth, 16, 1);
      int64_t tiles = tilesOf(bm);
      Value vparts;
      if (parts.size() > 1)
        vparts = knob(sb, loc, "split_k",
                      defaultParts(parts, tiles, kCpuMinTiles, depth, 512),
                      parts);
      Value vbm = knob(sb, loc, "block_m", bm, bmChoices);
      Value vbn = knob(sb, loc, "block_n", bn, bnChoices);
      Value vbk = knob(sb, loc, "block_k", bk, bkChoices);
      Value vcm = knob(sb, loc, "cache_m", pick(bmChoices, regM), bmChoices);
      Value vrm = knob(sb, loc, "reg_m",
                       pick(rmChoices, std::min(regM, bm)), rmChoices);
      // Whole vectors where the block is narrower than two.
      int64_t lanes = regN / 2, rn = std::min(regN, bn);
      if (rn > lanes)
        rn -= rn % lanes;
      Value vrn = knob(sb, loc, "reg_n", pick(rnChoices, rn), rnChoices);
      Value vrk = knob(sb, loc, "reg_k",
                       pick(rkChoices, std::min<int64_t>(4, bk)), rkChoices);
      if (vparts)
        loop::SplitKOp::create(sb, loc, ValueRange{vparts},
                               sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
      std::fill_n(sizes.begin(), batch, 1);
      sizes[batch] = sizes[batch + 1] = ShapedType::kDynamic;
      loop::TileOp::create(sb, loc, ValueRange{vbm, vbn},
                           sb.getDenseI64ArrayAttr(sizes), ArrayAttr(),
                           sb.getUnitAttr());
      loop::VectorizeOp::create(
          sb, loc, ValueRange{vrm, vrn, vrk},
          sb.getDenseI64ArrayAttr({ShapedType::kDynamic, ShapedType::kDynamic,
                                   ShapedType::kDynamic}),
          ValueRange{vbk}, sb.getDenseI64ArrayAttr({ShapedType::kDynamic}),
          ValueRange{vcm}, sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
      return;
    }
    if (kind && kind.getValue() == "contraction" && parallel.size() >= 2) {
      // Other contractions (convolutions): blocks of the last two
      // parallel loops, outer ones one index per tile.
      for (int64_t d : ArrayRef(parallel).drop_back(2))
        sizes[d] = 1;
      createSchedule(sb, func, result);
      SmallVector<Value> blocks;
      const char *names[] = {"block_m", "block_n"};
      for (auto [d, name] : llvm::zip(ArrayRef(parallel).take_back(2), names)) {
        SmallVector<int64_t> choices = powersOfTwoUpTo(extents[d]);
        blocks.push_back(knob(sb, loc, name, pick(choices, 128), choices));
        sizes[d] = ShapedType::kDynamic;
      }
      loop::TileOp::create(sb, loc, blocks, sb.getDenseI64ArrayAttr(sizes),
                           ArrayAttr(), sb.getUnitAttr());
      addUnrollKnob(sb, loc);
      return;
    }
    if (addCpuTransposeSchedule(sb, func, root, extents, parallel, result))
      return;
    // Reductions to single values (a sum, a 1-D softmax's), long enough,
    // in parts on all cores (loop.grid_reduce), which the first root's
    // schedule holds; they are then computed before the tiles.
    std::optional<GridParts> grid;
    if (mayCoverKernel) {
      grid = gridParts(func, kCpuRowPoints, kCpuMaxParts);
      if (grid && (grid->parts == 1 ||
                   !gridReductionUnfit(func, grid->parts, /*gpu=*/false)
                        .empty()))
        grid.reset();
    }
    // Tiles of about kCpuTilePoints: the loops that must stay whole
    // (wholeLoops), then inner loops whole, the first that overflows split
    // (its tile size is the knob), outer ones by 1.
    SmallVector<bool> whole = wholeLoops(root, grid.has_value());
    auto linalgRoot = dyn_cast<linalg::LinalgOp>(root.getOperation());
    int64_t volume =
        linalgRoot ? fusedReductionWork(linalgRoot, extents, grid.has_value())
                   : 1;
    for (auto [d, w] : llvm::enumerate(whole))
      if (w)
        volume *= extents[d];
    std::optional<int64_t> split;
    for (int64_t d : llvm::reverse(parallel)) {
      if (whole[d])
        continue;
      if (split) {
        sizes[d] = 1;
      } else if (volume * extents[d] > kCpuTilePoints) {
        split = d;
        sizes[d] = ShapedType::kDynamic;
      } else {
        volume *= extents[d];
      }
    }
    // Reductions over the innermost loop keep vectors of partial results;
    // the lane counts are those that fit every such reduction (a remainder
    // is reduced after the vectors).
    SmallVector<int64_t> lanes = {1, 8, 16, 32, 64};
    bool reduces = false;
    func.walk([&](linalg::LinalgOp op) {
      if (!isSplittableReduction(op))
        return;
      reduces = true;
      int64_t extent = op.getStaticLoopRanges().back();
      lanes = llvm::filter_to_vector(lanes,
                                     [&](int64_t l) { return l <= extent; });
    });
    bool splitsReductions = reduces && lanes.size() > 1;
    if (!split && !splitsReductions && !grid)
      return;
    createSchedule(sb, func, result);
    Value tile, lanesKnob;
    if (grid) {
      Value parts = knob(sb, loc, "parts", grid->parts, grid->choices);
      loop::GridReduceOp::create(
          sb, loc, ValueRange{parts},
          sb.getDenseI64ArrayAttr({ShapedType::kDynamic}), ValueRange{},
          sb.getDenseI64ArrayAttr({}));
    }
    if (split) {
      SmallVector<int64_t> choices = powersOfTwoUpTo(extents[*split]);
      int64_t preferred = std::max<int64_t>(1, kCpuTilePoints / volume);
      if (linalgRoot &&
          stripLoops(linalgRoot, whole, grid.has_value())[*split])
        preferred = std::max(
            preferred, std::clamp(extents[*split] / kCpuMinTiles, kCpuMinStrip,
                                  kCpuMaxStrip));
      tile = knob(sb, loc, ("tile_" + Twine(*split)).str(),
                  pick(choices, preferred), choices);
    }
    // Four AVX2 vectors of partial results: independent adds enough to
    // cover the add latency (8 lanes: softmax 4096^2 20.6-23.7 ms, 32
    // lanes: 17.7-19.8 ms on the 2-core EPYC VM).
    if (splitsReductions)
      lanesKnob = knob(sb, loc, "lanes", pick(lanes, 32), lanes);
    if (tile)
      loop::TileOp::create(sb, loc, ValueRange{tile},
                           sb.getDenseI64ArrayAttr(sizes), ArrayAttr(),
                           sb.getUnitAttr());
    if (lanesKnob)
      loop::SplitReductionOp::create(
          sb, loc, ValueRange{lanesKnob},
          sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
  }

  /// The tensor-core schedule of `root`, when its kernel is a contraction
  /// loop.mma takes and some legal tiling fits it; false otherwise.
  bool addMmaSchedule(func::FuncOp func, TilingInterface root,
                      std::optional<unsigned> result) {
    std::string why;
    SmallVector<int64_t> computed;
    linalg::LinalgOp contraction =
        findMmaContraction(func, root, why, &computed);
    // f32 operands multiply as tf32 (10-bit mantissas): only when allowed,
    // as torch's allow_tf32.
    if (!contraction || (mmaElementBytes(contraction) == 4 && !allowTf32))
      return false;
    int64_t elementBytes = mmaElementBytes(contraction);
    unsigned batch = *mmaBatchLoops(contraction);
    SmallVector<int64_t> extents = contraction.getStaticLoopRanges();
    // The innermost batch loop goes to grid z, outer ones stay in the block.
    int64_t batchBlocks = batch ? extents[batch - 1] : 1;
    auto noName = [](MmaConfig::Field) { return std::string(); };
    // Candidates from the largest tile down, four warps each (2x2), four
    // stages where they fit; the first that gives every SM a block wins,
    // else the one with the most blocks.
    std::optional<MmaConfig> best;
    auto blocksOf = [&](const MmaConfig &c) { return c.blocks() * batchBlocks; };
    for (int64_t bm : {128, 64, 32})
      for (int64_t bn : {128, 64, 32})
        for (int64_t bk : {32, 16})
          for (int64_t stages : {4, 3, 2}) {
            MmaConfig c{extents[batch], extents[batch + 1], extents[batch + 2],
                        bm, bn, bm / 2, bn / 2, bk, stages,
                        kCopyBytes / elementBytes, elementBytes};
            if (!c.check(*info, noName).empty())
              continue;
            if (!best ||
                blocksOf(*best) < std::min(blocksOf(c), info->multiprocessors))
              best = c;
            break;
          }
    if (!best)
      return false;
    MLIRContext *ctx = &getContext();
    OpBuilder sb = OpBuilder::atBlockEnd(getOperation().getBody());
    createSchedule(sb, func, result);
    Location loc = func.getLoc();
    auto mmaKnob = [&](MmaConfig::Field field, int64_t value,
                       ArrayRef<int64_t> choices) {
      return knob(sb, loc, MmaConfig::knobName(field), value, choices);
    };
    Value bm = mmaKnob(MmaConfig::BlockM, best->bm, {32, 64, 128, 256});
    Value bn = mmaKnob(MmaConfig::BlockN, best->bn, {32, 64, 128, 256});
    Value bk = mmaKnob(MmaConfig::BlockK, best->bk, {16, 32, 64});
    Value wm = mmaKnob(MmaConfig::WarpM, best->wm, {16, 32, 64, 128});
    Value wn = mmaKnob(MmaConfig::WarpN, best->wn, {16, 32, 64, 128});
    Value stages = mmaKnob(MmaConfig::Stages, best->stages, {1, 2, 3, 4, 5});
    int64_t copy = best->copyElements();
    Value pad = mmaKnob(MmaConfig::Pad, best->pad, {0, copy, 2 * copy});
    // K in parts on grid z when even the smallest tiles leave SMs idle and
    // K is long (each part keeps at least 32 steps of 32). Batched
    // contractions have grid z already.
    SmallVector<int64_t> parts =
        batch ? SmallVector<int64_t>{} : splitChoices(best->k, 16, copy);
    if (parts.size() > 1) {
      Value vparts = knob(sb, loc, "split_k",
                          defaultParts(parts, best->blocks(),
                                       info->multiprocessors, best->k, 1024),
                          parts);
      loop::SplitKOp::create(sb, loc, ValueRange{vparts},
                             sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    }
    // Inputs the kernel computes (a convolution's patches) go to memory
    // first: the tensor cores' copies read memory.
    if (!computed.empty())
      loop::MaterializeOp::create(sb, loc, sb.getDenseI64ArrayAttr(computed));
    SmallVector<int64_t> blockSizes(root.getLoopIteratorTypes().size(), 0);
    blockSizes[batch] = blockSizes[batch + 1] = ShapedType::kDynamic;
    SmallVector<Attribute> mapping;
    if (batch) {
      blockSizes[batch - 1] = 1;
      mapping.push_back(gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimZ));
    }
    mapping.push_back(gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimY));
    mapping.push_back(gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX));
    loop::TileOp::create(sb, loc, ValueRange{bm, bn},
                         sb.getDenseI64ArrayAttr(blockSizes),
                         sb.getArrayAttr(mapping));
    loop::PromoteOp::create(sb, loc, sb.getDenseI64ArrayAttr({0, 1}),
                            ValueRange{pad},
                            sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    loop::PipelineOp::create(sb, loc, ValueRange{stages},
                             sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    loop::MmaOp::create(
        sb, loc, ValueRange{wm, wn, bk},
        sb.getDenseI64ArrayAttr(
            {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic}),
        sb.getDenseI64ArrayAttr({16, 8, best->instructionK()}));
    return true;
  }

  /// One row per block, shared by the block's threads (loop.warp_reduce),
  /// when the kernel's ops allow it, its rows are long enough to share and
  /// the grid can take one block per row; false otherwise.
  bool addWarpReduceSchedule(func::FuncOp func, TilingInterface root,
                             ArrayRef<int64_t> extents,
                             std::optional<unsigned> result) {
    std::optional<KernelRows> rows = kernelRows(func, root);
    if (!rows || rows->columns < loop::kWarpSize ||
        !rowReductionUnfit(func, root).empty())
      return false;
    // One block per row: the root's loops but the row, at most three.
    ArrayRef<int64_t> perRow =
        rows->rootWalksRow ? extents.drop_back() : extents;
    if (perRow.empty() || perRow.size() > 3)
      return false;
    for (auto [i, extent] : llvm::enumerate(llvm::reverse(perRow)))
      if (extent > info->maxGrid[i])
        return false;
    int64_t threads = defaultRowThreads(rows->columns, *info);
    MLIRContext *ctx = &getContext();
    OpBuilder sb = OpBuilder::atBlockEnd(getOperation().getBody());
    createSchedule(sb, func, result);
    Location loc = func.getLoc();
    Value threadsKnob =
        knob(sb, loc, "threads", threads, threadChoices(*info));
    SmallVector<int64_t> blockSizes(extents.size(), 1);
    if (rows->rootWalksRow)
      blockSizes.back() = 0;
    SmallVector<Attribute> mapping;
    for (int64_t i = perRow.size() - 1; i >= 0; --i)
      mapping.insert(mapping.begin(),
                     gpu::GPUBlockMappingAttr::get(
                         ctx, kBlockIds[perRow.size() - 1 - i]));
    loop::TileOp::create(sb, loc, ValueRange{},
                         sb.getDenseI64ArrayAttr(blockSizes),
                         sb.getArrayAttr(mapping));
    loop::WarpReduceOp::create(sb, loc, ValueRange{threadsKnob},
                               sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    return true;
  }

  /// loop.grid_reduce for a kernel that reduces to single values, when it
  /// can take them: rows of at least 4096 points, one block per row, up to
  /// 4096 rows, the part count dividing every reduction (one part, a
  /// single block, when none does or the reductions cannot be split).
  /// False when it cannot take them or they are shorter than a warp.
  bool addGridReduceSchedule(func::FuncOp func) {
    constexpr int64_t kRowPoints = 4096, kMaxParts = 4096;
    std::optional<GridParts> grid = gridParts(func, kRowPoints, kMaxParts);
    if (!grid || grid->longest < loop::kWarpSize)
      return false;
    if (!gridReductionUnfit(func, grid->parts, /*gpu=*/true).empty()) {
      if (grid->parts == 1 || !gridReductionUnfit(func, 1, true).empty())
        return false;
      grid->parts = 1;
      grid->choices = {1};
    }
    int64_t parts = grid->parts, longest = grid->longest;
    OpBuilder sb = OpBuilder::atBlockEnd(getOperation().getBody());
    createSchedule(sb, func, std::nullopt);
    Location loc = func.getLoc();
    Value vparts = knob(sb, loc, "parts", parts, grid->choices);
    Value threads =
        knob(sb, loc, "threads", defaultRowThreads(longest / parts, *info),
             threadChoices(*info));
    loop::GridReduceOp::create(
        sb, loc, ValueRange{vparts},
        sb.getDenseI64ArrayAttr({ShapedType::kDynamic}), ValueRange{threads},
        sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    return true;
  }

  /// Appends the default schedule of `root` to the module; true when it
  /// schedules the whole kernel (loop.grid_reduce), which it may only with
  /// `mayCoverKernel` (the first root of a kernel given no schedule).
  FailureOr<bool> addSchedule(func::FuncOp func, TilingInterface root,
                              StringAttr kind, std::optional<unsigned> result,
                              bool mayCoverKernel) {
    ModuleOp module = getOperation();
    std::optional<SmallVector<int64_t>> maybeExtents = staticLoopExtents(root);
    if (!maybeExtents) {
      root->emitError("schedules need static shapes; this kernel's root "
                      "has a dynamic loop");
      return failure();
    }
    SmallVector<int64_t> extents = *maybeExtents;
    if (info->isGpu() && llvm::is_contained(extents, 0)) {
      root->emitError("has a loop of extent 0, which GPU schedules do not "
                      "take; graph-decompose folds zero-size tensors away");
      return failure();
    }
    if (info->isCpu()) {
      addCpuSchedule(func, root, extents, kind, result, mayCoverKernel);
      return false;
    }
    if (kind && kind.getValue() == "contraction" &&
        addMmaSchedule(func, root, result))
      return false;
    SmallVector<utils::IteratorType> iterators = root.getLoopIteratorTypes();
    // The loops to distribute: parallel ones, innermost first. A reduction
    // kernel whose root is elementwise keeps its innermost loop whole
    // (the reduced rows of a softmax or layer_norm), so that the fused
    // reductions are not recomputed per point.
    auto parallel = [](utils::IteratorType it) {
      return it == utils::IteratorType::parallel;
    };
    bool reduction = kind && kind.getValue() == "reduction";
    bool rowwise = reduction && llvm::all_of(iterators, parallel);
    // Rows shared by a block's threads: those of an elementwise root and
    // those a root reduces (a row sum), which one thread per row would
    // read with strides.
    if (reduction && !iterators.empty() &&
        llvm::all_of(ArrayRef(iterators).drop_back(), parallel) &&
        addWarpReduceSchedule(func, root, extents, result))
      return false;
    // Reductions to single values (a sum, a 1-D softmax's): in parts
    // across the grid, where pointwise tiling would leave them to a single
    // thread.
    if (mayCoverKernel && addGridReduceSchedule(func))
      return true;
    std::optional<PointwiseTiling> tiling = gpuPointwiseTiling(root, rowwise, *info);
    // Nothing to distribute (an f16 sum to a scalar): no schedule;
    // gpu-map-kernels runs the kernel in one thread.
    if (!tiling)
      return false;
    OpBuilder sb = OpBuilder::atBlockEnd(module.getBody());
    createSchedule(sb, func, result);
    Location loc = func.getLoc();
    loop::TileOp::create(sb, loc, ValueRange{},
                         sb.getDenseI64ArrayAttr(tiling->blockSizes),
                         sb.getArrayAttr(tiling->blockMapping));
    if (tiling->vector > 1) {
      // The thread tile and the vectors share one knob.
      Value vector =
          knob(sb, loc, "vector", tiling->vector, tiling->vectorChoices);
      SmallVector<int64_t> sizes(tiling->threadSizes);
      SmallVector<Value> knobs = {vector};
      sizes.back() = ShapedType::kDynamic;
      if (tiling->squareLoop >= 0) {
        sizes[tiling->squareLoop] = ShapedType::kDynamic;
        knobs.push_back(vector);
      }
      loop::TileOp::create(sb, loc, knobs, sb.getDenseI64ArrayAttr(sizes),
                           sb.getArrayAttr(tiling->threadMapping));
      if (!tiling->pointSizes.empty())
        loop::TileOp::create(sb, loc, ValueRange{},
                             sb.getDenseI64ArrayAttr(tiling->pointSizes),
                             ArrayAttr());
      loop::VectorAccessOp::create(
          sb, loc, ValueRange{vector},
          sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    } else {
      loop::TileOp::create(sb, loc, ValueRange{},
                           sb.getDenseI64ArrayAttr(tiling->threadSizes),
                           sb.getArrayAttr(tiling->threadMapping));
    }
    // A thread that walks a loop (a contraction's K, a row) may unroll it.
    bool walks = func.walk([](linalg::LinalgOp op) {
                       return op.getNumReductionLoops()
                                  ? WalkResult::interrupt()
                                  : WalkResult::advance();
                     }).wasInterrupted();
    if (walks)
      addUnrollKnob(sb, loc);
    return false;
  }
};

} // namespace
