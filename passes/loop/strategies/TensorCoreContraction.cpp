//===- TensorCoreContraction.cpp - GPU contractions on tensor cores --------===//
//
// A contraction that tensor cores can take (an f16 or bf16 matmul, or with
// allow-tf32 an f32 one; maybe batched, maybe with an elementwise epilogue;
// K and N in whole 16-byte rows): block tiles of the result, operand tiles
// promoted to shared memory and pipelined, warps of mma.sync (loop.mma,
// loop.promote, loop.pipeline); edge tiles are masked. Inputs the kernel
// computes (a convolution's patches) are materialized first
// (loop.materialize); a long K over too few tiles is split (loop.split_k).
// gpu-lower-mma carries out the tensor-core primitives after
// bufferization, from the #loop.mma_config this strategy puts on the
// contraction.
//
//===----------------------------------------------------------------------===//

#include "passes/loop/strategies/Strategy.h"

#include "passes/TileAndFuseRoot.h"
#include "passes/linalg/Contractions.h"
#include "passes/loop/MmaConfig.h"

using namespace mlir;
using namespace tessel;

namespace {

/// The least share of the SMs' block slots a default wgmma tiling keeps
/// busy over its waves of blocks.
constexpr double kFullWaves = 0.85;

/// The extents a tensor-core schedule of `contraction` (with `batch` batch
/// loops) is chosen and checked at, loops over size symbols at their
/// largest: edge tiles of M and N are masked, blocks counted at each
/// call, K steps counted at each call and batch indices looped over.
/// Nothing where a symbol has no range, or where N or K may not come in
/// whole 16-byte rows (B's rows and A's, which the copies move): a dynamic
/// one must be a multiple of 8 halves (4 floats) at every size, by the
/// symbols' declared `multiple_of`.
std::optional<SmallVector<int64_t>> mmaExtents(linalg::LinalgOp contraction,
                                               unsigned batch) {
  SmallVector<int64_t> extents = contraction.getStaticLoopRanges();
  if (!ShapedType::isDynamicShape(extents))
    return extents;
  auto root = cast<TilingInterface>(contraction.getOperation());
  if (ShapedType::isDynamic(extents[batch + 1]) ||
      ShapedType::isDynamic(extents[batch + 2])) {
    int64_t copy = kCopyBytes / mmaElementBytes(contraction);
    std::optional<SmallVector<int64_t>> divisors = loopExtentDivisors(root);
    if (!divisors || (*divisors)[batch + 1] % copy ||
        (*divisors)[batch + 2] % copy)
      return std::nullopt;
  }
  return largestLoopExtents(root);
}

/// Checks loop.materialize: a contraction kernel whose named inputs are
/// computed in it, by linalg ops.
LogicalResult validateMaterialize(loop::MaterializeOp materialize,
                                  func::FuncOp func, TilingInterface root) {
  linalg::LinalgOp contraction = findRootContraction(materialize, func, root);
  if (!contraction)
    return failure();
  for (int64_t input : materialize.getInputs())
    if (!computingOp(contraction.getDpsInputs()[input]))
      return materialize.emitError("input ")
             << input << " of the contraction is not computed by a linalg "
             << "op of the kernel; there is nothing to materialize";
  return success();
}

/// Checks loop.mma (with loop.promote and loop.pipeline) against the
/// kernel's contraction and the target. The block tile tiles the root's
/// loops, which are the contraction's batch, M and N loops (the root is
/// the contraction or reads it at the identity).
LogicalResult validateMma(ScheduleCheck check, loop::MmaOp mma) {
  loop::ScheduleOp schedule = check.schedule;
  loop::TileOp blockTile = check.blockTile;
  if (failed(checkOnlyBlockTile(schedule, mma, blockTile)))
    return failure();
  auto promotes = schedule.getBody().getOps<loop::PromoteOp>();
  auto promote = promotes.empty() ? loop::PromoteOp() : *promotes.begin();
  if (!promote || !llvm::is_contained(promote.getInputs(), 0) ||
      !llvm::is_contained(promote.getInputs(), 1))
    return mma.emitError("needs loop.promote inputs [0, 1]: ldmatrix reads "
                         "its fragments from shared memory");
  std::string why;
  SmallVector<int64_t> computed;
  linalg::LinalgOp contraction =
      findMmaContraction(check.func, check.root, why, &computed);
  if (!contraction)
    return mma.emitError("cannot apply to kernel '")
           << schedule.getKernel() << "': " << why;
  for (int64_t input : computed)
    if (llvm::none_of(schedule.getBody().getOps<loop::MaterializeOp>(),
                      [&](loop::MaterializeOp m) {
                        return llvm::is_contained(m.getInputs(), input);
                      }))
      return mma.emitError("copies its tiles from memory, but input ")
             << input << " of the contraction is computed in the kernel; "
             << "add loop.materialize inputs [" << input << "]";
  int64_t elementBytes = mmaElementBytes(contraction);
  int64_t instructionK = elementBytes == 4 ? 8 : 16;
  SmallVector<int64_t> shape = {16, 8, instructionK};
  ArrayRef<int64_t> given = mma.getShape();
  bool wgmma =
      given.size() == 3 && given[0] == kWgmmaM && given[2] == instructionK;
  if (!wgmma && given != ArrayRef<int64_t>(shape))
    return mma.emitError("shape [")
           << given << "] is not supported; "
           << (elementBytes == 4 ? "f32 operands (as tf32)"
                                 : "f16 or bf16 operands")
           << " with f32 accumulation use [" << shape << "] (mma.sync) or [64, n, "
           << instructionK << "] (wgmma)";
  unsigned batch = *mmaBatchLoops(contraction);
  std::optional<SmallVector<int64_t>> largest = mmaExtents(contraction, batch);
  if (!largest)
    return mma.emitError("cannot apply to kernel '")
           << schedule.getKernel()
           << "': its contraction's N or K is over size symbols that may "
              "not make whole 16-byte rows (declare them multiple_of "
           << kCopyBytes / elementBytes
           << "), or over symbols without a range";
  SmallVector<int64_t> extents = *largest;
  SmallVector<int64_t> block = blockTile.getResolvedSizes();
  for (auto [size, extent] : llvm::zip(block, extents))
    if (size == 0)
      size = extent; // untiled: the whole loop
  SmallVector<int64_t> sizes = mma.getResolvedSizes();
  int64_t stages = 1;
  auto pipelines = schedule.getBody().getOps<loop::PipelineOp>();
  if (!pipelines.empty())
    stages = (*pipelines.begin()).getResolvedStages();
  auto specializes = schedule.getBody().getOps<loop::WarpSpecializeOp>();
  int64_t producers = 0;
  if (!specializes.empty())
    producers = (*specializes.begin()).getResolvedProducers();
  auto persistents = schedule.getBody().getOps<loop::PersistentOp>();
  int64_t groupM = 0;
  if (!persistents.empty()) {
    groupM = (*persistents.begin()).getResolvedGroupM();
    if (batch)
      return (*persistents.begin()).emitError(
          "a persistent grid walks the tiles of an unbatched contraction; "
          "this one has ")
             << batch << " batch loops";
  }
  MmaConfig c{extents[batch],     extents[batch + 1],
              extents[batch + 2] / check.parts,
              block[batch],       block[batch + 1],
              sizes[0],           sizes[1],
              sizes[2],           stages,
              promote.getResolvedPad(), elementBytes,
              wgmma ? kWgmmaM : 16, wgmma ? given[1] : 8, producers, groupM};
  std::string error =
      c.check(schedule.getTargetDescription(), [&](MmaConfig::Field f) {
        switch (f) {
        case MmaConfig::BlockM:
        case MmaConfig::BlockN:
          return sizeName(blockTile,
                          batch + (f == MmaConfig::BlockM ? 0 : 1));
        case MmaConfig::WarpM:
        case MmaConfig::WarpN:
        case MmaConfig::BlockK:
          return valueName(mma.getDynamicSizes(), mma.getStaticSizes(),
                           f == MmaConfig::WarpM   ? 0
                           : f == MmaConfig::WarpN ? 1
                                                   : 2,
                           "loop.mma size");
        case MmaConfig::Stages:
          return pipelines.empty()
                     ? std::string("stages")
                     : valueName((*pipelines.begin()).getDynamicStages(),
                                 (*pipelines.begin()).getStaticStages(), 0,
                                 "stages");
        case MmaConfig::Pad:
          return valueName(promote.getDynamicPad(), promote.getStaticPad(), 0,
                           "pad");
        case MmaConfig::Producers:
          return specializes.empty()
                     ? std::string("producers")
                     : valueName((*specializes.begin()).getDynamicProducers(),
                                 (*specializes.begin()).getStaticProducers(), 0,
                                 "producers");
        case MmaConfig::GroupM:
          return valueName((*persistents.begin()).getDynamicGroupM(),
                           (*persistents.begin()).getStaticGroupM(), 0,
                           "group_m");
        }
        llvm_unreachable("unknown field");
      });
  if (!error.empty())
    return mma.emitError(error);
  return success();
}

/// Carries out loop.materialize: the producers of the named inputs of
/// `contraction` are tiled on their own, with the target's pointwise
/// tiling, so that the contraction reads their results from memory (tiling
/// the root fuses linalg producers only).
LogicalResult materializeInputs(RewriterBase &rewriter,
                                loop::MaterializeOp materialize,
                                linalg::LinalgOp contraction,
                                llvm::SmallPtrSetImpl<Operation *> &roots) {
  for (int64_t input : materialize.getInputs()) {
    auto producer = dyn_cast_if_present<TilingInterface>(
        computingOp(contraction.getDpsInputs()[input]).getOperation());
    std::optional<PointwiseTiling> tiling;
    if (producer)
      tiling = gpuPointwiseTiling(
          producer, /*rowwise=*/false,
          materialize->getParentOfType<loop::ScheduleOp>()
              .getTargetDescription());
    if (!tiling)
      return materialize.emitError("input ")
             << input << " of the contraction is not computed by a linalg "
             << "op of static shape with parallel loops";
    llvm::SmallPtrSet<Operation *, 4> returned;
    if (failed(tilePointwise(rewriter, materialize, producer, *tiling,
                             returned, roots)))
      return failure();
  }
  return success();
}

/// Tensor-core primitives apply after bufferization (gpu-lower-mma): the
/// contraction carries them as a `tessel.mma` #loop.mma_config until then.
/// `levels` tile the contraction's loops (or the root's, which begin with
/// them).
LogicalResult markMma(loop::MmaOp mma, TilingInterface root,
                      ArrayRef<Level> levels) {
  auto schedule = mma->getParentOfType<loop::ScheduleOp>();
  linalg::LinalgOp contraction = findTiledContraction(root);
  if (!contraction)
    return mma.emitError("needs exactly one contraction in the block tile");
  int64_t stages = 1, pad = 0, producers = 0;
  for (auto pipeline : schedule.getBody().getOps<loop::PipelineOp>())
    stages = pipeline.getResolvedStages();
  for (auto promote : schedule.getBody().getOps<loop::PromoteOp>())
    pad = promote.getResolvedPad();
  for (auto specialize : schedule.getBody().getOps<loop::WarpSpecializeOp>())
    producers = specialize.getResolvedProducers();
  int64_t groupM = 0;
  for (auto persistent : schedule.getBody().getOps<loop::PersistentOp>())
    groupM = persistent.getResolvedGroupM();
  SmallVector<int64_t> sizes = mma.getResolvedSizes();
  // The block tile's M and N sizes (untiled: the whole extent); edge tiles
  // of the forall are smaller.
  unsigned batch = *mmaBatchLoops(contraction);
  SmallVector<int64_t> block;
  for (const Level &level : levels)
    if (level.isBlockLevel())
      block = level.sizes;
  SmallVector<int64_t> ranges = contraction.getStaticLoopRanges();
  auto blockSize = [&](unsigned loop) {
    return block.empty() || block[loop] == 0 ? ranges[loop] : block[loop];
  };
  auto config = loop::MmaConfigAttr::getChecked(
      [&] { return mma.emitError(); }, schedule.getContext(),
      schedule.getTarget(), blockSize(batch), blockSize(batch + 1), sizes[0],
      sizes[1], sizes[2], stages, pad, mma.getShape()[0], mma.getShape()[1],
      producers, groupM);
  if (!config)
    return failure();
  contraction->setAttr(loop::kMmaAttrName, config);
  return success();
}

struct TensorCoreContraction final : Strategy {
  StringRef name() const override { return "tensor-core contraction"; }

