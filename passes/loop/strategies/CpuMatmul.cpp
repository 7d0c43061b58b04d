//===- CpuMatmul.cpp - CPU (batched) matmuls in register blocks ------------===//
//
// A kernel whose root computes a (batched) matmul, maybe with an
// elementwise epilogue: parallel blocks of the result, copied operand
// blocks walked in register blocks of vector FMAs (loop.vectorize,
// cpu/VectorizeMatmul.cpp), and loop.split_k for a long K over fewer than
// kCpuMinTiles tiles.
//
//===----------------------------------------------------------------------===//

#include "passes/loop/strategies/Strategy.h"

#include "passes/cpu/VectorizeMatmul.h"
#include "passes/linalg/Contractions.h"
#include "passes/linalg/Im2Col.h"

using namespace mlir;
using namespace tessel;

namespace {

/// Block sizes for a loop of `extent`: the powers of two in [lo, hi] below
/// it, its divisors in [lo, hi], and `extent` itself when at most `hi`.
SmallVector<int64_t> blockChoices(int64_t extent, int64_t lo, int64_t hi) {
  SmallVector<int64_t> found;
  for (int64_t p = 1; p <= hi && p < extent; p *= 2)
    if (p >= lo)
      found.push_back(p);
  for (int64_t d = lo; d <= std::min(hi, extent); ++d)
    if (extent % d == 0)
      found.push_back(d);
  if (extent <= hi || found.empty())
    found.push_back(std::min(extent, hi));
  llvm::sort(found);
  found.erase(llvm::unique(found), found.end());
  return found;
}

/// pick(choices, preferred), unless that does not divide `extent`: then,
/// of it and the divisors of `extent` among `choices` within a factor of
/// two of `preferred`, the one that pads fewest points. loop.vectorize pads
/// a tile to whole register blocks of `multiple`, copying its A and B
/// blocks, and pads a partial edge tile (of dynamic size) to a full one; a
/// full tile of whole register blocks it reads in place. Ties go to blocks
/// of whole register blocks (only an edge tile is copied), then to the
/// largest at most `preferred`, then the smallest above. 1000^3 on the
/// 2-core Sapphire Rapids VM: 128x256 blocks, every tile padded, ~50 ms of
/// CPU time, 200x250 with blocks of K that divide it ~30 ms; 200x256, the
/// edge tiles alone padded, 7.6 -> 6.9 ms against 200x250; a 3x3
/// convolution's 3136 output pixels in blocks of 224, not 256: 6-10%
/// faster; 197 rows in one block padded to 200, not 128 and 69 padded to
/// 128.
int64_t pickDividing(ArrayRef<int64_t> choices, int64_t extent,
                     int64_t preferred, int64_t multiple) {
  int64_t best = pick(choices, preferred);
  if (extent % best == 0)
    return best;
  auto rank = [&](int64_t c) {
    int64_t padded =
        llvm::divideCeil(extent, c) * llvm::alignTo(c, multiple) - extent;
    return std::make_tuple(padded, c % multiple != 0, c > preferred,
                           c > preferred ? c : -c);
  };
  int64_t found = best;
  for (int64_t c : choices)
    if (extent % c == 0 && 2 * c > preferred && c <= 2 * preferred &&
        rank(c) < rank(found))
      found = c;
  return found;
}

/// Checks loop.vectorize: a matmul kernel, at most one `parallel` tile,
/// not of K, and register blocks no larger than the tiles (blocks that do
/// not divide are padded, but a block larger than its tile only computes
/// padding).
LogicalResult validateVectorize(ScheduleCheck check,
                                loop::VectorizeOp vectorize) {
  loop::ScheduleOp schedule = check.schedule;
  std::string why;
  linalg::LinalgOp matmul = findVectorizableMatmul(check.func, check.root, why);
  if (!matmul)
    return vectorize.emitError("cannot apply to kernel '")
           << schedule.getKernel() << "': " << why;
  // The root's loops and the matmul's begin with the same batch, m and n
  // (dynamic ones at their largest in check.extents).
  unsigned batch = *matmulBatchLoops(matmul, /*broadcast=*/true);
  SmallVector<int64_t> tile = {check.extents[batch], check.extents[batch + 1],
                               matmul.getStaticLoopRanges()[batch + 2]};
  const char *what[] = {"rows", "columns", "depth"};
  loop::TileOp parallelTile;
  for (auto t : schedule.getBody().getOps<loop::TileOp>()) {
    if (!t.getParallel() || parallelTile)
      return t.emitError("cannot be combined with loop.vectorize, which "
                         "takes the tile of one `parallel` loop.tile");
    parallelTile = t;
  }
  if (parallelTile) {
    SmallVector<int64_t> sizes = parallelTile.getResolvedSizes();
    if (sizes.size() > batch + 2 && sizes[batch + 2] != 0)
      return parallelTile.emitError(sizeName(parallelTile, batch + 2))
             << " = " << sizes[batch + 2] << " tiles the matmul's K loop; "
             << "loop.vectorize walks K itself (its depth)";
    for (unsigned i : {0u, 1u})
      if (sizes[batch + i] != 0)
        tile[i] = std::min(tile[i], sizes[batch + i]);
  }
  tile[2] = std::min(tile[2] / check.parts, vectorize.getResolvedDepth());
  for (auto [i, size] : llvm::enumerate(vectorize.getResolvedSizes()))
    if (size > tile[i])
      return vectorize.emitError(valueName(vectorize.getDynamicSizes(),
                                           vectorize.getStaticSizes(), i,
                                           "loop.vectorize size"))
             << " = " << size << " exceeds the tile's " << tile[i] << " "
             << what[i];
  return success();
}

struct CpuMatmul final : Strategy {
  StringRef name() const override { return "CPU matmul"; }

