//===- MapKernels.cpp - mapped scf.forall nests to gpu.launch -------------===//
//
// Each top-level block-mapped forall of a bufferized kernel becomes a
// gpu.launch. Upstream implements the mapping as transform ops; this pass
// runs them per forall through the transform interpreter with that forall's
// block size, which only the bufferized nest knows (its largest thread-level
// forall). Computation left outside any forall (a reduction to a scalar)
// runs in a one-thread launch, so that nothing of a kernel runs on the host.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/gpu/Buffers.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Parser/Parser.h"

namespace tessel {
#define GEN_PASS_DEF_GPUMAPKERNELS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

bool isBlockMapped(scf::ForallOp forall) {
  std::optional<ArrayAttr> mapping = forall.getMapping();
  return mapping && !mapping->empty() &&
         isa<gpu::GPUBlockMappingAttr>((*mapping)[0]);
}

/// Threads along x, y, z that a thread-, warp- or lane-mapped forall needs.
std::array<int64_t, 3> threadsOf(scf::ForallOp forall) {
  std::array<int64_t, 3> dims = {1, 1, 1};
  int64_t linear = 1;
  bool isLinear = false;
  for (auto [count, id] :
       llvm::zip(forall.getStaticUpperBound(), *forall.getMapping())) {
    auto mappingId = cast<DeviceMappingAttrInterface>(id);
    int64_t per = loop::threadsPerProcessor(id);
    if (mappingId.isLinearMapping() || per > 1) {
      isLinear = true;
      linear *= count * per;
    } else {
      dims[mappingId.getMappingId()] = count;
    }
  }
  if (isLinear)
    dims = {linear, 1, 1};
  return dims;
}

/// A scalar computed from sizes alone (a mean's 1 / count over size
/// symbols): no memory, no regions, integer or float results, its operands
/// sizes (index values), constants or such scalars themselves. A scalar
/// computed from loaded values is computation, which a launch runs.
bool isSizeArithmetic(Operation *op) {
  if (!isMemoryEffectFree(op) || op->getNumRegions() != 0 ||
      op->getNumResults() == 0 ||
      !llvm::all_of(op->getResultTypes(),
                    [](Type t) { return isa<IntegerType, FloatType>(t); }))
    return false;
  return llvm::all_of(op->getOperands(), [](Value v) {
    Operation *def = v.getDefiningOp();
    return v.getType().isIndex() || (def && (isa<arith::ConstantOp>(def) ||
                                             isSizeArithmetic(def)));
  });
}

/// A view, constant global or isSizeArithmetic: recreated wherever it is
/// used (each launch that reads it), never computed on its own; a one-
/// thread launch of its own could not hand its value to the others.
bool isSinkable(Operation *op) {
  return isa<memref::GetGlobalOp>(op) ||
         (isa<ViewLikeOpInterface>(op) && isMemoryEffectFree(op)) ||
         isSizeArithmetic(op);
}

/// A whole buffer of the host program, maybe reshaped (not a part of one).
bool isWholeBuffer(Value v) {
  while (isa_and_present<memref::CollapseShapeOp, memref::ExpandShapeOp>(
      v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  return isa<BlockArgument>(v) ||
         isa<memref::AllocOp, memref::GetGlobalOp>(v.getDefiningOp());
}

/// Ops that stay on the kernel function's top level: they allocate, alias or
/// name memory rather than compute (the host program reads them; the
/// runtime encodes tensor maps), or copy
/// one whole buffer to another (a device-to-device copy of the host
/// program). A copy into or out of part of a buffer is computation.
bool staysOutside(Operation &op) {
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return isWholeBuffer(copy.getSource()) && isWholeBuffer(copy.getTarget());
  // Sizes (of buffers over size symbols, of grids): the host computes them.
  bool isSize = isMemoryEffectFree(&op) && op.getNumRegions() == 0 &&
                op.getNumResults() > 0 &&
                llvm::all_of(op.getResultTypes(),
                             [](Type t) { return t.isIndex(); });
  return op.hasTrait<OpTrait::IsTerminator>() || isSinkable(&op) || isSize ||
         isa<arith::ConstantOp, memref::AllocOp, memref::DeallocOp,
             gpu::LaunchOp, loop::TensorMapOp>(op);
}

/// Moves `ops` (consecutive top-level ops) into a new 1x1x1 launch.
void launchInOneThread(ArrayRef<Operation *> ops) {
  OpBuilder b(ops.front());
  Location loc = ops.front()->getLoc();
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
  b.setInsertionPointToEnd(&launch.getBody().front());
  auto terminator = gpu::TerminatorOp::create(b, loc);
  for (Operation *op : ops)
    op->moveBefore(terminator);
}

/// Rewrites `forall` (on buffers, constant steps) to start at 0 and step by
/// 1, its old indices recomputed in the body. Upstream's normalizeForallOp
/// asserts on a loop whose bounds mix constants and values (a thread tile
/// of several points in the last block of a loop).
LogicalResult normalize(RewriterBase &rewriter, scf::ForallOp forall) {
  SmallVector<OpFoldResult> lbs = forall.getMixedLowerBound(),
                            ubs = forall.getMixedUpperBound(),
                            steps = forall.getMixedStep();
  if (forall.getNumResults() != 0 ||
      !llvm::all_of(steps, [](OpFoldResult s) {
        return getConstantIntValue(s).has_value();
      }))
    return failure();
  Location loc = forall.getLoc();
  rewriter.setInsertionPoint(forall);
  AffineExpr d0, d1;
  bindDims(rewriter.getContext(), d0, d1);
  SmallVector<OpFoldResult> counts;
  for (auto [l, u, s] : llvm::zip(lbs, ubs, steps))
    counts.push_back(affine::makeComposedFoldedAffineApply(
        rewriter, loc, (d1 - d0).ceilDiv(*getConstantIntValue(s)), {l, u}));
  auto normalized = scf::ForallOp::create(rewriter, loc, counts, ValueRange{},
                                          forall.getMapping());
  Block *body = normalized.getBody();
  rewriter.setInsertionPointToStart(body);
  SmallVector<Value> indices;
  for (auto [l, s, i] :
       llvm::zip(lbs, steps, normalized.getInductionVars()))
    indices.push_back(getValueOrCreateConstantIndexOp(
        rewriter, loc,
        affine::makeComposedFoldedAffineApply(
            rewriter, loc, d0 + d1 * *getConstantIntValue(s),
            {l, OpFoldResult(i)})));
  rewriter.eraseOp(body->getTerminator());
  rewriter.mergeBlocks(forall.getBody(), body, indices);
  rewriter.eraseOp(forall);
  return success();
}

/// A thread-level forall whose trip count is dynamic (the last block of a
/// loop that the block size does not divide) runs the count's constant
/// upper bound of threads instead, each doing its iteration only when its
/// index is below the count: a block has one static size. Returns the new
/// forall, or null (after an error) when the count has no constant bound.
scf::ForallOp guardDynamicTripCount(scf::ForallOp forall) {
  if (!forall.isNormalized() || forall.getNumResults() != 0) {
    forall.emitError("a thread-level scf.forall with a dynamic trip count "
                     "must start at 0, step by 1 and be on buffers");
    return {};
  }
  SmallVector<OpFoldResult> bounds;
  SmallVector<std::pair<unsigned, Value>> counts;
  for (auto [i, ub] : llvm::enumerate(forall.getMixedUpperBound())) {
    auto count = dyn_cast<Value>(ub);
    if (!count) {
      bounds.push_back(ub);
      continue;
    }
    FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
        presburger::BoundType::UB, count, /*stopCondition=*/nullptr,
        /*closedUB=*/true);
    if (failed(bound)) {
      forall.emitError("a thread-level scf.forall has a dynamic trip count "
                       "without a constant upper bound; block sizes must be "
                       "static");
      return {};
    }
    bounds.push_back(IntegerAttr::get(IndexType::get(forall.getContext()),
                                      *bound));
    counts.emplace_back(i, count);
  }
  IRRewriter rewriter(forall.getContext());
  rewriter.setInsertionPoint(forall);
  Location loc = forall.getLoc();
  auto bounded = scf::ForallOp::create(rewriter, loc, bounds, ValueRange{},
                                       forall.getMapping());
  Block *body = bounded.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.mergeBlocks(forall.getBody(), body, bounded.getInductionVars());
  rewriter.eraseOp(forall);
  rewriter.setInsertionPointToStart(body);
  Value inRange;
  for (auto [i, count] : counts) {
    Value below = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                        bounded.getInductionVars()[i], count);
    inRange = inRange ? arith::AndIOp::create(rewriter, loc, inRange, below)
                            .getResult()
                      : below;
  }
  auto guard = scf::IfOp::create(rewriter, loc, inRange, /*withElse=*/false);
  Operation *yield = guard.thenBlock()->getTerminator();
  for (Operation &op : llvm::make_early_inc_range(
           llvm::make_range(std::next(guard->getIterator()),
                            body->getTerminator()->getIterator())))
    op.moveBefore(yield);
  return bounded;
}

/// A normalized block-mapped forall whose trip count is dynamic (a loop
/// over a size symbol) as a gpu.launch of that many blocks, counted on the
/// host: upstream's map_forall_to_blocks takes static counts only. Its
/// indices become the block ids of the dims it maps to.
FailureOr<gpu::LaunchOp> launchDynamicBlocks(scf::ForallOp forall,
                                             std::array<int64_t, 3> block) {
  IRRewriter rewriter(forall.getContext());
  rewriter.setInsertionPoint(forall);
  Location loc = forall.getLoc();
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  std::array<Value, 3> grid = {one, one, one};
  SmallVector<int64_t> dims;
  for (auto [ub, id] : llvm::zip(forall.getMixedUpperBound(),
                                 *forall.getMapping())) {
    auto mapping = dyn_cast<gpu::GPUBlockMappingAttr>(id);
    if (!mapping || mapping.isLinearMapping() ||
        grid[mapping.getMappingId()] != one)
      return forall.emitError("a block-mapped scf.forall of dynamic trip "
                              "count maps each loop to one of block x, y, z");
    grid[mapping.getMappingId()] =
        getValueOrCreateConstantIndexOp(rewriter, loc, ub);
    dims.push_back(mapping.getMappingId());
  }
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  auto launch = gpu::LaunchOp::create(rewriter, loc, grid[0], grid[1], grid[2],
                                      c(block[0]), c(block[1]), c(block[2]));
  Block &body = launch.getBody().front();
  rewriter.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(rewriter, loc);
  gpu::KernelDim3 ids = launch.getBlockIds();
  std::array<Value, 3> blockIds = {ids.x, ids.y, ids.z};
  SmallVector<Value> indices;
  for (int64_t d : dims)
    indices.push_back(blockIds[d]);
  Block *loop = forall.getBody();
  rewriter.eraseOp(loop->getTerminator());
  rewriter.inlineBlockBefore(loop, terminator, indices);
  rewriter.eraseOp(forall);
  return launch;
}

/// Maps one block-mapped forall (and the thread foralls in it) to a launch.
LogicalResult mapForall(scf::ForallOp forall) {
  SmallVector<scf::ForallOp> dynamic;
  forall.walk([&](scf::ForallOp nested) {
    if (nested != forall && nested.getMapping() &&
        !nested.getMapping()->empty() &&
        ShapedType::isDynamicShape(nested.getStaticUpperBound()))
      dynamic.push_back(nested);
  });
  for (scf::ForallOp nested : dynamic)
    if (!guardDynamicTripCount(nested))
      return failure();
  std::array<int64_t, 3> block = {1, 1, 1};
  forall.walk([&](scf::ForallOp nested) {
    if (nested == forall || !nested.getMapping() ||
        nested.getMapping()->empty())
      return;
    std::array<int64_t, 3> dims = threadsOf(nested);
    for (int i = 0; i < 3; ++i)
      block[i] = std::max(block[i], dims[i]);
  });
  // A dynamic grid is launched here; a static one by upstream's mapping.
  Operation *target = forall;
  bool dynamicGrid = ShapedType::isDynamicShape(forall.getStaticUpperBound());
  Location loc = forall.getLoc();
  if (dynamicGrid) {
    FailureOr<gpu::LaunchOp> launch = launchDynamicBlocks(forall, block);
    if (failed(launch))
      return failure();
    target = *launch;
  }
  std::string script;
  llvm::raw_string_ostream os(script);
  os << R"mlir(
module attributes {transform.with_named_sequence} {
  transform.named_sequence @map(%f: !transform.any_op {transform.)mlir"
     << (dynamicGrid ? "readonly" : "consumed") << R"mlir(}) {
)mlir";
  if (dynamicGrid)
    os << "    %l = transform.cast %f : !transform.any_op to !transform.any_op\n";
  else
    os << R"mlir(    %l = transform.gpu.map_forall_to_blocks %f {generate_gpu_launch}
        : (!transform.any_op) -> !transform.any_op
)mlir";
  os << "    transform.gpu.map_nested_forall_to_threads %l block_dims = ["
     << block[0] << ", " << block[1] << ", " << block[2] << R"mlir(]
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
})mlir";
  OwningOpRef<ModuleOp> transforms =
      parseSourceString<ModuleOp>(script, ParserConfig(target->getContext()));
  if (!transforms)
    return failure();
  Operation *sequence = SymbolTable::lookupSymbolIn(*transforms, "map");
  if (failed(transform::applyTransformNamedSequence(
          target, sequence, *transforms, transform::TransformOptions())))
    return emitError(loc, "could not map these loops to the GPU");
  return success();
}

