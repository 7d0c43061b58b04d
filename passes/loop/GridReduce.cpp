//===- GridReduce.cpp - reductions to a single value across the grid -----===//
//
// A reduction to a single value (a sum, the maximum of a 1-D softmax) has
// no parallel loop for the grid to share: tiled like other kernels it ran
// in one thread. loop.grid_reduce merges its loops into one (upstream
// collapseOpIterationDims) and splits that loop into `parts` rows whose
// partial results a block each computes (upstream splitReduction where the
// parts divide it; else upstream's partial-reduction tiling, rows of
// ceil(n / parts) elements, the last shorter: a prime count, a size
// symbol); a single block then combines the partials with the single-value
// ops after them.
// Both stages are rows for gpu-distribute-rows, so their threads combine
// values through warp shuffles. Elementwise producers are first fused into
// the reduction, so that its rows read their inputs. Each stage is a launch
// of its own (the second waits for every block of the first), which a
// kernel may have. On the CPU the rows are parallel tasks, each walked in
// vectors of partial results (loop.split_reduction), and the combination
// is computed once, before the tiles of the kernel's other ops.
//
//===----------------------------------------------------------------------===//

#include "passes/loop/GridReduce.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/cpu/SplitReduction.h"
#include "passes/loop/RowReduction.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace tessel;

namespace {

/// Whether `op` can join a single-value stage: a fill or a generic over
/// single values with one result, reading its operands at index 0 only.
bool isSingleValueStageOp(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !isSingleValueOp(linalgOp) ||
      linalgOp.getNumDpsInits() != 1)
    return false;
  if (isa<linalg::FillOp>(op))
    return true;
  return isa<linalg::GenericOp>(op) &&
         llvm::all_of(linalgOp.getIndexingMapsArray(), [](AffineMap map) {
           return llvm::all_of(map.getResults(), [](AffineExpr e) {
             auto constant = dyn_cast<AffineConstantExpr>(e);
             return isa<AffineDimExpr>(e) ||
                    (constant && constant.getValue() == 0);
           });
         });
}

/// The ops one block computes after the partials: `combined`, with
/// `consumers` the single-value ops that read it (transitively), and the
/// single-value ops (its fill) that only these read; in block order.
SmallVector<Operation *> singleValueStage(Operation *combined,
                                          bool consumers) {
  Block *body = combined->getBlock();
  llvm::SetVector<Operation *> stage;
  stage.insert(combined);
  for (size_t i = 0; consumers && i < stage.size(); ++i)
    for (Operation *user : stage[i]->getUsers())
      if (user->getBlock() == body && isSingleValueStageOp(user))
        stage.insert(user);
  for (size_t i = 0; i < stage.size(); ++i)
    for (Value operand : stage[i]->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && def->getBlock() == body && isSingleValueStageOp(def) &&
          llvm::all_of(def->getUsers(),
                       [&](Operation *user) { return stage.contains(user); }))
        stage.insert(def);
    }
  SmallVector<Operation *> ops(stage.begin(), stage.end());
  llvm::sort(ops, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  return ops;
}

/// Whether `op` is a tensor.empty or a fill of one with a single value:
/// what a block clones rather than reads from outside, so that the
/// buffers of its single values are its own.
bool isClonedIn(Operation *op) {
  if (isa<tensor::EmptyOp>(op))
    return true;
  auto fill = dyn_cast<linalg::FillOp>(op);
  return fill && isSingleValueOp(fill) &&
         fill.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>();
}

/// A clone at `rewriter`'s insertion point of isClonedIn `op`.
Value cloneIn(RewriterBase &rewriter, Operation *op) {
  IRMapping inits;
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    inits.map(fill.getDpsInits()[0],
              cloneIn(rewriter, fill.getDpsInits()[0].getDefiningOp()));
  return rewriter.clone(*op, inits)->getResult(0);
}