  bool owns(Operation *op) const override { return isa<loop::VectorizeOp>(op); }
  // Register blocks and K steps.
  bool writesTileLoops(Operation *) const override { return true; }

  /// Blocks of the result plus loop.vectorize, for a kernel whose root
  /// loop.vectorize takes; a root small enough to be one tile is
  /// vectorized whole.
  Default addDefault(DefaultRequest r) const override {
    std::string why;
    linalg::LinalgOp matmul = findVectorizableMatmul(r.func, r.root, why);
    if (!matmul)
      return Default::Declined;
    OpBuilder sb(r.func.getContext());
    Location loc = r.func.getLoc();
    SmallVector<int64_t> sizes(r.extents.size(), 0);
    // Register blocks two vectors wide, unrolled 4 deep, whose
    // accumulators take half the vector registers, leaving the rest for
    // the B row and the A broadcasts. AVX2, 16 registers: 4x16 (8x16
    // spills; 1024^3 on the 2-core EPYC VM: 30.6 ms with 8x16x8, 26.3 ms
    // with 4x16x4). AVX-512, 32: 8x32 (2-core Sapphire Rapids VM: 24.6
    // ms with 4x16 and 128 columns per block, 14.7 ms with 8x32 and 256).
    // Tiles of the most rows (512, 256, else 128) that leave the cores 4
    // tiles, so that a B block of 512x256 (which stays in L2) is copied
    // once for as many rows as may be, walked in row blocks of 8 (one
    // AVX-512 register block; their A rows stay in L1). On the Sapphire
    // Rapids VM, against 128x256 tiles, K blocks of 256 and the A of a
    // whole tile per B strip: 1024^3 8.0 -> 6.9 ms, 2048^3 64 -> 54,
    // 256x1024x1024 2.02 -> 1.81 (torch 6.6, 48, 1.83).
    // Blocks that do not divide the matmul are padded (loop.vectorize:
    // the partial edge tiles), so sizes are powers of two whatever the
    // shape, plus the divisors that tile it exactly. A batched matmul's
    // tiles hold one batch index.
    int64_t regN = 2 * std::max<int64_t>(r.vectorBits / 32, 1);
    int64_t regM = r.vectorBits >= 512 ? 8 : 4;
    unsigned batch = *matmulBatchLoops(matmul, /*broadcast=*/true);
    SmallVector<int64_t> bmChoices = blockChoices(r.extents[batch], 8, 512);
    SmallVector<int64_t> bnChoices =
        blockChoices(r.extents[batch + 1], 8, 512);
    SmallVector<int64_t> bkChoices =
        blockChoices(matmul.getStaticLoopRanges()[batch + 2], 16, 1024);
    int64_t bn = pickDividing(bnChoices, r.extents[batch + 1], 8 * regN, regN);
    // A convolution's pixels in blocks of whole output rows (or equal
    // parts of one), which loop.vectorize gathers by input rows
    // (cpu/PackPatches.cpp), the nearest such divisor within a factor of
    // two (7x7 stride 2 over 224x224, 112 pixels a row: 256 -> 224, 2.65
    // -> 1.58 ms).
    Operation *bProducer = matmul.getDpsInputs()[1].getDefiningOp();
    std::optional<PatchGeometry> patches =
        bProducer ? getPatchGeometry(bProducer) : std::nullopt;
    auto wholeRuns = [&](int64_t c) {
      int64_t width = patches->output[1];
      return c % width == 0 || width % c == 0;
    };
    if (patches) {
      int64_t wanted = bn;
      auto distance = [&](int64_t c) { return sizeRatio(c, wanted); };
      for (int64_t c : bnChoices)
        if (wholeRuns(c) && r.extents[batch + 1] % c == 0 &&
            distance(c) <= 2 && (!wholeRuns(bn) || distance(c) < distance(bn)))
          bn = c;
    }
    // Where no such block is whole register blocks, the widest that is
    // whole blocks of half a register block's width (of at least 4 of
    // them): 784 pixels (28x28) in 7 tiles of 112, not 2 of 392 padded to
    // 400, so that a tile's epilogue runs on its register blocks (1x1
    // convolution 32 -> 192 over 28x28: 75 -> 54 us; 8x128x28x28 3x3: 10.8
    // -> 10.2 ms; at batch 1 it is 1.16 ms either way).
    int64_t halfN = regN / 2;
    if (bn % halfN != 0)
      for (int64_t c : bnChoices)
        if (c < bn && c >= 4 * halfN && c % halfN == 0 &&
            r.extents[batch + 1] % c == 0 && (!patches || wholeRuns(c)))
          bn = c;
    int64_t batchTiles = 1;
    for (int64_t b = 0; b < batch; ++b)
      batchTiles *= r.extents[b];
    auto tilesOf = [&](int64_t bm, int64_t bn) {
      return batchTiles * llvm::divideCeil(r.extents[batch], bm) *
             llvm::divideCeil(r.extents[batch + 1], bn);
    };
    // Larger tiles only where they are whole and unpadded: a padded edge
    // tile of 488 rows of 512 computes and copies more than the 200-row
    // tiles of 1000 rows (1000^3: 7.2 ms against 6.9).
    int64_t bm = pickDividing(bmChoices, r.extents[batch], 128, regM);
    // Rows over a size symbol are whole tiles only at some sizes: their
    // partial tile, in row blocks of unpacked B, costs most in large tiles.
    bool dynamicRows =
        ShapedType::isDynamic(matmul.getStaticLoopRanges()[batch]);
    for (int64_t preferred : {512, 256}) {
      if (dynamicRows)
        break;
      int64_t larger =
          pickDividing(bmChoices, r.extents[batch], preferred, regM);
      if (tilesOf(larger, bn) >= kCpuMinTiles &&
          r.extents[batch] % larger == 0 && larger % regM == 0) {
        bm = std::max(bm, larger);
        break;
      }
    }
    // A few tiles that the cores cannot share evenly (64x768x768 in 64x256
    // tiles: 3 for 2 cores) take narrower whole blocks that they can (4 of
    // 192 columns: 0.34 -> 0.28 ms; tuned, 0.27), else fewer rows (a 1x1
    // convolution 576 -> 96 of 14x14, whose 196 columns no block of whole
    // vectors divides, was one tile, on one core: 2 of 48 rows).
    int64_t cores = r.cores;
    auto uneven = [&] {
      return !matmul.hasDynamicShape() && tilesOf(bm, bn) % cores != 0 &&
             tilesOf(bm, bn) < 4 * cores;
    };
    if (uneven()) {
      int64_t wide = bn;
      for (int64_t c : bnChoices)
        if (c < wide && c >= 4 * regN && c % regN == 0 &&
            r.extents[batch + 1] % c == 0 && tilesOf(bm, c) % cores == 0 &&
            (!patches || wholeRuns(c)))
          bn = c;
    }
    // (A K long enough to split in parts of 512, below, splits instead.)
    int64_t depth = matmul.getStaticLoopRanges()[batch + 2];
    if (uneven() && (patches || depth < 2 * 512)) {
      int64_t tall = bm;
      for (int64_t c : bmChoices)
        if (c < tall && c % regM == 0 && r.extents[batch] % c == 0 &&
            tilesOf(c, bn) % cores == 0)
          bm = c;
    }
    // A single row reads each element of B once: K blocks of 16 rows walk
    // the row-major B in runs of whole rows of the tile, where deep blocks
    // walk it a strip at a time down hundreds of rows (1x1024x4096 300 ->
    // 246 us, 1x4096x1024 240 -> 225, 1x1280x1000 73 -> 68; torch 534,
    // 408, 92).
    int64_t bk = pick(bkChoices, r.extents[batch] == 1 ? 16 : 512);
    SmallVector<int64_t> rmChoices = {1, 2, 4, 6, 8, 12, 16};
    SmallVector<int64_t> rnChoices = {1, 2, 4, 8, 16, 24, 32, 48, 64};
    SmallVector<int64_t> rkChoices = {1, 2, 4, 8, 16};
    r.begin(sb);
    // Parts of K computed in parallel when the blocks of the result are
    // too few for the cores (a long K of a small result).
    // (Not of a matmul of dynamic size: the partial products' workspace
    // would be too. Not of a convolution's: tiling cannot fuse its patch
    // gather through the split's reshape, so one core would gather them
    // all first; 256x14x14 3x3 with K in 2 parts 1.59 ms, in 1 1.25.)
    SmallVector<int64_t> parts = matmul.hasDynamicShape() || patches
                                     ? SmallVector<int64_t>{1}
                                     : splitChoices(depth, 16, 1);
    int64_t tiles = tilesOf(bm, bn);
    Value vparts;
    if (parts.size() > 1)
      vparts = addKnob(sb, loc, "split_k",
                       defaultParts(parts, tiles, kCpuMinTiles, depth, 512),
                       parts);
    Value vbm = addKnob(sb, loc, "block_m", bm, bmChoices);
    Value vbn = addKnob(sb, loc, "block_n", bn, bnChoices);
    Value vbk = addKnob(sb, loc, "block_k", bk, bkChoices);
    // Register blocks half as wide and twice as tall (as many
    // accumulators) where they pad the tile's columns less: 196 columns
    // are 224 in blocks of 32, 208 in blocks of 16 (256x14x14 3x3 as a
    // matmul of 196 columns: 8x32 blocks 1.25 ms, 16x16 1.15; with the
    // 4 left as a tail of their own, 1.25 and 1.19); or where they compute
    // fewer once the columns that whole blocks leave take narrower blocks
    // (tailColumns): 49 columns are 32 + 32 in blocks of 32, 48 + 1 in
    // blocks of 16 (512x7x7 3x3: 1.49 -> 1.14 ms, the last column as dot
    // products).
    auto computed = [&](int64_t width) {
      int64_t tail = tailColumns(bn, width);
      return tail ? bn - bn % width + tail : llvm::alignTo(bn, width);
    };
    if (bn % regN != 0 && 2 * regM <= bm &&
        (llvm::alignTo(bn, regN / 2) < llvm::alignTo(bn, regN) ||
         computed(regN / 2) < computed(regN))) {
      regM *= 2;
      regN /= 2;
    }
    // A tile of at most 64 rows in one row block, B read in place: its copy
    // would serve only a few register rows (linear+relu 64x768x768 in rows
    // of 8, B copied: 0.381 ms; in one block of 64: 0.355, the tuned point
    // 0.337). Not a convolution's, whose patches are gathered anyway
    // (1x64x56x56 3x3: 1.16 ms in rows of 8, 1.22 in one block).
    int64_t cacheRows = !patches && bm <= 64 ? bm : regM;
    Value vcm =
        addKnob(sb, loc, "cache_m", pick(bmChoices, cacheRows), bmChoices);
    int64_t regRows = std::min(regM, bm);
    Value vrm = addKnob(sb, loc, "reg_m", pick(rmChoices, regRows), rmChoices);
    // Whole vectors where the block is narrower than two. A register
    // block of fewer rows (a matmul of fewer) is as many times wider, up
    // to 64 columns: its accumulators are few, each a chain of dependent
    // FMAs (1x1024x1024, an 8x32 block's shape cut to 1x32: 0.214 ms, 1x64
    // 0.098, torch 0.087).
    int64_t lanes = std::max<int64_t>(r.vectorBits / 32, 1),
            rn = std::min<int64_t>({regN * (regM / regRows), 64, bn});
    if (rn > lanes)
      rn -= rn % lanes;
    Value vrn = addKnob(sb, loc, "reg_n", pick(rnChoices, rn), rnChoices);
    Value vrk = addKnob(sb, loc, "reg_k",
                        pick(rkChoices, std::min<int64_t>(4, bk)), rkChoices);
    if (vparts)
      loop::SplitKOp::create(sb, loc, ValueRange{vparts},
                             sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    std::fill_n(sizes.begin(), batch, 1);
    sizes[batch] = sizes[batch + 1] = ShapedType::kDynamic;
    loop::TileOp::create(sb, loc, ValueRange{vbm, vbn},
                         sb.getDenseI64ArrayAttr(sizes), ArrayAttr(),
                         sb.getUnitAttr());
    loop::VectorizeOp::create(
        sb, loc, ValueRange{vrm, vrn, vrk},
        sb.getDenseI64ArrayAttr({ShapedType::kDynamic, ShapedType::kDynamic,
                                 ShapedType::kDynamic}),
        ValueRange{vbk}, sb.getDenseI64ArrayAttr({ShapedType::kDynamic}),
        ValueRange{vcm}, sb.getDenseI64ArrayAttr({ShapedType::kDynamic}));
    return Default::Done;
  }

  LogicalResult validate(ScheduleCheck check) const override {
    return validateVectorize(
        check, *check.schedule.getBody().getOps<loop::VectorizeOp>().begin());
  }

  LogicalResult apply(ApplyState &state, Operation *op) const override {
    auto vectorize = cast<loop::VectorizeOp>(op);
    linalg::LinalgOp matmul = findTiledContraction(state.root);
    if (!matmul)
      return vectorize.emitError("needs exactly one matmul in the tile");
    return vectorizeMatmul(state.rewriter, matmul, vectorize.getResolvedRows(),
                           vectorize.getResolvedDepth(),
                           vectorize.getResolvedSizes());
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    registerVectorizeMatmulInterfaces(registry);
  }
};

} // namespace

const Strategy &tessel::cpuMatmulStrategy() {
  static const CpuMatmul strategy;
  return strategy;
}
