//===- VectorizeConvolutions.cpp - convolution tiles as row vectors -------===//
//
// Convolutions that linalg-im2col leaves as they are, grouped and
// depthwise ones (MobileNet's), reach the CPU as tiles of a generic of
// seven or eight loops whose innermost are the reductions over the taps:
// lowered to loops, every output point is a scalar chain of KH*KW FMAs.
// Here a tile is computed a vector of an output row at a time: its
// accumulator read once, each tap an FMA of the input row's run (a
// contiguous vector, or for a stride its span, shuffled) with the tap's
// weight broadcast, then written once: through the tile's elementwise
// epilogue (bias, activation) to its output where there is one, and from
// the image itself where the tile reads a padded one. Max pooling tiles
// are taken the same way, each tap a max of the run.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/cpu/InputRuns.h"
#include "passes/cpu/VectorEpilogues.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace tessel {
#define GEN_PASS_DEF_CPUVECTORIZECONVOLUTIONS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

/// Output lanes per vector: a stride reads a span of (lanes - 1) * stride + 1.
constexpr int64_t kLanes = 32;
/// Tiles of more taps than this keep their loops (unrolled, they would
/// bloat the code for no gain).
constexpr int64_t kMaxTaps = 64;

/// The loops of a convolution tile that this pass takes: an f32 linalg op
/// on tensors of static shape, `out += in * filter` or a max pooling's
/// `out = max(out, in)` (its filter only the window's shape), whose
/// output's last dim is an output image loop (the columns) that the
/// input's last dim reads as `columns * stride + taps` and no other operand
/// dim reads.
struct ConvolutionTile {
  unsigned columns;
  int64_t stride;
  bool max;                    // a max pooling's
  SmallVector<unsigned> taps;  // filter loops, unrolled
  SmallVector<unsigned> outer; // parallel loops but the columns
  SmallVector<unsigned> inner; // reductions but the taps
};

/// Whether `op`'s body is `yield(out + in * filter)` (false) or
/// `yield(max(out, in))` (true), operands in either order.
std::optional<bool> isMax(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  Value in = body->getArgument(0), filter = body->getArgument(1),
        out = body->getArgument(2);
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  Value yielded = yield.getValues()[0];
  auto operandsAre = [](Operation *op, Value a, Value b) {
    return (op->getOperand(0) == a && op->getOperand(1) == b) ||
           (op->getOperand(0) == b && op->getOperand(1) == a);
  };
  if (auto max = yielded.getDefiningOp<arith::MaximumFOp>())
    return body->getOperations().size() == 2 && operandsAre(max, out, in)
               ? std::optional<bool>(true)
               : std::nullopt;
  auto add = yielded.getDefiningOp<arith::AddFOp>();
  if (!add || body->getOperations().size() != 3)
    return std::nullopt;
  auto mul = add.getLhs().getDefiningOp<arith::MulFOp>();
  Value acc = add.getRhs();
  if (!mul) {
    mul = add.getRhs().getDefiningOp<arith::MulFOp>();
    acc = add.getLhs();
  }
  if (!mul || acc != out || !operandsAre(mul, in, filter))
    return std::nullopt;
  return false;
}

