//===- VectorAccess.cpp - a thread's points as vectors --------------------===//
//
// Carries out loop.vector_access on bufferized kernels. A marked op is one
// thread's tile: a point of every loop but the innermost, which has at most
// W points. A tile of exactly W points (static, or tested at run time) is
// replaced by its body cloned per point on registers: an operand that the
// innermost loop walks contiguously is loaded as one W-element vector when
// Alignment.h proves the vector aligned, an operand that does not depend
// on that loop (a broadcast bias) is loaded once, and any other (a
// transposed read) per point; the output is stored the same way. Anything
// else (an edge tile, an op of another form) keeps the linalg op, which
// later becomes scalar loops.
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

/// Whether `op` is a tile this pass can take: elementwise, one output,
/// indexing maps that pick loops (or constants), and every loop but the
/// innermost of one point.
bool isThreadTile(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumLoops() == 0 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !op.hasPureBufferSemantics())
    return false;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
      return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  return llvm::all_of(ArrayRef(ranges).drop_back(),
                      [](int64_t r) { return r == 1; });
}

class PointEmitter {
public:
  PointEmitter(OpBuilder &b, linalg::GenericOp op, int64_t width)
      : b(b), loc(op.getLoc()), op(op), width(width),
        last(op.getNumLoops() - 1) {}

  /// Replaces the op's computation by `width` points at `b`'s insertion
  /// point.
  void emit() {
    llvm::DenseMap<OpOperand *, SmallVector<Value>> values;
    Block &body = op.getRegion().front();
    for (OpOperand &operand : op->getOpOperands())
      if (!body.getArgument(operand.getOperandNumber()).use_empty())
        values[&operand] = load(operand);
    SmallVector<Value> results;
    for (int64_t p = 0; p < width; ++p)
      results.push_back(clonePointwiseBody(
          b, op, [&](OpOperand &o) { return values[&o][p]; },
          [&](unsigned dim) { return index(dim == last ? p : 0); }));
    store(op.getDpsInitsMutable()[0], results);
  }

private:
  /// The indices of `operand` at point `p` of the innermost loop.
  SmallVector<Value> indicesAt(OpOperand &operand, int64_t p) {
    SmallVector<Value> indices;
    for (AffineExpr e : op.getMatchingIndexingMap(&operand).getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      indices.push_back(
          index(dim ? (dim.getPosition() == last ? p : 0)
                    : cast<AffineConstantExpr>(e).getValue()));
    }
    return indices;
  }

  /// Whether `operand` holds the points as one contiguous, aligned run.
  bool isVector(OpOperand &operand) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    std::optional<unsigned> result = resultOf(map, last);
    return result && *result + 1 == map.getNumResults() &&
           isChunkAligned(operand.get(), width);
  }

  /// The operand's value at each point.
  SmallVector<Value> load(OpOperand &operand) {
    Value buffer = operand.get();
    if (!isa<MemRefType>(buffer.getType())) // a scalar (a fill's value)
      return SmallVector<Value>(width, buffer);
    if (!resultOf(op.getMatchingIndexingMap(&operand), last))
      return SmallVector<Value>(
          width, memref::LoadOp::create(b, loc, buffer, indicesAt(operand, 0)));
    SmallVector<Value> points;
    if (isVector(operand)) {
      Type element = getElementTypeOrSelf(buffer.getType());
      Value vector = vector::LoadOp::create(
          b, loc, VectorType::get({width}, element), buffer,
          indicesAt(operand, 0), /*nontemporal=*/false,
          llvm::Align(chunkAlignment(element, width)));
      for (int64_t p = 0; p < width; ++p)
        points.push_back(vector::ExtractOp::create(b, loc, vector,
                                                   ArrayRef<int64_t>{p}));
      return points;
    }
    for (int64_t p = 0; p < width; ++p)
      points.push_back(
          memref::LoadOp::create(b, loc, buffer, indicesAt(operand, p)));
    return points;
  }

  /// Stores `results`, one per point, into the output.
  void store(OpOperand &init, ArrayRef<Value> results) {
    Value buffer = init.get();
    if (isVector(init)) {
      Type element = getElementTypeOrSelf(buffer.getType());
      Value vector = vector::FromElementsOp::create(
          b, loc, VectorType::get({width}, element), results);
      vector::StoreOp::create(b, loc, vector, buffer, indicesAt(init, 0),
                              /*nontemporal=*/false,
                              llvm::Align(chunkAlignment(element, width)));
      return;
    }
    for (auto [p, result] : llvm::enumerate(results))
      memref::StoreOp::create(b, loc, result, buffer, indicesAt(init, p));
  }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  OpBuilder &b;
  Location loc;
  linalg::GenericOp op;
  int64_t width;
  unsigned last;
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

/// Carries out loop.vector_access of `width` on `op`.
void vectorize(linalg::GenericOp op, int64_t width) {
  if (width == 1 || !isThreadTile(op))
    return;
  int64_t points = op.getStaticLoopRanges().back();
  OpBuilder b(op);
  if (!ShapedType::isDynamic(points)) {
    if (points != width)
      return;
    PointEmitter(b, op, width).emit();
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
  PointEmitter(b, op, width).emit();
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
