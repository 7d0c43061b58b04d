//===- LowerMma.cpp - loop.mma contractions to tensor-core code -----------===//
//
// A marked contraction of a block tile becomes the main loop of a
// multistage tensor-core GEMM, written out per thread (S = stages, KT = K
// steps), once per batch index the block tile still has:
//
//   prologue: cp.async K tiles 0 .. S-2 into shared buffers 0 .. S-2
//   for kt in 0 .. KT-1:
//     wait until tile kt has landed; barrier
//     cp.async tile kt+S-1 into the buffer step kt-1 has finished with
//       (zero-filled, reading nothing, past the last tile)
//     ldmatrix fragments of tile kt, mma.sync into the accumulators
//   epilogue on the accumulator registers, stored to the result
//
// Fragment layouts are those of PTX mma.m16n8k16.row.col: with g = lane/4
// and t = lane%4, a lane holds rows g and g+8, columns 2t and 2t+1 of each
// 16x8 accumulator; ldmatrix.x4 gives the A fragment of a 16x16 tile when
// lane l points at row l%16, column 8*(l/16), and (transposed) the B
// fragments of two 16x8 tiles when lane l points at K row l%16, column
// 8*(l/16). f32 operands multiply as tf32 (mma.m16n8k8): see multiplyTf32.
//
// A config of shape m64 (sm_90a) is carried out by warpgroups issuing
// wgmma.mma_async from 128-byte-swizzled tiles instead (WgmmaEmitter); the
// batch loops, the masked copies and the epilogue are shared
// (TileEmitter).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/gpu/Buffers.h"
#include "passes/gpu/PointwiseBody.h"
#include "passes/loop/Alignment.h"
#include "passes/loop/MmaConfig.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