/// Buffers allocated inside a launch belong to one thread: they become
/// stack (local memory) allocations instead of device-heap mallocs. Copies
/// become linalg.copy, which lowers to loops (memref.copy of strided views
/// would call a host runtime function).
LogicalResult privatizeAllocations(gpu::LaunchOp launch) {
  IRRewriter rewriter(launch.getContext());
  launch.walk([&](memref::CopyOp copy) {
    rewriter.setInsertionPoint(copy);
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                copy.getTarget());
  });
  SmallVector<memref::AllocOp> allocs;
  launch.walk([&](memref::AllocOp alloc) {
    if (!alloc.getType().getMemorySpace())
      allocs.push_back(alloc);
  });
  for (memref::AllocOp alloc : allocs) {
    eraseDeallocs(alloc);
    rewriter.setInsertionPoint(alloc);
    MemRefType type = alloc.getType();
    if (type.hasStaticShape()) {
      rewriter.replaceOpWithNewOp<memref::AllocaOp>(alloc, type,
                                                    alloc.getAlignmentAttr());
      continue;
    }
    // A buffer over a size symbol: the stack holds its largest size (over
    // the symbols' ranges), and a row-major view of it the size of this run.
    int64_t elements = 1;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      std::optional<int64_t> largest = largestSize(alloc.getResult(), d);
      if (!largest)
        return alloc.emitError("a kernel-local buffer of dynamic shape has no "
                               "largest size the kernel's size symbols "
                               "(graph.dims) give");
      elements *= *largest;
    }
    Location loc = alloc.getLoc();
    Value stack = memref::AllocaOp::create(
        rewriter, loc,
        MemRefType::get({elements}, type.getElementType(),
                        MemRefLayoutAttrInterface(), type.getMemorySpace()),
        alloc.getAlignmentAttr());
    rewriter.replaceOp(alloc, rowMajorView(rewriter, loc, type, stack,
                                           alloc.getMixedSizes()));
  }
  return success();
}