/// Moves `ops` (at the top level of a kernel) into a one-iteration
/// scf.forall with `mapping` (a block on GPUs), whose results replace their
/// values read elsewhere. The forall goes after the last op that defines a
/// value they read; fails when something reads their values before that.
/// Their operands that isClonedIn are cloned in.
FailureOr<scf::ForallOp> computeInOneBlock(RewriterBase &rewriter,
                                           ArrayRef<Operation *> ops,
                                           ArrayAttr mapping) {
  llvm::SmallPtrSet<Operation *, 8> moved(ops.begin(), ops.end());
  Block *body = ops.front()->getBlock();
  Operation *lastDef = nullptr, *firstReader = nullptr;
  SmallVector<Value> escaping;
  for (Operation *op : ops) {
    llvm::SetVector<Value> read(op->getOperands().begin(),
                                op->getOperands().end());
    getUsedValuesDefinedAbove(op->getRegions(), read);
    for (Value v : read) {
      Operation *def = v.getDefiningOp();
      if (!def || moved.contains(def) || isClonedIn(def))
        continue;
      def = body->findAncestorOpInBlock(*def);
      if (def && (!lastDef || lastDef->isBeforeInBlock(def)))
        lastDef = def;
    }
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers()) {
        Operation *reader = body->findAncestorOpInBlock(*user);
        if (moved.contains(reader))
          continue;
        if (escaping.empty() || escaping.back() != result)
          escaping.push_back(result);
        if (!firstReader || reader->isBeforeInBlock(firstReader))
          firstReader = reader;
      }
  }
  if (firstReader && lastDef && !lastDef->isBeforeInBlock(firstReader))
    return failure();
  Location loc = ops.front()->getLoc();
  if (lastDef)
    rewriter.setInsertionPointAfter(lastDef);
  else
    rewriter.setInsertionPointToStart(body);
  // Buffers of their own: a tensor.empty would be CSE'd with others.
  SmallVector<Value> outs;
  for (Value v : escaping)
    outs.push_back(bufferization::AllocTensorOp::create(
        rewriter, loc, cast<RankedTensorType>(v.getType()), ValueRange{}));
  auto forall = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)}, outs,
      mapping ? std::optional<ArrayAttr>(mapping) : std::nullopt);
  Block *tile = forall.getBody();
  for (Operation *op : ops) {
    rewriter.moveOpBefore(op, tile->getTerminator());
    for (OpOperand &operand : op->getOpOperands()) {
      Operation *def = operand.get().getDefiningOp();
      if (!def || forall->isAncestor(def) || !isClonedIn(def))
        continue;
      rewriter.setInsertionPoint(op);
      Value copy = cloneIn(rewriter, def);
      rewriter.modifyOpInPlace(op, [&] { operand.set(copy); });
    }
  }
  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [v, out, result] :
       llvm::zip(escaping, forall.getRegionIterArgs(), forall.getResults())) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
    SmallVector<OpFoldResult> sizes;
    for (int64_t extent : type.getShape())
      sizes.push_back(rewriter.getIndexAttr(extent));
    rewriter.replaceUsesWithIf(v, result, [&](OpOperand &use) {
      return !forall->isAncestor(use.getOwner());
    });
    tensor::ParallelInsertSliceOp::create(rewriter, loc, v, out, offsets,
                                          sizes, strides);
  }
  return forall;
}

/// Whether elementwise `producer` reads each input at its result's indices
/// or not at all (a single value): fused into a reduction, it leaves the
/// reduction's operands read in order, as merging its loops needs. Its
/// payload must not read its init, so that fusion leaves that operand dead.
bool readsInPlace(linalg::GenericOp producer) {
  if (producer.getNumDpsInits() != 1 || producer.hasIndexSemantics() ||
      producer.payloadUsesValueFromOperand(producer.getDpsInitOperand(0)))
    return false;
  AffineMap result = producer.getIndexingMapsArray().back();
  return llvm::all_of(producer.getDpsInputOperands(), [&](OpOperand *input) {
    AffineMap map = producer.getMatchingIndexingMap(input);
    return map == result || map.getNumResults() == 0;
  });
}

