//===- VectorizeMatmul.cpp - register-blocked matmuls for the CPU ---------===//
//
// A matmul tile is walked in K blocks, whose B block is copied once and
// stays in L2; each K block in row blocks, and each row block in register
// blocks: one vector.contract per block, lowered to outer products (a row
// of B streamed, a column of A broadcast per step) into an accumulator
// that stays in vector registers across the depth loop.
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/VectorizeMatmul.h"
#include "passes/cpu/PackPatches.h"
#include "passes/cpu/VectorEpilogues.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/linalg/Contractions.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

using namespace mlir;
using namespace tessel;

namespace {

/// `source` copied into `dest` (both of the same static 2-D shape), row
/// segments of up to 64 elements moved as vectors, the insertion point
/// left after the copy (copied element by
/// element, B blocks took a third of a 1024^3 matmul's time). Not an
/// insert_slice, which folds away where it covers its destination.
FailureOr<Value> copyRows(RewriterBase &rewriter, Location loc, Value source,
                          Value dest) {
  auto copy = linalg::CopyOp::create(rewriter, loc, source, dest);
  int64_t columns = cast<RankedTensorType>(dest.getType()).getShape().back();
  int64_t segment = 64;
  while (columns % segment != 0)
    segment /= 2;
  FailureOr<scf::SCFTilingResult> rows = tileInLoops(
      rewriter, cast<TilingInterface>(copy.getOperation()), {1, segment});
  if (failed(rows))
    return copy.emitError("loop.vectorize could not tile the copy of a B "
                          "block");
  Operation *row = rows->tiledOps.front();
  rewriter.setInsertionPoint(row);
  FailureOr<linalg::VectorizationResult> vectorized =
      linalg::vectorize(rewriter, row);
  if (failed(vectorized))
    return row->emitError("loop.vectorize could not vectorize the copy of a "
                          "B block");
  rewriter.replaceOp(row, vectorized->replacements);
  Value copied = rows->replacements.front();
  rewriter.setInsertionPointAfterValue(copied);
  return copied;
}

/// An empty buffer for a B block of `type` whose rows are one cache line
/// longer than the block's: a register block walks a column strip of B
/// down its rows, which at B's row stride (a power of two, often) would
/// all map to a few cache sets and evict each other (1024^3 with K in one
/// block read in place: 20 ms, 7 ms copied).
Value emptyBBlock(RewriterBase &rewriter, Location loc,
                  RankedTensorType type) {
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<int64_t> shape(type.getShape());
  shape.back() += 64 / (type.getElementTypeBitWidth() / 8);
  Value empty =
      tensor::EmptyOp::create(rewriter, loc, shape, type.getElementType());
  return tensor::ExtractSliceOp::create(
      rewriter, loc, type, empty, getAsIndexOpFoldResult(ctx, {0, 0}),
      getAsIndexOpFoldResult(ctx, type.getShape()),
      getAsIndexOpFoldResult(ctx, {1, 1}));
}

/// Copies the B block of a K step, which every row block of the tile reads,
/// into a buffer of emptyBBlock (copyRows), where `copy`. A is read in
/// place, a few rows per register block, which stay in L1 while the block
/// passes every column strip. A block of a convolution's patches is
/// gathered into that buffer instead (packPatches), whether or not `copy`:
/// computed anyway, it is gathered once, into its place.
LogicalResult packB(RewriterBase &rewriter, linalg::MatmulOp op, bool copy) {
  OpOperand *operand = op.getDpsInputOperands()[1];
  rewriter.setInsertionPoint(op);
  Value b = operand->get();
  Location loc = op.getLoc();
  Value dest = emptyBBlock(rewriter, loc, cast<RankedTensorType>(b.getType()));
  Value packed = packPatches(rewriter, loc, b, dest);
  if (!packed && !copy) {
    Operation *slice = dest.getDefiningOp();
    Operation *empty = slice->getOperand(0).getDefiningOp();
    rewriter.eraseOp(slice);
    rewriter.eraseOp(empty);
    return success();
  }
  if (!packed) {
    FailureOr<Value> copied = copyRows(rewriter, loc, b, dest);
    if (failed(copied))
      return failure();
    packed = *copied;
  }
  rewriter.modifyOpInPlace(op, [&] { operand->set(packed); });
  return success();
}

/// Pads the matmul tile `op` with zeros to static extents that `multiples`
/// divide (its rows and columns may be dynamic at the edges of a tiling that
/// does not divide the matmul): zero rows of A and columns of B give C
/// entries that are sliced away, and zero depth adds nothing. The slice is
/// materialized in the tile's own C, so that the result is that buffer, as
/// an unpadded tile's is (versionFullTiles yields either; were they
/// different buffers, deallocation would track at run time which to free).
/// Not a linalg.copy, whose destination canonicalization may move from a
/// filled C to the buffer before the fill, which then needs a copy.
FailureOr<linalg::MatmulOp> padTo(RewriterBase &rewriter, linalg::MatmulOp op,
                                  ArrayRef<int64_t> multiples) {
  SmallVector<int64_t> bounds = op.getStaticLoopRanges();
  if (!ShapedType::isDynamicShape(bounds) &&
      llvm::all_of(llvm::zip(bounds, multiples), [](auto pair) {
        return std::get<0>(pair) % std::get<1>(pair) == 0;
      }))
    return op;
  SmallVector<Attribute> zeros;
  for (OpOperand &operand : op->getOpOperands())
    zeros.push_back(rewriter.getZeroAttr(
        getElementTypeOrSelf(operand.get().getType())));
  linalg::LinalgPaddingOptions options;
  options.setPaddingDimensions({0, 1, 2})
      .setPadToMultipleOf(multiples)
      .setPaddingValues(zeros)
      .setCopyBackOp(linalg::LinalgPaddingOptions::CopyBackOp::
                         BufferizationMaterializeInDestination);
  linalg::LinalgOp padded;
  SmallVector<Value> replacements;
  SmallVector<tensor::PadOp> pads;
  rewriter.setInsertionPoint(op);
  if (failed(linalg::rewriteAsPaddedOp(rewriter, op, options, padded,
                                       replacements, pads)))
    return op.emitError("loop.vectorize could not pad this matmul tile to "
                        "static multiples of its blocks");
  rewriter.replaceOp(op, replacements);
  return cast<linalg::MatmulOp>(padded.getOperation());
}

/// The 2-D linalg.matmul of the batched matmul tile `op`: its batch loops
/// are first tiled by one (scf.for), then the unit batch dims of each
/// operand collapse into its rows, and the product expands back.
FailureOr<linalg::MatmulOp> asMatmul(RewriterBase &rewriter,
                                     linalg::LinalgOp op) {
  std::optional<unsigned> batch = matmulBatchLoops(op, /*broadcast=*/true);
  if (!batch)
    return op.emitError("loop.vectorize takes a (batched) matmul, A (m, k) "
                        "and B (k, n)");
  if (auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation()))
    return matmul;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ArrayRef(ranges).take_front(*batch),
                   [](int64_t extent) { return extent != 1; })) {
    SmallVector<int64_t> ones(*batch, 1);
    ones.append(3, 0);
    FailureOr<scf::SCFTilingResult> tiled =
        tileInLoops(rewriter, cast<TilingInterface>(op.getOperation()), ones);
    if (failed(tiled))
      return op.emitError("loop.vectorize could not tile the batch loops");
    op = cast<linalg::LinalgOp>(tiled->tiledOps.front());
  }
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto matrix = [&](Value v) -> Value {
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    if (rank == 2)
      return v;
    SmallVector<ReassociationIndices> rows = {
        llvm::to_vector(llvm::seq<int64_t>(0, rank - 1)), {rank - 1}};
    return tensor::CollapseShapeOp::create(rewriter, loc, v, rows);
  };
  Value init = op.getDpsInits()[0];
  auto matmul = linalg::MatmulOp::create(
      rewriter, loc,
      ValueRange{matrix(op.getDpsInputs()[0]), matrix(op.getDpsInputs()[1])},
      ValueRange{matrix(init)});
  Value product = matmul.getResult(0);
  int64_t rank = cast<RankedTensorType>(init.getType()).getRank();
  if (rank > 2)
    product = tensor::ExpandShapeOp::create(
        rewriter, loc, init.getType(), product,
        SmallVector<ReassociationIndices>{
            llvm::to_vector(llvm::seq<int64_t>(0, rank - 1)), {rank - 1}});
  rewriter.replaceOp(op, product);
  return matmul;
}

