//===- VectorAccess.cpp - a thread's points as vectors --------------------===//
//
// Carries out loop.vector_access on bufferized kernels. A marked op is one
// thread's tile: W points of the innermost loop, and W of at most one other
// (the loop along which a transposed operand is contiguous), one point of
// every other loop. A whole tile (static, or tested at run time) is
// replaced by its body cloned per point on registers: an operand is loaded
// as W-element vectors along the tile loop of its innermost index when
// Alignment.h proves them aligned, once for all the points of a loop it
// does not depend on (a broadcast bias), and otherwise per point; the
// output is stored the same way. So a transpose's thread reads W vectors
// along one loop and writes W along the other. Anything else (an edge
// tile, an op of another form) keeps the linalg op, which later becomes
// scalar loops.
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/gpu/PointwiseBody.h"
#include "passes/loop/Alignment.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"

namespace tessel {
#define GEN_PASS_DEF_LOOPVECTORACCESS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// The result of `map` that is the loop `dim`, if any.
std::optional<unsigned> resultOf(AffineMap map, unsigned dim) {
  for (auto [i, e] : llvm::enumerate(map.getResults()))
    if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == dim)
      return i;
  return std::nullopt;
}

/// The loops of `op` with more than one point when `op` is a thread tile
/// this pass can take: elementwise, one output, indexing maps that pick
/// loops (or constants), and at most two such loops (the innermost, and one
/// along which an operand is contiguous: a transposed read), static but for
/// the innermost. Nothing otherwise.
std::optional<SmallVector<unsigned>> threadTileLoops(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumLoops() == 0 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !op.hasPureBufferSemantics())
    return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
      return std::nullopt;
  SmallVector<unsigned> loops;
  for (auto [d, extent] : llvm::enumerate(op.getStaticLoopRanges())) {
    if (extent == 1)
      continue;
    if (ShapedType::isDynamic(extent) && d + 1 != op.getNumLoops())
      return std::nullopt;
    loops.push_back(d);
  }
  if (loops.size() > 2)
    return std::nullopt;
  return loops;
}

/// A thread tile's points: every combination of the points of its (at most
/// two) loops with more than one, point p = (row, column) = (p / columns,
/// p % columns) over the outer and the inner of them.
class PointEmitter {
public:
  /// `loops` have `width` points each.
  PointEmitter(OpBuilder &b, linalg::GenericOp op, ArrayRef<unsigned> loops,
               int64_t width)
      : b(b), loc(op.getLoc()), op(op), loops(loops),
        extents(loops.size(), width) {}

  /// Replaces the op's computation by its points at `b`'s insertion point.
  void emit() {
    llvm::DenseMap<OpOperand *, SmallVector<Value>> values;
    Block &body = op.getRegion().front();
    for (OpOperand &operand : op->getOpOperands())
      if (!body.getArgument(operand.getOperandNumber()).use_empty())
        values[&operand] = load(operand);
    SmallVector<Value> results;
    for (int64_t p = 0; p < points(); ++p)
      results.push_back(clonePointwiseBody(
          b, op, [&](OpOperand &o) { return values[&o][p]; },
          [&](unsigned dim) { return index(coordinate(p, dim)); }));
    store(op.getDpsInitsMutable()[0], results);
  }

private:
  int64_t points() const {
    int64_t n = 1;
    for (int64_t e : extents)
      n *= e;
    return n;
  }

  /// Point `p`'s index in loop `dim`.
  int64_t coordinate(int64_t p, unsigned dim) const {
    int64_t stride = 1;
    for (int64_t i = loops.size() - 1; i >= 0; --i) {
      if (loops[i] == dim)
        return p / stride % extents[i];
      stride *= extents[i];
    }
    return 0;
  }

  /// The indices of `operand` at point `p`.
  SmallVector<Value> indicesAt(OpOperand &operand, int64_t p) {
    SmallVector<Value> indices;
    for (AffineExpr e : op.getMatchingIndexingMap(&operand).getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      indices.push_back(index(dim ? coordinate(p, dim.getPosition())
                                  : cast<AffineConstantExpr>(e).getValue()));
    }
    return indices;
  }