/// `reduction` with the elementwise producers of its inputs that
/// readsInPlace fused into its body (a copy of one that others also read),
/// so that its rows read what they read rather than a tensor written first
/// (the centered values of a variance). Fails if a fused op keeps more
/// than the reduction's result.
FailureOr<linalg::GenericOp>
fuseElementwiseProducers(RewriterBase &rewriter, linalg::GenericOp reduction) {
  for (bool fused = true; fused;) {
    fused = false;
    for (OpOperand *input : reduction.getDpsInputOperands()) {
      auto producer = input->get().getDefiningOp<linalg::GenericOp>();
      if (!producer || !readsInPlace(producer) ||
          !linalg::areElementwiseOpsFusable(input))
        continue;
      Operation *copy = nullptr;
      if (!producer->hasOneUse()) {
        rewriter.setInsertionPoint(reduction);
        copy = rewriter.clone(*producer);
        rewriter.modifyOpInPlace(reduction,
                                 [&] { input->set(copy->getResult(0)); });
      }
      Operation *fusedProducer = input->get().getDefiningOp();
      FailureOr<linalg::ElementwiseOpFusionResult> result =
          linalg::fuseElementwiseOps(rewriter, input);
      if (failed(result)) {
        // Unfused, the copy would compute the producer a second time.
        if (copy) {
          rewriter.modifyOpInPlace(
              reduction, [&] { input->set(producer->getResult(0)); });
          rewriter.eraseOp(copy);
        }
        continue;
      }
      rewriter.replaceOp(reduction,
                         result->replacements.lookup(reduction->getResult(0)));
      if (fusedProducer->use_empty())
        rewriter.eraseOp(fusedProducer);
      // Fusion also keeps the producer's result, which nothing reads.
      FailureOr<linalg::GenericOp> pruned =
          linalg::deduplicateOperandsAndRemoveDeadResults(
              rewriter, cast<linalg::GenericOp>(result->fusedOp),
              /*removeOutputs=*/true);
      if (failed(pruned) || (*pruned)->getNumResults() != 1)
        return failure();
      reduction = *pruned;
      fused = true;
      break;
    }
  }
  return reduction;
}

/// `reduction` with its reduction loops (consecutive) merged into one.
FailureOr<linalg::LinalgOp> mergeReductionLoops(RewriterBase &rewriter,
                                                linalg::GenericOp reduction) {
  SmallVector<unsigned> dims;
  reduction.getReductionDims(dims);
  if (dims.size() == 1)
    return cast<linalg::LinalgOp>(reduction.getOperation());
  rewriter.setInsertionPoint(reduction);
  ReassociationIndices merged(dims.begin(), dims.end());
  FailureOr<linalg::CollapseResult> collapsed =
      linalg::collapseOpIterationDims(reduction, {merged}, rewriter);
  if (failed(collapsed))
    return failure();
  rewriter.replaceOp(reduction, collapsed->results);
  return collapsed->collapsedOp;
}

/// The rows of a reduction to a single value (splitIntoRows): the tiled
/// partials, null for one part, and the op that combines them (the merged
/// reduction itself for one part).
struct Rows {
  TilingInterface partials;
  linalg::LinalgOp combined;
};

