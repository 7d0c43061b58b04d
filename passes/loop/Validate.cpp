//===- Validate.cpp - schedules against their target's limits -------------===//
//
// Op verifiers check what one op can see (knob domains, mapping kinds);
// this pass needs the kernel and the target: it follows the tile extents
// level by level and checks each against the hardware.
//
//===----------------------------------------------------------------------===//

#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"

namespace tessel {
#define GEN_PASS_DEF_LOOPVALIDATESCHEDULES
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// Limits of the GPU targets a schedule may name (sm_80 and sm_90 share
/// these; shared memory and tensor-core limits join with their primitives).
constexpr int64_t kMaxThreadsPerBlock = 1024;
/// Blocks along grid y or z (x allows 2^31 - 1).
constexpr int64_t kMaxGridYZ = 65535;

/// A name for a tile size in messages: its knob, else its position.
std::string sizeName(loop::TileOp tile, unsigned index) {
  unsigned dynamic = 0;
  for (auto [i, s] : llvm::enumerate(tile.getStaticSizes())) {
    if (!ShapedType::isDynamic(s))
      continue;
    if (i == index)
      return ("knob '" +
              tile.getDynamicSizes()[dynamic].getDefiningOp<loop::KnobOp>()
                  .getName() +
              "'")
          .str();
    ++dynamic;
  }
  return "tile size #" + std::to_string(index);
}

LogicalResult validate(loop::ScheduleOp schedule, func::FuncOp func) {
  TilingInterface root = scheduledRoot(schedule, func, findKernelRoots(func),
                                       schedule.getResult());
  if (!root)
    return failure();
  std::optional<SmallVector<int64_t>> maybeExtents = staticLoopExtents(root);
  if (!maybeExtents)
    return schedule.emitError("kernel '")
           << schedule.getKernel() << "' has dynamic loops; schedules "
           << "need static shapes";
  SmallVector<int64_t> extents = *maybeExtents;
  bool gpu = schedule.getTarget() != "cpu";
  bool blocks = false;
  int64_t threads = 1;
  for (auto tile : schedule.getBody().getOps<loop::TileOp>()) {
    SmallVector<int64_t> sizes = tile.getResolvedSizes();
    if (sizes.size() != extents.size())
      return tile.emitError("has ")
             << sizes.size() << " sizes but the kernel's root has "
             << extents.size() << " loops";
    std::optional<ArrayAttr> mapping = tile.getMapping();
    bool isBlock = mapping && isa<gpu::GPUBlockMappingAttr>((*mapping)[0]);
    if (mapping && !isBlock && !blocks)
      return tile.emitError("maps loops to ")
             << (*mapping)[0] << " before any loop is mapped to blocks";
    if (isBlock && blocks)
      return tile.emitError("maps loops to blocks a second time");
    // Processors of this level, per mapped loop in mapping order.
    int64_t level = 1;
    unsigned m = 0;
    for (auto [i, size] : llvm::enumerate(sizes)) {
      if (size == 0)
        continue;
      if (size > extents[i])
        return tile.emitError(sizeName(tile, i))
               << " = " << size << " exceeds its loop's extent "
               << extents[i];
      int64_t count = llvm::divideCeil(extents[i], size);
      if (mapping) {
        Attribute id = (*mapping)[m++];
        if (isBlock && count > kMaxGridYZ &&
            cast<gpu::GPUBlockMappingAttr>(id).getBlock() !=
                gpu::MappingId::DimX)
          return tile.emitError(sizeName(tile, i))
                 << " = " << size << " gives " << count << " blocks along "
                 << id << "; the limit is " << kMaxGridYZ;
        level *= count * loop::threadsPerProcessor(id);
      }
      extents[i] = size;
    }
    if (mapping && !isBlock) {
      if (level * threads > kMaxThreadsPerBlock)
        return tile.emitError("gives ")
               << level * threads << " threads per block on target '"
               << schedule.getTarget() << "'; the limit is "
               << kMaxThreadsPerBlock;
      threads *= level;
    }
    blocks |= isBlock;
  }
  if (gpu && !blocks)
    return schedule.emitError("a schedule for GPU target '")
           << schedule.getTarget() << "' must map a loop to blocks";
  return success();
}

struct LoopValidateSchedulesPass
    : tessel::impl::LoopValidateSchedulesBase<LoopValidateSchedulesPass> {
  void runOnOperation() override {
    SymbolTable symbols(getOperation());
    bool failedAny = false;
    for (auto schedule : getOperation().getOps<loop::ScheduleOp>()) {
      auto func = symbols.lookup<func::FuncOp>(schedule.getKernel());
      if (!func) {
        schedule.emitError("schedules '")
            << schedule.getKernel() << "', which is not a func.func";
        failedAny = true;
        continue;
      }
      failedAny |= failed(validate(schedule, func));
    }
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