/// A matmul tile's elementwise epilogue computed on its register blocks as
/// they leave the registers (registerEpilogue): their accumulators start
/// from the value of the tile's fill, and they are written, through the
/// epilogue, to the epilogue's output, which the tile computes into in
/// place of the fill's buffer. Apart, a tile of a 1x1 convolution of short
/// K (MobileNetV2's expansions: K = 16-32) was zeroed by a memset, its
/// accumulators loaded and stored at every register block, then read and
/// written again by the epilogue: the memsets alone took 4% of the model.
struct RegisterEpilogue {
  linalg::GenericOp generic;     // null: none, the blocks written as they are
  unsigned operand;              // the epilogue's, reading the tile's result
  tensor::ExpandShapeOp expand;  // the result's expansion to it, if any
  Value fillValue, output;       // the accumulators' start; the new init

  /// What the epilogue reads of the tile's result (vectorizing replaces the
  /// tile).
  Value read() const { return generic->getOperand(operand); }
};

/// The epilogue of the static matmul tile `op`, whose K is one block: the
/// tile accumulates from a fill (maybe collapsed, as asMatmul makes it) and
/// its result, maybe expanded by unit dims, is read by the fusableEpilogue
/// alone, whose output (a tile of the result's type) is defined where `op`
/// may take it as its init; unless `rowsPadded` (the epilogue's operands
/// would be read past their rows). Without such an epilogue, the tile's
/// register blocks still start from the fill's value and are written as
/// they are, into the fill's destination, so that nothing zeroes the tile
/// first (each head of an attention's 197x197 scores was).
/// Sets `op` up to compute into that output.
std::optional<RegisterEpilogue> registerEpilogue(RewriterBase &rewriter,
                                                 linalg::MatmulOp op,
                                                 bool rowsPadded) {
  Value init = op.getDpsInits()[0];
  auto collapsed = init.getDefiningOp<tensor::CollapseShapeOp>();
  auto fill = (collapsed ? collapsed.getSrc() : init)
                  .getDefiningOp<linalg::FillOp>();
  if (!fill)
    return std::nullopt;
  RegisterEpilogue e;
  e.fillValue = fill.getInputs()[0];
  Value result = op->getResult(0);
  Value read = result;
  auto expand = result.hasOneUse() ? dyn_cast<tensor::ExpandShapeOp>(
                                         *result.getUsers().begin())
                                   : tensor::ExpandShapeOp();
  if (expand) {
    // Each group of the expansion has at most one dim that is not a unit:
    // the epilogue's indices at a tile point are then the point's.
    ArrayRef<int64_t> shape = expand.getResultType().getShape();
    if (llvm::all_of(expand.getReassociationIndices(),
                     [&](const ReassociationIndices &group) {
                       return llvm::count_if(group, [&](int64_t d) {
                                return shape[d] != 1;
                              }) <= 1;
                     }))
      read = expand.getResult();
  }
  if (result.hasOneUse())
    e.generic = fusableEpilogue(read);
  // What the tile computes into, collapsed to its shape by `reassociation`
  // where that is given.
  Value output;
  std::optional<SmallVector<ReassociationIndices>> reassociation;
  if (e.generic) {
    if (rowsPadded)
      return std::nullopt;
    e.expand = read == result ? tensor::ExpandShapeOp() : expand;
    e.operand = read.getUses().begin()->getOperandNumber();
    // Its other operands (slices of the kernel's arguments and result,
    // which tiling takes after the tile) are read in the tile's loops:
    // taken before it.
    SmallVector<Operation *> moved;
    std::function<bool(Value)> before = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != op->getBlock() ||
          def->isBeforeInBlock(op) || llvm::is_contained(moved, def))
        return true;
      if (def == op || def->getNumRegions() || !isPure(def) ||
          !llvm::all_of(def->getOperands(), before))
        return false;
      moved.push_back(def);
      return true;
    };
    for (OpOperand &operand : e.generic->getOpOperands())
      if (operand.get() != read && !before(operand.get()))
        return std::nullopt;
    for (Operation *def : moved)
      rewriter.moveOpBefore(def, op);
    output = e.generic.getDpsInits()[0];
    if (e.expand)
      reassociation = e.expand.getReassociationIndices();
  } else {
    // The fill's destination, read by nothing else, so that the tile may
    // write it in place: a parallel tile's slice of the result (a
    // forall's shared output); a slice of a tensor.empty (shared by the
    // tiles of a loop: written in place, they would conflict) is a new
    // one. Slices of other tensors (a loop's carried value) keep the fill.
    output = fill.getDpsInits()[0];
    if (!output.hasOneUse())
      return std::nullopt;
    Value root = output;
    while (auto slice = root.getDefiningOp<tensor::ExtractSliceOp>())
      root = slice.getSource();
    auto shared = dyn_cast<BlockArgument>(root);
    bool empty = root.getDefiningOp<tensor::EmptyOp>() != nullptr;
    if (!empty &&
        !(shared && isa<scf::ForallOp>(shared.getOwner()->getParentOp())))
      return std::nullopt;
    if (empty) {
      auto type = cast<RankedTensorType>(init.getType());
      rewriter.setInsertionPoint(op);
      output = tensor::EmptyOp::create(rewriter, op.getLoc(), type.getShape(),
                                       type.getElementType());
    } else if (collapsed) {
      reassociation = collapsed.getReassociationIndices();
    }
  }
  rewriter.setInsertionPoint(op);
  e.output = reassociation ? tensor::CollapseShapeOp::create(
                                 rewriter, op.getLoc(), init.getType(), output,
                                 *reassociation)
                                 .getResult()
                           : output;
  rewriter.modifyOpInPlace(op, [&] { op.getDpsInitsMutable()[0].set(e.output); });
  if (collapsed && collapsed->use_empty())
    rewriter.eraseOp(collapsed);
  if (fill->use_empty())
    rewriter.eraseOp(fill);
  return e;
}