/// Views of the kernel's arguments (a batched matmul reads its input
/// collapsed to 2-D) and constant globals used in a launch are recreated
/// inside it, so that outlining passes the arguments themselves: a launch's
/// ABI is buffers of the host program.
void sinkViews(gpu::LaunchOp launch) {
  Block &body = launch.getBody().front();
  IRMapping mapping;
  SmallVector<Operation *> worklist;
  launch.getBody().walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && !launch->isAncestor(def) && isSinkable(def))
        worklist.push_back(def);
  });
  // Clone each needed view (and the views it is built on) at the top of the
  // launch, producers first.
  SetVector<Operation *> needed;
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!needed.insert(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && isSinkable(def))
        worklist.push_back(def);
  }
  SmallVector<Operation *> ordered = needed.takeVector();
  llvm::sort(ordered, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  OpBuilder b(&body, body.begin());
  for (Operation *op : ordered) {
    Operation *clone = b.clone(*op, mapping);
    for (auto [from, to] : llvm::zip(op->getResults(), clone->getResults()))
      from.replaceUsesWithIf(to, [&](OpOperand &use) {
        return launch->isProperAncestor(use.getOwner());
      });
  }
  for (Operation *op : llvm::reverse(ordered))
    if (op->use_empty())
      op->erase();
}

