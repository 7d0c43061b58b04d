//===- MmaConfig.cpp - what loop.mma accepts ------------------------------===//

#include "passes/loop/MmaConfig.h"
#include "dialects/loop/Loop.h"
#include "passes/linalg/Contractions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace tessel;

int64_t MmaConfig::consumerThreads() const {
  return groups() * (wgmma() ? kWarpgroupThreads : loop::kWarpSize);
}

int64_t MmaConfig::threads() const {
  return consumerThreads() + producers * kWarpgroupThreads;
}

int64_t MmaConfig::sharedBytes() const {
  // A and B tiles per stage, rows padded (wgmma's are swizzled, not
  // padded).
  return stages * (bm * (bk + pad) + bk * (bn + pad)) * elementBytes;
}

/// What wgmma adds to check(): instruction shapes and the swizzled tiles'
/// layout (gpu-lower-mma's WgmmaEmitter).
static std::string checkWgmma(const MmaConfig &c,
                              const loop::TargetDescription &target,
                              const std::function<std::string(MmaConfig::Field)> &name) {
  auto msg = [&](MmaConfig::Field f, int64_t value, const Twine &why) {
    return (name(f) + " = " + Twine(value) + " " + why).str();
  };
  for (loop::Instruction needed :
       {loop::Instruction::Wgmma, loop::Instruction::CpAsync})
    if (!target.has(needed))
      return ("target '" + target.name + "' has no " +
              loop::instructionNames()[static_cast<unsigned>(needed)] +
              " instructions, which loop.mma of shape m64 (wgmma) needs")
          .str();
  // A 16-bit B's tile is stored in groups of 64 columns (128-byte swizzled
  // rows), which an instruction spans whole; a tf32 one K-major (wgmma
  // transposes only 16-bit operands), a 128-byte row per column.
  int64_t group = kSwizzleBytes / c.elementBytes;
  int64_t nStep = c.elementBytes == 4 ? 8 : group;
  if (c.shapeN <= 0 || c.shapeN > 256 || c.shapeN % nStep)
    return ("loop.mma shape n = " + Twine(c.shapeN) +
            " is not one tessel's wgmma takes with a row-major B: a "
            "multiple of " + Twine(nStep) + " up to 256")
        .str();
  if (c.wm % kWgmmaM)
    return msg(MmaConfig::WarpM, c.wm,
               "is not a multiple of 64 (the m of wgmma)");
  if (c.wn % c.shapeN)
    return msg(MmaConfig::WarpN, c.wn,
               "is not a multiple of the wgmma shape's n = " + Twine(c.shapeN));
  if (c.bk * c.elementBytes != kSwizzleBytes)
    return msg(MmaConfig::BlockK, c.bk,
               "is not " + Twine(group) +
                   ": wgmma reads K in 128-byte swizzled rows");
  if (c.pad)
    return msg(MmaConfig::Pad, c.pad,
               "is not 0: wgmma's tiles are swizzled, not padded");
  if (c.stages < 2)
    return msg(MmaConfig::Stages, c.stages,
               "is below 2: wgmma overlaps its copies with a ring of stages");
  if (c.producers &&
      !(target.has(loop::Instruction::Tma) &&
        target.has(loop::Instruction::MbarrierTx)))
    return msg(MmaConfig::Producers, c.producers,
               "needs TMA copies, which target '" + Twine(target.name) +
                   "' does not have");
  if (c.producers && c.elementBytes == 4)
    return msg(MmaConfig::Producers, c.producers,
               "needs TMA copies, which cannot transpose a tf32 B into the "
               "K-major tile wgmma reads");
  return "";
}

StringRef MmaConfig::knobName(Field field) {
  static constexpr StringLiteral names[] = {
      "block_m", "block_n", "warp_m", "warp_n", "block_k", "stages", "pad",
      "producers", "group_m"};
  return names[field];
}