/// The offsets in `tile` of the slice `value` is, through extract_slices
/// and the loops that carry it (their iter_args and results).
FailureOr<SmallVector<OpFoldResult>> offsetsIn(RewriterBase &rewriter,
                                               Location loc, Value value,
                                               Value tile) {
  AffineExpr d0, d1;
  bindDims(rewriter.getContext(), d0, d1);
  SmallVector<OpFoldResult> offsets(2, rewriter.getIndexAttr(0));
  while (value != tile) {
    if (auto slice = value.getDefiningOp<tensor::ExtractSliceOp>()) {
      if (slice.getSourceType().getRank() != 2)
        return failure();
      for (auto [offset, more] :
           llvm::zip(offsets, slice.getMixedOffsets()))
        offset = affine::makeComposedFoldedAffineApply(rewriter, loc, d0 + d1,
                                                       {offset, more});
      value = slice.getSource();
      continue;
    }
    // The tail columns' part reads the other part's result (splitOp).
    if (auto insert = value.getDefiningOp<tensor::InsertSliceOp>()) {
      value = insert.getDest();
      continue;
    }
    if (auto result = dyn_cast<OpResult>(value)) {
      auto loop = dyn_cast<scf::ForOp>(result.getOwner());
      if (!loop)
        return failure();
      value = loop.getInitArgs()[result.getResultNumber()];
      continue;
    }
    auto arg = cast<BlockArgument>(value);
    auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    OpOperand *init = loop ? loop.getTiedLoopInit(arg) : nullptr;
    if (!init)
      return failure();
    value = init->get();
  }
  return offsets;
}

/// Applies `e` to a register block whose accumulators start from `read`
/// (of C) and are written by `write`: they start from the fill's value,
/// and each row of the block goes through the epilogue before the block
/// is written into `tile`, the C tile: `e.output`, or where the tile's
/// columns are padded, the padded C, whose columns past the epilogue's
/// operands read zeros of them.
LogicalResult applyRegisterEpilogue(RewriterBase &rewriter,
                                    vector::TransferReadOp read,
                                    vector::TransferWriteOp write,
                                    RegisterEpilogue e, Value tile) {
  bool padded = tile != e.output;
  Location loc = write.getLoc();
  VectorType type = read.getVectorType();
  rewriter.setInsertionPoint(write);
  FailureOr<SmallVector<OpFoldResult>> offsets =
      offsetsIn(rewriter, loc, write.getBase(), tile);
  if (failed(offsets))
    return failure();
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(read);
    rewriter.replaceOp(read, vector::BroadcastOp::create(rewriter, loc, type,
                                                         e.fillValue));
  }
  if (!e.generic)
    return success();
  AffineExpr d0, d1;
  bindDims(rewriter.getContext(), d0, d1);
  Value column = getValueOrCreateConstantIndexOp(
      rewriter, loc,
      affine::makeComposedFoldedAffineApply(
          rewriter, loc, d0 + d1,
          {(*offsets)[1], getAsOpFoldResult(write.getIndices()[1])}));
  // Each row written on its own (inserted back into the block, the rows
  // would be taken apart and put together again element by element).
  Value written = write.getBase();
  for (int64_t r = 0; r < type.getDimSize(0); ++r) {
    Value row = getValueOrCreateConstantIndexOp(
        rewriter, loc,
        affine::makeComposedFoldedAffineApply(
            rewriter, loc, d0 + d1 + r,
            {(*offsets)[0], getAsOpFoldResult(write.getIndices()[0])}));
    // The epilogue's indices: the point's, unit dims 0.
    SmallVector<Value> at = {row, column};
    if (e.expand) {
      ArrayRef<int64_t> shape = e.expand.getResultType().getShape();
      at.assign(shape.size(), arith::ConstantIndexOp::create(rewriter, loc, 0));
      for (auto [g, group] :
           llvm::enumerate(e.expand.getReassociationIndices()))
        for (int64_t d : group)
          if (shape[d] != 1)
            at[d] = g == 0 ? row : column;
    }
    Value vector =
        vector::ExtractOp::create(rewriter, loc, write.getVector(), r);
    vector = computeEpilogue(rewriter, loc, e.generic, e.read(), vector, at,
                             type.getDimSize(1), /*inBounds=*/!padded);
    Value first = getValueOrCreateConstantIndexOp(
        rewriter, loc,
        affine::makeComposedFoldedAffineApply(
            rewriter, loc, d0 + r,
            {getAsOpFoldResult(write.getIndices()[0])}));
    written = vector::TransferWriteOp::create(
                  rewriter, loc, vector, written,
                  ValueRange{first, write.getIndices()[1]},
                  ArrayRef<bool>{true})
                  .getResult();
  }
  rewriter.replaceOp(write, written);
  return success();
}