namespace tessel {
#define GEN_PASS_DEF_GPULOWERMMA
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// A marked contraction with what the rewrite folds into it.
struct MmaMatch {
  linalg::LinalgOp contraction;
  unsigned batch;              // leading batch loops
  linalg::FillOp fill;         // sets the accumulator's initial value
  // Elementwise consumers in order: the first reads the accumulator, later
  // ones read it or earlier ones' outputs, all at the same point.
  SmallVector<linalg::GenericOp> epilogue;
  memref::AllocOp accumulator; // the f32 tile when the epilogue consumes it
  Value lhs, rhs;              // A and B as [batch..., rows, cols] views
  // The batch loops A and B read (a broadcast operand reads fewer).
  SmallVector<unsigned> lhsBatch, rhsBatch;
};

/// The batch loops (of `batch`) that input `i` of `contraction` reads, in
/// order.
SmallVector<unsigned> batchLoopsRead(linalg::LinalgOp contraction,
                                     unsigned batch, unsigned i) {
  SmallVector<unsigned> loops;
  for (AffineExpr e : contraction
                          .getMatchingIndexingMap(
                              contraction.getDpsInputOperands()[i])
                          .getResults())
    if (unsigned d = cast<AffineDimExpr>(e).getPosition(); d < batch)
      loops.push_back(d);
  llvm::sort(loops);
  return loops;
}

/// Input `i` of `contraction` (with `batch` batch loops) as a view whose
/// batch dims come first (batch..., row, col): A split along K (read at
/// (m, part, k)) becomes a transposed view [part, m, k]; others are
/// returned as they are.
Value batchLeading(OpBuilder &b, linalg::LinalgOp contraction, unsigned batch,
                   unsigned i) {
  OpOperand *input = contraction.getDpsInputOperands()[i];
  AffineMap map = contraction.getMatchingIndexingMap(input);
  SmallVector<unsigned> order = llvm::to_vector(
      llvm::seq<unsigned>(0, map.getNumResults()));
  auto key = [&](unsigned result) {
    unsigned dim = map.getDimPosition(result);
    return dim < batch ? dim : batch + result;
  };
  llvm::stable_sort(order,
                    [&](unsigned x, unsigned y) { return key(x) < key(y); });
  if (llvm::is_sorted(order))
    return input->get();
  return memref::TransposeOp::create(
      b, contraction.getLoc(), input->get(),
      AffineMapAttr::get(AffineMap::getPermutationMap(order, b.getContext())));
}

/// Whether `v` is a memref with unit inner stride (16-byte copies and
/// ldmatrix rows need contiguous rows).
bool isRowMajor(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

FailureOr<MmaMatch> match(linalg::LinalgOp contraction) {
  auto fail = [&](const Twine &why) {
    return contraction.emitError("loop.mma cannot lower this contraction: ")
           << why;
  };
  std::optional<unsigned> batch = mmaBatchLoops(contraction);
  if (!contraction.hasPureBufferSemantics() || !batch)
    return fail("expected a bufferized (batched) matmul of f16, bf16 or f32 into f32");
  Value acc = contraction.getDpsInits()[0];
  if (!llvm::all_of(contraction->getOperands(), isRowMajor))
    return fail("operands must be row-major");
  MmaMatch m{contraction, *batch, {}, {}, {}};
  Operation *op = contraction;
  Block *block = op->getBlock();
  for (Operation *user : acc.getUsers()) {
    if (user == op || user->getBlock() != block ||
        isa<memref::DeallocOp>(user))
      continue;
    if (auto fill = dyn_cast<linalg::FillOp>(user);
        fill && fill->isBeforeInBlock(op) && fill.getDpsInits()[0] == acc &&
        (!m.fill || m.fill->isBeforeInBlock(fill))) {
      m.fill = fill;
      continue;
    }
    // The first generic reading the accumulator starts the epilogue; the
    // chain below collects the rest.
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (generic && op->isBeforeInBlock(generic) &&
        llvm::is_contained(generic.getDpsInputs(), acc)) {
      if (m.epilogue.empty() || generic->isBeforeInBlock(m.epilogue.front()))
        m.epilogue = {generic};
      continue;
    }
    return fail("the accumulator has a use the epilogue cannot take over");
  }
  if (!m.fill || !m.fill.value().getDefiningOp<arith::ConstantOp>())
    return fail("the accumulator must be filled with a constant first");
  m.accumulator = acc.getDefiningOp<memref::AllocOp>();
  if (m.accumulator && m.epilogue.empty())
    return fail("the accumulator tile is neither a result nor read by an "
                "epilogue");
  if (m.epilogue.empty())
    return m;
  if (!m.accumulator)
    return fail("an epilogue reads the result in place");
  // Later generics of the block that read an epilogue output join the chain.
  llvm::SmallPtrSet<Value, 4> tile = {acc};
  tile.insert(m.epilogue.front().getDpsInits()[0]);
  for (Operation *next = m.epilogue.front()->getNextNode(); next;
       next = next->getNextNode()) {
    auto generic = dyn_cast<linalg::GenericOp>(next);
    if (!generic || !llvm::any_of(generic.getDpsInputs(), [&](Value in) {
          return tile.contains(in);
        }))
      continue;
    m.epilogue.push_back(generic);
    tile.insert(generic.getDpsInits()[0]);
  }
  ArrayRef<int64_t> shape = cast<MemRefType>(acc.getType()).getShape();
  for (linalg::GenericOp e : m.epilogue) {
    if (e.getNumLoops() != m.batch + 2 || e.getNumReductionLoops() != 0 ||
        e.getNumDpsInits() != 1 || e.getStaticLoopRanges() != shape)
      return fail("the epilogue must be elementwise over the block tile");
    for (OpOperand &in : e->getOpOperands())
      if (tile.contains(in.get()) && !e.isDpsInit(&in) &&
          !e.getMatchingIndexingMap(&in).isIdentity())
        return fail("the epilogue must read the tile elementwise");
    if (!e.getMatchingIndexingMap(&e.getDpsInitsMutable()[0]).isIdentity())
      return fail("the epilogue must write the tile elementwise");
  }
  return m;
}

/// Erases what a lowered contraction replaced: its epilogue chain, itself,
/// its fill, and the tiles that only the chain read (now registers).
LogicalResult eraseLowered(MmaMatch &m) {
  SmallVector<memref::AllocOp> tiles;
  if (m.accumulator)
    tiles.push_back(m.accumulator);
  for (linalg::GenericOp e : llvm::reverse(m.epilogue)) {
    if (auto alloc = e.getDpsInits()[0].getDefiningOp<memref::AllocOp>())
      tiles.push_back(alloc);
    e.erase();
  }
  m.contraction->erase();
  m.fill.erase();
  for (memref::AllocOp alloc : tiles)
    if (failed(eraseReplacedBuffer(
            alloc, "loop.mma: a tile of the epilogue is still used after lowering")))
      return failure();
  return success();
}

/// `contraction` (maybe a clone) matched, with its operand views batch dims
/// first (built before it).
FailureOr<MmaMatch> matchWithViews(linalg::LinalgOp contraction) {
  FailureOr<MmaMatch> matched = match(contraction);
  if (failed(matched))
    return failure();
  MmaMatch &m = *matched;
  OpBuilder views(contraction);
  m.lhs = batchLeading(views, contraction, m.batch, 0);
  m.rhs = batchLeading(views, contraction, m.batch, 1);
  m.lhsBatch = batchLoopsRead(contraction, m.batch, 0);
  m.rhsBatch = batchLoopsRead(contraction, m.batch, 1);
  return m;
}

/// What the tensor-core emitters share: the loops over the block tile's
/// batch indices, the masked cp.async copies of K tiles, and the epilogue
/// on the accumulator registers. Subclasses emit one GEMM per thread.
class TileEmitter {
public:
  TileEmitter(OpBuilder &b, Location loc, const MmaConfig &c, MmaMatch &m,
              Value tid)
      : b(b), loc(loc), c(c), m(&m), tid(tid) {}
  virtual ~TileEmitter() = default;

  void emit() {
    setUp();
    findEdges();
    emitTiles();
  }

protected:
  /// A block tile at the edge of M or N has fewer rows or columns than the
  /// schedule's (dynamic sizes); the last K step may be partial, and K over
  /// size symbols takes its step count at each call.
  void findEdges() {
    Value a = m->lhs, bMat = m->rhs;
    unsigned rowDim = m->lhsBatch.size(), colDim = m->rhsBatch.size() + 1;
    validRows = memref::DimOp::create(b, loc, a, rowDim);
    validCols = memref::DimOp::create(b, loc, bMat, colDim);
    validK = memref::DimOp::create(b, loc, a, rowDim + 1);
    partialRows = cast<MemRefType>(a.getType()).isDynamicDim(rowDim);
    partialCols = cast<MemRefType>(bMat.getType()).isDynamicDim(colDim);
    dynamicK = cast<MemRefType>(a.getType()).isDynamicDim(rowDim + 1);
    partialK = dynamicK || c.k % c.bk != 0;
    numSteps = dynamicK ? apply(b.getAffineDimExpr(0).ceilDiv(c.bk), validK)
                        : index(steps());
  }

  /// The thread's coordinates, before anything else is emitted.
  virtual void setUp() = 0;
  /// The block tile's GEMMs: one per batch index, each after a block-wide
  /// barrier (the previous index's last step may still be reading the
  /// buffers this one's prologue fills).
  virtual void emitTiles() {
    eachBatch([&](Value) { emitGemm(); }, /*synchronize=*/true);
  }
  /// The GEMM of one batch index.
  virtual void emitGemm() = 0;
  /// Where the 16-byte chunk at (`row`, `col`) of a K tile of A (or of B,
  /// `rhs`) lands in buffer `stage`: the buffer and its indices.
  virtual std::pair<Value, SmallVector<Value>>
  destination(bool rhs, Value stage, Value row, Value col) = 0;
  /// Elements per cp.async of A's K tiles (or B's, `rhs`): 16 bytes, or
  /// single elements where the tile transposes them.
  virtual int64_t copyWidth(bool rhs) const { return c.copyElements(); }

  /// Runs `body` at each index of the block tile's batch dims from `dim`
  /// on, in loops (unit dims are index 0; those over size symbols as many
  /// as the call has), with the number of indices before it (`before`
  /// those of the outer dims); with `synchronize`, a block-wide barrier
  /// starts each iteration.
  void eachBatch(function_ref<void(Value)> body, bool synchronize,
                 unsigned dim = 0, Value before = {}) {
    if (!before)
      before = index(0);
    if (dim == m->batch)
      return body(before);
    Value acc = m->contraction.getDpsInits()[0];
    int64_t extent = cast<MemRefType>(acc.getType()).getDimSize(dim);
    if (extent == 1) {
      batchIndices.push_back(index(0));
      eachBatch(body, synchronize, dim + 1, before);
      batchIndices.resize(dim);
      return;
    }
    // (An accumulator tile is erased after: its own size operand, not a
    // memref.dim of it.)
    Value upper = index(extent);
    if (ShapedType::isDynamic(extent)) {
      auto alloc = acc.getDefiningOp<memref::AllocOp>();
      upper = alloc ? alloc.getDynamicSizes()[alloc.getType().getDynamicDimIndex(dim)]
                    : memref::DimOp::create(b, loc, acc, dim).getResult();
    }
    auto loop = scf::ForOp::create(b, loc, index(0), upper, index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    if (synchronize)
      gpu::BarrierOp::create(b, loc);
    Value iv = loop.getInductionVar();
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1),
               d2 = b.getAffineDimExpr(2);
    batchIndices.push_back(iv);
    eachBatch(body, synchronize, dim + 1,
              apply(d0 * d1 + d2, {before, upper, iv}));
    batchIndices.resize(dim);
  }

  /// `indices` of a block-tile operand, after the indices of the batch
  /// loops it reads (`loops`; all of them for the result).
  SmallVector<Value>
  at(ValueRange indices,
     std::optional<ArrayRef<unsigned>> loops = std::nullopt) {
    SmallVector<Value> all;
    if (loops)
      for (unsigned loop : *loops)
        all.push_back(batchIndices[loop]);
    else
      all.assign(batchIndices);
    llvm::append_range(all, indices);
    return all;
  }

  /// K steps of a static K (the TMA paths'; numSteps counts them at each
  /// call).
  int64_t steps() const { return llvm::divideCeil(c.k, c.bk); }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  Value apply(AffineExpr e, ValueRange operands) {
    return affine::makeComposedAffineApply(
               b, loc, AffineMap::get(operands.size(), 0, e), getAsOpFoldResult(operands))
        .getResult();
  }

  /// Blocks until at most `pending` committed groups are in flight.
  void wait(Value group, int64_t pending) {
    nvgpu::DeviceAsyncWaitOp::create(b, loc, group,
                                     b.getI32IntegerAttr(pending));
  }

  /// Starts the copies of K tile `step` of A and B into buffer `stage` and
  /// commits them as one group, which it returns. `elements` (null for all)
  /// zero-fills. Chunks past the tile's rows, columns or K read nothing and
  /// zero-fill, from a clamped (valid) address; K and N are multiples of 8,
  /// so a chunk is wholly inside or outside.
  Value copyTile(Value step, Value stage, Value elements) {
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    SmallVector<Value> tokens;
    // Limits a source index to `bound` - `width` (a valid chunk start) and
    // zero-fills the chunk (of `chunkWidth` elements) when the index is not
    // below `bound`.
    auto mask = [&](Value &srcIndex, Value bound, int64_t width,
                    int64_t chunkWidth, Value &count) {
      Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           srcIndex, bound);
      srcIndex = arith::MinUIOp::create(
          b, loc, srcIndex, apply(d0 - width, bound));
      Value fill = arith::SelectOp::create(b, loc, inside, index(chunkWidth),
                                           index(0));
      count = count ? arith::MinUIOp::create(b, loc, count, fill) : fill;
    };
    auto copy = [&](Value src, ArrayRef<unsigned> loops, int64_t rows,
                    int64_t cols, bool kRows) {
      int64_t width = copyWidth(kRows);
      int64_t perRow = cols / width;
      for (int64_t r = 0; r < rows * perRow / c.threads(); ++r) {
        Value chunk = apply(d0 + r * c.threads(), tid);
        Value row = apply(d0.floorDiv(perRow), chunk);
        Value col = apply((d0 % perRow) * width, chunk);
        // A tiles advance along K in columns, B tiles in rows.
        Value srcRow = kRows ? apply(d0 * c.bk + d1, {step, row}) : row;
        Value srcCol = kRows ? col : apply(d0 * c.bk + d1, {step, col});
        // (A narrower copy zero-fills whole or not at all.)
        Value count = elements && width != c.copyElements()
                          ? arith::MinUIOp::create(b, loc, elements,
                                                   index(width))
                          : elements;
        if (kRows ? partialK : partialRows)
          mask(srcRow, kRows ? validK : validRows, 1, width, count);
        if (kRows ? partialCols : partialK)
          mask(srcCol, kRows ? validCols : validK, width, width, count);
        auto [dst, dstIndices] = destination(kRows, stage, row, col);
        // Only 16-byte copies may bypass L1 (cp.async.cg).
        tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
            b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), dst,
            dstIndices, src, at({srcRow, srcCol}, loops),
            b.getIndexAttr(width), count,
            width == c.copyElements() ? b.getUnitAttr() : UnitAttr()));
      }
    };
    copy(m->lhs, m->lhsBatch, c.bm, c.bk, /*kRows=*/false);
    copy(m->rhs, m->rhsBatch, c.bk, c.bn, /*kRows=*/true);
    return nvgpu::DeviceAsyncCreateGroupOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tokens);
  }

  /// The copies of K tile `step` into buffer `stage`, issued ahead of the
  /// step that reads it: a step past the last reads nothing and
  /// zero-fills (its chunks past K masked, as a partial step's are;
  /// with K static, from the last step's valid addresses).
  Value copyAhead(Value step, Value stage) {
    if (dynamicK)
      return copyTile(step, stage, Value());
    if (std::optional<int64_t> known = getConstantIntValue(step)) {
      bool valid = *known < steps();
      return copyTile(index(valid ? *known : steps() - 1), stage,
                      valid ? Value() : index(0));
    }
    Value last = index(steps() - 1);
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, step, last);
    return copyTile(arith::MinUIOp::create(b, loc, step, last), stage,
                    arith::SelectOp::create(b, loc, inRange,
                                            index(c.copyElements()), index(0)));
  }

  /// Stores `pair`, a lane's two adjacent accumulator columns at (`row`,
  /// `column`) of the block tile, through the epilogue when there is one.
  /// Points past a partial tile's edge are not stored. Valid columns come
  /// in whole 16-byte rows (N is a multiple of 8, or 4 for f32), so a
  /// pair, at an even column, is wholly inside or outside.
  void storeFragment(ArrayRef<Value> pair, Value row, Value column) {
    if (!partialRows && !partialCols)
      return store(pair, row, column);
    auto ifOp = scf::IfOp::create(b, loc, inside(row, column), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    store(pair, row, column);
  }

  /// Whether (`row`, `column`) lies in the block tile's valid rows and
  /// columns.
  Value inside(Value row, Value column) {
    return arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                              validRows),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, column,
                              validCols));
  }

  /// The epilogue chain at `values.size()` adjacent columns from (row,
  /// col), or the plain stores. Each generic's results are stored to its
  /// output and passed on in registers to the generics that read it.
  void store(ArrayRef<Value> values, Value row, Value col) {
    (void)chain(values, row, col, /*storeLast=*/true);
  }

  /// As store, but the last output's values are returned, stored only with
  /// `storeLast` (the accumulator's own, without a chain).
  SmallVector<Value> chain(ArrayRef<Value> values, Value row, Value col,
                           bool storeLast) {
    SmallVector<SmallVector<Value>> points;
    for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i)
      points.push_back(at({row, apply(b.getAffineDimExpr(0) + i, col)}));
    Value acc = m->contraction.getDpsInits()[0];
    SmallVector<Value> results(values);
    if (m->epilogue.empty()) {
      if (storeLast)
        write(values, acc, points);
      return results;
    }
    SmallVector<llvm::DenseMap<Value, Value>> known;
    for (Value v : values)
      known.push_back({{acc, v}});
    for (linalg::GenericOp e : m->epilogue) {
      Value out = e.getDpsInits()[0];
      results.clear();
      for (auto [point, registers] : llvm::zip(points, known)) {
        results.push_back(compute(e, point, registers));
        registers[out] = results.back();
      }
      // A tile only the chain reads stays in registers.
      if (!out.getDefiningOp<memref::AllocOp>() &&
          (storeLast || e != m->epilogue.back()))
        write(results, out, points);
    }
    return results;
  }

  /// The buffer the last values of the chain go to (the accumulator's own
  /// without one) when its rows take 16-byte stores of them: of 16- or
  /// 32-bit elements, not a tile's own allocation, its runs of 16 bytes
  /// aligned (isChunkAligned: a view of a host buffer whose row strides and
  /// column offsets are whole 16 bytes); null otherwise.
  Value chunkedOutput() {
    Value out = m->epilogue.empty() ? m->contraction.getDpsInits()[0]
                                    : m->epilogue.back().getDpsInits()[0];
    if (out.getDefiningOp<memref::AllocOp>())
      return {};
    unsigned bits = getElementTypeOrSelf(out.getType()).getIntOrFloatBitWidth();
    return (bits == 16 || bits == 32) && isChunkAligned(out, 128 / bits)
               ? out
               : Value();
  }

  /// Stores a row of the thread's accumulator fragments through the
  /// epilogue chain: `pairs[t]` are its two values of column group t, at
  /// columns `first` + 8t + 2q and + 1 of row `row` (q = lane % 4, as
  /// mma.sync's and wgmma's fragments lay them out). The lanes of each quad
  /// exchange the chain's last values (warp shuffles) so that each stores
  /// 16 bytes of consecutive columns at once (four groups of 16-bit values,
  /// two of f32): a warp's store instruction then writes 8 rows of whole
  /// 32-byte sectors, where a lane's own pair (4 bytes of 16-bit values)
  /// wrote half sectors. Points past a partial tile's edge are neither
  /// computed nor stored (a 16-byte chunk is wholly inside or outside:
  /// valid columns come in whole 16-byte rows).
  void storeRow(ArrayRef<std::array<Value, 2>> pairs, Value row, Value first) {
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    Value q = apply(d0 % 4, tid);
    auto columnOf = [&](int64_t group, Value lane) {
      return apply(d0 + d1 * 2 + 8 * group, {first, lane});
    };
    Value out = chunkedOutput();
    unsigned bits =
        out ? getElementTypeOrSelf(out.getType()).getIntOrFloatBitWidth() : 0;
    int64_t perChunk = bits == 16 ? 4 : 2; // column groups per 16 bytes
    if (!out || pairs.size() % perChunk) {
      for (auto [t, pair] : llvm::enumerate(pairs))
        storeFragment(pair, row, columnOf(t, q));
      return;
    }
    Type element = getElementTypeOrSelf(out.getType());
    bool partial = partialRows || partialCols;
    // Each group's last values, as 32-bit words: a packed 16-bit pair, or
    // two f32.
    SmallVector<SmallVector<Value>> words;
    for (auto [t, pair] : llvm::enumerate(pairs)) {
      Value column = columnOf(t, q);
      SmallVector<Value> last;
      if (!partial) {
        last = chain(pair, row, column, /*storeLast=*/false);
      } else {
        auto ifOp = scf::IfOp::create(b, loc, TypeRange{element, element},
                                      inside(row, column), true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        scf::YieldOp::create(b, loc,
                             chain(pair, row, column, /*storeLast=*/false));
        b.setInsertionPointToStart(ifOp.elseBlock());
        Value zero = arith::ConstantOp::create(b, loc, element,
                                               b.getZeroAttr(element));
        scf::YieldOp::create(b, loc, ValueRange{zero, zero});
        last = ifOp.getResults();
      }
      if (bits == 32) {
        words.push_back(last);
        continue;
      }
      Value packed = vector::FromElementsOp::create(
          b, loc, VectorType::get({2}, element), last);
      Value word = vector::BitCastOp::create(
          b, loc, VectorType::get({1}, b.getI32Type()), packed);
      words.push_back({vector::ExtractOp::create(b, loc, word,
                                                 ArrayRef<int64_t>{0})});
    }
    auto bit = [&](int64_t mask) {
      return arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne,
          apply(d0.floorDiv(mask) % 2, q), index(0));
    };
    Value odd = bit(1), high = bit(2);
    auto select = [&](Value condition, ArrayRef<Value> x, ArrayRef<Value> y) {
      SmallVector<Value> chosen;
      for (auto [u, v] : llvm::zip(x, y))
        chosen.push_back(arith::SelectOp::create(b, loc, condition, u, v));
      return chosen;
    };
    auto exchange = [&](ArrayRef<Value> sent, int64_t laneMask) {
      SmallVector<Value> received;
      for (Value v : sent)
        received.push_back(gpu::ShuffleOp::create(
                               b, loc, v, laneMask, loop::kWarpSize,
                               gpu::ShuffleMode::XOR)
                               .getShuffleResult());
      return received;
    };
    auto concat = [](ArrayRef<Value> x, ArrayRef<Value> y) {
      SmallVector<Value> all(x);
      llvm::append_range(all, y);
      return all;
    };
    // Lanes q and q ^ 1 swap the groups of a pair: q keeps group
    // 2k + (q & 1), whose words from lanes q & 2 and (q & 2) + 1 it then
    // holds in order.
    auto swapPairs = [&](ArrayRef<Value> even, ArrayRef<Value> oddGroup) {
      SmallVector<Value> own = select(odd, oddGroup, even);
      SmallVector<Value> received =
          exchange(select(odd, even, oddGroup), 1);
      return concat(select(odd, received, own), select(odd, own, received));
    };
    for (size_t t0 = 0; t0 < pairs.size(); t0 += perChunk) {
      SmallVector<Value> chunk;
      Value column;
      if (bits == 32) {
        // 4 f32 of group t0 + (q & 1), columns 4 (q >> 1) on.
        chunk = swapPairs(words[t0], words[t0 + 1]);
        column = apply(d0 + 8 * t0 + (d1 % 2) * 8 + d1.floorDiv(2) * 4,
                       {first, q});
      } else {
        // Then lanes q and q ^ 2 swap the groups they hold: q keeps group
        // t0 + q, its words from lanes 0-1 and 2-3.
        SmallVector<Value> low = swapPairs(words[t0], words[t0 + 1]);
        SmallVector<Value> up = swapPairs(words[t0 + 2], words[t0 + 3]);
        SmallVector<Value> own = select(high, up, low);
        SmallVector<Value> received = exchange(select(high, low, up), 2);
        chunk = concat(select(high, received, own),
                       select(high, own, received));
        column = apply(d0 + 8 * t0 + d1 * 8, {first, q});
      }
      Value vector = vector::FromElementsOp::create(
          b, loc, VectorType::get({4}, chunk.front().getType()), chunk);
      if (bits == 16)
        vector = vector::BitCastOp::create(
            b, loc, VectorType::get({8}, element), vector);
      OpBuilder::InsertionGuard guard(b);
      if (partial) {
        auto ifOp = scf::IfOp::create(b, loc, inside(row, column), false);
        b.setInsertionPointToStart(ifOp.thenBlock());
      }
      vector::StoreOp::create(b, loc, vector, out, at({row, column}),
                              /*nontemporal=*/false, llvm::Align(16));
    }
  }

  /// The value of `e`'s body at `point`, its operands in `known` taken
  /// from registers, the others loaded.
  Value compute(linalg::GenericOp e, ValueRange point,
                const llvm::DenseMap<Value, Value> &known) {
    return clonePointwiseBody(
        b, e,
        [&](OpOperand &operand) -> Value {
          if (Value value = known.lookup(operand.get()))
            return value;
          return memref::LoadOp::create(b, loc, operand.get(),
                                        indicesOf(e, operand, point));
        },
        [&](unsigned dim) { return point[dim]; });
  }

  /// Stores `values` at `points` of `buffer`: adjacent columns of a
  /// row-major buffer as one aligned vector (the first column is even and
  /// so is the row length, a multiple of 4 or 8, so the address is too);
  /// booleans and strided buffers one by one.
  void write(ArrayRef<Value> values, Value buffer,
             ArrayRef<SmallVector<Value>> points) {
    Type element = values.front().getType();
    unsigned bits = element.getIntOrFloatBitWidth();
    if (!isRowMajor(buffer) || bits % 8) {
      for (auto [v, point] : llvm::zip(values, points))
        memref::StoreOp::create(b, loc, v, buffer, point);
      return;
    }
    auto type = VectorType::get({static_cast<int64_t>(values.size())}, element);
    Value vector = vector::FromElementsOp::create(b, loc, type, values);
    vector::StoreOp::create(
        b, loc, vector, buffer, points.front(), /*nontemporal=*/false,
        llvm::Align(values.size() * bits / 8));
  }

  /// The indices `e` reads `operand` at, at iteration `point`.
  SmallVector<Value> indicesOf(linalg::GenericOp e, OpOperand &operand,
                               ValueRange point) {
    SmallVector<Value> indices;
    for (AffineExpr expr : e.getMatchingIndexingMap(&operand).getResults())
      indices.push_back(apply(expr, point));
    return indices;
  }

  OpBuilder &b;
  Location loc;
  const MmaConfig &c;
  MmaMatch *m;
  Value tid;
  Value prologueGroup;
  SmallVector<Value> batchIndices; // of the GEMM being emitted
  Value validRows, validCols, validK; // of this block tile
  Value numSteps;                       // of K
  bool partialRows, partialCols, partialK, dynamicK;
};

