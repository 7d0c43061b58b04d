//===- PackPatches.cpp - B blocks of a convolution's patches -------------===//
//
// An NCHW convolution computed as a matmul (linalg-im2col) reads its
// patches as B. Gathered by the patch generic, every element costs a
// decomposition of its indices by division and a scalar load and store, and
// then the B block is copied again into its packed buffer: a 3x3
// convolution over 64x56x56 spent about as long in these as in its FMAs.
// Yet a row of a B block, a fixed (channel, kh, kw), over output pixels
// that are whole output rows (or equal parts of one) is a few runs of input
// rows: contiguous at stride 1, evenly spaced at a larger one. Here the
// block is written from them, a vector per run, its indices computed once
// per row.
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/PackPatches.h"
#include "passes/cpu/InputRuns.h"
#include "passes/linalg/Im2Col.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace tessel;

namespace {

/// Whether `v` is a multiple of `m` for every value it takes: a constant,
/// the induction variable of a loop whose lower bound and step are, or a
/// sum of such.
bool isMultipleOf(OpFoldResult v, int64_t m) {
  if (std::optional<int64_t> constant = getConstantIntValue(v))
    return *constant % m == 0;
  Value value = cast<Value>(v);
  auto multiples = [&](ArrayRef<OpFoldResult> values) {
    return llvm::all_of(values,
                        [&](OpFoldResult w) { return isMultipleOf(w, m); });
  };
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Operation *owner = arg.getOwner()->getParentOp();
    if (auto loop = dyn_cast<scf::ForallOp>(owner)) {
      unsigned i = arg.getArgNumber();
      if (i >= loop.getRank())
        return false;
      return multiples({loop.getMixedLowerBound()[i], loop.getMixedStep()[i]});
    }
    if (auto loop = dyn_cast<scf::ForOp>(owner))
      return arg == loop.getInductionVar() &&
             multiples({loop.getLowerBound(), loop.getStep()});
    return false;
  }
  if (auto add = value.getDefiningOp<arith::AddIOp>())
    return multiples({add.getLhs(), add.getRhs()});
  if (auto apply = value.getDefiningOp<affine::AffineApplyOp>()) {
    // A sum of dims and symbols (tiling's offsets), each a multiple.
    AffineExpr expr = apply.getAffineMap().getResult(0);
    SmallVector<AffineExpr> terms = {expr};
    while (!terms.empty()) {
      AffineExpr term = terms.pop_back_val();
      auto binary = dyn_cast<AffineBinaryOpExpr>(term);
      if (binary && binary.getKind() == AffineExprKind::Add) {
        terms.push_back(binary.getLHS());
        terms.push_back(binary.getRHS());
      } else if (auto dim = dyn_cast<AffineDimExpr>(term)) {
        if (!isMultipleOf(apply.getDimOperands()[dim.getPosition()], m))
          return false;
      } else if (auto sym = dyn_cast<AffineSymbolExpr>(term)) {
        if (!isMultipleOf(apply.getSymbolOperands()[sym.getPosition()], m))
          return false;
      } else if (auto constant = dyn_cast<AffineConstantExpr>(term)) {
        if (constant.getValue() % m != 0)
          return false;
      } else {
        return false;
      }
    }
    return true;
  }
  return false;
}

/// Where a B block lies in the patches: the gather generic that computes
/// them, and the block's first batch index, patch row and pixel, each a
/// sum of the offsets of the slices between them. Where a matmul tile's
/// padding to whole register blocks lies between them (`padded`), the
/// patches fill the block's first `validColumns` columns and its rows up to
/// `paddedRows` less `rowInPadding`; the rest is zeros.
struct PatchBlock {
  linalg::GenericOp gather;
  PatchGeometry geometry;
  SmallVector<OpFoldResult> batch, row, pixel;
  bool padded = false;
  int64_t paddedRows = 0; // the rows that the padding extends
  SmallVector<OpFoldResult> rowInPadding; // the block's first row there
  int64_t validColumns = 0;
};