/// applyRegisterEpilogue on the register block of `depthLoop` (the loop
/// over K that carries its accumulators, read from C before it and
/// written to C after it).
LogicalResult applyRegisterEpilogue(RewriterBase &rewriter,
                                    LoopLikeOpInterface depthLoop,
                                    RegisterEpilogue e, Value tile) {
  auto loop = dyn_cast_or_null<scf::ForOp>(depthLoop.getOperation());
  if (!loop)
    return failure();
  for (auto [init, result] : llvm::zip(loop.getInitArgs(), loop.getResults())) {
    auto read = init.getDefiningOp<vector::TransferReadOp>();
    if (!read || !result.hasOneUse())
      continue;
    if (auto write =
            dyn_cast<vector::TransferWriteOp>(*result.getUsers().begin()))
      return applyRegisterEpilogue(rewriter, read, write, e, tile);
  }
  return failure();
}

/// Computes `op`, a matmul tile of one column (the last of a tile, which
/// whole register blocks leave: a 7x7 convolution's 49th pixel), as dot
/// products: B's column copied contiguous once, then `group` rows of A at
/// a time multiplied with it `lanes` of K at a time into vectors of
/// partial sums, reduced and added to C at the end. As a register block
/// one column wide, each step of K was `group` scalar FMAs, as many as a
/// whole block's vector FMAs (a 512x7x7 3x3 convolution spent 16% of its
/// time on that column). Returns the read of C and the write of each
/// group's column (for applyRegisterEpilogue).
std::pair<vector::TransferReadOp, vector::TransferWriteOp>
vectorizeColumn(RewriterBase &rewriter, linalg::MatmulOp op, int64_t group,
                int64_t lanes) {
  SmallVector<int64_t> bounds = op.getStaticLoopRanges();
  int64_t rows = bounds[0], depth = bounds[2];
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1],
        c = op.getDpsInits()[0];
  Type element = getElementTypeOrSelf(c.getType());
  Value zero = arith::ConstantOp::create(rewriter, loc, element,
                                         rewriter.getZeroAttr(element));
  Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value end = arith::ConstantIndexOp::create(rewriter, loc, depth);
  Value step = arith::ConstantIndexOp::create(rewriter, loc, lanes);
  Value rowEnd = arith::ConstantIndexOp::create(rewriter, loc, rows);
  Value rowStep = arith::ConstantIndexOp::create(rewriter, loc, group);
  auto run = VectorType::get({lanes}, element);
  auto partials = VectorType::get({group, lanes}, element);
  auto sums = VectorType::get({group, 1}, element);
  Value noPartials = arith::ConstantOp::create(
      rewriter, loc, partials,
      DenseElementsAttr::get(partials, rewriter.getZeroAttr(element)));
  AffineMap down = AffineMap::get(
      2, 0, {rewriter.getAffineDimExpr(0)}, rewriter.getContext());
  Value column = tensor::EmptyOp::create(rewriter, loc, ArrayRef{depth},
                                         element);
  column = scf::ForOp::create(
               rewriter, loc, c0, end, step, ValueRange{column},
               [&](OpBuilder &nb, Location l, Value k, ValueRange carried) {
                 Value v = vector::TransferReadOp::create(
                     nb, l, run, b, ValueRange{k, c0}, zero, down,
                     ArrayRef<bool>{true});
                 scf::YieldOp::create(
                     nb, l,
                     vector::TransferWriteOp::create(nb, l, v, carried[0],
                                                     ValueRange{k},
                                                     ArrayRef<bool>{true})
                         .getResult());
               })
               .getResult(0);
  vector::TransferReadOp read;
  vector::TransferWriteOp write;
  auto groups = scf::ForOp::create(
      rewriter, loc, c0, rowEnd, rowStep, ValueRange{c},
      [&](OpBuilder &nb, Location l, Value r, ValueRange carried) {
        auto depthLoop = scf::ForOp::create(
            nb, l, c0, end, step, ValueRange{noPartials},
            [&](OpBuilder &ib, Location il, Value k, ValueRange acc) {
              Value rowsOfA = vector::TransferReadOp::create(
                  ib, il, partials, a, ValueRange{r, k}, zero,
                  ArrayRef<bool>{true, true});
              Value v = vector::TransferReadOp::create(
                  ib, il, run, column, ValueRange{k}, zero,
                  ArrayRef<bool>{true});
              Value vs = vector::BroadcastOp::create(ib, il, partials, v);
              scf::YieldOp::create(
                  ib, il,
                  vector::FMAOp::create(ib, il, rowsOfA, vs, acc[0])
                      .getResult());
            });
        read = vector::TransferReadOp::create(nb, l, sums, carried[0],
                                              ValueRange{r, c0}, zero,
                                              ArrayRef<bool>{true, true});
        SmallVector<Value> each;
        for (int64_t i = 0; i < group; ++i)
          each.push_back(vector::ReductionOp::create(
              nb, l, vector::CombiningKind::ADD,
              vector::ExtractOp::create(nb, l, depthLoop.getResult(0), i)));
        Value sum = arith::AddFOp::create(
            nb, l, read, vector::FromElementsOp::create(nb, l, sums, each));
        write = vector::TransferWriteOp::create(nb, l, sum, carried[0],
                                                ValueRange{r, c0},
                                                ArrayRef<bool>{true, true});
        scf::YieldOp::create(nb, l, write.getResult());
      });
  rewriter.replaceOp(op, groups.getResults());
  return {read, write};
}

