//===- CpuTranspose.cpp - CPU transposes in square tiles -------------------===//
//
// A root whose innermost loop walks an input across its rows (a
// transpose): tiles of whole rows would read one cache line, and one page,
// per point of the input; square tiles of its innermost loop and of the
// loop that walks the input's rows read and write whole lines that stay in
// L1. Its schedules are tiles alone, which the drivers check and carry
// out.
//
//===----------------------------------------------------------------------===//

#include "passes/loop/strategies/Strategy.h"

using namespace mlir;
using namespace tessel;

namespace {

/// The sides of the square tiles.
constexpr int64_t kCpuTransposeTile = 64;

struct CpuTranspose final : Strategy {
  StringRef name() const override { return "CPU transpose"; }

  /// Declines a root that is not a transpose, a kernel that reduces, and
  /// one small enough to be one tile.
  Default addDefault(DefaultRequest r) const override {
    SmallVector<int64_t> parallel = parallelLoops(r.root);
    int64_t inner = static_cast<int64_t>(r.extents.size()) - 1;
    if (parallel.empty() || parallel.back() != inner)
      return Default::Declined;
    auto across = llvm::find_if(llvm::reverse(ArrayRef(parallel).drop_back()),
                                [&](int64_t d) {
                                  return transposedAlong(r.root, d);
                                });
    if (across == llvm::reverse(ArrayRef(parallel).drop_back()).end())
      return Default::Declined;
    int64_t points = 1;
    for (int64_t d : parallel)
      points *= r.extents[d];
    bool reduces = false;
    r.func.walk([&](linalg::LinalgOp op) {
      reduces |= op.getNumReductionLoops() > 0;
    });
    if (points <= kCpuTilePoints || reduces)
      return Default::Declined;
    SmallVector<int64_t> sizes(r.extents.size(), 0);
    for (int64_t d : parallel)
      sizes[d] = 1;
    OpBuilder sb(r.func.getContext());
    r.begin(sb);
    Location loc = r.func.getLoc();
    SmallVector<Value> tiles;
    for (int64_t d : {*across, inner}) {
      SmallVector<int64_t> choices = powersOfTwoUpTo(r.extents[d]);
      tiles.push_back(addKnob(sb, loc, ("tile_" + Twine(d)).str(),
                              pick(choices, kCpuTransposeTile), choices));
      sizes[d] = ShapedType::kDynamic;
    }
    loop::TileOp::create(sb, loc, tiles, sb.getDenseI64ArrayAttr(sizes),
                         ArrayAttr(), sb.getUnitAttr());
    return Default::Done;
  }
};

} // namespace

const Strategy &tessel::cpuTransposeStrategy() {
  static const CpuTranspose strategy;
  return strategy;
}