/// Adds the offsets of `slice` (unit strides, not rank-reducing) to
/// `offsets`, one list of summands per dim. False where it cannot.
bool addOffsets(tensor::ExtractSliceOp slice,
                MutableArrayRef<SmallVector<OpFoldResult>> offsets) {
  if (slice.getSourceType().getRank() != slice.getType().getRank() ||
      !slice.hasUnitStride() ||
      slice.getType().getRank() != static_cast<int64_t>(offsets.size()))
    return false;
  for (auto [summands, offset] : llvm::zip(offsets, slice.getMixedOffsets()))
    summands.push_back(offset);
  return true;
}

/// Adds the offsets of the slices that `v` is (2-D or 3-D, as `offsets`)
/// and returns what they slice.
std::optional<Value>
throughSlices(Value v, MutableArrayRef<SmallVector<OpFoldResult>> offsets) {
  while (auto slice = v.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (!addOffsets(slice, offsets))
      return std::nullopt;
    v = slice.getSource();
  }
  return v;
}

/// The patches `block` (2-D, static) is a slice of: slices of the patch
/// gather's [1, K, P] tile collapsed to [K, P], maybe padded with zeros
/// after its rows and columns, the tile itself the slice of the gather's
/// destination at its offsets.
std::optional<PatchBlock> findPatchBlock(Value block) {
  auto blockType = cast<RankedTensorType>(block.getType());
  SmallVector<SmallVector<OpFoldResult>> offsets(2);
  std::optional<Value> v = throughSlices(block, offsets);
  if (!v)
    return std::nullopt;
  std::optional<PatchBlock> found(std::in_place);
  if (auto pad = v->getDefiningOp<tensor::PadOp>()) {
    Value value = pad.getConstantPaddingValue();
    auto source = pad.getSourceType();
    if (!value || !matchPattern(value, m_AnyZeroFloat()) ||
        !source.hasStaticShape() ||
        !llvm::all_of(pad.getStaticLow(), [](int64_t l) { return l == 0; }))
      return std::nullopt;
    // The columns must be known: the block's first column is.
    int64_t column = 0;
    for (OpFoldResult offset : offsets[1]) {
      std::optional<int64_t> constant = getConstantIntValue(offset);
      if (!constant)
        return std::nullopt;
      column += *constant;
    }
    found->padded = true;
    found->paddedRows = source.getDimSize(0);
    found->rowInPadding = offsets[0];
    found->validColumns = std::clamp<int64_t>(source.getDimSize(1) - column,
                                              0, blockType.getDimSize(1));
    v = throughSlices(pad.getSource(), offsets);
    if (!v)
      return std::nullopt;
  }
  auto collapse = v->getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getSrcType().getRank() != 3 ||
      collapse.getSrcType().getDimSize(0) != 1 ||
      collapse.getReassociationIndices() !=
          SmallVector<ReassociationIndices>{{0, 1}, {2}})
    return std::nullopt;
  offsets.insert(offsets.begin(), SmallVector<OpFoldResult>{});
  v = throughSlices(collapse.getSrc(), offsets);
  if (!v)
    return std::nullopt;
  auto gather = v->getDefiningOp<linalg::GenericOp>();
  if (!gather || gather->getNumResults() != 1)
    return std::nullopt;
  std::optional<PatchGeometry> geometry = getPatchGeometry(gather);
  if (!geometry)
    return std::nullopt;
  // A tile of the gather (its output read at the identity) computes the
  // patches at its destination's offsets.
  if (!throughSlices(gather.getDpsInits()[0], offsets))
    return std::nullopt;
  found->gather = gather;
  found->geometry = *geometry;
  found->batch = offsets[0];
  found->row = offsets[1];
  found->pixel = offsets[2];
  return found;
}

/// The input the gather reads (by tensor.extract, in bounds): NCHW, static.
Value gatherSource(linalg::GenericOp gather) {
  auto extracts = gather.getBody()->getOps<tensor::ExtractOp>();
  if (!llvm::hasSingleElement(extracts))
    return {};
  Value source = (*extracts.begin()).getTensor();
  auto type = dyn_cast<RankedTensorType>(source.getType());
  if (!type || type.getRank() != 4 || !type.hasStaticShape() ||
      gather->isAncestor(source.getParentBlock()->getParentOp()))
    return {};
  return source;
}

} // namespace