std::string MmaConfig::check(const loop::TargetDescription &target,
                             const std::function<std::string(Field)> &name) const {
  auto msg = [&](Field f, int64_t value, const Twine &why) {
    return (name(f) + " = " + Twine(value) + " " + why).str();
  };
  using loop::Instruction;
  if (producers && !wgmma())
    return msg(Producers, producers,
               "needs loop.mma of shape m64 (wgmma): mma.sync warps copy "
               "their own tiles");
  if (groupM && !producers)
    return msg(GroupM, groupM,
               "makes the grid persistent, which needs a producer warpgroup "
               "(loop.warp_specialize producers [1])");
  if (wgmma()) {
    std::string unfit = checkWgmma(*this, target, name);
    if (!unfit.empty())
      return unfit;
  }
  // 2-byte operands (f16, bf16) take the f16 shape's instruction.
  for (Instruction needed :
       {elementBytes == 4 ? Instruction::MmaSyncTf32 : Instruction::MmaSyncF16,
        Instruction::Ldmatrix, Instruction::CpAsync})
    if (!wgmma() && !target.has(needed))
      return ("target '" + target.name + "' has no " +
              loop::instructionNames()[static_cast<unsigned>(needed)] +
              " instructions, which loop.mma needs")
          .str();
  if (wgmma()) {
    // Checked above, with the instruction's rules.
  } else if (wm % 16)
    return msg(WarpM, wm, "is not a multiple of 16 (the m of mma.m16n8k16)");
  else if (wn % warpNStep())
    return msg(WarpN, wn,
               elementBytes == 4
                   ? "is not a multiple of 8 (the n of mma.m16n8k8)"
                   : "is not a multiple of 16 (one ldmatrix.x4 loads two n8 "
                     "tiles)");
  std::string instruction = "mma.m16n8k" + std::to_string(instructionK());
  if (bk % instructionK())
    return msg(BlockK, bk, "is not a multiple of " + Twine(instructionK()) +
                               " (the k of " + instruction + ")");
  if (bm % wm)
    return msg(BlockM, bm, "is not a multiple of the warp tile " + name(WarpM));
  if (bn % wn)
    return msg(BlockN, bn, "is not a multiple of the warp tile " + name(WarpN));
  if (bm > m)
    return msg(BlockM, bm, "exceeds M = " + Twine(m));
  if (bn > n)
    return msg(BlockN, bn, "exceeds N = " + Twine(n));
  // Edge tiles are masked, but copies move whole 16-byte rows: of A along
  // K, of B along N.
  int64_t copy = copyElements();
  if (k % copy)
    return msg(BlockK, bk, "tiles K = " + Twine(k) +
                               ", which is not a multiple of " + Twine(copy) +
                               " (16-byte rows of A for cp.async)");
  if (n % copy)
    return msg(BlockN, bn, "tiles N = " + Twine(n) +
                               ", which is not a multiple of " + Twine(copy) +
                               " (16-byte rows of B for cp.async)");
  if (threads() > target.maxThreadsPerBlock)
    return msg(WarpM, wm, "gives " + Twine(threads()) +
                              " threads per block; the limit is " +
                              Twine(target.maxThreadsPerBlock));
  // Copies by threads (cp.async; with a producer warpgroup, TMA copies
  // whole boxes, and so do the consumers where TMA cannot).
  if ((bm * bk / copy) % consumerThreads())
    return msg(BlockM, bm, "gives an A tile of " + Twine(bm * bk / copy) +
                               " 16-byte copies, not a multiple of the " +
                               Twine(consumerThreads()) + " threads");
  if ((bk * bn / copy) % consumerThreads())
    return msg(BlockN, bn, "gives a B tile of " + Twine(bk * bn / copy) +
                               " 16-byte copies, not a multiple of the " +
                               Twine(consumerThreads()) + " threads");
  if (pad % copy)
    return msg(Pad, pad, "is not a multiple of " + Twine(copy) +
                             " (rows must stay 16-byte aligned for cp.async "
                             "and ldmatrix)");
  if (sharedBytes() > target.sharedPerBlock)
    return msg(Stages, stages,
               "needs " + Twine(sharedBytes()) +
                   " bytes of shared memory per block; the limit on " +
                   target.name + " is " + Twine(target.sharedPerBlock));
  return "";
}

std::optional<unsigned> tessel::mmaBatchLoops(linalg::LinalgOp op) {
  Builder b(op.getContext());
  auto elementType = [](Value v) { return getElementTypeOrSelf(v.getType()); };
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return std::nullopt;
  Type a = elementType(op.getDpsInputs()[0]);
  if (!(a.isF16() || a.isBF16() || a.isF32()) ||
      elementType(op.getDpsInputs()[1]) != a ||
      elementType(op.getDpsInits()[0]) != b.getF32Type())
    return std::nullopt;
  return matmulBatchLoops(op, /*broadcast=*/true);
}

int64_t tessel::mmaElementBytes(linalg::LinalgOp op) {
  return getElementTypeOrSelf(op.getDpsInputs()[0].getType())
             .getIntOrFloatBitWidth() /
         8;
}

linalg::LinalgOp
tessel::findMmaContraction(func::FuncOp func, TilingInterface root,
                           std::string &why,
                           SmallVectorImpl<int64_t> *computed) {
  linalg::LinalgOp contraction = findRootContraction(func, root, why);
  if (!contraction)
    return {};
  if (!mmaBatchLoops(contraction)) {
    why = "loop.mma takes a (batched) matmul of f16, bf16 or f32 into f32, "
          "A row-major (m, k) and B (k, n)";
    return {};
  }
  for (auto [i, input] : llvm::enumerate(contraction.getDpsInputs())) {
    if (isKernelArgument(input))
      continue;
    linalg::LinalgOp producer = computingOp(input);
    if (!producer ||
        ShapedType::isDynamicShape(producer.getStaticLoopRanges())) {
      why = "input " + std::to_string(i) + " of the contraction is neither a "
            "kernel argument nor computed by a linalg op of static shape";
      return {};
    }
    if (computed)
      computed->push_back(i);
  }
  auto fill = contraction.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.value().getDefiningOp<arith::ConstantOp>()) {
    why = "the contraction's accumulator is not filled with a constant";
    return {};
  }
  return contraction;
}
