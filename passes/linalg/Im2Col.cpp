//===- Im2Col.cpp - convolutions as im2col plus a matmul ------------------===//
//
// A convolution is a matmul of the filter with the input's patches. Said
// so in linalg, it takes every schedule a matmul has (register blocks and
// packing on the CPU), where the convolution's own seven-loop nest has
// none.
//
// The patches are a generic that reads the input by tensor.extract at
// indices computed from linalg.index (through a constant padding in front
// of the convolution by bounds tests), not through an indexing map: the
// patch index decomposes with floordiv and mod, and tiling slices an
// operand read through such a map wrongly (it takes the map's values at a
// tile's corners as the slice's bounds, which mod does not respect).
//
//===----------------------------------------------------------------------===//

#include "passes/linalg/Im2Col.h"
#include "passes/Passes.h"
#include "passes/linalg/Contractions.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace tessel {
#define GEN_PASS_DEF_LINALGIM2COL
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

void tessel::setPatchGeometry(Operation *gather, const PatchGeometry &g) {
  gather->setAttr(kPatchGeometryAttr,
                  DenseI64ArrayAttr::get(
                      gather->getContext(),
                      {g.channels, g.kernel[0], g.kernel[1], g.strides[0],
                       g.strides[1], g.dilations[0], g.dilations[1],
                       g.output[0], g.output[1]}));
}

std::optional<tessel::PatchGeometry>
tessel::getPatchGeometry(Operation *gather) {
  auto values = gather->getAttrOfType<DenseI64ArrayAttr>(kPatchGeometryAttr);
  if (!values || values.size() != 9)
    return std::nullopt;
  ArrayRef<int64_t> v = values.asArrayRef();
  return PatchGeometry{v[0], {v[1], v[2]}, {v[3], v[4]}, {v[5], v[6]},
                       {v[7], v[8]}};
}

namespace {

/// The indices of `index` in a row-major space of `extents`.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value index,
                               ArrayRef<int64_t> extents) {
  SmallVector<Value> indices(extents.size());
  for (int64_t i = extents.size() - 1; i >= 0; --i) {
    Value extent = arith::ConstantIndexOp::create(b, loc, extents[i]);
    indices[i] = i == 0 ? index : arith::RemUIOp::create(b, loc, index, extent);
    if (i > 0)
      index = arith::DivUIOp::create(b, loc, index, extent);
  }
  return indices;
}

/// `out * stride + tap * dilation - pad`: the input row or column a tap
/// reads (negative, or past the end, in the padding).
Value inputIndex(OpBuilder &b, Location loc, Value out, Value tap,
                 int64_t stride, int64_t dilation, int64_t pad) {
  auto scaled = [&](Value v, int64_t factor) -> Value {
    return arith::MulIOp::create(
        b, loc, v, arith::ConstantIndexOp::create(b, loc, factor));
  };
  Value index = arith::AddIOp::create(b, loc, scaled(out, stride),
                                      scaled(tap, dilation));
  if (pad == 0)
    return index;
  return arith::SubIOp::create(b, loc, index,
                               arith::ConstantIndexOp::create(b, loc, pad));
}

/// What the patches read: the convolution's input or, when that is a
/// constant spatial padding of another tensor, that tensor, whose bounds
/// the gather then tests (padding no longer copies the input).
struct PatchSource {
  Value tensor;
  int64_t padTop = 0, padLeft = 0;
  Value padding; // the padding value, or null: no padding
};

PatchSource patchSource(Value input, int64_t hDim, int64_t wDim) {
  auto pad = input.getDefiningOp<tensor::PadOp>();
  if (!pad)
    return {input};
  Value value = pad.getConstantPaddingValue();
  ArrayRef<int64_t> low = pad.getStaticLow(), high = pad.getStaticHigh();
  for (int64_t d = 0; d < static_cast<int64_t>(low.size()); ++d)
    if (ShapedType::isDynamic(low[d]) || ShapedType::isDynamic(high[d]) ||
        (d != hDim && d != wDim && (low[d] != 0 || high[d] != 0)))
      return {input};
  if (!value)
    return {input};
  return {pad.getSource(), low[hDim], low[wDim], value};
}