std::optional<ConvolutionTile> convolutionTile(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.hasDynamicShape() ||
      op.getBlock()->getNumArguments() != 3)
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands())
    if (!getElementTypeOrSelf(operand.get().getType()).isF32())
      return std::nullopt;
  std::optional<bool> max = isMax(op);
  if (!max)
    return std::nullopt;
  FailureOr<linalg::ConvolutionDimensions> dims =
      linalg::inferConvolutionDims(op);
  if (failed(dims) || dims->outputImage.size() != 2)
    return std::nullopt;
  AffineMap inMap = op.getIndexingMapsArray()[0];
  AffineMap filterMap = op.getIndexingMapsArray()[1];
  AffineMap outMap = op.getIndexingMapsArray()[2];
  auto columnsDim = dyn_cast<AffineDimExpr>(outMap.getResults().back());
  if (!columnsDim || !llvm::is_contained(dims->outputImage,
                                         columnsDim.getPosition()))
    return std::nullopt;
  ConvolutionTile tile;
  tile.columns = columnsDim.getPosition();
  tile.max = *max;
  // The input reads the columns in its last dim only, at a fixed stride
  // (linearly: no mod or division).
  AffineExpr last = inMap.getResults().back();
  if (!last.isPureAffine() || !last.isFunctionOfDim(tile.columns) ||
      llvm::any_of(inMap.getResults().drop_back(), [&](AffineExpr e) {
        return e.isFunctionOfDim(tile.columns);
      }) ||
      llvm::any_of(filterMap.getResults(), [&](AffineExpr e) {
        return e.isFunctionOfDim(tile.columns);
      }))
    return std::nullopt;
  unsigned loops = op.getNumLoops();
  auto at = [&](unsigned d, int64_t v) {
    MLIRContext *ctx = op.getContext();
    SmallVector<AffineExpr> values(loops, getAffineConstantExpr(0, ctx));
    values[d] = getAffineConstantExpr(v, ctx);
    auto c = dyn_cast<AffineConstantExpr>(
        simplifyAffineExpr(last.replaceDims(values), 0, 0));
    return c ? std::optional<int64_t>(c.getValue()) : std::nullopt;
  };
  std::optional<int64_t> zero = at(tile.columns, 0), one = at(tile.columns, 1);
  if (!zero || !one || *one - *zero < 1)
    return std::nullopt;
  tile.stride = *one - *zero;
  int64_t taps = 1;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (unsigned d = 0; d < loops; ++d) {
    if (d == tile.columns)
      continue;
    if (llvm::is_contained(dims->filterLoop, d)) {
      tile.taps.push_back(d);
      taps *= ranges[d];
    } else if (op.getIteratorTypesArray()[d] ==
               utils::IteratorType::parallel) {
      tile.outer.push_back(d);
    } else {
      tile.inner.push_back(d);
    }
  }
  if (taps > kMaxTaps)
    return std::nullopt;
  return tile;
}

/// A tile's input that is a slice of a convolution's padded image:
/// reading the image itself (in bounds, the padding value elsewhere)
/// spares the padded copy, which is made whole, in one thread, before
/// the tiles run.
struct PaddedInput {
  Value image;
  SmallVector<OpFoldResult> offsets; // of the slice in the padded image
  SmallVector<int64_t> low, size;    // the image's low padding and shape
  SmallVector<bool> padded;          // whether a dim has padding
  Value padding;
};

/// `input` as a slice of a padded image (tensor.pad of a constant at
/// static bounds; a whole slice with unit strides, its offset static in
/// the last dim), if `last` (the input's last index) is a function of
/// `known` (the columns and taps, which vectorize unrolls) only.
std::optional<PaddedInput> paddedInput(Value input, AffineExpr last,
                                       ArrayRef<unsigned> known,
                                       unsigned loops) {
  auto slice = input.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || !slice.hasUnitStride() ||
      slice.getSourceType().getRank() != slice.getResultType().getRank())
    return std::nullopt;
  auto pad = slice.getSource().getDefiningOp<tensor::PadOp>();
  if (!pad || !pad.getConstantPaddingValue() ||
      !pad.getSourceType().hasStaticShape() ||
      !getConstantIntValue(slice.getMixedOffsets().back()))
    return std::nullopt;
  for (unsigned d = 0; d < loops; ++d)
    if (!llvm::is_contained(known, d) && last.isFunctionOfDim(d))
      return std::nullopt;
  PaddedInput padded{pad.getSource(), slice.getMixedOffsets(), {}, {}, {},
                     pad.getConstantPaddingValue()};
  for (auto [low, high, size] :
       llvm::zip(pad.getMixedLowPad(), pad.getMixedHighPad(),
                 pad.getSourceType().getShape())) {
    std::optional<int64_t> l = getConstantIntValue(low),
                           h = getConstantIntValue(high);
    if (!l || !h)
      return std::nullopt;
    padded.low.push_back(*l);
    padded.size.push_back(size);
    padded.padded.push_back(*l != 0 || *h != 0);
  }
  return padded;
}

