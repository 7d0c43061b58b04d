//===- VectorizeCopies.cpp - rows of copies as vectors (CPU) --------------===//
//
// A copy or transpose whose innermost dim stays innermost and contiguous
// moves whole rows: one vector load and store per row, so that LLVM sees
// no scalar row loop to vectorize behind a run-time overlap check.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMAttrs.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace tessel {
#define GEN_PASS_DEF_CPUVECTORIZECOPIES
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

/// Whether `type`'s innermost dim is contiguous (stride 1).
bool innermostContiguous(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return type.getRank() > 0 &&
         succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// For each output dim, the input dim it reads (identity for a copy), or
/// nothing when `op` is not a copy or transpose of rows this pass moves.
std::optional<SmallVector<int64_t>> rowMove(Operation *op, int64_t maxBytes) {
  Value input, output;
  SmallVector<int64_t> from;
  if (auto copy = dyn_cast<linalg::CopyOp>(op)) {
    if (!copy.hasPureBufferSemantics())
      return std::nullopt;
    input = copy.getDpsInputs()[0];
    output = copy.getDpsInits()[0];
    from = llvm::to_vector(llvm::seq<int64_t>(
        0, cast<MemRefType>(output.getType()).getRank()));
  } else if (auto transpose = dyn_cast<linalg::TransposeOp>(op)) {
    if (!transpose.hasPureBufferSemantics())
      return std::nullopt;
    input = transpose.getInput();
    output = transpose.getInit();
    from = llvm::to_vector(transpose.getPermutation());
  } else {
    return std::nullopt;
  }
  auto in = cast<MemRefType>(input.getType());
  auto out = cast<MemRefType>(output.getType());
  int64_t rank = out.getRank();
  Type element = out.getElementType();
  if (rank == 0 || from.back() != rank - 1 || out.isDynamicDim(rank - 1) ||
      !element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0 ||
      !innermostContiguous(in) || !innermostContiguous(out))
    return std::nullopt;
  // Rows of a power of two elements from one SSE register up: x86 code
  // generation aborts on odd vectors of halves (a 27-element bf16 row of a
  // convolution's patches), and shorter rows are no vector's work.
  int64_t row = out.getDimSize(rank - 1);
  int64_t bytes = row * element.getIntOrFloatBitWidth() / 8;
  if (!llvm::isPowerOf2_64(row) || bytes < 16 || bytes > maxBytes)
    return std::nullopt;
  return from;
}

/// Replaces `op` (rowMove gave `from`) by loops over the output's outer dims
/// moving one row per iteration. LLVM is told not to unroll them: a row is
/// already a whole vector's work, and runtime unrolling of loops whose
/// strides are sizes multiplies the address streams loop strength reduction
/// searches (the merged heads' transpose: 0.23 s of code generation
/// unrolled, 0.05 s not).
void moveRows(RewriterBase &rewriter, Operation *op, ArrayRef<int64_t> from,
              LLVM::LoopAnnotationAttr noUnroll) {
  Location loc = op->getLoc();
  auto dps = cast<DestinationStyleOpInterface>(op);
  Value input = dps.getDpsInputs()[0], output = dps.getDpsInits()[0];
  auto out = cast<MemRefType>(output.getType());
  int64_t rank = out.getRank();
  rewriter.setInsertionPoint(op);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  SmallVector<Value> outIndices;
  for (int64_t d = 0; d + 1 < rank; ++d) {
    Value size = memref::DimOp::create(rewriter, loc, output, d);
    auto loop = scf::ForOp::create(rewriter, loc, zero, size, one);
    // convert-scf-to-cf moves it onto the loop's back edge.
    loop->setAttr("loop_annotation", noUnroll);
    rewriter.setInsertionPointToStart(loop.getBody());
    outIndices.push_back(loop.getInductionVar());
  }
  outIndices.push_back(zero);
  SmallVector<Value> inIndices(rank);
  for (int64_t d = 0; d < rank; ++d)
    inIndices[from[d]] = outIndices[d];
  auto row = VectorType::get({out.getDimSize(rank - 1)}, out.getElementType());
  Value value = vector::LoadOp::create(rewriter, loc, row, input, inIndices);
  vector::StoreOp::create(rewriter, loc, value, output, outIndices);
  rewriter.eraseOp(op);
}

struct CpuVectorizeCopiesPass
    : tessel::impl::CpuVectorizeCopiesBase<CpuVectorizeCopiesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::pair<Operation *, SmallVector<int64_t>>> moves;
    getOperation()->walk([&](Operation *op) {
      if (auto from = rowMove(op, maxBytes))
        moves.emplace_back(op, *from);
    });
    MLIRContext *ctx = &getContext();
    auto noUnroll = LLVM::LoopAnnotationAttr::get(
        ctx, {}, {}, {},
        LLVM::LoopUnrollAttr::get(ctx, BoolAttr::get(ctx, true), {}, {}, {},
                                  {}, {}, {}),
        {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});
    IRRewriter rewriter(ctx);
    for (auto &[op, from] : moves)
      moveRows(rewriter, op, from, noUnroll);
  }
};

} // namespace
