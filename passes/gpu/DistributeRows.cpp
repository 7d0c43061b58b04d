//===- DistributeRows.cpp - loop.warp_reduce: a block's threads share rows ===//
//
// A block tile of a row-reduction kernel (softmax, layer_norm) after
// bufferization is a sequence of ops over one row of C columns: fills and
// copies of scalars, elementwise ops over the row, reductions of the row to
// a scalar, and elementwise ops on scalars. They become one thread-mapped
// scf.forall in which thread t takes columns t, t + T, ...:
//
// * a reduction accumulates a per-thread partial from the combiner's
//   neutral element, then combines partials with butterfly warp shuffles
//   and, across warps, through a small workgroup buffer; every thread ends
//   with the row's value in a register;
// * an elementwise op whose result is a kernel-internal buffer is not
//   stored: its readers recompute it at their column (each thread reads
//   only its own columns, so nothing crosses threads but the reductions);
// * ops that write a result of the kernel store it (scalars by thread 0).
//
// When the threads divide the row into at most kMaxSlots columns each, the
// columns are unrolled instead ("register mode"): thread t owns chunks of
// `width` adjacent columns, chunk c starting at (t + c*T)*width. Every value
// of the row (a load, a recomputed intermediate) is then made once per
// column and kept in registers across the passes of the row, and loads and
// stores of aligned row-major buffers move whole chunks as vectors (16
// bytes of f16), so the row is read from memory once. A row whose length
// is a size symbol takes register mode by its largest length
// (tessel.row_columns), a column per chunk: loads past the length at the
// call give zero, reductions select past them, their stores are guarded.
// Without a largest length (a grid reduction's uneven rows) a thread walks
// its columns up to the length.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/loop/Alignment.h"
#include "passes/loop/RowReduction.h"
#include "passes/gpu/Buffers.h"
#include "passes/gpu/PointwiseBody.h"

#include "llvm/ADT/TypeSwitch.h"

namespace tessel {
#define GEN_PASS_DEF_GPUDISTRIBUTEROWS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// Shape with every extent 1: a scalar of the row.
bool isScalar(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  return llvm::all_of(type.getShape(), [](int64_t d) { return d == 1; });
}

/// Loops of `op` but the last have extent 1 (and are parallel, unless all
/// of them have extent 1: an op on single values); returns the last's
/// extent, which may be dynamic (a row of a grid reduction's uneven parts).
std::optional<int64_t> rowExtent(linalg::GenericOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::all_of(ranges, [](int64_t r) { return r == 1; }))
    return 1;
  if (!llvm::all_of(ArrayRef(ranges).drop_back(),
                    [](int64_t r) { return r == 1; }))
    return std::nullopt;
  for (utils::IteratorType it : ArrayRef(op.getIteratorTypesArray()).drop_back())
    if (it != utils::IteratorType::parallel)
      return std::nullopt;
  return ranges.back();
}

/// Most columns a thread keeps in registers (register mode).
constexpr int64_t kMaxSlots = 32;

class RowEmitter {
public:
  RowEmitter(OpBuilder &b, Location loc, scf::ForallOp block,
             scf::ForallOp threadLoop, int64_t threads, int64_t columns,
             Value columnCount, std::optional<int64_t> largestColumns)
      : b(b), loc(loc), block(block), threadLoop(threadLoop), threads(threads),
        columns(columns), largestColumns(largestColumns),
        columnCount(columnCount), tid(threadLoop.getInductionVar(0)) {}