/// The `count` elements of `padded`'s image that a run of output columns
/// reads from `at` (indices in the padded slice) on, every `stride`-th:
/// in the image's bounds its elements, elsewhere the padding. A row out
/// of bounds is read clamped and replaced by the padding (a select, no
/// branch); the columns out of bounds are known here: those before the
/// row shuffled in, those after it masked.
Value readPaddedRun(OpBuilder &b, Location loc, const PaddedInput &padded,
                    ArrayRef<Value> at, int64_t count, int64_t stride) {
  unsigned rank = padded.size.size();
  Type element = padded.padding.getType();
  auto vector = VectorType::get({count}, element);
  Value fill = vector::BroadcastOp::create(b, loc, vector, padded.padding);
  int64_t first = *getConstantIntValue(padded.offsets.back()) +
                  *getConstantIntValue(at.back()) - padded.low.back();
  int64_t width = padded.size.back();
  // The lanes in the image: first + lane * stride in [0, width).
  int64_t lo = first >= 0 ? 0 : (-first + stride - 1) / stride;
  int64_t hi =
      first >= width ? 0 : std::min(count, (width - first - 1) / stride + 1);
  if (lo >= hi)
    return fill;
  Value valid;
  SmallVector<Value> indices;
  for (unsigned d = 0; d + 1 < rank; ++d) {
    Value offset = getValueOrCreateConstantIndexOp(b, loc, padded.offsets[d]);
    Value i = arith::AddIOp::create(b, loc, offset, at[d]);
    if (!padded.padded[d]) { // batch, channels
      indices.push_back(i);
      continue;
    }
    i = arith::SubIOp::create(
        b, loc, i, arith::ConstantIndexOp::create(b, loc, padded.low[d]));
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value end = arith::ConstantIndexOp::create(b, loc, padded.size[d]);
    Value inside = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, i, zero),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, end));
    valid = valid ? arith::AndIOp::create(b, loc, valid, inside) : inside;
    Value top = arith::ConstantIndexOp::create(b, loc, padded.size[d] - 1);
    indices.push_back(arith::MinSIOp::create(
        b, loc, arith::MaxSIOp::create(b, loc, i, zero), top));
  }
  // From the first lane in the image on (the lanes before it the padding,
  // those past the row's end masked to it).
  indices.push_back(
      arith::ConstantIndexOp::create(b, loc, first + lo * stride));
  Value run = tessel::readInputRun(b, loc, padded.image, indices, count,
                                   stride, padded.padding, lo);
  return valid ? arith::SelectOp::create(b, loc, valid, run, fill) : run;
}

