//===- ExpandShapesAsCasts.cpp - expand_shape of several dynamic sizes ----===//
//
// Upstream's expand-strided-metadata lowers a memref.expand_shape only when
// each reassociation group has at most one dynamic size, the one it infers
// from the others. Over size symbols a group can have more ([batch * seq]
// into [batch, seq], the output_shape giving both): such an expand_shape
// becomes a memref.reinterpret_cast of its source's base, offset and sizes,
// with each dim's stride the group's source stride times the sizes after it
// in the group. Runs before expand-strided-metadata.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_MEMREFEXPANDSHAPESASCASTS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

struct ExpandShapeAsCast : OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::ExpandShapeOp expand,
                                PatternRewriter &rewriter) const override {
    MemRefType type = expand.getResultType();
    SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
    if (llvm::none_of(groups, [&](const ReassociationIndices &group) {
          return llvm::count_if(group, [&](int64_t d) {
                   return type.isDynamicDim(d);
                 }) > 1;
        }))
      return rewriter.notifyMatchFailure(expand, "upstream lowers it");
    Location loc = expand.getLoc();
    auto meta =
        memref::ExtractStridedMetadataOp::create(rewriter, loc, expand.getSrc());
    SmallVector<OpFoldResult> sourceStrides = meta.getConstifiedMixedStrides();
    SmallVector<OpFoldResult> sizes = expand.getMixedOutputShape();
    SmallVector<OpFoldResult> strides(type.getRank());
    AffineExpr s0, s1;
    bindSymbols(rewriter.getContext(), s0, s1);
    for (auto [g, group] : llvm::enumerate(groups)) {
      OpFoldResult stride = sourceStrides[g];
      for (int64_t d : llvm::reverse(group)) {
        strides[d] = stride;
        stride = affine::makeComposedFoldedAffineApply(rewriter, loc, s0 * s1,
                                                       {stride, sizes[d]});
      }
    }
    // Static where the result type is, values where it is dynamic, as the
    // cast's verifier compares them.
    auto [typeStrides, typeOffset] = type.getStridesAndOffset();
    auto asTyped = [&](OpFoldResult v, int64_t typed) -> OpFoldResult {
      if (ShapedType::isDynamic(typed))
        return getValueOrCreateConstantIndexOp(rewriter, loc, v);
      return rewriter.getIndexAttr(typed);
    };
    for (int64_t d = 0; d < type.getRank(); ++d) {
      sizes[d] = asTyped(sizes[d], type.getDimSize(d));
      strides[d] = asTyped(strides[d], typeStrides[d]);
    }
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        expand, type, meta.getBaseBuffer(),
        asTyped(meta.getConstifiedMixedOffset(), typeOffset), sizes, strides);
    return success();
  }
};

struct MemrefExpandShapesAsCastsPass
    : tessel::impl::MemrefExpandShapesAsCastsBase<MemrefExpandShapesAsCastsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandShapeAsCast>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