/// Vectorizes the matmul tile `op` (K static) in K blocks of `blockK` (which
/// divides K once padded), row blocks of at most `rows` and register blocks
/// of `registerTile`, first padding it to static multiples of them. With
/// `liveColumns`, register blocks start only below it (the columns past it
/// are padding nobody reads).
LogicalResult vectorizeBlocks(RewriterBase &rewriter, linalg::MatmulOp op,
                              int64_t rows, int64_t blockK,
                              ArrayRef<int64_t> registerTile,
                              Value liveColumns = {},
                              const RegisterEpilogue *epilogue = nullptr) {
  int64_t tail = liveColumns
                     ? 0
                     : tailColumns(op.getStaticLoopRanges()[1], registerTile[1]);
  FailureOr<linalg::MatmulOp> padded = padTo(
      rewriter, op,
      {registerTile[0], tail ? tail : registerTile[1], blockK});
  if (failed(padded))
    return failure();
  // With an epilogue, the C that padding adds is where the register blocks
  // leave their rows, then copied out of it whole.
  auto paddedC = *padded == op ? tensor::PadOp()
                               : padded->getDpsInits()[0]
                                     .getDefiningOp<tensor::PadOp>();
  op = *padded;
  SmallVector<int64_t> bounds = op.getStaticLoopRanges();
  // Row blocks of whole register blocks that divide the tile's rows (a
  // partial block would be of dynamic size; the padded rows are whole
  // register blocks).
  int64_t rowBlock = std::min(rows, bounds[0]);
  rowBlock = std::max(registerTile[0], rowBlock - rowBlock % registerTile[0]);
  while (bounds[0] % rowBlock != 0)
    rowBlock -= registerTile[0];
  auto target = cast<TilingInterface>(op.getOperation());
  if (blockK < bounds[2]) {
    FailureOr<scf::SCFTilingResult> cacheBlocks =
        tileInLoops(rewriter, target, {0, 0, blockK});
    if (failed(cacheBlocks))
      return op.emitError("loop.vectorize could not tile this matmul by K");
    target = cast<TilingInterface>(cacheBlocks->tiledOps.front());
  }
  // Every row block reads the whole B block: a copy pays when there are
  // several.
  if (failed(packB(rewriter, cast<linalg::MatmulOp>(target.getOperation()),
                   /*copy=*/rowBlock < bounds[0])))
    return failure();
  // The tail columns are a matmul of their own: a single column as dot
  // products over all the tile's rows (K in whole vectors of 16 or 8),
  // wider ones in register blocks of their width.
  Value tileC = paddedC ? paddedC.getResult()
                        : epilogue ? epilogue->output : Value();
  SmallVector<std::pair<TilingInterface, SmallVector<int64_t>>> parts;
  if (tail) {
    rewriter.setInsertionPoint(target);
    auto [whole, rest] = linalg::splitOp(
        rewriter, target, 1, rewriter.getIndexAttr(bounds[1] - tail));
    target = whole;
    int64_t lanes = blockK % 16 == 0 ? 16 : blockK % 8 == 0 ? 8 : 0;
    // (Of f32 alone: products of narrower floats accumulate wider.)
    auto f32 = [](Operation *op) {
      return llvm::all_of(op->getOperandTypes(), [](Type t) {
        return getElementTypeOrSelf(t).isF32();
      });
    };
    if (tail == 1 && lanes && f32(rest)) {
      auto [read, write] =
          vectorizeColumn(rewriter, cast<linalg::MatmulOp>(rest.getOperation()),
                          registerTile[0], lanes);
      if (epilogue &&
          failed(applyRegisterEpilogue(rewriter, read, write, *epilogue,
                                       tileC)))
        return write->emitError("loop.vectorize could not compute the "
                                "epilogue of this matmul tile's last column");
    } else {
      parts.push_back({rest, {registerTile[0], tail, registerTile[2]}});
    }
  }
  if (rowBlock < bounds[0]) {
    FailureOr<scf::SCFTilingResult> rowBlocks =
        tileInLoops(rewriter, target, {rowBlock, 0, 0});
    if (failed(rowBlocks))
      return op.emitError("loop.vectorize could not tile this matmul by "
                          "rows");
    target = cast<TilingInterface>(rowBlocks->tiledOps.front());
  }
  parts.insert(parts.begin(), {target, SmallVector<int64_t>(registerTile)});
  for (auto &[part, tile] : parts) {
    // Column strips outside register rows (of a row block, or of the tile
    // for the tail columns): a strip of B stays in L1 while the register
    // rows pass it.
    FailureOr<scf::SCFTilingResult> tiled =
        tileInLoops(rewriter, part, tile, /*interchange=*/{1, 0, 2});
    if (failed(tiled))
      return op.emitError("loop.vectorize could not tile this matmul");
    // The tiles are static and divide the block, so no iteration reads the
    // loop's bound: lowering it skips the padding.
    if (liveColumns)
      cast<scf::ForOp>(tiled->loops.front().getOperation())
          .getUpperBoundMutable()
          .assign(liveColumns);
    Operation *block = tiled->tiledOps.front();
    rewriter.setInsertionPoint(block);
    FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(
        rewriter, block, /*inputVectorSizes=*/{}, /*inputScalableVecDims=*/{},
        /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
        /*assumeDynamicDimsMatchVecSizes=*/false,
        /*createNamedContraction=*/true);
    if (failed(vectorized))
      return block->emitError("loop.vectorize could not vectorize a block");
    rewriter.replaceOp(block, vectorized->replacements);
    // The depth loop is innermost. Its accumulator is a slice of the C tile
    // read by a transfer_read: hoisting peels one subset per call, after
    // the constants the vectorizer created inside it have left.
    LoopLikeOpInterface depthLoop = tiled->loops.back();
    for (int peel = 0; peel < 2; ++peel) {
      moveLoopInvariantCode(depthLoop);
      depthLoop = hoistLoopInvariantSubsets(rewriter, depthLoop);
    }
    if (!epilogue)
      continue;
    if (failed(applyRegisterEpilogue(rewriter, depthLoop, *epilogue,
                                     tileC))) {
      if (epilogue->generic)
        return epilogue->generic->emitError(
            "loop.vectorize could not compute this epilogue on the register "
            "blocks of its matmul tile");
      return depthLoop->emitError("loop.vectorize could not start the "
                                  "register blocks of this matmul tile from "
                                  "its fill");
    }
  }
  if (!epilogue)
    return success();
  // No accumulator reads the padded C any more: it needs no zeros, nor a
  // copy of the epilogue's output (not yet computed) in it.
  if (paddedC) {
    RankedTensorType type = paddedC.getResultType();
    rewriter.setInsertionPoint(paddedC);
    rewriter.replaceOpWithNewOp<tensor::EmptyOp>(paddedC, type.getShape(),
                                                 type.getElementType());
  }
  return success();
}

