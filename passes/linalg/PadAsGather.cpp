//===- PadAsGather.cpp - a tensor.pad as a pointwise gather ---------------===//

#include "passes/linalg/PadAsGather.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

FailureOr<linalg::GenericOp> tessel::padAsGather(RewriterBase &rewriter,
                                                 tensor::PadOp pad) {
  RankedTensorType sourceType = pad.getSourceType();
  RankedTensorType resultType = pad.getResultType();
  ArrayRef<int64_t> low = pad.getStaticLow();
  Value value = pad.getConstantPaddingValue();
  if (!sourceType.hasStaticShape() || !resultType.hasStaticShape() ||
      ShapedType::isDynamicShape(low) || !value)
    return failure();
  Location loc = pad.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(pad);
  Value init = tensor::EmptyOp::create(rewriter, loc, resultType.getShape(),
                                       resultType.getElementType());
  unsigned rank = resultType.getRank();
  auto gather = linalg::GenericOp::create(
      rewriter, loc, TypeRange{resultType}, ValueRange{}, ValueRange{init},
      ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(rank)},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &b, Location l, ValueRange) {
        Value inside;
        SmallVector<Value> indices;
        for (unsigned d = 0; d < rank; ++d) {
          Value index = linalg::IndexOp::create(b, l, d);
          if (low[d] != 0)
            index = arith::SubIOp::create(
                b, l, index, arith::ConstantIndexOp::create(b, l, low[d]));
          // Unsigned: an index before the source wraps past its end.
          Value in = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::ult, index,
              arith::ConstantIndexOp::create(b, l, sourceType.getDimSize(d)));
          inside = inside ? arith::AndIOp::create(b, l, inside, in).getResult()
                          : in;
          indices.push_back(arith::SelectOp::create(
              b, l, in, index, arith::ConstantIndexOp::create(b, l, 0)));
        }
        Value element =
            tensor::ExtractOp::create(b, l, pad.getSource(), indices);
        Value result = inside ? arith::SelectOp::create(b, l, inside, element,
                                                        value)
                                    .getResult()
                              : element;
        linalg::YieldOp::create(b, l, result);
      });
  rewriter.replaceOp(pad, gather.getResults());
  return gather;
}
