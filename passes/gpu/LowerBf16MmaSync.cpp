//===- LowerBf16MmaSync.cpp - bf16 nvgpu.mma.sync to nvvm.mma.sync --------===//
//
// PTX's mma.m16n8k16.row.col.f32.bf16.bf16.f32 takes its A fragment as four
// and its B fragment as two 32-bit registers, each holding two bf16 values,
// and returns four f32. nvgpu.mma.sync holds the same fragments as vectors
// of bf16 pairs (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>), so
// the rewrite only repacks them.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace tessel {
#define GEN_PASS_DEF_GPULOWERBF16MMASYNC
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// Rewrites one bf16 op; an error on it for a form PTX has no bf16 for.
LogicalResult lower(nvgpu::MmaSyncOp op, RewriterBase &rewriter) {
  auto aType = op.getMatrixA().getType();
  auto bType = op.getMatrixB().getType();
  auto cType = op.getMatrixC().getType();
  SmallVector<int64_t> shape = llvm::to_vector(op.getMmaShapeAsArray());
  if (shape != SmallVector<int64_t>{16, 8, 16} ||
      aType.getShape() != ArrayRef<int64_t>{4, 2} ||
      bType.getShape() != ArrayRef<int64_t>{2, 2} ||
      !bType.getElementType().isBF16() ||
      cType.getShape() != ArrayRef<int64_t>{2, 2} ||
      !cType.getElementType().isF32())
    return op.emitError("gpu-lower-bf16-mma-sync: bf16 mma.sync must be "
                        "m16n8k16 on bf16 A and B with f32 accumulators");
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Type i32 = rewriter.getI32Type();
  auto words = [&](Value fragment, int64_t count) {
    SmallVector<Value> registers;
    for (int64_t i = 0; i < count; ++i) {
      Value pair = vector::ExtractOp::create(rewriter, loc, fragment,
                                             ArrayRef<int64_t>{i});
      Value word = vector::BitCastOp::create(
          rewriter, loc, VectorType::get({1}, i32), pair);
      registers.push_back(vector::ExtractOp::create(rewriter, loc, word,
                                                    ArrayRef<int64_t>{0}));
    }
    return registers;
  };
  SmallVector<Value> accumulators;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 2; ++c)
      accumulators.push_back(vector::ExtractOp::create(
          rewriter, loc, op.getMatrixC(), ArrayRef<int64_t>{r, c}));
  Type f32 = rewriter.getF32Type();
  auto resultType = LLVM::LLVMStructType::getLiteral(
      rewriter.getContext(), SmallVector<Type>(4, f32));
  Value result = NVVM::MmaOp::create(
      rewriter, loc, resultType, words(op.getMatrixA(), 4),
      words(op.getMatrixB(), 2), accumulators, shape,
      /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                    NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> elements;
  for (int64_t i = 0; i < 4; ++i)
    elements.push_back(LLVM::ExtractValueOp::create(rewriter, loc, result, i));
  rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, cType, elements);
  return success();
}

struct GpuLowerBf16MmaSyncPass
    : tessel::impl::GpuLowerBf16MmaSyncBase<GpuLowerBf16MmaSyncPass> {
  void runOnOperation() override {
    SmallVector<nvgpu::MmaSyncOp> ops;
    getOperation()->walk([&](nvgpu::MmaSyncOp op) {
      if (op.getMatrixA().getType().getElementType().isBF16())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (nvgpu::MmaSyncOp op : ops)
      if (failed(lower(op, rewriter)))
        signalPassFailure();
  }
};

} // namespace
