//===- SplitK.cpp - a matmul as partial products over parts of K ----------===//

#include "passes/linalg/SplitK.h"
#include "passes/linalg/Contractions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace tessel;

FailureOr<SplitK> tessel::splitK(RewriterBase &rewriter,
                                 linalg::LinalgOp contraction, int64_t parts) {
  std::optional<unsigned> batch =
      matmulBatchLoops(contraction, /*broadcast=*/true);
  if (!batch || !contraction.hasPureTensorSemantics() ||
      ShapedType::isDynamicShape(contraction.getStaticLoopRanges()))
    return contraction.emitError("loop.split_k takes a (batched) matmul on "
                                 "tensors of static shape");
  unsigned m = *batch, k = m + 2;
  int64_t depth = contraction.getStaticLoopRanges()[k];
  if (parts < 1 || depth % parts != 0)
    return contraction.emitError("loop.split_k: ")
           << parts << " parts do not divide K = " << depth;
  MLIRContext *ctx = rewriter.getContext();
  Location loc = contraction.getLoc();
  rewriter.setInsertionPoint(contraction);
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  // Loops of the partial products: batch..., part, m, n, k (the part's).
  unsigned loops = m + 4;
  auto shifted = [&](unsigned d) { return dim(d < m ? d : d + 1); };

  // A and B read K as (part, k): their K dim expands to [parts, K / parts].
  SmallVector<AffineMap> maps;
  SmallVector<Value> inputs;
  for (OpOperand *input : contraction.getDpsInputOperands()) {
    AffineMap map = contraction.getMatchingIndexingMap(input);
    auto type = cast<RankedTensorType>(input->get().getType());
    SmallVector<AffineExpr> results;
    SmallVector<int64_t> shape;
    SmallVector<ReassociationIndices> groups;
    for (auto [i, expr] : llvm::enumerate(map.getResults())) {
      unsigned d = cast<AffineDimExpr>(expr).getPosition();
      groups.push_back({static_cast<int64_t>(results.size())});
      if (d == k) {
        groups.back().push_back(results.size() + 1);
        results.append({dim(m), dim(k + 1)});
        shape.append({parts, depth / parts});
      } else {
        results.push_back(shifted(d));
        shape.push_back(type.getDimSize(i));
      }
    }
    maps.push_back(AffineMap::get(loops, 0, results, ctx));
    inputs.push_back(tensor::ExpandShapeOp::create(
        rewriter, loc, type.clone(shape), input->get(), groups));
  }

  // The workspace: [batch..., parts, M, N], zero-filled.
  Value init = contraction.getDpsInits()[0];
  auto initType = cast<RankedTensorType>(init.getType());
  SmallVector<int64_t> workspaceShape(initType.getShape());
  workspaceShape.insert(workspaceShape.begin() + m, parts);
  Type element = initType.getElementType();
  Value zero =
      arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(element));
  Value workspace =
      tensor::EmptyOp::create(rewriter, loc, workspaceShape, element);
  workspace = linalg::FillOp::create(rewriter, loc, zero, workspace).result();
  SmallVector<AffineExpr> partResults;
  for (unsigned d = 0; d < m + 3; ++d)
    partResults.push_back(dim(d));
  maps.push_back(AffineMap::get(loops, 0, partResults, ctx));
  SmallVector<utils::IteratorType> iterators(loops - 1,
                                             utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  auto partials = linalg::GenericOp::create(
      rewriter, loc, TypeRange{workspace.getType()}, inputs,
      ValueRange{workspace}, maps, iterators);
  // The contraction's own body: the same multiply-accumulate per point.
  rewriter.cloneRegionBefore(contraction->getRegion(0), partials.getRegion(),
                             partials.getRegion().end());

  // The sum over (part, batch..., m, n) into the original accumulator.
  SmallVector<AffineExpr> read, written;
  for (unsigned d = 1; d <= m + 2; ++d) {
    if (d == m + 1)
      read.push_back(dim(0));
    read.push_back(dim(d));
    written.push_back(dim(d));
  }
  SmallVector<utils::IteratorType> sumIterators(m + 3,
                                                utils::IteratorType::parallel);
  sumIterators.front() = utils::IteratorType::reduction;
  auto sum = linalg::GenericOp::create(
      rewriter, loc, TypeRange{initType}, partials.getResults(),
      ValueRange{init},
      {AffineMap::get(m + 3, 0, read, ctx),
       AffineMap::get(m + 3, 0, written, ctx)},
      sumIterators, [&](OpBuilder &b, Location l, ValueRange args) {
        Value total =
            isa<FloatType>(element)
                ? arith::AddFOp::create(b, l, args[1], args[0]).getResult()
                : arith::AddIOp::create(b, l, args[1], args[0]).getResult();
        linalg::YieldOp::create(b, l, total);
      });
  rewriter.replaceOp(contraction, sum.getResults());
  return SplitK{partials, sum};
}
