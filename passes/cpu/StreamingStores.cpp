//===- StreamingStores.cpp - large kernel results written past the caches -===//
//
// A kernel result much larger than the caches is written once and read, if
// at all, from memory. Ordinary stores first read every line they write
// (write-allocate) and evict lines the kernel still needs; non-temporal
// stores do neither. So the elementwise op that writes such a result is
// vectorized along its innermost dimension and its stores marked
// non-temporal. Those must be aligned to the vector's size: the vectorized
// loop runs only when the result's buffer is (tested once per call), the
// op as it was otherwise. A fence after the loop orders the stores before
// whatever tells other threads that the tile is done.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace tessel {
#define GEN_PASS_DEF_CPUSTREAMINGSTORES
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

bool knownMultiple(OpFoldResult value, int64_t factor);

/// Whether `expr` (of an affine.apply's `operands`) is a multiple of
/// `factor` whatever the values of its dims and symbols.
bool knownMultiple(AffineExpr expr, ValueRange operands, unsigned dims,
                   int64_t factor) {
  if (expr.getLargestKnownDivisor() % factor == 0)
    return true;
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return knownMultiple(OpFoldResult(operands[dim.getPosition()]), factor);
  if (auto symbol = dyn_cast<AffineSymbolExpr>(expr))
    return knownMultiple(OpFoldResult(operands[dims + symbol.getPosition()]),
                         factor);
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return false;
  bool lhs = knownMultiple(binary.getLHS(), operands, dims, factor);
  bool rhs = knownMultiple(binary.getRHS(), operands, dims, factor);
  switch (binary.getKind()) {
  case AffineExprKind::Add:
    return lhs && rhs;
  case AffineExprKind::Mul:
    return lhs || rhs;
  default:
    return false;
  }
}

/// Whether the index `ofr` is a multiple of `factor` in every execution:
/// a constant, a loop's induction variable of such bounds and step, or
/// sums and products of those (the offsets tiling creates).
bool knownMultiple(OpFoldResult ofr, int64_t factor) {
  if (std::optional<int64_t> c = getConstantIntValue(ofr))
    return *c % factor == 0;
  auto value = cast<Value>(ofr);
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Operation *owner = arg.getOwner()->getParentOp();
    if (auto loop = dyn_cast<LoopLikeOpInterface>(owner)) {
      std::optional<SmallVector<Value>> ivs = loop.getLoopInductionVars();
      std::optional<SmallVector<OpFoldResult>> lbs = loop.getLoopLowerBounds();
      std::optional<SmallVector<OpFoldResult>> steps = loop.getLoopSteps();
      if (!ivs || !lbs || !steps)
        return false;
      for (auto [iv, lb, step] : llvm::zip(*ivs, *lbs, *steps))
        if (iv == value)
          return knownMultiple(lb, factor) && knownMultiple(step, factor);
    }
    return false;
  }
  Operation *def = value.getDefiningOp();
  if (auto apply = dyn_cast_or_null<affine::AffineApplyOp>(def))
    return knownMultiple(apply.getAffineMap().getResult(0),
                         apply.getMapOperands(),
                         apply.getAffineMap().getNumDims(), factor);
  if (auto mul = dyn_cast_or_null<arith::MulIOp>(def))
    return knownMultiple(OpFoldResult(mul.getLhs()), factor) ||
           knownMultiple(OpFoldResult(mul.getRhs()), factor);
  if (auto add = dyn_cast_or_null<arith::AddIOp>(def))
    return knownMultiple(OpFoldResult(add.getLhs()), factor) &&
           knownMultiple(OpFoldResult(add.getRhs()), factor);
  return false;
}