/// mma.sync (m16n8k16, tf32 m16n8k8) by warps, fragments loaded with
/// ldmatrix from padded tiles.
class MmaSyncEmitter final : public TileEmitter {
public:
  MmaSyncEmitter(OpBuilder &b, Location loc, const MmaConfig &c, MmaMatch &m,
                 Value tid, Value smA, Value smB)
      : TileEmitter(b, loc, c, m, tid), smA(smA), smB(smB) {}

private:
  void setUp() override {
    AffineExpr d0 = b.getAffineDimExpr(0);
    Value lane = apply(d0 % loop::kWarpSize, tid);
    Value warp = apply(d0.floorDiv(loop::kWarpSize), tid);
    warpRow = apply(d0.floorDiv(c.warpsN()) * c.wm, warp);
    warpCol = apply((d0 % c.warpsN()) * c.wn, warp);
    fragRow = apply(d0 % 16, lane);
    fragCol = apply(d0.floorDiv(16) * c.copyElements(), lane);
    laneRow = apply(d0.floorDiv(4), lane);
    laneCol = apply((d0 % 4) * 2, lane);
  }

  std::pair<Value, SmallVector<Value>>
  destination(bool rhs, Value stage, Value row, Value col) override {
    return {rhs ? smB : smA, {stage, row, col}};
  }

  int64_t tilesM() const { return c.wm / 16; }
  int64_t tilesN() const { return c.wn / 8; }