/// Splits `reduction` into `parts` rows for `primitive`: its elementwise
/// producers fused in, its loops merged into one and cut into rows
/// (upstream splitReduction), whose part loop is tiled by one (with
/// `mapping`).
FailureOr<Rows> splitIntoRows(RewriterBase &rewriter,
                              loop::GridReduceOp primitive,
                              linalg::GenericOp reduction, int64_t parts,
                              ArrayAttr mapping) {
  Location loc = reduction.getLoc();
  auto fail = [&](const Twine &message) {
    InFlightDiagnostic diag = primitive.emitError(message);
    diag.attachNote(loc) << "the reduction";
    return diag;
  };
  FailureOr<linalg::GenericOp> fused =
      fuseElementwiseProducers(rewriter, reduction);
  if (failed(fused))
    return fail("could not fuse the elementwise producers of a reduction");
  FailureOr<linalg::LinalgOp> combined = mergeReductionLoops(rewriter, *fused);
  if (failed(combined))
    return fail("could not merge the loops of a reduction");
  if (parts == 1)
    return Rows{TilingInterface(), *combined};
  int64_t extent = combined->getStaticLoopRanges().back();
  if (ShapedType::isDynamic(extent) || extent % parts) {
    // Rows of unequal lengths (the last shorter, or empty at small sizes),
    // as many as `parts`, each reducing its slice into a slot of the
    // partials (upstream's partial reduction tiling, which takes sizes and
    // remainders that splitReduction's reshape of the row cannot). First
    // the unit loops go (a 1-D softmax's [1] results), by which the tiling
    // would otherwise size the partials.
    linalg::LinalgOp row = *combined;
    if (row.getNumLoops() > 1) {
      linalg::ControlDropUnitDims unitLoops;
      unitLoops.controlFn = [](Operation *op) {
        auto generic = cast<linalg::GenericOp>(op);
        SmallVector<unsigned> units;
        for (auto [d, extent] : llvm::enumerate(generic.getStaticLoopRanges()))
          if (extent == 1)
            units.push_back(d);
        return units;
      };
      rewriter.setInsertionPoint(row);
      FailureOr<linalg::DropUnitDimsResult> dropped = linalg::dropUnitDims(
          rewriter, cast<linalg::GenericOp>(row.getOperation()), unitLoops);
      if (failed(dropped))
        return fail("could not drop the unit loops of a reduction");
      rewriter.replaceOp(row, dropped->replacements);
      row = cast<linalg::LinalgOp>(dropped->resultOp.getOperation());
    }
    rewriter.setInsertionPoint(row);
    FailureOr<linalg::ForallReductionTilingResult> tiled =
        linalg::tileReductionUsingForall(
            rewriter, cast<PartialReductionOpInterface>(row.getOperation()),
            {rewriter.getIndexAttr(parts)}, {},
            mapping ? std::optional<ArrayAttr>(mapping) : std::nullopt);
    if (failed(tiled) || tiled->parallelTiledOps.size() != 1 ||
        tiled->mergeOps.size() != 1)
      return fail("could not split a reduction into " + Twine(parts) +
                  " rows of unequal lengths");
    // The merge is a linalg.reduce; as a generic, gpu-distribute-rows takes
    // it like splitReduction's combination.
    rewriter.setInsertionPoint(tiled->mergeOps.front());
    FailureOr<linalg::GenericOp> merge = linalg::generalizeNamedOp(
        rewriter, cast<linalg::LinalgOp>(tiled->mergeOps.front()));
    if (failed(merge))
      return fail("could not make the combination of uneven rows a generic");
    return Rows{cast<TilingInterface>(tiled->parallelTiledOps.front()),
                cast<linalg::LinalgOp>(merge->getOperation())};
  }
  auto rank = static_cast<unsigned>(
      cast<ShapedType>((*combined)->getResult(0).getType()).getRank());
  rewriter.setInsertionPoint(*combined);
  FailureOr<linalg::SplitReductionResult> split = linalg::splitReduction(
      rewriter, *combined, [&](linalg::LinalgOp) {
        return linalg::SplitReductionOptions{parts, rank,
                                             /*innerParallel=*/false};
      });
  if (failed(split))
    return fail("could not split a reduction into " + Twine(parts) + " parts");
  // A row per tile: the part loop is the only parallel loop of more than
  // one point.
  auto partials = cast<TilingInterface>(split->splitLinalgOp.getOperation());
  SmallVector<int64_t> sizes;
  for (auto [it, extent] :
       llvm::zip(split->splitLinalgOp.getIteratorTypesArray(),
                 split->splitLinalgOp.getStaticLoopRanges()))
    sizes.push_back(it == utils::IteratorType::parallel && extent > 1);
  SmallVector<Attribute> rowMapping;
  if (mapping)
    rowMapping = llvm::to_vector(mapping.getValue());
  llvm::SmallPtrSet<Operation *, 1> returned;
  FailureOr<TilingInterface> tiled =
      tileAndFuseRoot(rewriter, partials, sizes, /*sequential=*/false,
                      rowMapping, returned);
  if (failed(tiled))
    return fail("could not tile the partial reductions");
  return Rows{*tiled, split->resultCombiningLinalgOp};
}