/// Workgroup buffers of a launch (the promoted tiles of loop.promote)
/// become views of its dynamic shared memory, whose size the launch then
/// records: static workgroup arrays are capped at 48 KiB, dynamic shared
/// memory can be raised to the chip's limit at launch.
void placeInSharedMemory(gpu::LaunchOp launch) {
  SmallVector<memref::AllocOp> buffers;
  launch.walk([&](memref::AllocOp alloc) {
    if (auto space = dyn_cast_if_present<gpu::AddressSpaceAttr>(
            alloc.getType().getMemorySpace());
        space && space.getValue() == gpu::AddressSpace::Workgroup)
      buffers.push_back(alloc);
  });
  if (buffers.empty())
    return;
  MLIRContext *ctx = launch.getContext();
  OpBuilder b(&launch.getBody().front(), launch.getBody().front().begin());
  Location loc = launch.getLoc();
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value base = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
  // 16-byte aligned: cp.async and ldmatrix move 16-byte rows; buffers of 1
  // KiB or more at multiples of 1 KiB, where a 128-byte swizzle (wgmma's
  // tiles) repeats (the region itself is 1 KiB aligned,
  // gpu-extern-dynamic-shared).
  int64_t bytes = 0;
  for (memref::AllocOp alloc : buffers) {
    MemRefType type = alloc.getType();
    int64_t size = type.getNumElements() * type.getElementTypeBitWidth() / 8;
    bytes = llvm::alignTo(bytes, size >= kSharedAlignment ? kSharedAlignment : 16);
    Value offset = arith::ConstantIndexOp::create(b, loc, bytes);
    Value view = memref::ViewOp::create(b, loc, type, base, offset, ValueRange{});
    eraseDeallocs(alloc);
    alloc.replaceAllUsesWith(view);
    alloc.erase();
    bytes += llvm::alignTo(size, 16);
  }
  OpBuilder outside(launch);
  launch.getDynamicSharedMemorySizeMutable().assign(arith::ConstantIntOp::create(
      outside, loc, outside.getI32Type(), bytes));
}

