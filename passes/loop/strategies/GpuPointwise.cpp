//===- GpuPointwise.cpp - GPU kernels tiled over blocks and threads --------===//
//
// Every GPU kernel the other strategies decline (elementwise ops,
// reductions that cannot share rows, contractions tensor cores do not
// take): blocks over the root's parallel loops, each thread computing one
// point, or a vector of points of an elementwise root (loop.vector_access),
// or, in reduction kernels whose root is elementwise over the reduced rows,
// one whole row. Correct for every kernel class, and slow for
// contractions (SIMT). A kernel with no loop to distribute gets no
// schedule and runs in a single thread. Threads that walk a loop get a
// loop.unroll knob, left at 1.
//
//===----------------------------------------------------------------------===//

#include "passes/loop/strategies/Strategy.h"

#include "passes/TileAndFuseRoot.h"
#include "passes/loop/Alignment.h"

using namespace mlir;
using namespace tessel;

namespace {

/// Threads per block of the default schedule: a multiple of the warp size
/// that keeps several blocks resident per SM.
constexpr int64_t kThreadsPerBlock = 256;
/// Rows per block when each thread walks a whole row.
constexpr int64_t kRowsPerBlock = 64;

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

} // namespace

std::optional<PointwiseTiling>
tessel::gpuPointwiseTiling(TilingInterface root, bool rowwise,
                           const loop::TargetDescription &target) {
  // A dynamic loop's tiles are chosen for its largest size.
  std::optional<SmallVector<int64_t>> maybeExtents = largestLoopExtents(root);
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

struct GpuPointwise final : Strategy {
  StringRef name() const override { return "GPU pointwise"; }

  bool owns(Operation *op) const override {
    return isa<loop::VectorAccessOp>(op);
  }

  Default addDefault(DefaultRequest r) const override {
    SmallVector<utils::IteratorType> iterators = r.root.getLoopIteratorTypes();
    // A reduction kernel whose root is elementwise keeps its innermost loop
    // whole (the reduced rows of a softmax or layer_norm), so that the
    // fused reductions are not recomputed per point.
    bool rowwise =
        r.isKind("reduction") &&
        llvm::all_of(iterators, [](utils::IteratorType it) {
          return it == utils::IteratorType::parallel;
        });
    std::optional<PointwiseTiling> tiling =
        gpuPointwiseTiling(r.root, rowwise, r.info);
    // Nothing to distribute (an f16 sum to a scalar): no schedule;
    // gpu-map-kernels runs the kernel in one thread.
    if (!tiling)
      return Default::Done;
    OpBuilder sb(r.func.getContext());
    r.begin(sb);
    Location loc = r.func.getLoc();
    loop::TileOp::create(sb, loc, ValueRange{},
                         sb.getDenseI64ArrayAttr(tiling->blockSizes),
                         sb.getArrayAttr(tiling->blockMapping));
    if (tiling->vector > 1) {
      // The thread tile and the vectors share one knob.
      Value vector =
          addKnob(sb, loc, "vector", tiling->vector, tiling->vectorChoices);
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
    bool walks = r.func
                     .walk([](linalg::LinalgOp op) {
                       return op.getNumReductionLoops()
                                  ? WalkResult::interrupt()
                                  : WalkResult::advance();
                     })
                     .wasInterrupted();
    if (walks)
      addUnrollKnob(sb, loc);
    return Default::Done;
  }

  /// loop.vector_access: an elementwise root whose innermost tile (mapped
  /// to threads) is `width` points of its innermost loop and of at most
  /// one other, one of every other loop, in vectors of at most 16 bytes.
  LogicalResult validate(ScheduleCheck check) const override {
    loop::ScheduleOp schedule = check.schedule;
    ArrayRef<int64_t> tile = check.tile;
    for (auto access : schedule.getBody().getOps<loop::VectorAccessOp>()) {
      int64_t width = access.getResolvedWidth();
      std::string name = valueName(access.getDynamicWidth(),
                                   access.getStaticWidth(), 0, "width");
      for (Operation &op : schedule.getBody().getOps())
        if (isa<loop::MmaOp, loop::WarpReduceOp>(op))
          return access.emitError("cannot be combined with ")
                 << op.getName()
                 << ", which writes the block's accesses itself";
      if (llvm::any_of(check.root.getLoopIteratorTypes(),
                       [](utils::IteratorType it) {
                         return it != utils::IteratorType::parallel;
                       }))
        return access.emitError("needs an elementwise root; the root of "
                                "kernel '")
               << schedule.getKernel() << "' has reduction loops";
      if (!check.threadMapped)
        return access.emitError("needs a loop.tile mapped to threads");
      // One other loop may have `width` points too: the loop along which a
      // transposed operand is contiguous.
      bool other = false;
      for (auto [i, extent] : llvm::enumerate(tile.drop_back())) {
        if (extent == 1)
          continue;
        if (extent == width && !other) {
          other = true;
          continue;
        }
        return access.emitError("needs a thread tile of one point in every "
                                "loop but the innermost and at most one "
                                "other of ")
               << name << " points; loop " << i << " keeps " << extent;
      }
      if (tile.back() != width)
        return access.emitError(name)
               << " = " << width << " differs from the thread tile's "
               << tile.back() << " points of the innermost loop; tile it by "
               << "the same knob";
      Type widest = widestElement(check.root);
      int64_t bytes = widest ? width * elementBytes(widest) : 0;
      if (bytes > loop::kMaxVectorBytes)
        return access.emitError(name)
               << " = " << width << " moves " << bytes << " bytes of "
               << widest << " per vector; the limit is "
               << loop::kMaxVectorBytes;
    }
    return success();
  }

  /// loop-vector-access carries out loop.vector_access on buffers.
  LogicalResult apply(ApplyState &state, Operation *op) const override {
    markVectorAccess(state.root,
                     cast<loop::VectorAccessOp>(op).getResolvedWidth());
    return success();
  }
};

} // namespace

const Strategy &tessel::gpuPointwiseStrategy() {
  static const GpuPointwise strategy;
  return strategy;
}
