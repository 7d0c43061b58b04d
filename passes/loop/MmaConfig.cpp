//===- MmaConfig.cpp - what loop.mma accepts ------------------------------===//

#include "passes/loop/MmaConfig.h"
#include "dialects/loop/Loop.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace tessel;

namespace {

/// Shared memory one block may use, with the opt-in for dynamic shared
/// memory (A100: 163 KiB, H100/H200: 227 KiB).
int64_t sharedMemoryLimit(StringRef target) {
  return target == "sm_80" ? 163 * 1024 : 227 * 1024;
}

} // namespace

int64_t MmaConfig::threads() const {
  return (bm / wm) * warpsN() * loop::kWarpSize;
}

int64_t MmaConfig::sharedBytes() const {
  // f16 A and B tiles per stage, rows padded.
  return stages * (bm * (bk + pad) + bk * (bn + pad)) * 2;
}

StringRef MmaConfig::knobName(Field field) {
  static constexpr StringLiteral names[] = {
      "block_m", "block_n", "warp_m", "warp_n", "block_k", "stages", "pad"};
  return names[field];
}

std::string MmaConfig::check(StringRef target,
                             const std::function<std::string(Field)> &name) const {
  auto msg = [&](Field f, int64_t value, const Twine &why) {
    return (name(f) + " = " + Twine(value) + " " + why).str();
  };
  if (wm % 16)
    return msg(WarpM, wm, "is not a multiple of 16 (the m of mma.m16n8k16)");
  if (wn % 16)
    return msg(WarpN, wn,
               "is not a multiple of 16 (one ldmatrix.x4 loads two n8 tiles)");
  if (bk % 16)
    return msg(BlockK, bk, "is not a multiple of 16 (the k of mma.m16n8k16)");
  if (bm % wm)
    return msg(BlockM, bm, "is not a multiple of the warp tile " + name(WarpM));
  if (bn % wn)
    return msg(BlockN, bn, "is not a multiple of the warp tile " + name(WarpN));
  if (m % bm)
    return msg(BlockM, bm, "does not divide M = " + Twine(m) +
                               "; loop.mma needs whole tiles");
  if (n % bn)
    return msg(BlockN, bn, "does not divide N = " + Twine(n) +
                               "; loop.mma needs whole tiles");
  if (k % bk)
    return msg(BlockK, bk, "does not divide K = " + Twine(k) +
                               "; loop.mma needs whole tiles");
  if (threads() > 1024)
    return msg(WarpM, wm, "gives " + Twine(threads()) +
                              " threads per block; the limit is 1024");
  if ((bm * bk / kCopyElements) % threads())
    return msg(BlockM, bm, "gives an A tile of " +
                               Twine(bm * bk / kCopyElements) +
                               " 16-byte copies, not a multiple of the " +
                               Twine(threads()) + " threads");
  if ((bk * bn / kCopyElements) % threads())
    return msg(BlockN, bn, "gives a B tile of " +
                               Twine(bk * bn / kCopyElements) +
                               " 16-byte copies, not a multiple of the " +
                               Twine(threads()) + " threads");
  if (pad % kCopyElements)
    return msg(Pad, pad, "is not a multiple of 8 (rows must stay 16-byte "
                         "aligned for cp.async and ldmatrix)");
  if (sharedBytes() > sharedMemoryLimit(target))
    return msg(Stages, stages,
               "needs " + Twine(sharedBytes()) +
                   " bytes of shared memory per block; the limit on " +
                   target + " is " + Twine(sharedMemoryLimit(target)));
  return "";
}

linalg::MatmulOp tessel::findMmaContraction(func::FuncOp func,
                                            TilingInterface root,
                                            std::string &why) {
  SmallVector<linalg::MatmulOp> matmuls(func.getOps<linalg::MatmulOp>());
  if (matmuls.size() != 1) {
    why = "the kernel has " + std::to_string(matmuls.size()) +
          " linalg.matmul ops; loop.mma takes exactly one";
    return {};
  }
  linalg::MatmulOp matmul = matmuls.front();
  Builder b(func.getContext());
  // A kernel argument, maybe reshaped (x @ W on a 3-D x reads x collapsed
  // to 2-D): a buffer of the host program, not computed in the kernel.
  auto isArgument = [](Value v) {
    while (isa_and_present<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(
        v.getDefiningOp()))
      v = v.getDefiningOp()->getOperand(0);
    return isa<BlockArgument>(v);
  };
  auto elementType = [](Value v) {
    return cast<ShapedType>(v.getType()).getElementType();
  };
  if (matmul.hasUserDefinedMaps() || !llvm::all_of(matmul.getDpsInputs(), isArgument) ||
      elementType(matmul.getDpsInputs()[0]) != b.getF16Type() ||
      elementType(matmul.getDpsInputs()[1]) != b.getF16Type() ||
      elementType(matmul.getDpsInits()[0]) != b.getF32Type()) {
    why = "loop.mma takes a plain matmul of f16 kernel arguments into f32";
    return {};
  }
  auto fill = matmul.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.value().getDefiningOp<arith::ConstantOp>()) {
    why = "the matmul's accumulator is not filled with a constant";
    return {};
  }
  if (root.getOperation() == matmul.getOperation())
    return matmul;
  auto epilogue = dyn_cast<linalg::GenericOp>(root.getOperation());
  Value result = matmul->getResult(0);
  bool elementwise =
      epilogue && epilogue.getNumLoops() == 2 &&
      epilogue.getNumParallelLoops() == 2 && epilogue.getNumDpsInits() == 1 &&
      result.hasOneUse();
  if (elementwise)
    for (OpOperand *in : epilogue.getDpsInputOperands()) {
      if (in->get() == result)
        elementwise &= epilogue.getMatchingIndexingMap(in).isIdentity();
      else
        elementwise &= isArgument(in->get()) ||
                       isa_and_present<arith::ConstantOp>(
                           in->get().getDefiningOp());
    }
  if (!elementwise || !llvm::is_contained(epilogue.getDpsInputs(), result)) {
    why = "the kernel's root is not the matmul or an elementwise epilogue "
          "of it over kernel arguments";
    return {};
  }
  return matmul;
}