struct CpuStreamingStoresPass
    : tessel::impl::CpuStreamingStoresBase<CpuStreamingStoresPass> {
  using Base::Base;

  /// The bytes of buffer `arg` (a kernel argument), at the largest sizes of
  /// its size symbols where it has some; 0 where those are unknown.
  static int64_t largestBytes(BlockArgument arg) {
    auto type = cast<MemRefType>(arg.getType());
    int64_t elements = 1;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      std::optional<int64_t> size = tessel::largestSize(arg, d);
      if (!size)
        return 0;
      elements *= *size;
    }
    return elements * type.getElementTypeBitWidth() / 8;
  }

  /// The function argument `op` writes a large part of through unit-stride
  /// subviews whose offsets keep each vector of `lanes` aligned to its
  /// size, when the argument's buffer is; null if there is none.
  BlockArgument streamedResult(linalg::GenericOp op, func::FuncOp func,
                               int64_t &lanes) {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
        op.getNumParallelLoops() != op.getNumLoops() || op.getNumLoops() == 0)
      return {};
    OpOperand *init = op.getDpsInitOperand(0);
    if (!op.getMatchingIndexingMap(init).isIdentity())
      return {};
    auto viewType = cast<MemRefType>(init->get().getType());
    Type element = viewType.getElementType();
    if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0)
      return {};
    lanes = vectorBits / element.getIntOrFloatBitWidth();
    // Rows may be as many as a size symbol says; the row is static.
    if (lanes < 2 || ShapedType::isDynamic(viewType.getShape().back()) ||
        viewType.getShape().back() % lanes != 0)
      return {};
    // Every vector of the op starts a whole number of vectors from the
    // view's origin: unit innermost stride, outer strides whole vectors.
    SmallVector<int64_t> viewStrides = viewType.getStridesAndOffset().first;
    if (viewStrides.back() != 1)
      return {};
    for (auto [extent, stride] :
         llvm::zip(viewType.getShape().drop_back(),
                   ArrayRef(viewStrides).drop_back()))
      if ((ShapedType::isDynamic(extent) || extent > 1) &&
          (ShapedType::isDynamic(stride) || stride % lanes != 0))
        return {};
    SmallVector<memref::SubViewOp> views;
    Value base = init->get();
    while (auto view = base.getDefiningOp<memref::SubViewOp>()) {
      views.push_back(view);
      base = view.getSource();
    }
    auto arg = dyn_cast<BlockArgument>(base);
    if (!arg || arg.getOwner() != &func.getBody().front())
      return {};
    auto argType = cast<MemRefType>(arg.getType());
    if (!argType.getLayout().isIdentity() ||
        largestBytes(arg) < static_cast<int64_t>(minBytes))
      return {};
    // Of an identity layout every stride but the last is a multiple of the
    // (static) row, itself a multiple of the lanes: a dynamic one too.
    SmallVector<int64_t> strides = argType.getStridesAndOffset().first;
    for (int64_t &stride : strides)
      if (ShapedType::isDynamic(stride))
        stride = lanes;
    for (memref::SubViewOp view : views) {
      if (view.getSourceType().getRank() != view.getType().getRank() ||
          !llvm::all_of(view.getStaticStrides(),
                        [](int64_t s) { return s == 1; }))
        return {};
      for (auto [offset, stride] : llvm::zip(view.getMixedOffsets(), strides))
        if (stride % lanes != 0 && !knownMultiple(offset, lanes))
          return {};
    }
    return arg;
  }

  /// Tiles `op` (a clone, inside the aligned branch) by `lanes` along its
  /// innermost loop, vectorizes the tiles, and stores their vectors
  /// non-temporally; fails, leaving the branch to be dropped, if the
  /// vectorized tile is not the expected one write of the whole tile.
  LogicalResult stream(IRRewriter &rewriter, linalg::GenericOp op,
                       int64_t lanes) {
    SmallVector<int64_t> sizes(op.getNumLoops(), 1);
    sizes.back() = lanes;
    FailureOr<scf::SCFTilingResult> tiled = tessel::tileInLoops(
        rewriter, cast<TilingInterface>(op.getOperation()), sizes);
    if (failed(tiled))
      return failure();
    Operation *tile = tiled->tiledOps.front();
    Value view = cast<linalg::GenericOp>(tile).getDpsInits()[0];
    rewriter.setInsertionPoint(tile);
    if (failed(linalg::vectorize(rewriter, tile)))
      return failure();
    rewriter.eraseOp(tile);
    auto subview = view.getDefiningOp<memref::SubViewOp>();
    if (!subview)
      return failure();
    // The vectorizer reads the result's old values, which an elementwise
    // payload does not use: the read would fetch the lines anyway.
    SmallVector<vector::TransferWriteOp> writes;
    for (Operation *user : llvm::make_early_inc_range(view.getUsers())) {
      if (auto write = dyn_cast<vector::TransferWriteOp>(user))
        writes.push_back(write);
      else if (isa<vector::TransferReadOp>(user) && user->use_empty())
        rewriter.eraseOp(user);
    }
    if (writes.size() != 1)
      return failure();
    vector::TransferWriteOp write = writes.front();
    // The whole tile at its origin: in bounds, whatever the op says.
    if (!write.getPermutationMap().isMinorIdentity() || write.getMask() ||
        write.getVectorType().getShape() !=
            cast<MemRefType>(view.getType()).getShape() ||
        !llvm::all_of(write.getIndices(), isZeroInteger))
      return failure();
    Location loc = write.getLoc();
    rewriter.setInsertionPoint(write);
    auto vectorType = write.getVectorType();
    auto flatType = VectorType::get({lanes}, vectorType.getElementType());
    Value flat = vector::ShapeCastOp::create(rewriter, loc, flatType,
                                             write.getVector());
    SmallVector<Value> indices = getValueOrCreateConstantIndexOp(
        rewriter, loc, subview.getMixedOffsets());
    int64_t bytes = lanes * vectorType.getElementTypeBitWidth() / 8;
    vector::StoreOp::create(rewriter, loc, flat, subview.getSource(), indices,
                            /*nontemporal=*/true, llvm::Align(bytes));
    rewriter.eraseOp(write);
    if (subview->use_empty())
      rewriter.eraseOp(subview);
    // Reads of whole static tiles are in bounds (folding says so), and a
    // read of one element broadcast (a row's sum) is a load and a
    // vector.broadcast: both then lower to vector loads instead of one
    // load per lane.
    SmallVector<vector::TransferReadOp> reads;
    tiled->loops.back()->walk([&](vector::TransferReadOp read) {
      SmallVector<OpFoldResult> folded;
      (void)read->fold(folded);
      reads.push_back(read);
    });
    for (vector::TransferReadOp read : reads) {
      VectorType type = read.getVectorType();
      bool oneElement =
          !read.getMask() && isa<MemRefType>(read.getShapedType());
      for (auto [i, expr] :
           llvm::enumerate(read.getPermutationMap().getResults()))
        oneElement &= type.getDimSize(i) == 1 || isa<AffineConstantExpr>(expr);
      if (!oneElement)
        continue;
      rewriter.setInsertionPoint(read);
      Value scalar = memref::LoadOp::create(rewriter, read.getLoc(),
                                            read.getBase(), read.getIndices());
      rewriter.replaceOpWithNewOp<vector::BroadcastOp>(read, type, scalar);
    }
    rewriter.setInsertionPointAfter(tiled->loops.front());
    LLVM::FenceOp::create(rewriter, loc, LLVM::AtomicOrdering::seq_cst);
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (vectorBits == 0 || func.isExternal() ||
        !func->hasAttr("tessel.kernel"))
      return;
    IRRewriter rewriter(&getContext());
    // Whether each streamed argument's buffer is aligned, tested once.
    llvm::DenseMap<std::pair<Value, int64_t>, Value> aligned;
    SmallVector<linalg::GenericOp> ops;
    func.walk([&](linalg::GenericOp op) { ops.push_back(op); });
    for (linalg::GenericOp op : ops) {
      int64_t lanes = 0;
      BlockArgument result = streamedResult(op, func, lanes);
      if (!result || failed(linalg::vectorizeOpPrecondition(op)))
        continue;
      int64_t bytes = lanes * cast<MemRefType>(result.getType())
                                  .getElementTypeBitWidth() /
                      8;
      Value &test = aligned[{result, bytes}];
      Location loc = op.getLoc();
      if (!test) {
        rewriter.setInsertionPointToStart(&func.getBody().front());
        Value pointer = memref::ExtractAlignedPointerAsIndexOp::create(
            rewriter, loc, result);
        Value misalignment = arith::RemUIOp::create(
            rewriter, loc, pointer,
            arith::ConstantIndexOp::create(rewriter, loc, bytes));
        test = arith::CmpIOp::create(
            rewriter, loc, arith::CmpIPredicate::eq, misalignment,
            arith::ConstantIndexOp::create(rewriter, loc, 0));
        // A result over size symbols is large only at some sizes: streamed
        // when this call's is.
        auto type = cast<MemRefType>(result.getType());
        if (!type.hasStaticShape()) {
          int64_t fixed = type.getElementTypeBitWidth() / 8;
          for (int64_t d = 0; d < type.getRank(); ++d)
            if (!type.isDynamicDim(d))
              fixed *= type.getDimSize(d);
          Value size = arith::ConstantIndexOp::create(rewriter, loc, fixed);
          for (int64_t d = 0; d < type.getRank(); ++d)
            if (type.isDynamicDim(d))
              size = arith::MulIOp::create(
                  rewriter, loc, size,
                  memref::DimOp::create(rewriter, loc, result, d));
          test = arith::AndIOp::create(
              rewriter, loc, test,
              arith::CmpIOp::create(
                  rewriter, loc, arith::CmpIPredicate::uge, size,
                  arith::ConstantIndexOp::create(rewriter, loc, minBytes)));
        }
      }
      rewriter.setInsertionPoint(op);
      auto branch = scf::IfOp::create(rewriter, loc, TypeRange(), test,
                                      /*withElseRegion=*/true);
      rewriter.setInsertionPoint(branch.thenBlock()->getTerminator());
      auto clone = cast<linalg::GenericOp>(rewriter.clone(*op));
      rewriter.moveOpBefore(op, branch.elseBlock()->getTerminator());
      // An op the vectorizer takes after all is left as it was.
      if (failed(stream(rewriter, clone, lanes))) {
        rewriter.moveOpBefore(op, branch);
        rewriter.eraseOp(branch);
      }
    }
  }
};

} // namespace