  /// Emits `ops` (the block tile, in order); fails on an op it cannot take.
  LogicalResult emit(ArrayRef<Operation *> ops) {
    int64_t slots = ShapedType::isDynamic(columns) || columns % threads
                        ? 0
                        : columns / threads;
    // A row of dynamic length: as many slots as its largest length needs,
    // one column each, masked past the row's length at the call.
    if (ShapedType::isDynamic(columns) && largestColumns)
      slots = llvm::divideCeil(*largestColumns, threads);
    if (slots && slots <= kMaxSlots) {
      // Chunks of up to 8 columns (16 bytes of f16); single columns where
      // masked.
      width = ShapedType::isDynamic(columns)
                  ? 1
                  : std::min<int64_t>(8, slots & -slots);
      AffineExpr d0 = b.getAffineDimExpr(0);
      for (int64_t s = 0; s < slots; ++s) {
        slotColumns.push_back(affine::makeComposedAffineApply(
            b, loc, d0 * width + ((s / width) * threads * width + s % width),
            {OpFoldResult(tid)}));
        if (ShapedType::isDynamic(columns))
          slotValid.push_back(arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::ult, slotColumns.back(),
              columnCount));
      }
      for (Operation *op : ops) {
        if (auto dps = dyn_cast<DestinationStyleOpInterface>(op))
          for (Value out : dps.getDpsInits())
            written.insert(out);
        if (auto copy = dyn_cast<memref::CopyOp>(op))
          written.insert(copy.getTarget());
      }
    }
    for (Operation *op : ops) {
      LogicalResult result =
          llvm::TypeSwitch<Operation *, LogicalResult>(op)
              .Case<linalg::FillOp>([&](linalg::FillOp fill) -> LogicalResult {
                Value out = fill.getDpsInits()[0];
                if (!isScalar(out))
                  return fill.emitError("loop.warp_reduce: a row fill");
                scalars[out] = fill.value();
                return success();
              })
              .Case<memref::CopyOp>([&](memref::CopyOp copy) -> LogicalResult {
                if (!isScalar(copy.getSource()))
                  return copy.emitError("loop.warp_reduce: a row copy");
                setScalar(copy.getTarget(),
                          valueAt(copy.getSource(), zeros(copy.getSource())));
                return success();
              })
              .Case<linalg::GenericOp>(
                  [&](linalg::GenericOp generic) { return emitGeneric(generic); })
              .Default([](Operation *op) -> LogicalResult {
                return op->emitError("loop.warp_reduce cannot distribute ")
                       << op->getName();
              });
      if (failed(result))
        return failure();
    }
    return success();
  }

