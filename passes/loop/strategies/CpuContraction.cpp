//===- CpuContraction.cpp - CPU contractions loop.vectorize does not take --===//
//
// Contractions that are not (batched) matmuls loop.vectorize takes
// (grouped convolutions): blocks of the last two parallel loops, outer
// ones one index per tile, in parallel; LLVM vectorizes the tile's loops.
// Its schedules are tiles and loop.unroll alone, which the drivers check
// and carry out.
//
//===----------------------------------------------------------------------===//

#include "passes/loop/strategies/Strategy.h"

using namespace mlir;
using namespace tessel;

namespace {

struct CpuContraction final : Strategy {
  StringRef name() const override { return "CPU contraction"; }

  Default addDefault(DefaultRequest r) const override {
    SmallVector<int64_t> parallel = parallelLoops(r.root);
    if (!r.isKind("contraction") || parallel.size() < 2)
      return Default::Declined;
    SmallVector<int64_t> sizes(r.extents.size(), 0);
    for (int64_t d : ArrayRef(parallel).drop_back(2))
      sizes[d] = 1;
    OpBuilder sb(r.func.getContext());
    r.begin(sb);
    Location loc = r.func.getLoc();
    SmallVector<Value> blocks;
    const char *names[] = {"block_m", "block_n"};
    for (auto [d, name] : llvm::zip(ArrayRef(parallel).take_back(2), names)) {
      SmallVector<int64_t> choices = powersOfTwoUpTo(r.extents[d]);
      blocks.push_back(addKnob(sb, loc, name, pick(choices, 128), choices));
      sizes[d] = ShapedType::kDynamic;
    }
    loop::TileOp::create(sb, loc, blocks, sb.getDenseI64ArrayAttr(sizes),
                         ArrayAttr(), sb.getUnitAttr());
    addUnrollKnob(sb, loc);
    return Default::Done;
  }
};

} // namespace

const Strategy &tessel::cpuContractionStrategy() {
  static const CpuContraction strategy;
  return strategy;
}