/// The pass maps loops over buffers: a kernel still on tensors (the pass
/// run before bufferization) is an error at its first tensor, not an
/// assertion deep in the mapping.
LogicalResult checkBufferized(func::FuncOp func) {
  auto isTensor = [](Type t) { return isa<TensorType>(t); };
  FunctionType type = func.getFunctionType();
  if (llvm::any_of(type.getInputs(), isTensor) ||
      llvm::any_of(type.getResults(), isTensor))
    return func.emitError("gpu-map-kernels runs on bufferized kernels, but "
                          "kernel '")
           << func.getSymName() << "' takes or returns tensors";
  WalkResult walk = func.walk([&](Operation *op) {
    if (llvm::any_of(op->getOperandTypes(), isTensor) ||
        llvm::any_of(op->getResultTypes(), isTensor)) {
      op->emitError("gpu-map-kernels runs on bufferized kernels, but this "
                    "op of kernel '")
          << func.getSymName() << "' works on tensors";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

struct GpuMapKernelsPass
    : tessel::impl::GpuMapKernelsBase<GpuMapKernelsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func->hasAttr("tessel.kernel") || func.isExternal())
        continue;
      if (failed(checkBufferized(func)))
        return signalPassFailure();
      // Upstream maps only normalized foralls (from 0, step 1).
      SmallVector<scf::ForallOp> foralls;
      func.walk([&](scf::ForallOp forall) { foralls.push_back(forall); });
      for (scf::ForallOp forall : foralls)
        if (!forall.isNormalized() && failed(normalize(rewriter, forall))) {
          forall.emitError("could not normalize this loop for GPU mapping");
          return signalPassFailure();
        }
      // Segments of the top level: each block-mapped forall, and each run of
      // other computation (which gets one thread).
      Block &body = func.getBody().front();
      SmallVector<scf::ForallOp> mapped;
      SmallVector<SmallVector<Operation *>> serial(1);
      for (Operation &op : body) {
        auto forall = dyn_cast<scf::ForallOp>(op);
        if (forall && isBlockMapped(forall)) {
          mapped.push_back(forall);
          serial.emplace_back();
        } else if (!staysOutside(op)) {
          serial.back().push_back(&op);
        } else if (!serial.back().empty() && !isa<arith::ConstantOp>(op)) {
          serial.emplace_back();
        }
      }
      for (ArrayRef<Operation *> run : serial)
        if (!run.empty())
          launchInOneThread(run);
      for (scf::ForallOp forall : mapped)
        if (failed(mapForall(forall)))
          return signalPassFailure();
      for (auto launch : llvm::to_vector(body.getOps<gpu::LaunchOp>())) {
        placeInSharedMemory(launch);
        if (failed(privatizeAllocations(launch)))
          return signalPassFailure();
        sinkViews(launch);
      }
    }
  }
};

} // namespace