  void emitGemm() override {
    // Prologue: tiles 0 .. S-2 (zero-filled past the last one). Waits in
    // the loop name the last of these groups; their `numGroups` bound is
    // what selects the tile they wait for.
    for (int64_t s = 0; s + 1 < c.stages; ++s)
      prologueGroup = copyAhead(index(s), index(s));
    auto accType = VectorType::get({2, 2}, b.getF32Type());
    auto init = cast<FloatAttr>(
        m->fill.value().getDefiningOp<arith::ConstantOp>().getValue());
    Value splat = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(accType, init.getValue()));
    SmallVector<Value> inits(tilesM() * tilesN(), splat);
    auto loop =
        scf::ForOp::create(b, loc, index(0), numSteps, index(1), inits);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value kt = loop.getInductionVar();
      Value stage = mainLoopCopies(kt);
      SmallVector<Value> accs(loop.getRegionIterArgs());
      for (int64_t kk = 0; kk < c.bk / c.instructionK(); ++kk)
        multiply(stage, kk, accs);
      scf::YieldOp::create(b, loc, accs);
    }
    if (c.stages > 1)
      wait(prologueGroup, 0);
    epilogue(loop.getResults());
  }

  /// Copies and waits of main-loop step `kt`; returns the buffer it reads.
  Value mainLoopCopies(Value kt) {
    AffineExpr d0 = b.getAffineDimExpr(0);
    if (c.stages == 1) {
      // One buffer: everyone is done with the last step before it is
      // overwritten, and the copy lands before anyone reads it.
      gpu::BarrierOp::create(b, loc);
      wait(copyTile(kt, index(0), Value()), 0);
      gpu::BarrierOp::create(b, loc);
      return index(0);
    }
    // Groups committed so far: S-1 in the prologue and one per earlier
    // step; at most S-2 pending means tile kt has landed.
    wait(prologueGroup, c.stages - 2);
    gpu::BarrierOp::create(b, loc);
    Value next = apply(d0 + (c.stages - 1), kt);
    copyAhead(next, apply(d0 % c.stages, next));
    return apply(d0 % c.stages, kt);
  }

  /// One 16-deep slice `kk` of the K step in buffer `stage`.
  void multiply(Value stage, int64_t kk, MutableArrayRef<Value> accs) {
    if (c.elementBytes == 4)
      return multiplyTf32(stage, kk, accs);
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    Type element = getElementTypeOrSelf(smA.getType());
    auto x4 = VectorType::get({4, 2}, element);
    Value kCol = apply(d0 + kk * 16, fragCol);
    Value kRow = apply(d0 + kk * 16, fragRow);
    SmallVector<Value> aFrags, bFrags;
    for (int64_t mi = 0; mi < tilesM(); ++mi)
      aFrags.push_back(nvgpu::LdMatrixOp::create(
          b, loc, x4, smA,
          ValueRange{stage, apply(d0 + d1 + mi * 16, {warpRow, fragRow}), kCol},
          /*transpose=*/false, /*numTiles=*/4));
    for (int64_t nj = 0; nj < c.wn / 16; ++nj) {
      Value pair = nvgpu::LdMatrixOp::create(
          b, loc, x4, smB,
          ValueRange{stage, kRow, apply(d0 + d1 + nj * 16, {warpCol, fragCol})},
          /*transpose=*/true, /*numTiles=*/4);
      // Rows 0-1 are the first 16x8 tile's fragment, rows 2-3 the next.
      for (int64_t half = 0; half < 2; ++half) {
        Value frag = arith::ConstantOp::create(
            b, loc, b.getZeroAttr(VectorType::get({2, 2}, element)));
        for (int64_t row = 0; row < 2; ++row)
          frag = vector::InsertOp::create(
              b, loc,
              vector::ExtractOp::create(b, loc, pair,
                                        ArrayRef<int64_t>{2 * half + row}),
              frag, ArrayRef<int64_t>{row});
        bFrags.push_back(frag);
      }
    }
    for (int64_t mi = 0; mi < tilesM(); ++mi)
      for (int64_t ni = 0; ni < tilesN(); ++ni) {
        Value &acc = accs[mi * tilesN() + ni];
        acc = nvgpu::MmaSyncOp::create(b, loc, aFrags[mi], bFrags[ni], acc,
                                       ArrayRef<int64_t>{16, 8, 16});
      }
  }

  /// One 8-deep slice `kk` of the K step in buffer `stage`, f32 operands
  /// multiplied as tf32 by mma.m16n8k8. ldmatrix.x4 reads 16-byte rows,
  /// four f32 here: with lane l pointing at row l%16, column 4*(l/16), its
  /// registers are (g, t), (g+8, t), (g, t+4), (g+8, t+4) of the 16x8 A tile,
  /// the tf32 A fragment. B's fragment, (k = t, n = g) and (t+4, g), has no
  /// transposing ldmatrix for 32-bit elements: two loads per n8 tile.
  void multiplyTf32(Value stage, int64_t kk, MutableArrayRef<Value> accs) {
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    Type f32 = b.getF32Type();
    Value kCol = apply(d0 + kk * 8, fragCol);
    SmallVector<Value> aFrags, bFrags;
    for (int64_t mi = 0; mi < tilesM(); ++mi)
      aFrags.push_back(nvgpu::LdMatrixOp::create(
          b, loc, VectorType::get({4, 1}, f32), smA,
          ValueRange{stage, apply(d0 + d1 + mi * 16, {warpRow, fragRow}), kCol},
          /*transpose=*/false, /*numTiles=*/4));
    // laneCol is 2t: the lane's accumulator columns.
    Value kRow = apply(d0.floorDiv(2) + kk * 8, laneCol);
    for (int64_t ni = 0; ni < tilesN(); ++ni) {
      Value column = apply(d0 + d1 + ni * 8, {warpCol, laneRow});
      SmallVector<Value> pair;
      for (int64_t half = 0; half < 2; ++half)
        pair.push_back(memref::LoadOp::create(
            b, loc, smB, ValueRange{stage, apply(d0 + 4 * half, kRow), column}));
      bFrags.push_back(vector::FromElementsOp::create(
          b, loc, VectorType::get({2, 1}, f32), pair));
    }
    for (int64_t mi = 0; mi < tilesM(); ++mi)
      for (int64_t ni = 0; ni < tilesN(); ++ni) {
        Value &acc = accs[mi * tilesN() + ni];
        acc = nvgpu::MmaSyncOp::create(b, loc, aFrags[mi], bFrags[ni], acc,
                                       ArrayRef<int64_t>{16, 8, 8},
                                       /*tf32Enabled=*/true);
      }
  }

  /// Stores the accumulators, through the epilogue when there is one. A
  /// lane holds two adjacent columns of each accumulator row.
  void epilogue(ValueRange accs) {
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    for (int64_t mi = 0; mi < tilesM(); ++mi)
      for (int64_t r = 0; r < 2; ++r) {
        // A row of the warp tile: one column group per n8 tile.
        SmallVector<std::array<Value, 2>> pairs;
        for (int64_t ni = 0; ni < tilesN(); ++ni) {
          std::array<Value, 2> &pair = pairs.emplace_back();
          for (int64_t col = 0; col < 2; ++col)
            pair[col] = vector::ExtractOp::create(
                b, loc, accs[mi * tilesN() + ni], ArrayRef<int64_t>{r, col});
        }
        storeRow(pairs, apply(d0 + d1 + (mi * 16 + 8 * r), {warpRow, laneRow}),
                 warpCol);
      }
  }

  Value smA, smB;
  // Per-thread coordinates: the warp's tile, ldmatrix row/column offsets,
  // and the lane's accumulator row/column within a 16x8 tile.
  Value warpRow, warpCol, fragRow, fragCol, laneRow, laneCol;
};

/// Registers a producer warpgroup keeps (setmaxnreg): its thread only
/// counts steps and starts copies.
constexpr int64_t kProducerRegisters = 40;
/// The most registers setmaxnreg gives a thread.
constexpr int64_t kMaxRegisters = 256;

/// The suspend-time hint of an mbarrier wait (ns): a thread waits this long
/// at most before trying again (upstream's examples take the same).
constexpr int64_t kMaxWaitTicks = 10000000;

/// An operand of a wgmma contraction that TMA copies: the tensor map of the
/// whole buffer its block-tile view is part of, the view's offsets in that
/// buffer and, for each of the buffer's dims, the view dim that reads it
/// (the view may transpose a part of the buffer: A split along K), and the
/// type of a copy's box in shared memory (in the buffer's dim order).
struct TmaOperand {
  Value map;
  SmallVector<Value> offsets;
  SmallVector<unsigned> viewDims;
  MemRefType box;
};

/// The TMA operand of `view` (input `i` of the contraction, its K dim
/// `kDim`, boxes of `boxShape` in its dim order), the tensor map created
/// beside the buffer's definition, when the view is a chain of unit-stride
/// subviews, maybe transposed, of a whole row-major buffer that
/// `blockLoop` does not define, and covers all of the buffer's K or whole
/// boxes of it: a box past the view's rows or columns only feeds results
/// the epilogue does not store, but K past the view's would be summed in
/// (a part of a split K that the boxes do not divide).
std::optional<TmaOperand> tmaOperand(OpBuilder &b, Value view, unsigned kDim,
                                     ArrayRef<int64_t> boxShape,
                                     scf::ForallOp blockLoop) {
  Location loc = view.getLoc();
  unsigned rank = cast<MemRefType>(view.getType()).getRank();
  SmallVector<unsigned> viewDims = llvm::to_vector(llvm::seq(0u, rank));
  if (auto transpose = view.getDefiningOp<memref::TransposeOp>()) {
    for (unsigned d = 0; d < rank; ++d)
      viewDims[transpose.getPermutation().getDimPosition(d)] = d;
    view = transpose.getIn();
  }
  // From here on, dims are the buffer's.
  auto viewType = cast<MemRefType>(view.getType());
  kDim = llvm::find(viewDims, kDim) - viewDims.begin();
  SmallVector<int64_t> box = llvm::map_to_vector(
      viewDims, [&](unsigned d) { return boxShape[d]; });
  SmallVector<memref::SubViewOp> chain;
  Value root = view;
  while (auto subview = root.getDefiningOp<memref::SubViewOp>()) {
    if (subview.getSourceType().getRank() != viewType.getRank() ||
        !llvm::all_of(subview.getMixedStrides(), [](OpFoldResult s) {
          return isConstantIntValue(s, 1);
        }))
      return std::nullopt;
    chain.push_back(subview);
    root = subview.getSource();
  }
  auto rootType = cast<MemRefType>(root.getType());
  Operation *owner = root.getDefiningOp()
                         ? root.getDefiningOp()
                         : root.getParentBlock()->getParentOp();
  int64_t depth = viewType.getDimSize(kDim);
  if (!rootType.getLayout().isIdentity() || blockLoop->isAncestor(owner) ||
      rootType.isDynamicDim(kDim) || ShapedType::isDynamic(depth) ||
      (depth != rootType.getDimSize(kDim) && depth % box[kDim] != 0))
    return std::nullopt;
  TmaOperand operand;
  operand.viewDims = viewDims;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(root);
    operand.map = loop::TensorMapOp::create(
        b, loc, MemRefType::get({loop::kTensorMapBytes}, b.getI8Type()), root,
        b.getDenseI64ArrayAttr(box), b.getStringAttr("128B"));
  }
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  for (int64_t d = 0; d < viewType.getRank(); ++d) {
    OpFoldResult offset = b.getIndexAttr(0);
    for (memref::SubViewOp subview : chain)
      offset = affine::makeComposedFoldedAffineApply(
          b, loc, d0 + d1, {offset, subview.getMixedOffsets()[d]});
    operand.offsets.push_back(getValueOrCreateConstantIndexOp(b, loc, offset));
  }
  operand.box = MemRefType::get(
      box, rootType.getElementType(), MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
  return operand;
}