/// `op` (convolutionTile) as loops over its outer and inner loops around
/// vectors of its columns, the taps unrolled; with its epilogue
/// (fusableEpilogue), which it then replaces, applied to each vector.
/// Accumulators start from the value of a fill of the tile.
void vectorize(RewriterBase &rewriter, linalg::LinalgOp op,
               const ConvolutionTile &tile) {
  Location loc = op.getLoc();
  linalg::GenericOp epilogue = tessel::fusableEpilogue(op->getResult(0));
  // At the epilogue, whose other operands may be defined after `op`.
  rewriter.setInsertionPoint(epilogue ? epilogue : op);
  auto fill = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  Value input = op.getDpsInputs()[0], filter = op.getDpsInputs()[1];
  SmallVector<unsigned> known(tile.taps);
  known.push_back(tile.columns);
  std::optional<PaddedInput> padded = paddedInput(
      input, maps[0].getResults().back(), known, op.getNumLoops());
  Type f32 = rewriter.getF32Type();
  Value zero = arith::ConstantOp::create(rewriter, loc, f32,
                                         rewriter.getZeroAttr(f32));
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  SmallVector<OpFoldResult> dims(op.getNumLoops(), rewriter.getIndexAttr(0));
  auto indices = [&](AffineMap map) {
    return tessel::indicesAt(rewriter, loc, map, dims);
  };
  // Nested loops over `loopDims` carrying `init`; `body` fills the
  // innermost with the carried value and returns what to yield.
  auto nest = [&](ArrayRef<unsigned> loopDims, Value init,
                  function_ref<Value(Value)> body) -> Value {
    SmallVector<scf::ForOp> fors;
    Value carried = init;
    for (unsigned d : loopDims) {
      if (ranges[d] == 1)
        continue;
      auto loop = scf::ForOp::create(rewriter, loc, index(0), index(ranges[d]),
                                     index(1), ValueRange{carried});
      dims[d] = loop.getInductionVar();
      carried = loop.getRegionIterArgs()[0];
      rewriter.setInsertionPointToStart(loop.getBody());
      fors.push_back(loop);
    }
    Value result = body(carried);
    for (scf::ForOp loop : llvm::reverse(fors)) {
      scf::YieldOp::create(rewriter, loc, result);
      rewriter.setInsertionPointAfter(loop);
      result = loop.getResult(0);
    }
    return result;
  };
  int64_t columns = ranges[tile.columns];
  int64_t lanes = tile.stride == 1 ? kLanes : kLanes / 2;
  Value init = epilogue ? epilogue.getDpsInits()[0] : op.getDpsInits()[0];
  Value result = nest(tile.outer, init, [&](Value out) {
    for (int64_t j = 0; j < columns; j += lanes) {
      int64_t count = std::min(lanes, columns - j);
      auto vector = VectorType::get({count}, f32);
      dims[tile.columns] = rewriter.getIndexAttr(j);
      SmallVector<Value> at = indices(maps[2]);
      Value acc =
          fill ? vector::BroadcastOp::create(rewriter, loc, vector,
                                             fill.getInputs()[0])
                     .getResult()
               : vector::TransferReadOp::create(rewriter, loc, vector, out,
                                                at, zero, ArrayRef<bool>{true})
                     .getResult();
      acc = nest(tile.inner, acc, [&](Value sum) {
        // Every tap, unrolled: its index in each filter loop.
        SmallVector<int64_t> tap(tile.taps.size(), 0);
        while (true) {
          for (auto [d, v] : llvm::zip(tile.taps, tap))
            dims[d] = rewriter.getIndexAttr(v);
          Value run =
              padded ? readPaddedRun(rewriter, loc, *padded, indices(maps[0]),
                                     count, tile.stride)
                     : tessel::readInputRun(rewriter, loc, input,
                                            indices(maps[0]), count,
                                            tile.stride);
          if (tile.max) {
            sum = arith::MaximumFOp::create(rewriter, loc, sum, run);
          } else {
            Value weight = tensor::ExtractOp::create(rewriter, loc, filter,
                                                     indices(maps[1]));
            weight =
                vector::BroadcastOp::create(rewriter, loc, vector, weight);
            sum = vector::FMAOp::create(rewriter, loc, run, weight, sum);
          }
          unsigned i = 0;
          for (; i < tap.size(); ++i) {
            if (++tap[i] < ranges[tile.taps[i]])
              break;
            tap[i] = 0;
          }
          if (i == tap.size())
            break;
        }
        return sum;
      });
      if (epilogue)
        acc = tessel::computeEpilogue(rewriter, loc, epilogue,
                                      op->getResult(0), acc, at, count);
      out = vector::TransferWriteOp::create(rewriter, loc, acc, out, at,
                                            ArrayRef<bool>{true})
                .getResult();
    }
    return out;
  });
  if (epilogue) {
    rewriter.replaceOp(epilogue, result);
    rewriter.eraseOp(op);
  } else {
    rewriter.replaceOp(op, result);
  }
}

struct CpuVectorizeConvolutionsPass
    : tessel::impl::CpuVectorizeConvolutionsBase<CpuVectorizeConvolutionsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<linalg::LinalgOp, ConvolutionTile>> found;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (std::optional<ConvolutionTile> tile = convolutionTile(op))
        found.emplace_back(op, *tile);
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, tile] : found)
      vectorize(rewriter, op, tile);
  }
};

} // namespace