  bool owns(Operation *op) const override {
    return isa<loop::MmaOp, loop::PromoteOp, loop::PipelineOp,
               loop::MaterializeOp, loop::WarpSpecializeOp,
               loop::PersistentOp>(op);
  }
  // Warp tiles and K steps.
  bool writesTileLoops(Operation *op) const override {
    return isa<loop::MmaOp>(op);
  }

  /// A schedule when the kernel is a contraction loop.mma takes and some
  /// legal tiling fits it.
  Default addDefault(DefaultRequest r) const override {
    if (!r.isKind("contraction"))
      return Default::Declined;
    std::string why;
    SmallVector<int64_t> computed;
    linalg::LinalgOp contraction =
        findMmaContraction(r.func, r.root, why, &computed);
    // f32 operands multiply as tf32 (10-bit mantissas): only when allowed,
    // as torch's allow_tf32.
    if (!contraction ||
        (mmaElementBytes(contraction) == 4 && !r.allowTf32))
      return Default::Declined;
    int64_t elementBytes = mmaElementBytes(contraction);
    unsigned batch = *mmaBatchLoops(contraction);
    std::optional<SmallVector<int64_t>> largest =
        mmaExtents(contraction, batch);
    if (!largest)
      return Default::Declined;
    SmallVector<int64_t> extents = *largest;
    // The innermost batch loop goes to grid z, outer ones stay in the block.
    int64_t batchBlocks = batch ? extents[batch - 1] : 1;
    auto noName = [](MmaConfig::Field) { return std::string(); };
    // Candidates from the largest tile down (mma.sync: four warps each,
    // 2x2), four stages where they fit; the first that gives every SM a block wins,
    // else the one with the most blocks.
    std::optional<MmaConfig> best;
    auto blocksOf = [&](const MmaConfig &c) {
      return c.blocks() * batchBlocks;
    };
    auto consider = [&](const MmaConfig &c) {
      if (!c.check(r.info, noName).empty())
        return false;
      if (!best ||
          blocksOf(*best) < std::min(blocksOf(c), r.info.multiprocessors))
        best = c;
      return true;
    };
    // sm_90a: wgmma over warpgroups of 64 rows by the block's columns (one
    // instruction of n = block_n per 64 rows and 32 bytes of K), K steps of
    // one swizzled 128-byte row, a producer warpgroup issuing the TMA copies
    // (not of tf32 operands: B is transposed into its tile by the
    // consumers' copies).
    int64_t producers = r.info.has(loop::Instruction::Tma) &&
                        r.info.has(loop::Instruction::MbarrierTx) &&
                        elementBytes == 2;
    // More stages than K steps (plus the one consumed) only take shared
    // memory from other blocks.
    int64_t wgmmaSteps =
        llvm::divideCeil(extents[batch + 2], kSwizzleBytes / elementBytes);
    SmallVector<MmaConfig> wgmmaTiles; // legal, from the largest tile down
    if (r.info.has(loop::Instruction::Wgmma))
      for (int64_t bm : {128, 64})
        for (int64_t bn : {256, 192, 128, 64})
          for (int64_t stages : {4, 3, 2}) {
            MmaConfig c{extents[batch], extents[batch + 1], extents[batch + 2],
                        bm, bn, kWgmmaM, bn, kSwizzleBytes / elementBytes,
                        stages, 0, elementBytes, kWgmmaM, bn, producers};
            if ((stages == 2 || stages <= wgmmaSteps + 1) &&
                c.check(r.info, noName).empty()) {
              wgmmaTiles.push_back(c);
              break;
            }
          }
    // The largest tile whose last wave of blocks is mostly full: a short
    // last wave idles most SMs for a whole tile (8192x768x3072: 192 tiles
    // of 128x256 on 132 SMs keep them 73% busy, 256 of 128x192 97%).
    auto waveUse = [&](const MmaConfig &c) {
      int64_t sms = r.info.multiprocessors;
      return static_cast<double>(blocksOf(c)) /
             static_cast<double>(llvm::divideCeil(blocksOf(c), sms) * sms);
    };
    for (const MmaConfig &c : wgmmaTiles)
      if (blocksOf(c) >= r.info.multiprocessors && waveUse(c) >= kFullWaves) {
        best = c;
        break;
      }
    // Else, as for mma.sync, the first that gives every SM a block or the
    // one with the most blocks.
    if (!best)
      for (const MmaConfig &c : wgmmaTiles)
        consider(c);
    // mma.sync where wgmma is not available or fits no tile.
    bool wgmma = best.has_value();
    for (int64_t bm : {128, 64, 32})
      for (int64_t bn : {128, 64, 32})
        for (int64_t bk : {32, 16})
          for (int64_t stages : {4, 3, 2})
            if (!wgmma &&
                consider(MmaConfig{extents[batch], extents[batch + 1],
                                   extents[batch + 2], bm, bn, bm / 2, bn / 2,
                                   bk, stages, kCopyBytes / elementBytes,
                                   elementBytes}))
              break;
    if (!best)
      return Default::Declined;
    MLIRContext *ctx = r.func.getContext();
    OpBuilder sb(ctx);
    r.begin(sb);
    Location loc = r.func.getLoc();
    auto mmaKnob = [&](MmaConfig::Field field, int64_t value,
                       ArrayRef<int64_t> choices) {
      return addKnob(sb, loc, MmaConfig::knobName(field), value, choices);
    };
    Value bm = mmaKnob(MmaConfig::BlockM, best->bm, {32, 64, 128, 256});
    Value bn = mmaKnob(MmaConfig::BlockN, best->bn, {32, 64, 128, 192, 256});
    Value bk = mmaKnob(MmaConfig::BlockK, best->bk, {16, 32, 64});
    Value wm = mmaKnob(MmaConfig::WarpM, best->wm, {16, 32, 64, 128});
    Value wn = mmaKnob(MmaConfig::WarpN, best->wn, {16, 32, 64, 128, 192, 256});
    Value stages = mmaKnob(MmaConfig::Stages, best->stages, {1, 2, 3, 4, 5});
    int64_t copy = best->copyElements();
    Value pad = mmaKnob(MmaConfig::Pad, best->pad, {0, copy, 2 * copy});
    Value vproducers, vgroup;
    // (tf32 operands are copied by the consumers, transposing B.)
    if (best->wgmma() && best->elementBytes == 2)
      vproducers = mmaKnob(MmaConfig::Producers, best->producers, {0, 1});
    // A persistent grid where a producer warpgroup copies and the tiles
    // outnumber the SMs (below, one wave of blocks: nothing to walk), in
    // groups of 8 tile rows (Triton's and CUTLASS's default raster); 0, a
    // block per tile, is a point of the knob too.
    if (best->producers && !batch &&
        best->blocks() > r.info.multiprocessors)
      vgroup = mmaKnob(MmaConfig::GroupM, 8, {0, 1, 2, 4, 8, 16});
    // K in parts on grid z when even the smallest tiles leave SMs idle and
    // K is long (each part keeps at least 32 steps of 32). Batched
    // contractions have grid z already.
    // (Not of a K over size symbols: each part's K would be too.)
    SmallVector<int64_t> parts =
        batch || ShapedType::isDynamic(
                     contraction.getStaticLoopRanges()[batch + 2])
            ? SmallVector<int64_t>{}
            : splitChoices(best->k, 16, copy);
    Value vparts;
    if (parts.size() > 1)
      vparts = addKnob(sb, loc, "split_k",
                       defaultParts(parts, best->blocks(),
                                    r.info.multiprocessors, best->k, 1024),
                       parts);
    // Inputs the kernel computes (a convolution's patches) go to memory
    // first: the tensor cores' copies read memory.
    if (!computed.empty())
      loop::MaterializeOp::create(sb, loc, sb.getDenseI64ArrayAttr(computed));
    if (vparts)
      loop::SplitKOp::create(sb, loc, ValueRange{vparts},
                             sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    SmallVector<int64_t> blockSizes(r.extents.size(), 0);
    blockSizes[batch] = blockSizes[batch + 1] = ShapedType::kDynamic;
    SmallVector<Attribute> mapping;
    if (batch) {
      blockSizes[batch - 1] = 1;
      mapping.push_back(
          gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimZ));
    }
    mapping.push_back(gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimY));
    mapping.push_back(gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX));
    loop::TileOp::create(sb, loc, ValueRange{bm, bn},
                         sb.getDenseI64ArrayAttr(blockSizes),
                         sb.getArrayAttr(mapping));
    loop::PromoteOp::create(sb, loc, sb.getDenseI64ArrayAttr({0, 1}),
                            ValueRange{pad},
                            sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    loop::PipelineOp::create(sb, loc, ValueRange{stages},
                             sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    if (vproducers)
      loop::WarpSpecializeOp::create(
          sb, loc, ValueRange{vproducers},
          sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    if (vgroup)
      loop::PersistentOp::create(sb, loc, ValueRange{vgroup},
                                 sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    loop::MmaOp::create(
        sb, loc, ValueRange{wm, wn, bk},
        sb.getDenseI64ArrayAttr(
            {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic}),
        sb.getDenseI64ArrayAttr(
            {best->shapeM, best->shapeN, best->instructionK()}));
    return Default::Done;
  }

  LogicalResult validate(ScheduleCheck check) const override {
    for (auto m : check.schedule.getBody().getOps<loop::MaterializeOp>())
      if (failed(validateMaterialize(m, check.func, check.root)))
        return failure();
    for (auto mma : check.schedule.getBody().getOps<loop::MmaOp>())
      return validateMma(check, mma);
    return success();
  }

  LogicalResult apply(ApplyState &state, Operation *op) const override {
    if (auto materialize = dyn_cast<loop::MaterializeOp>(op))
      return materializeInputs(state.rewriter, materialize, state.contraction,
                               state.roots);
    if (auto mma = dyn_cast<loop::MmaOp>(op))
      return markMma(mma, state.root, state.levels);
    return success(); // loop.promote and loop.pipeline: read by loop.mma
  }
};

} // namespace

const Strategy &tessel::tensorCoreContractionStrategy() {
  static const TensorCoreContraction strategy;
  return strategy;
}