/// Splits the matmul tile `op`, whose rows or columns are dynamic (the edge
/// of a tiling that does not divide the matmul), into the tile of full size
/// (their constant upper bound), on its operands cast to that static shape,
/// and the partial tile, under an scf.if on the sizes: only the partial
/// tiles at the edge are then padded, each full tile read in place.
/// The two tiles of versionFullTiles, and the full one's C shape.
struct Versions {
  linalg::MatmulOp full, partial;
  SmallVector<int64_t> fullShape;
};

/// Whether dim `d` of `tensor` is `size`, at run time.
Value dimIs(RewriterBase &rewriter, Location loc, Value tensor, int64_t d,
            int64_t size) {
  return arith::CmpIOp::create(
      rewriter, loc, arith::CmpIPredicate::eq,
      tensor::DimOp::create(rewriter, loc, tensor, d),
      arith::ConstantIndexOp::create(rewriter, loc, size));
}

/// Replaces the matmul tile `op` by an scf.if on `condition`: then `op` on
/// its operands cast to the static C shape `shape` (A [shape[0], K], B [K,
/// shape[1]]), else a clone of `op`. The two matmuls.
std::pair<linalg::MatmulOp, linalg::MatmulOp>
versionOn(RewriterBase &rewriter, linalg::MatmulOp op, Value condition,
          ArrayRef<int64_t> shape) {
  Location loc = op.getLoc();
  Value init = op.getDpsInits()[0];
  auto type = cast<RankedTensorType>(init.getType());
  auto toShape = [&](Value v, ArrayRef<int64_t> to) -> Value {
    auto from = cast<RankedTensorType>(v.getType());
    if (from.getShape() == to)
      return v;
    return tensor::CastOp::create(rewriter, loc, from.clone(to), v);
  };
  auto branch = scf::IfOp::create(rewriter, loc, TypeRange{type}, condition,
                                  /*withElseRegion=*/true);
  rewriter.setInsertionPointToStart(branch.thenBlock());
  int64_t k = op.getStaticLoopRanges()[2];
  auto version = linalg::MatmulOp::create(
      rewriter, loc,
      ValueRange{toShape(op.getDpsInputs()[0], {shape[0], k}),
                 toShape(op.getDpsInputs()[1], {k, shape[1]})},
      ValueRange{toShape(init, shape)});
  scf::YieldOp::create(rewriter, loc,
                       toShape(version.getResult(0), type.getShape()));
  rewriter.setInsertionPointToStart(branch.elseBlock());
  auto other = cast<linalg::MatmulOp>(rewriter.clone(*op));
  scf::YieldOp::create(rewriter, loc, other.getResult(0));
  rewriter.replaceOp(op, branch.getResults());
  return {version, other};
}

FailureOr<Versions> versionFullTiles(RewriterBase &rewriter,
                                     linalg::MatmulOp op) {
  Location loc = op.getLoc();
  Value init = op.getDpsInits()[0];
  auto type = cast<RankedTensorType>(init.getType());
  SmallVector<int64_t> full(type.getShape());
  rewriter.setInsertionPoint(op);
  Value isFull;
  for (int64_t d : {0, 1}) {
    if (!type.isDynamicDim(d))
      continue;
    FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
        presburger::BoundType::UB, {init, d}, /*stopCondition=*/nullptr,
        /*closedUB=*/true);
    if (failed(bound))
      return op.emitError("loop.vectorize found no constant bound on the ")
             << (d == 0 ? "rows" : "columns") << " of this matmul tile";
    full[d] = *bound;
    Value equal = dimIs(rewriter, loc, init, d, *bound);
    isFull = isFull ? arith::AndIOp::create(rewriter, loc, isFull, equal)
                    : equal;
  }
  auto [fullTile, partialTile] = versionOn(rewriter, op, isFull, full);
  return Versions{fullTile, partialTile, full};
}