/// A persistent grid's walk: the (M, N) block forall the contraction was
/// lowered out of, this block's index among `blocks` (one per SM) and the
/// tile counts along M and N.
struct PersistentWalk {
  scf::ForallOp blockLoop;
  Value block;
  int64_t blocks;
  Value tilesM, tilesN;
};

/// wgmma.mma_async (m64nNk16) by warpgroups. Each stage of the one
/// workgroup buffer holds A's K tile (bm rows of 128 bytes) and then B's
/// (groups of 64 columns, each bk rows of 128 bytes), both with the 128-byte
/// swizzle: the 16-byte chunk c of a 128-byte row r lies at chunk c ^ (r % 8)
/// (the buffer is 1024-byte aligned, the swizzle a function of the address,
/// as on the hardware). Matrix descriptors give the instructions A K-major
/// and B N-major (transposed). A thread's accumulator element i of an
/// instruction lies in row 16 * warp + lane / 4 + 8 * (i / 2 % 2), column
/// 8 * (i / 4) + 2 * (lane % 4) + i % 2 (PTX ISA, wgmma D fragments).
class WgmmaEmitter final : public TileEmitter {
public:
  /// `tiles` is the buffer of elements, or of bytes where TMA (`tma`: of
  /// A and of B) fills it.
  /// With a producer warpgroup, `consumerRegisters` (when not 0) is what
  /// each consumer thread takes of the registers the producer gives up.
  WgmmaEmitter(OpBuilder &b, Location loc, const MmaConfig &c, MmaMatch &m,
               Value tid, Value tiles,
               std::optional<std::array<TmaOperand, 2>> tma,
               int64_t consumerRegisters = 0)
      : TileEmitter(b, loc, c, m, tid), tiles(tiles), tma(std::move(tma)),
        consumerRegisters(consumerRegisters) {}

  /// Elements of the one buffer: every stage of A's tiles, then of B's.
  static int64_t bufferElements(const MmaConfig &c) {
    return c.stages * (c.bm * c.bk + c.bk * c.bn);
  }

