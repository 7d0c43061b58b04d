//===- PassDynamicBuffers.cpp - buffers of dynamic shape into kernels -----===//
//
// Kernels take one pointer per buffer (the bare-pointer ABI), which only a
// static memref type can be. A launch that reads a buffer over size
// symbols gets it as a static 1-D buffer of its largest size (over the
// symbols' declared ranges) plus its sizes, from which the launch rebuilds
// the view; gpu-kernel-outlining then passes the sizes as kernel arguments
// of their own. Runs right before outlining: canonicalization would fold
// the view back into the buffer, and gpu-launch-sink-index-computations
// would move the sizes' reads of it into the launch.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/gpu/Buffers.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SetVector.h"

namespace tessel {
#define GEN_PASS_DEF_GPUPASSDYNAMICBUFFERS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// The buffers of dynamic shape that `launch` reads, passed as described
/// above; an error where one has a strided layout or no largest size.
LogicalResult passDynamicBuffers(gpu::LaunchOp launch) {
  SetVector<Value> captured;
  launch.getBody().walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (auto type = dyn_cast<MemRefType>(v.getType());
          type && !type.hasStaticShape() &&
          !launch->isAncestor(v.getParentBlock()->getParentOp()))
        captured.insert(v);
  });
  OpBuilder outside(launch);
  OpBuilder inside(&launch.getBody().front(), launch.getBody().front().begin());
  Location loc = launch.getLoc();
  for (Value buffer : captured) {
    auto type = cast<MemRefType>(buffer.getType());
    if (!type.getLayout().isIdentity())
      return launch.emitError("a kernel reads a buffer of dynamic shape with "
                              "a strided layout, ")
             << type << ", which the kernel ABI cannot pass";
    int64_t elements = 1;
    SmallVector<OpFoldResult> sizes;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      std::optional<int64_t> size = largestSize(buffer, d);
      if (!size)
        return launch.emitError("a kernel reads a buffer of dynamic shape, ")
               << type << ", whose largest size the kernel's size symbols "
               << "(graph.dims) do not give";
      elements *= *size;
      sizes.push_back(type.isDynamicDim(d)
                          ? OpFoldResult(memref::DimOp::create(outside, loc,
                                                               buffer, d)
                                             .getResult())
                          : OpFoldResult(outside.getIndexAttr(type.getDimSize(d))));
    }
    auto flatType = MemRefType::get({elements}, type.getElementType(),
                                    MemRefLayoutAttrInterface(),
                                    type.getMemorySpace());
    Value flat = memref::ReinterpretCastOp::create(
        outside, loc, flatType, buffer, outside.getIndexAttr(0),
        {outside.getIndexAttr(elements)}, {outside.getIndexAttr(1)});
    Value view = rowMajorView(inside, loc, type, flat, sizes);
    buffer.replaceUsesWithIf(view, [&](OpOperand &use) {
      return launch->isProperAncestor(use.getOwner()) &&
             use.getOwner() != view.getDefiningOp();
    });
  }
  return success();
}

struct GpuPassDynamicBuffersPass
    : tessel::impl::GpuPassDynamicBuffersBase<GpuPassDynamicBuffersPass> {
  void runOnOperation() override {
    WalkResult walk = getOperation().walk([](gpu::LaunchOp launch) {
      return failed(passDynamicBuffers(launch)) ? WalkResult::interrupt()
                                                : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