private:
  LogicalResult emitGeneric(linalg::GenericOp op) {
    std::optional<int64_t> extent = rowExtent(op);
    if (!extent || op.getNumDpsInits() != 1 ||
        (*extent != 1 && *extent != columns))
      return op.emitError("loop.warp_reduce: not an op over the row or a "
                          "scalar of it");
    Value out = op.getDpsInits()[0];
    if (*extent == 1) {
      setScalar(out, compute(op, index(0), /*reduced=*/Value()));
      return success();
    }
    if (op.getNumReductionLoops() == 0) {
      if (isInternal(out)) {
        rowOps[out] = op; // recomputed where it is read
        return success();
      }
      if (width)
        return storeChunks(op), success();
      columnLoop([&](Value column) {
        memref::StoreOp::create(b, loc, compute(op, column, Value()), out,
                                at(op, op.getDpsInitsMutable()[0], column));
      });
      return success();
    }
    // A reduction: yield(combine(out, f(ins))).
    Operation *combiner = shuffleCombiner(op);
    if (!combiner)
      return op.emitError("loop.warp_reduce: the reduction must combine f32, "
                          "i32 or i64 values with an op that has a neutral "
                          "element, or take the maximum or minimum of f16 "
                          "or bf16 ones");
    Value partial =
        arith::ConstantOp::create(b, loc, *arith::getNeutralElement(combiner));
    if (width) {
      for (slot = 0; *slot < static_cast<int64_t>(slotColumns.size()); ++*slot) {
        Value next = compute(op, slotColumns[*slot], partial);
        partial = slotValid.empty() ? next
                                    : arith::SelectOp::create(
                                          b, loc, slotValid[*slot], next,
                                          partial)
                                          .getResult();
      }
      slot.reset();
    } else {
      auto loop = scf::ForOp::create(b, loc, tid, columnCount,
                                     index(threads), ValueRange{partial});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value next = compute(op, loop.getInductionVar(), loop.getRegionIterArgs()[0]);
      scf::YieldOp::create(b, loc, next);
      partial = loop.getResult(0);
    }
    // Shuffles take 32- and 64-bit values: 16-bit maxima go as f32 (exact).
    Type type = partial.getType();
    bool widened = type.isF16() || type.isBF16();
    if (widened)
      partial = arith::ExtFOp::create(b, loc, b.getF32Type(), partial);
    Value total = allReduce(partial, combiner);
    if (widened)
      total = arith::TruncFOp::create(b, loc, type, total);
    Value init = valueAt(out, zeros(out));
    setScalar(out, combine(combiner, init, total));
    return success();
  }

  /// The value of `op`'s body at `column` (index 0 for scalar ops), with
  /// `reduced` (the partial so far) as its output argument for reductions.
  Value compute(linalg::GenericOp op, Value column, Value reduced) {
    unsigned last = op.getNumLoops() - 1;
    return clonePointwiseBody(
        b, op,
        [&](OpOperand &operand) {
          return op.isDpsInit(&operand) && reduced
                     ? reduced
                     : valueAt(operand.get(), at(op, operand, column));
        },
        [&](unsigned dim) { return dim == last ? column : index(0); });
  }

  /// `buffer` at `indices`: a scalar in a register, an internal row
  /// recomputed at its column, or a load. In register mode, values at a
  /// column are made once and kept; loads of read-only aligned buffers
  /// bring in their whole chunk as one vector.
  Value valueAt(Value buffer, ValueRange indices) {
    if (Value v = scalars.lookup(buffer))
      return v;
    bool atSlot = slot && !indices.empty() && indices.back() == slotColumns[*slot];
    std::pair<Value, int64_t> key = {buffer, atSlot ? *slot : -1};
    if (Value v = slot ? kept.lookup(key) : Value())
      return v;
    Value v;
    if (linalg::GenericOp producer = rowOps.lookup(buffer)) {
      v = compute(producer, indices.back(), Value());
    } else if (atSlot && !slotValid.empty()) {
      // Past the row's length the column holds zero, which every use of it
      // is masked from (reductions select, stores are guarded).
      Value valid = slotValid[*slot];
      Type element = getElementTypeOrSelf(buffer.getType());
      auto ifOp = scf::IfOp::create(b, loc, TypeRange{element}, valid,
                                    /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        scf::YieldOp::create(
            b, loc, memref::LoadOp::create(b, loc, buffer, indices).getResult());
        b.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(b, loc,
                             arith::ConstantOp::create(
                                 b, loc, b.getZeroAttr(element))
                                 .getResult());
      }
      v = ifOp.getResult(0);
      if (written.contains(buffer))
        return v;
    } else if (written.contains(buffer)) {
      return memref::LoadOp::create(b, loc, buffer, indices);
    } else if (atSlot && isChunkAligned(buffer, width)) {
      loadChunk(buffer, indices);
      return kept.lookup(key);
    } else {
      v = memref::LoadOp::create(b, loc, buffer, indices);
    }
    if (slot)
      kept[key] = v;
    return v;
  }

  /// Loads the chunk of read-only `buffer` holding the current slot's
  /// column (at `indices`) as one vector and keeps its columns.
  void loadChunk(Value buffer, ValueRange indices) {
    int64_t first = *slot - *slot % width;
    SmallVector<Value> at(indices);
    at.back() = slotColumns[first];
    Type element = getElementTypeOrSelf(buffer.getType());
    Value chunk = vector::LoadOp::create(
        b, loc, VectorType::get({width}, element), buffer, at,
        /*nontemporal=*/false, llvm::Align(chunkAlignment(element, width)));
    for (int64_t i = 0; i < width; ++i)
      kept[{buffer, first + i}] = vector::ExtractOp::create(
          b, loc, chunk, ArrayRef<int64_t>{i});
  }

  /// Register mode: computes elementwise `op` at every slot, keeps the
  /// values, and stores them, a chunk per vector where the output allows.
  void storeChunks(linalg::GenericOp op) {
    OpOperand &init = op.getDpsInitsMutable()[0];
    Value out = init.get();
    Type element = getElementTypeOrSelf(out.getType());
    bool vectors = isChunkAligned(out, width) && slotValid.empty();
    for (int64_t first = 0; first < static_cast<int64_t>(slotColumns.size());
         first += width) {
      SmallVector<Value> values;
      for (slot = first; *slot < first + width; ++*slot) {
        values.push_back(compute(op, slotColumns[*slot], Value()));
        kept[{out, *slot}] = values.back();
      }
      slot.reset();
      SmallVector<Value> indices = at(op, init, slotColumns[first]);
      // The innermost index must be the column for a chunk to be contiguous.
      if (vectors && indices.back() == slotColumns[first]) {
        Value chunk = vector::FromElementsOp::create(
            b, loc, VectorType::get({width}, element), values);
        vector::StoreOp::create(
            b, loc, chunk, out, indices, /*nontemporal=*/false,
            llvm::Align(chunkAlignment(element, width)));
        continue;
      }
      for (auto [i, v] : llvm::enumerate(values)) {
        OpBuilder::InsertionGuard guard(b);
        if (!slotValid.empty()) {
          auto ifOp = scf::IfOp::create(b, loc, slotValid[first + i],
                                        /*withElseRegion=*/false);
          b.setInsertionPointToStart(ifOp.thenBlock());
        }
        memref::StoreOp::create(b, loc, v, out,
                                at(op, init, slotColumns[first + i]));
      }
    }
  }

  /// A scalar's value from now on; stored (by thread 0) when the kernel
  /// returns it.
  void setScalar(Value buffer, Value v) {
    scalars[buffer] = v;
    if (isInternal(buffer))
      return;
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                        index(0));
    auto ifOp = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    memref::StoreOp::create(b, loc, v, buffer, zeros(buffer));
  }

  /// Combines every thread's `partial`: shuffles within each warp, then the
  /// warps' results through workgroup memory.
  Value allReduce(Value partial, Operation *combiner) {
    for (int32_t offset = loop::kWarpSize / 2; offset > 0; offset /= 2) {
      auto shuffle = gpu::ShuffleOp::create(b, loc, partial, offset,
                                            loop::kWarpSize,
                                            gpu::ShuffleMode::XOR);
      partial = combine(combiner, partial, shuffle.getShuffleResult());
    }
    int64_t warps = threads / loop::kWarpSize;
    if (warps == 1)
      return partial;
    AffineExpr d0 = b.getAffineDimExpr(0);
    Value lane = affine::makeComposedAffineApply(b, loc, d0 % loop::kWarpSize,
                                                 {OpFoldResult(tid)});
    Value warp = affine::makeComposedAffineApply(
        b, loc, d0.floorDiv(loop::kWarpSize), {OpFoldResult(tid)});
    // The previous reduction's reads of the buffer are done.
    gpu::BarrierOp::create(b, loc);
    Value leader = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         lane, index(0));
    auto ifOp = scf::IfOp::create(b, loc, leader, /*withElseRegion=*/false);
    Value partials = partialsOf(partial.getType());
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      memref::StoreOp::create(b, loc, partial, partials, ValueRange{warp});
    }
    gpu::BarrierOp::create(b, loc);
    Value total = memref::LoadOp::create(b, loc, partials, ValueRange{index(0)});
    for (int64_t w = 1; w < warps; ++w)
      total = combine(combiner, total,
                      memref::LoadOp::create(b, loc, partials,
                                             ValueRange{index(w)}));
    return total;
  }

  /// The workgroup buffer of one `type` partial per warp, made before the
  /// thread loop the first time a reduction of that type needs it.
  Value partialsOf(Type type) {
    Value &buffer = partialBuffers[type];
    if (!buffer) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(threadLoop);
      auto workgroup = gpu::AddressSpaceAttr::get(
          b.getContext(), gpu::AddressSpace::Workgroup);
      buffer = memref::AllocOp::create(
          b, loc,
          MemRefType::get({threads / loop::kWarpSize}, type,
                          MemRefLayoutAttrInterface(), workgroup));
    }
    return buffer;
  }

  /// `combiner` (an op of the reduction's body) applied to `x` and `y`.
  Value combine(Operation *combiner, Value x, Value y) {
    OperationState state(loc, combiner->getName());
    state.addOperands({x, y});
    state.addTypes(x.getType());
    state.addAttributes(combiner->getAttrs());
    return b.create(state)->getResult(0);
  }

  /// Runs `body` for each of this thread's columns (loop mode).
  void columnLoop(function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, tid, columnCount, index(threads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }

  /// A buffer of the block tile that no one outside it reads.
  bool isInternal(Value buffer) {
    auto alloc = buffer.getDefiningOp<memref::AllocOp>();
    return alloc && block->isProperAncestor(alloc);
  }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  SmallVector<Value> zeros(Value buffer) {
    return SmallVector<Value>(cast<MemRefType>(buffer.getType()).getRank(),
                              index(0));
  }

  /// The indices `op` accesses `operand` at, at `column` of its last loop
  /// (its other loops have extent 1).
  SmallVector<Value> at(linalg::GenericOp op, OpOperand &operand,
                        Value column) {
    SmallVector<Value> indices;
    unsigned last = op.getNumLoops() - 1;
    for (AffineExpr e : op.getMatchingIndexingMap(&operand).getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      indices.push_back(dim && dim.getPosition() == last ? column : index(0));
    }
    return indices;
  }

  OpBuilder &b;
  Location loc;
  scf::ForallOp block, threadLoop;
  int64_t threads, columns; // columns: ShapedType::kDynamic for a dynamic row
  std::optional<int64_t> largestColumns; // a dynamic row's, when known
  Value columnCount, tid;
  llvm::DenseMap<Type, Value> partialBuffers;
  llvm::DenseMap<Value, Value> scalars;
  llvm::DenseMap<Value, linalg::GenericOp> rowOps;
  // Register mode (width > 0): each slot's column, the slot being emitted,
  // values kept per (buffer, slot; -1 for values not at a column), and the
  // buffers the tile writes (whose loads are not kept).
  int64_t width = 0;
  SmallVector<Value> slotColumns;
  // A dynamic row's: whether each slot's column is within the row.
  SmallVector<Value> slotValid;
  std::optional<int64_t> slot;
  llvm::DenseMap<std::pair<Value, int64_t>, Value> kept;
  llvm::DenseSet<Value> written;
};