Value tessel::packPatches(RewriterBase &rewriter, Location loc, Value block,
                          Value dest) {
  auto blockType = cast<RankedTensorType>(block.getType());
  if (!blockType.hasStaticShape())
    return {};
  std::optional<PatchBlock> found = findPatchBlock(block);
  if (!found)
    return {};
  Value source = gatherSource(found->gather);
  if (!source)
    return {};
  const PatchGeometry &g = found->geometry;
  int64_t depth = blockType.getDimSize(0);
  int64_t columns = found->padded ? found->validColumns
                                  : blockType.getDimSize(1);
  int64_t width = g.output[1];
  // The block's columns as runs of pixels of one output row each.
  int64_t run = columns % width == 0 ? width
                : width % columns == 0 ? columns
                                       : 0;
  if (run == 0 || !llvm::all_of(found->pixel, [&](OpFoldResult offset) {
        return isMultipleOf(offset, run);
      }))
    return {};

  MLIRContext *ctx = rewriter.getContext();
  auto sum = [&](ArrayRef<OpFoldResult> summands) -> Value {
    AffineExpr total = getAffineConstantExpr(0, ctx);
    for (unsigned i = 0; i < summands.size(); ++i)
      total = total + getAffineSymbolExpr(i, ctx);
    return getValueOrCreateConstantIndexOp(
        rewriter, loc,
        affine::makeComposedFoldedAffineApply(
            rewriter, loc, AffineMap::get(0, summands.size(), total),
            summands));
  };
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value batch = sum(found->batch), firstRow = sum(found->row),
        firstPixel = sum(found->pixel);

  // Padding: the patches in the rows up to the padding's first and the
  // first `columns` columns, zeros in the rest (the columns past them, then
  // the rows), each zeroed alone: zeroing the whole block first wrote a
  // 3x3 convolution's blocks twice (13 of ResNet-18's 37 MB of memset).
  Value rowCount = index(depth);
  if (found->padded) {
    Type element = blockType.getElementType();
    Value zero = arith::ConstantOp::create(rewriter, loc, element,
                                           rewriter.getZeroAttr(element));
    auto zeroPart = [&](OpFoldResult row, OpFoldResult column,
                        OpFoldResult rowCount, OpFoldResult columnCount) {
      SmallVector<OpFoldResult> offsets = {row, column},
                                sizes = {rowCount, columnCount},
                                strides(2, rewriter.getIndexAttr(1));
      Value part = tensor::ExtractSliceOp::create(rewriter, loc, dest,
                                                  offsets, sizes, strides);
      Value zeros = linalg::FillOp::create(rewriter, loc, zero, part)
                        .getResult(0);
      dest = tensor::InsertSliceOp::create(rewriter, loc, zeros, dest,
                                           offsets, sizes, strides);
    };
    int64_t blockColumns = blockType.getDimSize(1);
    if (columns < blockColumns)
      zeroPart(rewriter.getIndexAttr(0), rewriter.getIndexAttr(columns),
               rewriter.getIndexAttr(depth),
               rewriter.getIndexAttr(blockColumns - columns));
    AffineExpr rest = getAffineConstantExpr(found->paddedRows, ctx);
    for (unsigned i = 0; i < found->rowInPadding.size(); ++i)
      rest = rest - getAffineSymbolExpr(i, ctx);
    OpFoldResult valid = affine::makeComposedFoldedAffineMin(
        rewriter, loc,
        AffineMap::get(0, found->rowInPadding.size(),
                       {getAffineConstantExpr(depth, ctx), rest}, ctx),
        found->rowInPadding);
    // A block wholly in the padding has none (and must not zero before
    // its first row).
    valid = affine::makeComposedFoldedAffineMax(
        rewriter, loc,
        AffineMap::get(0, 1, {getAffineConstantExpr(0, ctx),
                              getAffineSymbolExpr(0, ctx)}, ctx),
        {valid});
    rowCount = getValueOrCreateConstantIndexOp(rewriter, loc, valid);
    if (getConstantIntValue(valid) != depth && columns > 0) {
      OpFoldResult padding = affine::makeComposedFoldedAffineApply(
          rewriter, loc, getAffineConstantExpr(depth, ctx) -
                             getAffineSymbolExpr(0, ctx), {valid});
      zeroPart(valid, rewriter.getIndexAttr(0), padding,
               rewriter.getIndexAttr(columns));
    }
  }
  // Of runs of whole rows, the output row of the block's first pixel.
  Value firstOutputRow =
      run == width
          ? arith::DivUIOp::create(rewriter, loc, firstPixel, index(width))
          : Value();
  auto rows = scf::ForOp::create(rewriter, loc, index(0), rowCount, index(1),
                                 ValueRange{dest});
  rewriter.setInsertionPointToStart(rows.getBody());
  Value r = rows.getInductionVar();
  Value patchRow = arith::AddIOp::create(rewriter, loc, firstRow, r);
  Value kernelRows = index(g.kernel[0]), kernelColumns = index(g.kernel[1]);
  Value kw = arith::RemUIOp::create(rewriter, loc, patchRow, kernelColumns);
  Value rest = arith::DivUIOp::create(rewriter, loc, patchRow, kernelColumns);
  Value kh = arith::RemUIOp::create(rewriter, loc, rest, kernelRows);
  Value channel = arith::DivUIOp::create(rewriter, loc, rest, kernelRows);
  auto scaled = [&](Value v, int64_t factor) -> Value {
    return factor == 1 ? v
                       : arith::MulIOp::create(rewriter, loc, v, index(factor))
                             .getResult();
  };
  Value rowTap = scaled(kh, g.dilations[0]);
  Value columnTap = scaled(kw, g.dilations[1]);

  auto runs = scf::ForOp::create(rewriter, loc, index(0),
                                 index(columns / run), index(1),
                                 ValueRange{rows.getRegionIterArgs()[0]});
  rewriter.setInsertionPointToStart(runs.getBody());
  Value column = scaled(runs.getInductionVar(), run);
  // The run's output row and first column: of whole rows, the block's
  // first row plus the run's index, from column 0.
  Value oh, iw = columnTap;
  if (run == width) {
    oh = arith::AddIOp::create(rewriter, loc, firstOutputRow,
                               runs.getInductionVar());
  } else {
    Value pixel = arith::AddIOp::create(rewriter, loc, firstPixel, column);
    oh = arith::DivUIOp::create(rewriter, loc, pixel, index(width));
    Value ow = arith::RemUIOp::create(rewriter, loc, pixel, index(width));
    iw = arith::AddIOp::create(rewriter, loc, scaled(ow, g.strides[1]),
                               columnTap);
  }
  Value ih = arith::AddIOp::create(rewriter, loc, scaled(oh, g.strides[0]),
                                   rowTap);
  // Vectors of at most 64 elements read (LLVM splits them into registers);
  // a stride reads the span of its lanes and keeps every stride-th.
  int64_t stride = g.strides[1];
  int64_t lanes = std::max<int64_t>(1, 64 / stride);
  Value packed = runs.getRegionIterArgs()[0];
  for (int64_t j = 0; j < run; j += lanes) {
    Value at = arith::AddIOp::create(rewriter, loc, iw, index(j * stride));
    Value read = readInputRun(rewriter, loc, source,
                              ValueRange{batch, channel, ih, at},
                              std::min(lanes, run - j), stride);
    Value to = arith::AddIOp::create(rewriter, loc, column, index(j));
    packed = vector::TransferWriteOp::create(rewriter, loc, read, packed,
                                             ValueRange{r, to},
                                             ArrayRef<bool>{true})
                 .getResult();
  }
  scf::YieldOp::create(rewriter, loc, packed);
  rewriter.setInsertionPointAfter(runs);
  scf::YieldOp::create(rewriter, loc, runs.getResult(0));
  rewriter.setInsertionPointAfter(rows);
  return rows.getResult(0);
}