/// Moves the combination `combined` of a reduction's rows, with the
/// single-value ops that read it, into a one-iteration scf.forall with
/// `mapping`. A consumer that also reads a value computed after something
/// else reads the reduction cannot join; then all consumers are left out,
/// and the combination alone always fits.
LogicalResult computeCombinationOnce(RewriterBase &rewriter,
                                     loop::GridReduceOp primitive,
                                     linalg::LinalgOp combined,
                                     ArrayAttr mapping) {
  if (succeeded(computeInOneBlock(
          rewriter, singleValueStage(combined, /*consumers=*/true),
          mapping)) ||
      succeeded(computeInOneBlock(
          rewriter, singleValueStage(combined, /*consumers=*/false),
          mapping)))
    return success();
  InFlightDiagnostic diag = primitive.emitError(
      "could not move the combination of a reduction into one block");
  diag.attachNote(combined.getLoc()) << "the combination";
  return diag;
}

} // namespace

LogicalResult tessel::gridReduce(RewriterBase &rewriter,
                                 loop::GridReduceOp primitive,
                                 func::FuncOp func) {
  int64_t parts = primitive.getResolvedParts();
  std::optional<int64_t> maybeThreads = primitive.getResolvedThreads();
  if (!maybeThreads)
    return primitive.emitError("needs `threads` on GPU targets");
  int64_t threads = *maybeThreads;
  MLIRContext *ctx = rewriter.getContext();
  auto blockX = rewriter.getArrayAttr(
      {gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX)});
  for (linalg::GenericOp reduction : singleValueReductions(func)) {
    FailureOr<Rows> rows =
        splitIntoRows(rewriter, primitive, reduction, parts, blockX);
    if (failed(rows))
      return failure();
    int64_t stageThreads = threads;
    if (rows->partials) {
      rows->partials->setAttr(loop::kWarpReduceAttrName,
                              rewriter.getI64IntegerAttr(threads));
      stageThreads = std::min(
          threads,
          defaultRowThreads(
              parts, primitive->getParentOfType<loop::ScheduleOp>()
                         .getTargetDescription()));
    }
    if (failed(computeCombinationOnce(rewriter, primitive, rows->combined,
                                      blockX)))
      return failure();
    rows->combined->setAttr(loop::kWarpReduceAttrName,
                            rewriter.getI64IntegerAttr(stageThreads));
  }
  return success();
}

LogicalResult tessel::cpuGridReduce(RewriterBase &rewriter,
                                    loop::GridReduceOp primitive,
                                    func::FuncOp func, int64_t lanes) {
  int64_t parts = primitive.getResolvedParts();
  for (linalg::GenericOp reduction : singleValueReductions(func)) {
    FailureOr<Rows> rows =
        splitIntoRows(rewriter, primitive, reduction, parts, ArrayAttr());
    if (failed(rows))
      return failure();
    if (failed(computeCombinationOnce(rewriter, primitive, rows->combined,
                                      ArrayAttr())))
      return failure();
    // The rows in vectors of partial results (one part: the reduction).
    auto row = rows->partials
                   ? cast<linalg::LinalgOp>(rows->partials.getOperation())
                   : rows->combined;
    if (takesLanes(row, lanes) && failed(splitReduction(rewriter, row, lanes)))
      return failure();
  }
  return success();
}