/// The partial edge tile `op` (rows or columns dynamic, C at most
/// `fullShape`) computed as a full tile is, on a copy of its C padded to
/// whole blocks: K blocks of `blockK`, each B block copied once (columns
/// padded with zeros, rows one cache line longer, as packB) for all the row
/// blocks; row blocks of `rowBlock` over the tile's rows, their A block
/// padded; register blocks over its live columns only. Where every row
/// block read B in place instead, an edge tile of 1000^3 (104 rows of a
/// 128-row tiling, or 232 columns of 256) ran at a third of a full one's
/// speed. A tile of a single row has a version of its own where one can
/// occur (versionSingleRow). The result is materialized in the tile's own C
/// (see padTo).
LogicalResult vectorizePacked(RewriterBase &rewriter, linalg::MatmulOp op,
                              ArrayRef<int64_t> fullShape, int64_t rowBlock,
                              int64_t blockK,
                              ArrayRef<int64_t> registerTile) {
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(op);
  Value a = op.getDpsInputs()[0], bMat = op.getDpsInputs()[1];
  Value c = op.getDpsInits()[0];
  auto cType = cast<RankedTensorType>(c.getType());
  auto zeroOf = [&](Value v) -> Value {
    Type element = getElementTypeOrSelf(v.getType());
    return arith::ConstantOp::create(rewriter, loc, element,
                                     rewriter.getZeroAttr(element));
  };
  Value zero = zeroOf(c), aZero = zeroOf(a), bZero = zeroOf(bMat);
  Type element = cType.getElementType(), bElement = bZero.getType();
  int64_t k = op.getStaticLoopRanges()[2];
  int64_t paddedRows = llvm::alignTo(fullShape[0], rowBlock);
  int64_t paddedCols = llvm::alignTo(fullShape[1], registerTile[1]);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  auto size = [&](int64_t d) -> OpFoldResult {
    if (!cType.isDynamicDim(d))
      return rewriter.getIndexAttr(cType.getDimSize(d));
    return tensor::DimOp::create(rewriter, loc, c, d).getResult();
  };
  OpFoldResult rows = size(0), cols = size(1);
  AffineExpr d0, s0;
  bindDims(ctx, d0);
  bindSymbols(ctx, s0);
  // Register blocks at or past this column are padding.
  Value liveColumns;
  if (cType.isDynamicDim(1))
    liveColumns = affine::makeComposedAffineApply(
                      rewriter, loc,
                      d0.ceilDiv(registerTile[1]) * registerTile[1], {cols})
                      .getResult();
  auto padded = RankedTensorType::get({paddedRows, paddedCols}, element);
  Value cPadded = tensor::createPadHighOp(padded, c, zero, /*nofold=*/false,
                                          loc, rewriter);
  auto ones = getAsIndexOpFoldResult(ctx, {1, 1});
  // The extent from `offset` on, at most `block`, of a dim of `extent`.
  auto clipped = [&](Value offset, int64_t block, OpFoldResult extent) {
    return affine::makeComposedFoldedAffineMin(
        rewriter, loc,
        AffineMap::get(1, 1, {rewriter.getAffineConstantExpr(block), s0 - d0},
                       ctx),
        {offset, extent});
  };
  auto kLoop = scf::ForOp::create(
      rewriter, loc, index(0), index(k), index(blockK), ValueRange{cPadded});
  rewriter.setInsertionPointToStart(kLoop.getBody());
  Value kb = kLoop.getInductionVar();
  OpFoldResult depth = k % blockK ? clipped(kb, blockK, rewriter.getIndexAttr(k))
                                  : rewriter.getIndexAttr(blockK);
  // B's block in a buffer of rows one cache line longer (see emptyBBlock);
  // where it does not fill the block, zeros pad it.
  Value bBlock = emptyBBlock(
      rewriter, loc, RankedTensorType::get({blockK, paddedCols}, bElement));
  Value bSlice = tensor::ExtractSliceOp::create(
      rewriter, loc, bMat, {kb, rewriter.getIndexAttr(0)}, {depth, cols}, ones);
  if (k % blockK || cType.isDynamicDim(1) || cType.getDimSize(1) != paddedCols) {
    bBlock = linalg::FillOp::create(rewriter, loc, bZero, bBlock).getResult(0);
    bBlock = tensor::InsertSliceOp::create(
        rewriter, loc, bSlice, bBlock, getAsIndexOpFoldResult(ctx, {0, 0}),
        {depth, cols}, ones);
  } else {
    FailureOr<Value> packed = copyRows(rewriter, loc, bSlice, bBlock);
    if (failed(packed))
      return failure();
    bBlock = *packed;
  }
  Value rowsValue = getValueOrCreateConstantIndexOp(rewriter, loc, rows);
  auto rowLoop =
      scf::ForOp::create(rewriter, loc, index(0), rowsValue, index(rowBlock),
                         ValueRange{kLoop.getRegionIterArgs()[0]});
  rewriter.setInsertionPointToStart(rowLoop.getBody());
  Value i = rowLoop.getInductionVar();
  Value cAcc = rowLoop.getRegionIterArgs()[0];
  Value aSlice = tensor::ExtractSliceOp::create(
      rewriter, loc, a, {i, kb}, {clipped(i, rowBlock, rows), depth}, ones);
  Value aBlock = tensor::createPadHighOp(
      RankedTensorType::get({rowBlock, blockK}, aZero.getType()), aSlice, aZero,
      /*nofold=*/false, loc, rewriter);
  SmallVector<OpFoldResult> cAt = {i, rewriter.getIndexAttr(0)};
  SmallVector<OpFoldResult> cSizes =
      getAsIndexOpFoldResult(ctx, {rowBlock, paddedCols});
  Value cBlock = tensor::ExtractSliceOp::create(
      rewriter, loc, RankedTensorType::get({rowBlock, paddedCols}, element),
      cAcc, cAt, cSizes, ones);
  auto block = linalg::MatmulOp::create(rewriter, loc,
                                        ValueRange{aBlock, bBlock},
                                        ValueRange{cBlock});
  Value stored = tensor::InsertSliceOp::create(rewriter, loc,
                                               block.getResult(0), cAcc, cAt,
                                               cSizes, ones);
  scf::YieldOp::create(rewriter, loc, stored);
  rewriter.setInsertionPointAfter(rowLoop);
  scf::YieldOp::create(rewriter, loc, rowLoop.getResult(0));
  rewriter.setInsertionPointAfter(kLoop);
  Value result = tensor::ExtractSliceOp::create(
      rewriter, loc, cType, kLoop.getResult(0),
      getAsIndexOpFoldResult(ctx, {0, 0}), {rows, cols}, ones);
  result = bufferization::MaterializeInDestinationOp::create(rewriter, loc,
                                                              result, c)
               .getResult();
  rewriter.replaceOp(op, result);
  return vectorizeBlocks(rewriter, block, rowBlock, blockK, registerTile,
                         liveColumns);
}