  /// The persistent form of the warp-specialized GEMM (emitSpecialized):
  /// each block walks the tiles of `walk` (block, block + blocks, ...) in
  /// groups of c.groupM tile rows.
  LogicalResult emitPersistent(const PersistentWalk &walk) {
    setUp();
    return emitTmaGemm(&walk);
  }

private:
  void setUp() override {
    AffineExpr d0 = b.getAffineDimExpr(0);
    Value group = apply(d0.floorDiv(kWarpgroupThreads), tid);
    groupRow = apply(d0.floorDiv(c.warpsN()) * c.wm, group);
    groupCol = apply((d0 % c.warpsN()) * c.wn, group);
    // Row and column of the thread's first accumulator element.
    laneRow = apply((d0 % kWarpgroupThreads).floorDiv(loop::kWarpSize) * 16 +
                        (d0 % loop::kWarpSize).floorDiv(4),
                    tid);
    laneCol = apply((d0 % 4) * 2, tid);
    // Descriptor bits every instruction shares: the buffer's address >> 4,
    // the byte offsets and the 128B swizzle (mode 1, bits 62-63). Offsets
    // within the buffer are added to the address field; the buffer lies
    // below 256 KiB, so the field does not overflow.
    Type i64 = b.getI64Type();
    Value address = arith::IndexCastUIOp::create(
        b, loc, i64,
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, tiles));
    Value field = arith::AndIOp::create(
        b, loc,
        arith::ShRUIOp::create(b, loc, address,
                               arith::ConstantIntOp::create(b, loc, i64, 4)),
        arith::ConstantIntOp::create(b, loc, i64, 0x3FFF));
    auto bits = [&](int64_t leading, int64_t stride) {
      uint64_t constant = (uint64_t(leading >> 4) << 16) |
                          (uint64_t(stride >> 4) << 32) | (uint64_t(1) << 62);
      return arith::OrIOp::create(
          b, loc, field,
          arith::ConstantIntOp::create(b, loc, i64,
                                       static_cast<int64_t>(constant)));
    };
    // K-major A: 8 rows of 128 bytes per core-matrix group (the leading
    // offset is unused with a swizzle). N-major B: the next 64 columns one
    // group (bk rows) on, the next 8 K rows 1024 bytes on; a K-major B as
    // A.
    descriptorA = bits(16, 8 * kSwizzleBytes);
    descriptorB = kMajorB() ? descriptorA
                            : bits(c.bk * kSwizzleBytes, 8 * kSwizzleBytes);
  }

  /// Whether B's tile is K-major, as wgmma reads tf32 operands (only
  /// .f16/.bf16 ones may be transposed): a row of 128 bytes of K per
  /// column n, filled element by element from a row-major B.
  bool kMajorB() const { return c.elementBytes == 4; }

  int64_t copyWidth(bool rhs) const override {
    return rhs && kMajorB() ? 1 : c.copyElements();
  }

  /// The block loop's induction variables at the origin of tile `tile` of
  /// `walk`: tiles numbered along N within groups of c.groupM tile rows
  /// (the last group maybe fewer), groups along M.
  IRMapping tileOrigin(const PersistentWalk &walk, Value tile) {
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    Value perGroup = apply(d0 * c.groupM, walk.tilesN);
    Value groupIndex = arith::DivUIOp::create(b, loc, tile, perGroup);
    Value firstRow = apply(d0 * c.groupM, groupIndex);
    Value rows = arith::MinUIOp::create(
        b, loc, apply(d0 - d1, {walk.tilesM, firstRow}), index(c.groupM));
    Value inGroup = arith::RemUIOp::create(b, loc, tile, perGroup);
    Value tileRow = arith::AddIOp::create(
        b, loc, firstRow, arith::RemUIOp::create(b, loc, inGroup, rows));
    Value tileCol = arith::DivUIOp::create(b, loc, inGroup, rows);
    IRMapping map;
    scf::ForallOp loop = walk.blockLoop;
    for (auto [iv, position] :
         llvm::zip(loop.getInductionVars(), ValueRange{tileRow, tileCol})) {
      unsigned d = cast<BlockArgument>(iv).getArgNumber();
      Value lower = getValueOrCreateConstantIndexOp(
          b, loc, loop.getMixedLowerBound()[d]);
      Value stride =
          getValueOrCreateConstantIndexOp(b, loc, loop.getMixedStep()[d]);
      map.map(iv, apply(d0 + b.getAffineDimExpr(2) * d1,
                        {lower, position, stride}));
    }
    return map;
  }

  /// `value` (computed in `blockLoop`'s body or outside it) at the
  /// iteration `map` gives the induction variables of: its computation in
  /// the body cloned here.
  Value cloneAt(Value value, IRMapping &map, scf::ForallOp blockLoop) {
    if (Value known = map.lookupOrNull(value))
      return known;
    Operation *def = value.getDefiningOp();
    if (!def || !blockLoop->isProperAncestor(def))
      return value;
    for (Value operand : def->getOperands())
      cloneAt(operand, map, blockLoop);
    b.clone(*def, map);
    return map.lookup(value);
  }

  int64_t stageA() const { return c.bm * c.bk; }
  int64_t stageB() const { return c.bk * c.bn; }
  /// Elements of one 64-column group of B's tile, and in a row of it.
  int64_t rowElements() const { return kSwizzleBytes / c.elementBytes; }
  int64_t groupB() const { return c.bk * rowElements(); }
  int64_t tilesM() const { return c.wm / kWgmmaM; }
  int64_t tilesN() const { return c.wn / c.shapeN; }

  /// Elements of the 128-byte row `row` of a swizzled tile to where its
  /// chunk holding column `col` (of the row's 64-column group) lies.
  Value swizzled(Value row, Value col) {
    AffineExpr d0 = b.getAffineDimExpr(0);
    Value chunk = arith::XOrIOp::create(
        b, loc, apply((d0 % rowElements()).floorDiv(c.copyElements()), col),
        apply(d0 % 8, row));
    return apply(d0 * c.copyElements(), chunk);
  }

  std::pair<Value, SmallVector<Value>>
  destination(bool rhs, Value stage, Value row, Value col) override {
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1),
               d2 = b.getAffineDimExpr(2);
    if (rhs && kMajorB()) {
      // B's element (k = row, n = col) in row n of the tile, in its chunk.
      AffineExpr d3 = b.getAffineDimExpr(3);
      return {tiles, {apply(c.stages * stageA() + d0 * stageB() +
                                d1 * rowElements() + d2 +
                                d3 % c.copyElements(),
                            {stage, col, swizzled(col, row), row})}};
    }
    Value chunk = swizzled(row, col);
    if (!rhs)
      return {tiles, {apply(d0 * stageA() + d1 * rowElements() + d2,
                            {stage, row, chunk})}};
    AffineExpr group = b.getAffineDimExpr(3).floorDiv(rowElements());
    return {tiles,
            {apply(c.stages * stageA() + d0 * stageB() + group * groupB() +
                       d1 * rowElements() + d2,
                   {stage, row, chunk, col})}};
  }

  // One wgmma group may still run while the next is issued; the copies run
  // `ahead` steps in front, into the stages no running group reads.
  int64_t retire() const { return c.stages >= 3 ? 1 : 0; }
  int64_t ahead() const { return c.stages - 1 - retire(); }

  /// Accumulator structs holding the fill's value, one per instruction of
  /// the warpgroup's tile.
  SmallVector<Value> initialAccumulators() {
    auto accType = LLVM::LLVMStructType::getLiteral(
        b.getContext(), SmallVector<Type>(c.shapeN / 2, b.getF32Type()));
    auto init = cast<FloatAttr>(
        m->fill.value().getDefiningOp<arith::ConstantOp>().getValue());
    Value fill = arith::ConstantOp::create(b, loc, init);
    Value acc = LLVM::UndefOp::create(b, loc, accType);
    for (int64_t i = 0; i < c.shapeN / 2; ++i)
      acc = LLVM::InsertValueOp::create(b, loc, acc, fill, i);
    return SmallVector<Value>(tilesM() * tilesN(), acc);
  }

  /// One K step's instructions on the tiles of buffer `stage`, as one
  /// wgmma group, of which `retire()` are left running.
  SmallVector<Value> multiplyStep(ValueRange carried, Value stage) {
    SmallVector<Value> accs;
    for (Value acc : carried)
      accs.push_back(pinned(acc));
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    for (int64_t kk = 0; kk < c.bk / c.instructionK(); ++kk)
      for (int64_t mi = 0; mi < tilesM(); ++mi)
        for (int64_t ni = 0; ni < tilesN(); ++ni) {
          Value &a = accs[mi * tilesN() + ni];
          a = multiply(a, stage, mi, ni, kk);
        }
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, retire());
    return accs;
  }

  /// Waits for every wgmma group, then stores the accumulators.
  void finish(ValueRange accs) {
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    storeAccumulators(accs);
  }

  /// Stores the accumulators of retired wgmma groups.
  void storeAccumulators(ValueRange accs) {
    SmallVector<Value> results;
    for (Value acc : accs)
      results.push_back(pinned(acc));
    epilogue(results);
  }

  Value stageOf(Value step) {
    return apply(b.getAffineDimExpr(0) % c.stages, step);
  }

  void emitTiles() override {
    // The block's own tile: nothing to match that could fail.
    if (tma)
      (void)emitTmaGemm(nullptr);
    else
      TileEmitter::emitTiles();
  }

  void emitGemm() override {
    int64_t ahead = this->ahead();
    for (int64_t s = 0; s < ahead; ++s)
      prologueGroup = copyAhead(index(s), index(s));
    MLIRContext *ctx = b.getContext();
    auto loop = scf::ForOp::create(b, loc, index(0), numSteps, index(1),
                                   initialAccumulators());
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      AffineExpr d0 = b.getAffineDimExpr(0);
      Value kt = loop.getInductionVar();
      // Tile kt landed (groups so far: `ahead` and one per earlier step);
      // its writes, made through the generic proxy, are ordered before the
      // wgmma's reads through the async proxy, then for every thread.
      wait(prologueGroup, ahead - 1);
      NVVM::FenceProxyOp::create(
          b, loc, NVVM::ProxyKind::async_shared,
          NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
      gpu::BarrierOp::create(b, loc);
      // The stage step kt + ahead fills was last read by step
      // kt + ahead - stages = kt - 1 - retire, retired by every thread
      // before the barrier.
      Value next = apply(d0 + ahead, kt);
      copyAhead(next, apply(d0 % c.stages, next));
      scf::YieldOp::create(
          b, loc,
          multiplyStep(loop.getRegionIterArgs(), apply(d0 % c.stages, kt)));
    }
    wait(prologueGroup, 0);
    finish(loop.getResults());
  }

  /// The main loop with TMA: thread 0 starts each K step's copies (one box
  /// of A, one of B per 64 columns) on the stage's mbarrier, which counts
  /// their bytes; every thread waits for the step's phase of it. The
  /// barrier at the top of a step orders every warpgroup's retirement of
  /// the stage it refills before the copies into it. The mbarriers are set
  /// up once: steps count on across the batch indices in the block.
  LogicalResult emitTmaGemm(const PersistentWalk *walk) {
    MLIRContext *ctx = b.getContext();
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    barriers = nvgpu::MBarrierCreateOp::create(
        b, loc, nvgpu::MBarrierGroupType::get(ctx, workgroup, c.stages));
    makeDescriptors();
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                        index(0));
    // The host wrote the maps (generic proxy) that TMA reads (the tensor
    // map proxy).
    for (Value descriptor : descriptors)
      nvgpu::TmaFenceOp::create(b, loc, descriptor);
    for (int64_t s = 0; s < c.stages; ++s)
      nvgpu::MBarrierInitOp::create(b, loc, barriers, index(1), index(s),
                                    first);
    if (c.producers)
      return emitSpecialized(first, walk);
    eachBatchSteps(
        [&](Value before) {
          auto stepAt = [&](Value local) {
            return apply(d0 + d1, {before, local});
          };
          // Thread 0 produces, by predicated instructions rather than a
          // branch: the warpgroup-collective wgmma instructions that follow
          // need its warp converged.
          for (int64_t s = 0; s < std::min(ahead(), steps()); ++s)
            produce(index(s), stageOf(stepAt(index(s))), first);
          gpu::BarrierOp::create(b, loc);
          // Steps that refill a stage, then the last `ahead` ones, which do
          // not (two loops: a predicate LLVM folds to a constant after
          // unrolling would leave the instructions' inline PTX an immediate
          // guard, "@0").
          int64_t refilling = std::max<int64_t>(steps() - ahead(), 0);
          SmallVector<Value> accs = initialAccumulators();
          for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, refilling},
                                    {refilling, steps()}}) {
            if (begin == end)
              continue;
            auto loop = scf::ForOp::create(b, loc, index(begin), index(end),
                                           index(1), accs);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(loop.getBody());
            Value kt = loop.getInductionVar();
            if (begin == 0) {
              gpu::BarrierOp::create(b, loc);
              Value next = apply(d0 + ahead(), kt);
              produce(next, stageOf(stepAt(next)), first);
            }
            Value step = stepAt(kt);
            nvgpu::MBarrierTryWaitParityOp::create(
                b, loc, barriers, parity(step, 0), index(kMaxWaitTicks),
                stageOf(step));
            scf::YieldOp::create(
                b, loc, multiplyStep(loop.getRegionIterArgs(), stageOf(step)));
            accs = loop.getResults();
          }
          finish(accs);
        },
        /*synchronize=*/true);
    return success();
  }

  /// eachBatch, `body` taking the block's K steps before each index (its
  /// GEMMs' steps count on across them).
  void eachBatchSteps(function_ref<void(Value)> body, bool synchronize) {
    eachBatch(
        [&](Value batch) {
          body(apply(b.getAffineDimExpr(0) * steps(), batch));
        },
        synchronize);
  }

  /// The parity of the phase of `step`'s stage that a wait on it waits for
  /// (the stage's fill number), `offset` phases on: a consumer waits for
  /// the fill's phase of its full mbarrier (0), the producer for the
  /// release before of its empty one (1; a fresh mbarrier's phase before
  /// its first counts as complete, so first fills pass at once).
  Value parity(Value step, int64_t offset) {
    AffineExpr d0 = b.getAffineDimExpr(0);
    return arith::TruncIOp::create(
        b, loc, b.getI1Type(),
        arith::IndexCastUIOp::create(
            b, loc, b.getI64Type(),
            apply((d0.floorDiv(c.stages) + offset) % 2, step)));
  }

  /// The tensor maps of A and B, whose addresses the kernel gets, as
  /// nvgpu's descriptors (which lower to the same pointer).
  void makeDescriptors() {
    MLIRContext *ctx = b.getContext();
    for (auto [operand, descriptor] : llvm::zip(*tma, descriptors)) {
      Value address = arith::IndexCastUIOp::create(
          b, loc, b.getI64Type(),
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, operand.map));
      Value pointer = LLVM::IntToPtrOp::create(
          b, loc, LLVM::LLVMPointerType::get(ctx), address);
      descriptor = UnrealizedConversionCastOp::create(
                       b, loc,
                       nvgpu::TensorMapDescriptorType::get(
                           ctx, operand.box,
                           nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
                           nvgpu::TensorMapL2PromoKind::L2PROMO_NONE,
                           nvgpu::TensorMapOOBKind::OOB_ZERO,
                           nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE),
                       pointer)
                       .getResult(0);
    }
  }

  /// The register moves at the top of the producer's (`producer`) or a
  /// consumer's role.
  void moveRegisters(bool producer) {
    if (!consumerRegisters)
      return;
    NVVM::SetMaxRegisterOp::create(
        b, loc, producer ? kProducerRegisters : consumerRegisters,
        producer ? NVVM::SetMaxRegisterAction::decrease
                 : NVVM::SetMaxRegisterAction::increase);
  }

  /// The producer warpgroup's first warp, which waits for released stages
  /// (all its lanes: no lane runs ahead of the others to a warp-collective
  /// instruction), and its first thread, which starts the copies
  /// (predicated).
  std::pair<Value, Value> producerRoles() {
    Value warp = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ult, tid,
        index(c.consumerThreads() + loop::kWarpSize));
    Value thread = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                         index(c.consumerThreads()));
    return {warp, thread};
  }

  /// Warp specialization: the last warpgroup's first thread produces, the
  /// others consume. Stage s of step t (s = t % stages, its n = t / stages
  /// th fill) is full once phase n of full[s] completes (the copies' bytes
  /// landed), and may be refilled once phase n of empty[s] completes (every
  /// consumer thread arrived after retiring the stage's wgmma group; a
  /// fresh mbarrier's phase before its first counts as complete, so first
  /// fills pass at once). Without `walk` the block computes its own tile
  /// at each of its batch indices, steps counting on across them; with one, its walk's tiles: the producer runs on into the next tile
  /// while the consumers store the last (steps count over all of them),
  /// and the consumers compute each tile on a clone of the block loop's
  /// body at the tile's origin, their epilogue included.
  LogicalResult emitSpecialized(Value first, const PersistentWalk *walk) {
    MLIRContext *ctx = b.getContext();
    auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    Value empty = nvgpu::MBarrierCreateOp::create(
        b, loc, nvgpu::MBarrierGroupType::get(ctx, workgroup, c.stages));
    for (int64_t s = 0; s < c.stages; ++s)
      nvgpu::MBarrierInitOp::create(b, loc, empty,
                                    index(c.consumerThreads()), index(s),
                                    first);
    gpu::BarrierOp::create(b, loc);
    Value producer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                           tid, index(c.consumerThreads()));
    auto roles = scf::IfOp::create(b, loc, producer, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(roles.thenBlock());
      moveRegisters(/*producer=*/true);
      auto [producerWarp, elected] = producerRoles();
      auto ifElected = scf::IfOp::create(b, loc, producerWarp, false);
      b.setInsertionPointToStart(ifElected.thenBlock());
      if (!walk) {
        eachBatchSteps(
            [&](Value before) {
              produceSteps(before, {(*tma)[0].offsets, (*tma)[1].offsets},
                           elected, empty);
            },
            /*synchronize=*/false);
      } else if (failed(eachTile(*walk, [&](IRMapping &map, Value before) {
                   std::array<SmallVector<Value>, 2> offsets;
                   for (auto [operand, values] : llvm::zip(*tma, offsets))
                     for (Value offset : operand.offsets)
                       values.push_back(cloneAt(offset, map, walk->blockLoop));
                   produceSteps(before, {offsets[0], offsets[1]}, elected,
                                empty);
                   return success();
                 }))) {
        return failure();
      }
    }
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(roles.elseBlock());
    moveRegisters(/*producer=*/false);
    if (!walk) {
      eachBatchSteps(
          [&](Value before) { storeAccumulators(consumeSteps(before, empty)); },
          /*synchronize=*/false);
      return success();
    }
    return eachTile(*walk, [&](IRMapping &map, Value before) -> LogicalResult {
      scf::ForallOp blockLoop = walk->blockLoop;
      for (Operation &op : blockLoop.getBody()->without_terminator())
        b.clone(op, map);
      auto clone = cast<linalg::LinalgOp>(
          map.lookup(m->contraction.getOperation()));
      FailureOr<MmaMatch> tile = matchWithViews(clone);
      if (failed(tile))
        return failure();
      MmaMatch *outer = m;
      m = &*tile;
      findEdges();
      storeAccumulators(consumeSteps(before, empty));
      m = outer;
      return eraseLowered(*tile);
    });
  }

  /// Runs `body` at each tile of `walk` this block takes, with the block's
  /// steps before the tile.
  LogicalResult
  eachTile(const PersistentWalk &walk,
           function_ref<LogicalResult(IRMapping &, Value)> body) {
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    Value tiles = apply(d0 * d1, {walk.tilesM, walk.tilesN});
    auto loop = scf::ForOp::create(b, loc, walk.block, tiles,
                                   index(walk.blocks), ValueRange{index(0)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    IRMapping map = tileOrigin(walk, loop.getInductionVar());
    Value before = loop.getRegionIterArgs()[0];
    if (failed(body(map, before)))
      return failure();
    scf::YieldOp::create(b, loc, apply(d0 + steps(), before));
    return success();
  }

  /// The producer's copies of a tile's steps (after `before` others), the
  /// views of A and B at `offsets`: each stage once its consumers released
  /// it.
  void produceSteps(Value before, std::array<ArrayRef<Value>, 2> offsets,
                    Value elected, Value empty) {
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    auto loop = scf::ForOp::create(b, loc, index(0), index(steps()), index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value t = loop.getInductionVar();
    Value step = apply(d0 + d1, {before, t});
    nvgpu::MBarrierTryWaitParityOp::create(b, loc, empty, parity(step, 1),
                                           index(kMaxWaitTicks),
                                           stageOf(step));
    produce(t, stageOf(step), elected, offsets);
  }

  /// The consumers' wgmma groups of a tile's steps (after `before` others),
  /// all retired at the end: the tile's first step releases nothing, each
  /// later one the stage of the step before once its group retired, and
  /// the last step's stage is released after the last wait.
  SmallVector<Value> consumeSteps(Value before, Value empty) {
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    auto consume = [&](Value step, ValueRange carried) {
      nvgpu::MBarrierTryWaitParityOp::create(b, loc, barriers, parity(step, 0),
                                             index(kMaxWaitTicks),
                                             stageOf(step));
      return multiplyStep(carried, stageOf(step));
    };
    auto release = [&](Value step) {
      nvgpu::MBarrierArriveOp::create(
          b, loc, nvgpu::MBarrierTokenType::get(b.getContext()), empty,
          stageOf(step));
    };
    SmallVector<Value> accs = consume(before, initialAccumulators());
    if (steps() > 1) {
      auto loop = scf::ForOp::create(b, loc, index(1), index(steps()),
                                     index(1), accs);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value step = apply(d0 + d1, {before, loop.getInductionVar()});
      SmallVector<Value> next = consume(step, loop.getRegionIterArgs());
      release(apply(d0 - 1, step));
      scf::YieldOp::create(b, loc, next);
      accs = SmallVector<Value>(loop.getResults());
    }
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    release(apply(d0 + (steps() - 1), before));
    return accs;
  }

  /// Where `predicate` holds, starts the TMA copies of K step `step` into
  /// buffer `stage`, after telling its mbarrier the bytes they land (whole
  /// boxes, those past the buffer's edges zero-filled).
  void produce(Value step, Value stage, Value predicate) {
    produce(step, stage, predicate, {(*tma)[0].offsets, (*tma)[1].offsets});
  }

  /// As above, the views of A and B at `offsets` in their buffers.
  void produce(Value step, Value stage, Value predicate,
               std::array<ArrayRef<Value>, 2> offsets) {
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    int64_t bytes = (stageA() + stageB()) * c.elementBytes;
    nvgpu::MBarrierArriveExpectTxOp::create(b, loc, barriers, index(bytes),
                                            stage, predicate);
    Value k = apply(d0 * c.bk, step);
    auto load = [&](unsigned operand, ArrayRef<unsigned> batchLoops,
                    ArrayRef<Value> inner, Value elements) {
      // Coordinates of the buffer's dims, innermost first: the view's
      // offsets plus the tile's position in the view dim that reads it
      // (`inner` for the row and column, innermost first; batch indices
      // for the batch dims).
      const TmaOperand &o = (*tma)[operand];
      size_t rank = o.offsets.size();
      SmallVector<Value> coordinates;
      for (size_t dim = rank; dim-- > 0;) {
        size_t fromInner = rank - 1 - o.viewDims[dim];
        Value position =
            fromInner < inner.size()
                ? inner[fromInner]
                : batchIndices[batchLoops[o.viewDims[dim]]];
        coordinates.push_back(
            apply(d0 + d1, {offsets[operand][dim], position}));
      }
      Value bytesOffset = apply(d0 * c.elementBytes, elements);
      Value dst = memref::ViewOp::create(b, loc, o.box, tiles, bytesOffset,
                                         ValueRange{});
      nvgpu::TmaAsyncLoadOp::create(b, loc, dst, barriers,
                                    descriptors[operand], coordinates, stage,
                                    Value(), predicate);
    };
    load(0, m->lhsBatch, {k, index(0)}, apply(d0 * stageA(), stage));
    for (int64_t g = 0; g < c.bn / rowElements(); ++g)
      load(1, m->rhsBatch, {index(g * rowElements()), k},
           apply(c.stages * stageA() + d0 * stageB() + g * groupB(), stage));
  }

  /// `acc` through an empty volatile inline asm that reads and writes each
  /// of its registers (CUTLASS's warpgroup_fence_operand): LLVM then moves
  /// no access to them across the wgmma fences and waits around it. It
  /// emits no instruction.
  Value pinned(Value acc) {
    auto type = cast<LLVM::LLVMStructType>(acc.getType());
    int64_t n = type.getBody().size();
    SmallVector<Value> registers;
    std::string constraints;
    for (int64_t i = 0; i < n; ++i) {
      registers.push_back(LLVM::ExtractValueOp::create(b, loc, acc, i));
      constraints += (i ? ",=f" : "=f");
    }
    for (int64_t i = 0; i < n; ++i)
      constraints += "," + std::to_string(i);
    return LLVM::InlineAsmOp::create(
               b, loc, type, registers, "", constraints,
               /*has_side_effects=*/true, /*is_align_stack=*/false,
               LLVM::tailcallkind::TailCallKind::None,
               LLVM::AsmDialectAttr(), ArrayAttr())
        .getResult(0);
  }

  /// The descriptor `bits` of a matrix `elements` into the buffer.
  Value descriptor(Value bits, Value elements) {
    Type i64 = b.getI64Type();
    Value offset = arith::IndexCastUIOp::create(
        b, loc, i64,
        apply(b.getAffineDimExpr(0).floorDiv(kCopyBytes / c.elementBytes),
              elements));
    return arith::AddIOp::create(b, loc, bits, offset);
  }

  /// acc + A x B for instruction (mi, ni) of the warpgroup's tile and the
  /// slice `kk` (32 bytes of K) of the K step in buffer `stage`.
  Value multiply(Value acc, Value stage, int64_t mi, int64_t ni, int64_t kk) {
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    Value a = descriptor(
        descriptorA,
        apply(d0 * stageA() + (d1 + mi * kWgmmaM) * rowElements() +
                  kk * c.instructionK(),
              {stage, groupRow}));
    Value bMat = descriptor(
        descriptorB,
        kMajorB()
            ? apply(c.stages * stageA() + d0 * stageB() +
                        (d1 + ni * c.shapeN) * rowElements() +
                        kk * c.instructionK(),
                    {stage, groupCol})
            : apply(c.stages * stageA() + d0 * stageB() +
                        (d1 + ni * c.shapeN).floorDiv(rowElements()) *
                            groupB() +
                        kk * c.instructionK() * rowElements(),
                    {stage, groupCol}));
    Type element = getElementTypeOrSelf(m->lhs.getType());
    auto type = element.isF32()    ? NVVM::WGMMATypes::tf32
                : element.isBF16() ? NVVM::WGMMATypes::bf16
                                   : NVVM::WGMMATypes::f16;
    MLIRContext *ctx = b.getContext();
    // B "row" is N-major (transposed), "col" K-major.
    return NVVM::WgmmaMmaAsyncOp::create(
        b, loc, acc.getType(), acc, a, bMat,
        NVVM::MMAShapeAttr::get(ctx, kWgmmaM, c.shapeN, c.instructionK()),
        type, type, NVVM::WGMMATypes::f32, NVVM::WGMMAScaleOut::one,
        NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
        NVVM::MMALayout::row,
        kMajorB() ? NVVM::MMALayout::col : NVVM::MMALayout::row,
        NVVM::MMAIntOverflowAttr());
  }

  /// Stores the accumulators, through the epilogue when there is one.
  void epilogue(ValueRange accs) {
    AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
    for (int64_t mi = 0; mi < tilesM(); ++mi)
      for (int64_t r = 0; r < 2; ++r) {
        // A row of the warpgroup's tile: column group t of instruction ni
        // holds elements 4t + 2r and + 1.
        SmallVector<std::array<Value, 2>> pairs;
        for (int64_t ni = 0; ni < tilesN(); ++ni)
          for (int64_t t = 0; t < c.shapeN / 8; ++t) {
            std::array<Value, 2> &pair = pairs.emplace_back();
            for (int64_t j = 0; j < 2; ++j)
              pair[j] = LLVM::ExtractValueOp::create(
                  b, loc, accs[mi * tilesN() + ni], 4 * t + 2 * r + j);
          }
        storeRow(pairs,
                 apply(d0 + d1 + (mi * kWgmmaM + 8 * r), {groupRow, laneRow}),
                 groupCol);
      }
  }

  Value tiles;
  std::optional<std::array<TmaOperand, 2>> tma;
  int64_t consumerRegisters;
  // The warpgroup's tile in the block tile; the row and column of the
  // thread's first accumulator element in an instruction's 64 x n.
  Value groupRow, groupCol, laneRow, laneCol;
  Value descriptorA, descriptorB;
  // TMA: the stages' mbarriers and the tensor maps of A and B.
  Value barriers;
  std::array<Value, 2> descriptors;
};

LogicalResult lower(linalg::LinalgOp contraction, loop::MmaConfigAttr config) {
  FailureOr<MmaMatch> matched = matchWithViews(contraction);
  if (failed(matched))
    return failure();
  MmaMatch &m = *matched;
  auto aType = cast<MemRefType>(m.lhs.getType());
  unsigned kDim = m.lhsBatch.size() + 1;
  // The tile's own extents, for the checks that need whole tiles; K over
  // size symbols at its largest (the strategy checked that it comes in
  // whole 16-byte rows at every size).
  int64_t k = aType.getDimSize(kDim);
  if (ShapedType::isDynamic(k)) {
    std::optional<int64_t> largest = largestSize(m.lhs, kDim);
    if (!largest)
      return contraction.emitError(
          "loop.mma: K is over size symbols without a declared range");
    k = *largest;
  }
  MmaConfig c{config.getBlockM(), config.getBlockN(), k,
              config.getBlockM(), config.getBlockN(), config.getWarpM(),
              config.getWarpN(),  config.getK(),      config.getStages(),
              config.getPad(),    mmaElementBytes(contraction),
              config.getShapeM(), config.getShapeN(), config.getProducers(),
              config.getGroupM()};
  // loop-validate has checked the schedule against the whole kernel; this
  // guards a marked op that did not go through it.
  std::string unfit =
      c.check(config.getTarget().getDescription(),
              [](MmaConfig::Field f) { return MmaConfig::knobName(f).str(); });
  if (!unfit.empty())
    return contraction.emitError("loop.mma: ") << unfit;

  // At the epilogue, which every operand of both ops dominates.
  OpBuilder b(m.epilogue.empty() ? contraction.getOperation()
                                 : m.epilogue.back().getOperation());
  Location loc = contraction.getLoc();
  MLIRContext *ctx = b.getContext();
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto buffer = [&](ArrayRef<int64_t> shape) {
    return memref::AllocOp::create(
        b, loc,
        MemRefType::get(shape, aType.getElementType(),
                        MemRefLayoutAttrInterface(), workgroup));
  };
  auto threadLoop = [&] {
    return scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(c.threads())},
        ValueRange{},
        b.getArrayAttr(
            {gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)}));
  };
  {
    if (c.wgmma()) {
      std::optional<std::array<TmaOperand, 2>> tma;
      const loop::TargetDescription &target =
          config.getTarget().getDescription();
      // (A tf32 B is transposed into its tile element by element.)
      if (target.has(loop::Instruction::Tma) &&
          target.has(loop::Instruction::MbarrierTx) && c.elementBytes == 2) {
        auto blockLoop = contraction->getParentOfType<scf::ForallOp>();
        // Boxes: A's bm rows of one K step, B's K step of 64 columns; one
        // index of each batch dim.
        auto box = [&](Value view, int64_t rows, int64_t cols) {
          SmallVector<int64_t> shape(
              cast<MemRefType>(view.getType()).getRank() - 2, 1);
          llvm::append_range(shape, ArrayRef<int64_t>{rows, cols});
          return shape;
        };
        int64_t group = kSwizzleBytes / c.elementBytes;
        std::optional<TmaOperand> a = tmaOperand(
            b, m.lhs, m.lhsBatch.size() + 1, box(m.lhs, c.bm, c.bk), blockLoop);
        std::optional<TmaOperand> bOperand = tmaOperand(
            b, m.rhs, m.rhsBatch.size(), box(m.rhs, c.bk, group), blockLoop);
        if (a && bOperand)
          tma = std::array<TmaOperand, 2>{*a, *bOperand};
        else if (a || bOperand)
          (a ? a->map : bOperand->map).getDefiningOp()->erase();
      }
      // A producer warpgroup takes the TMA copies; without them every
      // warpgroup computes.
      if (!tma)
        c.producers = 0;
      // Two or more consumer warpgroups take the registers the producer
      // gives up (one has all a thread may hold already): one block per SM.
      const loop::TargetDescription &chip = config.getTarget().getDescription();
      int64_t consumerRegisters = 0;
      if (c.producers && c.groups() >= 2)
        consumerRegisters = std::min<int64_t>(
            kMaxRegisters,
            (chip.registersPerMultiprocessor / kWarpgroupThreads -
             kProducerRegisters) / c.groups() / 8 * 8);
      // A persistent grid walks the tiles of an (M, N) block loop of whole
      // tiles: a masked edge tile's stores diverge its warps, which a
      // warpgroup's next tile (wgmma, .sync.aligned) needs converged
      // (the PTX emulator, which reconverges lanes by their counters, sees
      // lanes at the loop's top run ahead of those still storing).
      auto blockLoop = contraction->getParentOfType<scf::ForallOp>();
      auto wholeTiles = [](scf::ForallOp loop) {
        for (unsigned d = 0; d < loop.getRank(); ++d) {
          std::optional<int64_t> lower =
              getConstantIntValue(loop.getMixedLowerBound()[d]);
          std::optional<int64_t> upper =
              getConstantIntValue(loop.getMixedUpperBound()[d]);
          std::optional<int64_t> step =
              getConstantIntValue(loop.getMixedStep()[d]);
          if (!lower || !upper || !step || (*upper - *lower) % *step)
            return false;
        }
        return true;
      };
      if (!c.producers || m.batch || !blockLoop || blockLoop.getRank() != 2 ||
          !wholeTiles(blockLoop))
        c.groupM = 0;
      auto tileBuffer = [&] {
        return tma ? Value(memref::AllocOp::create(
                         b, loc,
                         MemRefType::get({WgmmaEmitter::bufferElements(c) *
                                              c.elementBytes},
                                         b.getI8Type(),
                                         MemRefLayoutAttrInterface(), workgroup)))
                   : buffer({WgmmaEmitter::bufferElements(c)});
      };
      if (c.groupM) {
        // One block per SM replaces the block loop, whose body each
        // consumer tile clones.
        b.setInsertionPoint(blockLoop);
        AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1),
                   d2 = b.getAffineDimExpr(2);
        SmallVector<Value> counts;
        for (unsigned d = 0; d < 2; ++d) {
          auto value = [&](OpFoldResult v) {
            return getValueOrCreateConstantIndexOp(b, loc, v);
          };
          counts.push_back(affine::makeComposedAffineApply(
              b, loc, (d1 - d0).ceilDiv(d2),
              getAsOpFoldResult(ValueRange{
                  value(blockLoop.getMixedLowerBound()[d]),
                  value(blockLoop.getMixedUpperBound()[d]),
                  value(blockLoop.getMixedStep()[d])})));
        }
        int64_t blocks = config.getTarget().getDescription().multiprocessors;
        auto grid = scf::ForallOp::create(
            b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(blocks)},
            ValueRange{},
            b.getArrayAttr(
                {gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX)}));
        b.setInsertionPoint(grid.getBody()->getTerminator());
        Value tiles = tileBuffer();
        scf::ForallOp threads = threadLoop();
        b.setInsertionPoint(threads.getBody()->getTerminator());
        PersistentWalk walk{blockLoop, grid.getInductionVar(0), blocks,
                            counts[0], counts[1]};
        if (failed(WgmmaEmitter(b, loc, c, m, threads.getInductionVar(0),
                                tiles, std::move(tma), consumerRegisters)
                       .emitPersistent(walk)))
          return failure();
        blockLoop.erase();
        return success();
      }
      Value tiles = tileBuffer();
      scf::ForallOp threads = threadLoop();
      b.setInsertionPoint(threads.getBody()->getTerminator());
      WgmmaEmitter(b, loc, c, m, threads.getInductionVar(0), tiles,
                   std::move(tma), consumerRegisters)
          .emit();
    } else {
      Value smA = buffer({c.stages, c.bm, c.bk + c.pad});
      Value smB = buffer({c.stages, c.bk, c.bn + c.pad});
      scf::ForallOp threads = threadLoop();
      b.setInsertionPoint(threads.getBody()->getTerminator());
      MmaSyncEmitter(b, loc, c, m, threads.getInductionVar(0), smA, smB)
          .emit();
    }
  }

  return eraseLowered(m);
}

struct GpuLowerMmaPass : tessel::impl::GpuLowerMmaBase<GpuLowerMmaPass> {
  void runOnOperation() override {
    SmallVector<std::pair<linalg::LinalgOp, Attribute>> marked;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (Attribute attr = op->getAttr(loop::kMmaAttrName))
        marked.emplace_back(op, attr);
    });
    for (auto [op, attr] : marked) {
      auto config = dyn_cast<loop::MmaConfigAttr>(attr);
      if (!config) {
        op.emitError("loop.mma: ")
            << loop::kMmaAttrName << " is " << attr
            << ", not a #loop.mma_config";
        return signalPassFailure();
      }
      if (failed(lower(op, config)))
        return signalPassFailure();
    }
  }
};

} // namespace