/// Distributes the block tile holding `root` over `threads` threads.
LogicalResult distribute(linalg::GenericOp root, int64_t threads) {
  auto block = root->getParentOfType<scf::ForallOp>();
  if (!block || !rowExtent(root))
    return root.emitError("loop.warp_reduce: the root is not an op over rows "
                          "of a block tile");
  SmallVector<Operation *> ops;
  for (Operation &op : block.getBody()->without_terminator())
    if (!isa<memref::SubViewOp, memref::AllocOp, memref::DeallocOp,
             memref::CollapseShapeOp, memref::ExpandShapeOp, arith::ConstantOp,
             memref::DimOp>(op) &&
        !(isPure(&op) && llvm::all_of(op.getResultTypes(), [](Type t) {
            return t.isIndex();
          }))) // sizes and offsets of a dynamic row's views
      ops.push_back(&op);
  // The row: the root's, or the reductions' where the root is an op on
  // their per-row results; a row of dynamic length is that of the first op
  // over it, which the others share (one row of the tile).
  int64_t columns = 1;
  linalg::GenericOp dynamicRow;
  for (Operation *op : ops)
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      int64_t extent = rowExtent(generic).value_or(1);
      if (!ShapedType::isDynamic(extent))
        columns = std::max(columns, extent);
      else if (!dynamicRow)
        dynamicRow = generic;
    }
  if (dynamicRow && columns != 1)
    return dynamicRow.emitError("loop.warp_reduce: a row of dynamic length "
                                "beside one of ")
           << columns << " columns";

  OpBuilder b(block.getBody()->getTerminator());
  Location loc = root.getLoc();
  MLIRContext *ctx = b.getContext();
  Value columnCount =
      dynamicRow
          ? getValueOrCreateConstantIndexOp(
                b, loc,
                cast<linalg::LinalgOp>(dynamicRow.getOperation())
                    .createLoopRanges(b, loc)
                    .back()
                    .size)
          : arith::ConstantIndexOp::create(b, loc, columns).getResult();
  if (dynamicRow)
    columns = ShapedType::kDynamic;
  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(threads)}, ValueRange{},
      b.getArrayAttr({gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)}));
  b.setInsertionPoint(forall.getBody()->getTerminator());
  std::optional<int64_t> largestColumns;
  if (auto attr = root->getAttrOfType<IntegerAttr>(loop::kRowColumnsAttrName))
    largestColumns = attr.getInt();
  if (failed(RowEmitter(b, loc, block, forall, threads, columns, columnCount,
                        largestColumns)
                 .emit(ops)))
    return failure();
  for (Operation *op : llvm::reverse(ops))
    op->erase();
  // Internal buffers now live in registers; the warps' partials are in
  // workgroup memory.
  for (auto alloc : llvm::to_vector(block.getBody()->getOps<memref::AllocOp>())) {
    if (isa_and_nonnull<gpu::AddressSpaceAttr>(alloc.getType().getMemorySpace()))
      continue;
    if (failed(eraseReplacedBuffer(alloc, "loop.warp_reduce: a buffer of the "
                                          "row is still used after distribution")))
      return failure();
  }
  return success();
}

struct GpuDistributeRowsPass
    : tessel::impl::GpuDistributeRowsBase<GpuDistributeRowsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> roots;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->hasAttr(loop::kWarpReduceAttrName))
        roots.push_back(op);
    });
    for (linalg::GenericOp root : roots) {
      auto threads = root->getAttrOfType<IntegerAttr>(loop::kWarpReduceAttrName);
      if (!threads || threads.getInt() < loop::kWarpSize ||
          threads.getInt() % loop::kWarpSize) {
        root.emitError("loop.warp_reduce: ")
            << loop::kWarpReduceAttrName
            << " must be a positive multiple of the warp size";
        return signalPassFailure();
      }
      if (failed(distribute(root, threads.getInt())))
        return signalPassFailure();
    }
  }
};

} // namespace