/// Splits from the partial edge tile `op` (`fullShape` as versionFullTiles
/// found it) the tile of a single row and all the columns, a decoding step's
/// (batch 1, one token), under an scf.if: it reads B in place in blocks of
/// one row, where the partial tile would copy each K block of B and
/// multiply in register blocks of several rows, all but one of them padding
/// (1x1024x1024 over a size symbol: 0.100 ms, 0.045 static). The single
/// row's tile (null when no tile has a single row) and the partial tile.
std::pair<linalg::MatmulOp, linalg::MatmulOp>
versionSingleRow(RewriterBase &rewriter, linalg::MatmulOp op,
                 ArrayRef<int64_t> fullShape) {
  Value init = op.getDpsInits()[0];
  auto type = cast<RankedTensorType>(init.getType());
  if (!type.isDynamicDim(0))
    return {linalg::MatmulOp(), op};
  // Of a result of static rows, only an edge of one row has one: the tile
  // of C is a slice (under its fill and the batch dims' collapse) of the
  // result, whose rows are its next to last dim.
  Value c = init;
  while (Operation *def = c.getDefiningOp()) {
    if (auto fill = dyn_cast<linalg::FillOp>(def))
      c = fill.getOutputs()[0];
    else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def))
      c = collapse.getSrc();
    else
      break;
  }
  if (auto slice = c.getDefiningOp<tensor::ExtractSliceOp>()) {
    RankedTensorType result = slice.getSourceType();
    int64_t rows = result.getRank() >= 2
                       ? result.getDimSize(result.getRank() - 2)
                       : ShapedType::kDynamic;
    if (!ShapedType::isDynamic(rows) && rows % fullShape[0] != 1)
      return {linalg::MatmulOp(), op};
  }
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value isRow = dimIs(rewriter, loc, init, 0, 1);
  if (type.isDynamicDim(1))
    isRow = arith::AndIOp::create(rewriter, loc, isRow,
                                  dimIs(rewriter, loc, init, 1, fullShape[1]));
  return versionOn(rewriter, op, isRow, {1, fullShape[1]});
}

} // namespace

int64_t tessel::tailColumns(int64_t columns, int64_t width) {
  if (ShapedType::isDynamic(columns) || columns <= width)
    return 0;
  int64_t left = columns % width;
  if (left == 0)
    return 0;
  auto tail = static_cast<int64_t>(llvm::PowerOf2Ceil(left));
  return tail < width && (columns - left) % tail == 0 ? tail : 0;
}

linalg::LinalgOp tessel::findVectorizableMatmul(func::FuncOp func,
                                                TilingInterface root,
                                                std::string &why) {
  linalg::LinalgOp matmul = findRootContraction(func, root, why);
  if (!matmul)
    return {};
  // Batch, M and N may be dynamic (partial tiles are versioned); the K
  // blocks are static.
  std::optional<unsigned> batch = matmulBatchLoops(matmul, /*broadcast=*/true);
  if (!batch ||
      ShapedType::isDynamic(matmul.getStaticLoopRanges()[*batch + 2]) ||
      !matmul.hasPureTensorSemantics()) {
    why = "its contraction is not a (batched) matmul of static depth on "
          "tensors, A (m, k) and B (k, n)";
    return {};
  }
  return matmul;
}

void tessel::registerVectorizeMatmulInterfaces(DialectRegistry &registry) {
  vector::registerSubsetOpInterfaceExternalModels(registry);
}

LogicalResult tessel::vectorizeMatmul(RewriterBase &rewriter,
                                      linalg::LinalgOp contraction,
                                      int64_t rows, int64_t depth,
                                      ArrayRef<int64_t> registerTile) {
  FailureOr<linalg::MatmulOp> matmul = asMatmul(rewriter, contraction);
  if (failed(matmul))
    return failure();
  linalg::MatmulOp op = *matmul;
  int64_t k = op.getStaticLoopRanges()[2];
  if (ShapedType::isDynamic(k) || !op.hasPureTensorSemantics())
    return op.emitError("loop.vectorize needs a matmul on tensors of static "
                        "depth (K); this tile is ")
           << op->getResult(0).getType();
  // K in as few blocks of at most `depth` as cover it, of equal size
  // rounded up to whole register blocks: padding K to a multiple of
  // `depth` itself would add up to a block of zeros (K = 576 in blocks of
  // 256: 768, a third more work; in blocks of 192: none). Up to twice as
  // many blocks are taken when they divide K in whole register blocks, as
  // a padded K copies the tile's A (K = 1000: 5 blocks of 200, not 4 of
  // 252).
  int64_t blocks = std::max<int64_t>(1, llvm::divideCeil(k, depth));
  for (int64_t more = blocks; more <= 2 * blocks; ++more)
    if (k % more == 0 && (k / more) % registerTile[2] == 0) {
      blocks = more;
      break;
    }
  int64_t blockK =
      llvm::alignTo(llvm::divideCeil(k, blocks), registerTile[2]);
  SmallVector<int64_t> bounds = op.getStaticLoopRanges();
  if (!ShapedType::isDynamicShape(bounds)) {
    // K in one block (padded to whole register blocks): the register
    // blocks start from the fill's value, and where the tile's rows are
    // unpadded, its epilogue may run on them (its columns may be padded).
    std::optional<RegisterEpilogue> epilogue;
    if (blockK >= k)
      epilogue = registerEpilogue(rewriter, op,
                                  bounds[0] % registerTile[0] != 0);
    if (failed(vectorizeBlocks(rewriter, op, rows, blockK, registerTile,
                               Value(), epilogue ? &*epilogue : nullptr)))
      return failure();
    if (epilogue && epilogue->generic)
      rewriter.replaceOp(epilogue->generic, epilogue->read());
    return success();
  }
  FailureOr<Versions> versions = versionFullTiles(rewriter, op);
  if (failed(versions) ||
      failed(vectorizeBlocks(rewriter, versions->full, rows, blockK,
                             registerTile)))
    return failure();
  // A single row in register blocks of one row, as many columns wide as
  // the usual block holds accumulators, up to 64 and the tile's width, in
  // whole vectors (as CpuMatmul.cpp's default for a matmul of one row).
  auto [row, partial] =
      versionSingleRow(rewriter, versions->partial, versions->fullShape);
  if (row) {
    int64_t lanes = std::max<int64_t>(registerTile[1] / 2, 1);
    int64_t columns = std::min<int64_t>(
        {registerTile[0] * registerTile[1], 64, versions->fullShape[1]});
    if (columns > lanes)
      columns -= columns % lanes;
    if (failed(vectorizeBlocks(rewriter, row, 1, blockK,
                               {1, columns, registerTile[2]})))
      return failure();
  }
  // The partial tile as a full one, over its live blocks only.
  int64_t rowBlock = llvm::alignTo(std::max(rows, registerTile[0]),
                                   registerTile[0]);
  return vectorizePacked(rewriter, partial, versions->fullShape, rowBlock,
                         blockK, registerTile);
}