  /// The position in `loops` of the loop along which `operand` holds its
  /// points as contiguous, aligned vectors, if any: the loop of its
  /// innermost index.
  std::optional<unsigned> vectorLoop(OpOperand &operand) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (map.getNumResults() == 0)
      return std::nullopt;
    auto dim = dyn_cast<AffineDimExpr>(map.getResults().back());
    if (!dim)
      return std::nullopt;
    auto at = llvm::find(loops, dim.getPosition());
    if (at == loops.end() ||
        !isChunkAligned(operand.get(), extents[at - loops.begin()]))
      return std::nullopt;
    return at - loops.begin();
  }

  /// Whether point `p` starts a read of `operand` (a vector `along` one of
  /// the loops, or a scalar): it is at 0 in that loop and in the loops the
  /// operand does not walk (a broadcast bias is read once).
  bool readsAt(OpOperand &operand, int64_t p, std::optional<unsigned> along) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (auto [i, dim] : llvm::enumerate(loops))
      if ((!map.isFunctionOfDim(dim) || (along && *along == i)) &&
          coordinate(p, dim) != 0)
        return false;
    return true;
  }

  /// The operand's value at each point.
  SmallVector<Value> load(OpOperand &operand) {
    Value buffer = operand.get();
    if (!isa<MemRefType>(buffer.getType())) // a scalar (a fill's value)
      return SmallVector<Value>(points(), buffer);
    std::optional<unsigned> along = vectorLoop(operand);
    Type element = getElementTypeOrSelf(buffer.getType());
    // Each distinct read once (a vector, or a scalar), then its points.
    llvm::DenseMap<int64_t, Value> reads;
    SmallVector<Value> values(points());
    for (int64_t p = 0; p < points(); ++p) {
      if (readsAt(operand, p, along)) {
        if (along) {
          int64_t width = extents[*along];
          Value vector = vector::LoadOp::create(
              b, loc, VectorType::get({width}, element), buffer,
              indicesAt(operand, p), /*nontemporal=*/false,
              llvm::Align(chunkAlignment(element, width)));
          reads[p] = vector;
        } else {
          reads[p] = memref::LoadOp::create(b, loc, buffer,
                                            indicesAt(operand, p));
        }
      }
    }
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (int64_t p = 0; p < points(); ++p) {
      // The read that holds point p: its coordinates in the loops that
      // the operand walks and that are not the vector's, zero elsewhere.
      int64_t first = 0, stride = 1, lane = 0;
      for (int64_t i = loops.size() - 1; i >= 0; --i) {
        int64_t c = coordinate(p, loops[i]);
        if (along && *along == static_cast<unsigned>(i))
          lane = c;
        else if (map.isFunctionOfDim(loops[i]))
          first += c * stride;
        stride *= extents[i];
      }
      Value read = reads.lookup(first);
      values[p] = along ? vector::ExtractOp::create(b, loc, read,
                                                    ArrayRef<int64_t>{lane})
                              .getResult()
                        : read;
    }
    return values;
  }

  /// Stores `results`, one per point, into the output.
  void store(OpOperand &init, ArrayRef<Value> results) {
    Value buffer = init.get();
    std::optional<unsigned> along = vectorLoop(init);
    if (!along) {
      for (auto [p, result] : llvm::enumerate(results))
        memref::StoreOp::create(b, loc, result, buffer, indicesAt(init, p));
      return;
    }
    Type element = getElementTypeOrSelf(buffer.getType());
    int64_t width = extents[*along];
    // Points a lane apart along the vector's loop.
    int64_t step = 1;
    for (unsigned i = *along + 1; i < loops.size(); ++i)
      step *= extents[i];
    for (int64_t p = 0; p < points(); ++p) {
      if (!readsAt(init, p, along))
        continue;
      SmallVector<Value> lanes;
      for (int64_t l = 0; l < width; ++l)
        lanes.push_back(results[p + l * step]);
      Value vector = vector::FromElementsOp::create(
          b, loc, VectorType::get({width}, element), lanes);
      vector::StoreOp::create(b, loc, vector, buffer, indicesAt(init, p),
                              /*nontemporal=*/false,
                              llvm::Align(chunkAlignment(element, width)));
    }
  }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  OpBuilder &b;
  Location loc;
  linalg::GenericOp op;
  SmallVector<unsigned> loops;
  SmallVector<int64_t> extents;
};

/// The number of points of `op`'s innermost loop, from an operand it
/// indexes.
Value innermostExtent(OpBuilder &b, linalg::GenericOp op) {
  unsigned last = op.getNumLoops() - 1;
  for (OpOperand &operand : op->getOpOperands())
    if (std::optional<unsigned> result =
            resultOf(op.getMatchingIndexingMap(&operand), last))
      return memref::DimOp::create(b, op.getLoc(), operand.get(), *result);
  return {};
}

/// Carries out loop.vector_access of `width` on `op`: a tile whose loops
/// of more than one point have `width` each (the innermost may be an edge
/// tile of fewer, known at run time; it then keeps the op).
void vectorize(linalg::GenericOp op, int64_t width) {
  std::optional<SmallVector<unsigned>> tile = threadTileLoops(op);
  if (width == 1 || !tile)
    return;
  SmallVector<unsigned> loops = *tile;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (loops.empty() || llvm::any_of(loops, [&](unsigned d) {
        return !ShapedType::isDynamic(ranges[d]) && ranges[d] != width;
      }))
    return;
  OpBuilder b(op);
  if (!ShapedType::isDynamic(ranges[loops.back()])) {
    PointEmitter(b, op, loops, width).emit();
    op.erase();
    return;
  }
  Value extent = innermostExtent(b, op);
  if (!extent)
    return;
  Value full = arith::CmpIOp::create(
      b, op.getLoc(), arith::CmpIPredicate::eq, extent,
      arith::ConstantIndexOp::create(b, op.getLoc(), width));
  auto ifOp = scf::IfOp::create(b, op.getLoc(), full, /*withElseRegion=*/true);
  b.setInsertionPointToStart(ifOp.thenBlock());
  PointEmitter(b, op, loops, width).emit();
  // The edge tile keeps the op; it becomes scalar loops.
  op->moveBefore(ifOp.elseBlock()->getTerminator());
}

struct LoopVectorAccessPass
    : tessel::impl::LoopVectorAccessBase<LoopVectorAccessPass> {
  void runOnOperation() override {
    SmallVector<std::pair<linalg::LinalgOp, int64_t>> marked;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (auto width =
              op->getAttrOfType<IntegerAttr>(loop::kVectorAccessAttrName)) {
        marked.emplace_back(op, width.getInt());
        op->removeAttr(loop::kVectorAccessAttrName);
      }
    });
    IRRewriter rewriter(&getContext());
    for (auto [op, width] : marked) {
      if (width < 1 || !llvm::isPowerOf2_64(width)) {
        op.emitError("loop.vector_access: ")
            << loop::kVectorAccessAttrName << " = " << width
            << " is not a power of two";
        return signalPassFailure();
      }
      // Named ops (a transpose, a copy) as generics, whose body is cloned.
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::GenericOp> generalized =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(generalized))
          continue;
        generic = *generalized;
      }
      vectorize(generic, width);
    }
  }
};

} // namespace