/// Rewrites `conv` (NCHW/FCHW or NHWC/HWCF, static shapes) as a generic
/// gathering its patches and a batched-matmul generic, reshaped back.
void rewriteAsMatmul(RewriterBase &rewriter, linalg::LinalgOp conv,
                     bool nchw, bool foldPadding) {
  Location loc = conv.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Value input = conv.getDpsInputs()[0], filter = conv.getDpsInputs()[1];
  PatchSource source = foldPadding
                           ? patchSource(input, nchw ? 2 : 1, nchw ? 3 : 2)
                           : PatchSource{input};
  ArrayRef<int64_t> sourceShape =
      cast<RankedTensorType>(source.tensor.getType()).getShape();
  int64_t height = sourceShape[nchw ? 2 : 1], width = sourceShape[nchw ? 3 : 2];
  Value init = conv.getDpsInits()[0];
  auto inType = cast<RankedTensorType>(input.getType());
  auto filterType = cast<RankedTensorType>(filter.getType());
  auto outType = cast<RankedTensorType>(init.getType());
  // Through the ops' accessors: text may leave out these attributes, which
  // then take their default of ones.
  DenseIntElementsAttr stridesAttr, dilationsAttr;
  if (nchw) {
    auto op = cast<linalg::Conv2DNchwFchwOp>(conv.getOperation());
    stridesAttr = op.getStrides();
    dilationsAttr = op.getDilations();
  } else {
    auto op = cast<linalg::Conv2DNhwcHwcfOp>(conv.getOperation());
    stridesAttr = op.getStrides();
    dilationsAttr = op.getDilations();
  }
  SmallVector<int64_t> strides =
      llvm::to_vector(stridesAttr.getValues<int64_t>());
  SmallVector<int64_t> dilations =
      llvm::to_vector(dilationsAttr.getValues<int64_t>());
  ArrayRef<int64_t> out = outType.getShape(), fs = filterType.getShape();
  int64_t n = out[0];
  int64_t oh = nchw ? out[2] : out[1], ow = nchw ? out[3] : out[2];
  int64_t kh = nchw ? fs[2] : fs[0], kw = nchw ? fs[3] : fs[1];
  int64_t c = nchw ? fs[1] : fs[2];
  int64_t patch = c * kh * kw, pixels = oh * ow;

  // Patches: NHWC [N, OH*OW, KH*KW*C] (a row per output pixel), NCHW
  // [N, C*KH*KW, OH*OW] (a column per output pixel).
  SmallVector<int64_t> colsShape = nchw ? SmallVector<int64_t>{n, patch, pixels}
                                        : SmallVector<int64_t>{n, pixels, patch};
  Value empty = tensor::EmptyOp::create(rewriter, loc, colsShape,
                                        inType.getElementType());
  auto cols = linalg::GenericOp::create(
      rewriter, loc, empty.getType(), ValueRange{}, ValueRange{empty},
      SmallVector<AffineMap>{rewriter.getMultiDimIdentityMap(3)},
      SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
      [&](OpBuilder &b, Location l, ValueRange) {
        Value batch = linalg::IndexOp::create(b, l, 0);
        Value pixel = linalg::IndexOp::create(b, l, nchw ? 2 : 1);
        Value tap = linalg::IndexOp::create(b, l, nchw ? 1 : 2);
        SmallVector<Value> p = delinearize(b, l, pixel, {oh, ow});
        SmallVector<Value> t =
            nchw ? delinearize(b, l, tap, {c, kh, kw})
                 : delinearize(b, l, tap, {kh, kw, c});
        Value channel = nchw ? t[0] : t[2];
        Value row = inputIndex(b, l, p[0], nchw ? t[1] : t[0], strides[0],
                               dilations[0], source.padTop);
        Value col = inputIndex(b, l, p[1], nchw ? t[2] : t[1], strides[1],
                               dilations[1], source.padLeft);
        // In the padding: the padding value, read from a clamped (valid)
        // address.
        Value inside;
        if (source.padding) {
          auto within = [&](Value i, int64_t extent) {
            Value zero = arith::ConstantIndexOp::create(b, l, 0);
            Value bound = arith::ConstantIndexOp::create(b, l, extent);
            Value above = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::sge, i, zero);
            Value below = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::slt, i, bound);
            return arith::AndIOp::create(b, l, above, below).getResult();
          };
          inside = arith::AndIOp::create(b, l, within(row, height),
                                         within(col, width));
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          row = arith::SelectOp::create(b, l, inside, row, zero);
          col = arith::SelectOp::create(b, l, inside, col, zero);
        }
        SmallVector<Value> at =
            nchw ? SmallVector<Value>{batch, channel, row, col}
                 : SmallVector<Value>{batch, row, col, channel};
        Value element = tensor::ExtractOp::create(b, l, source.tensor, at);
        if (inside)
          element =
              arith::SelectOp::create(b, l, inside, element, source.padding);
        linalg::YieldOp::create(b, l, element);
      });
  // Read in bounds: the CPU gathers a block of these patches by input rows.
  if (nchw && !source.padding)
    tessel::setPatchGeometry(cols, {c,
                                    {kh, kw},
                                    {strides[0], strides[1]},
                                    {dilations[0], dilations[1]},
                                    {oh, ow}});

  // The filter as a matrix: NHWC [KH*KW*C, F], NCHW [F, C*KH*KW]; the
  // result with its pixels collapsed: [N, OH*OW, F] or [N, F, OH*OW].
  SmallVector<ReassociationIndices> filterGroups =
      nchw ? SmallVector<ReassociationIndices>{{0}, {1, 2, 3}}
           : SmallVector<ReassociationIndices>{{0, 1, 2}, {3}};
  SmallVector<ReassociationIndices> outGroups =
      nchw ? SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}}
           : SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}};
  Value matrix =
      tensor::CollapseShapeOp::create(rewriter, loc, filter, filterGroups);
  Value acc = tensor::CollapseShapeOp::create(rewriter, loc, init, outGroups);
  // Loops (batch, m, n, k): NHWC m = pixels, n = F; NCHW m = F, n = pixels.
  AffineExpr b, m, nn, k;
  bindDims(ctx, b, m, nn, k);
  Value lhs = nchw ? matrix : cols.getResult(0);
  Value rhs = nchw ? cols.getResult(0) : matrix;
  SmallVector<AffineMap> maps = {
      nchw ? AffineMap::get(4, 0, {m, k}, ctx)
           : AffineMap::get(4, 0, {b, m, k}, ctx),
      nchw ? AffineMap::get(4, 0, {b, k, nn}, ctx)
           : AffineMap::get(4, 0, {k, nn}, ctx),
      AffineMap::get(4, 0, {b, m, nn}, ctx)};
  auto matmul = linalg::GenericOp::create(
      rewriter, loc, acc.getType(), ValueRange{lhs, rhs}, ValueRange{acc},
      maps,
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::parallel, utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l,
                                tessel::multiplyAccumulate(nb, l, args[0],
                                                           args[1], args[2]));
      });
  rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
      conv, outType, matmul.getResult(0), outGroups);
}

struct LinalgIm2ColPass : tessel::impl::LinalgIm2ColBase<LinalgIm2ColPass> {
  using LinalgIm2ColBase::LinalgIm2ColBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr("tessel.kernel") || func.isExternal())
      return;
    SmallVector<std::pair<linalg::LinalgOp, bool>> convs;
    func.walk([&](linalg::LinalgOp op) {
      bool nchw = isa<linalg::Conv2DNchwFchwOp>(op);
      if ((nchw || isa<linalg::Conv2DNhwcHwcfOp>(op)) &&
          op.hasPureTensorSemantics() &&
          !ShapedType::isDynamicShape(op.getStaticLoopRanges()))
        convs.emplace_back(op, nchw);
    });
    IRRewriter rewriter(&getContext());
    for (auto [conv, nchw] : convs) {
      rewriter.setInsertionPoint(conv);
      auto pad = conv.getDpsInputs()[0].getDefiningOp<tensor::PadOp>();
      rewriteAsMatmul(rewriter, conv, nchw, foldPadding);
      // A padding the patches read through is dead unless used elsewhere.
      if (pad && pad->use_empty())
        rewriter.eraseOp(pad);
    }
  }
};

} // namespace
