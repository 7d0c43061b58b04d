//===- TileAndFuseRoot.cpp - tiling a kernel's root with its producers ----===//

#include "passes/TileAndFuseRoot.h"
#include "dialects/graph/Graph.h"
#include "passes/linalg/Contractions.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"

#include <numeric>

using namespace mlir;

void tessel::collectReturnedLinalgOps(
    func::FuncOp func, llvm::SmallPtrSetImpl<Operation *> &returned) {
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  for (Value v : ret.getOperands())
    if (linalg::LinalgOp op = tessel::computingOp(v))
      returned.insert(op.getOperation());
}

TilingInterface
tessel::findKernelRoot(func::FuncOp func,
                       llvm::SmallPtrSetImpl<Operation *> &returned) {
  collectReturnedLinalgOps(func, returned);
  TilingInterface root;
  for (Operation &op : func.getBody().front())
    if (returned.contains(&op))
      root = cast<TilingInterface>(&op);
  return root;
}

SmallVector<std::pair<unsigned, TilingInterface>>
tessel::findKernelRoots(func::FuncOp func) {
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  llvm::DenseMap<Operation *, unsigned> firstResult;
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (linalg::LinalgOp op = tessel::computingOp(v))
      firstResult.try_emplace(op.getOperation(), i);
  SmallVector<std::pair<unsigned, TilingInterface>> roots;
  llvm::SmallPtrSet<Operation *, 16> covered;
  for (Operation &op : llvm::reverse(func.getBody().front())) {
    if (!firstResult.count(&op) || covered.contains(&op))
      continue;
    roots.push_back({firstResult[&op], cast<TilingInterface>(&op)});
    // Everything this root computes through its producers.
    SmallVector<Operation *> worklist = {&op};
    while (!worklist.empty()) {
      Operation *current = worklist.pop_back_val();
      if (!covered.insert(current).second)
        continue;
      for (Value operand : current->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && def->getBlock() == &func.getBody().front())
          worklist.push_back(def);
    }
  }
  return roots;
}

FailureOr<TilingInterface> tessel::scheduledRoot(
    Operation *schedule, func::FuncOp func,
    ArrayRef<std::pair<unsigned, TilingInterface>> roots,
    std::optional<uint64_t> result) {
  if (roots.empty()) {
    if (!result && schedule->getRegion(0).front().empty())
      return TilingInterface();
    schedule->emitError("kernel '")
        << func.getSymName() << "' has no linalg root to schedule";
    return failure();
  }
  if (!result)
    return roots.front().second;
  for (auto [index, root] : roots)
    if (index == *result)
      return root;
  InFlightDiagnostic diag = schedule->emitError("result ")
                            << *result << " of kernel '" << func.getSymName()
                            << "' is not a root; roots compute results";
  for (auto [index, root] : roots)
    diag << " " << index;
  return failure();
}

/// The extent of each of `root`'s loops, `size` of its iteration domain's
/// sizes. getIterationDomain builds dynamic sizes as IR (tensor.dim of the
/// root's operands): those ops are erased after, so that no stray reader of
/// the root's values stays behind.
static std::optional<SmallVector<int64_t>>
loopExtents(TilingInterface root,
            function_ref<std::optional<int64_t>(OpFoldResult)> size) {
  struct Created : OpBuilder::Listener {
    SmallVector<Operation *> ops;
    void notifyOperationInserted(Operation *op,
                                 OpBuilder::InsertPoint) override {
      ops.push_back(op);
    }
  } created;
  OpBuilder b(root, &created);
  std::optional<SmallVector<int64_t>> extents = SmallVector<int64_t>();
  for (Range r : root.getIterationDomain(b)) {
    std::optional<int64_t> extent = size(r.size);
    if (!extent) {
      extents = std::nullopt;
      break;
    }
    extents->push_back(*extent);
  }
  for (Operation *op : llvm::reverse(created.ops))
    if (op->use_empty())
      op->erase();
  return extents;
}

/// `expr` with its dims and symbols replaced by `values` (dims first), if
/// that is a constant.
static std::optional<int64_t> evaluate(AffineExpr expr, unsigned numDims,
                                       ArrayRef<int64_t> values) {
  MLIRContext *ctx = expr.getContext();
  SmallVector<AffineExpr> constants;
  for (int64_t v : values)
    constants.push_back(getAffineConstantExpr(v, ctx));
  AffineExpr folded = simplifyAffineExpr(
      expr.replaceDimsAndSymbols(ArrayRef(constants).take_front(numDims),
                                 ArrayRef(constants).drop_front(numDims)),
      0, 0);
  if (auto c = dyn_cast<AffineConstantExpr>(folded))
    return c.getValue();
  return std::nullopt;
}

/// Whether `e` never decreases as its (non-negative) dims and symbols grow:
/// sums and products of them and of non-negative constants, divided by
/// positive constants.
static bool growsWithOperands(AffineExpr e) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue() >= 0;
  if (isa<AffineDimExpr, AffineSymbolExpr>(e))
    return true;
  auto binary = cast<AffineBinaryOpExpr>(e);
  switch (e.getKind()) {
  case AffineExprKind::Add:
  case AffineExprKind::Mul:
    return growsWithOperands(binary.getLHS()) &&
           growsWithOperands(binary.getRHS());
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv:
    return growsWithOperands(binary.getLHS()) &&
           isa<AffineConstantExpr>(binary.getRHS()) &&
           cast<AffineConstantExpr>(binary.getRHS()).getValue() > 0;
  default:
    return false;
  }
}

/// A number that divides `expr` whenever each of its dims and symbols is a
/// multiple of its entry in `divisors` (dims first): sums keep the common
/// divisor, products multiply them; 1 for what else it computes.
static int64_t divisorOf(AffineExpr expr, unsigned numDims,
                         ArrayRef<int64_t> divisors) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return std::abs(c.getValue());
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return divisors[d.getPosition()];
  if (auto s = dyn_cast<AffineSymbolExpr>(expr))
    return divisors[numDims + s.getPosition()];
  auto binary = cast<AffineBinaryOpExpr>(expr);
  int64_t lhs = divisorOf(binary.getLHS(), numDims, divisors),
          rhs = divisorOf(binary.getRHS(), numDims, divisors);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return std::gcd(lhs, rhs);
  case AffineExprKind::Mul:
    return lhs * rhs;
  default:
    return 1;
  }
}

namespace {

/// Sizes at their largest in a kernel, or (`divisors`) a number each
/// divides at every size: the IR's size computations (tensor.dim,
/// affine.apply, the shapes of tensor and destination-style ops) followed
/// back to the arguments, each argument dim its `kArgumentShape`
/// expression at the symbols' largest values (or over their declared
/// multiples). Products of symbols (batch * seq) are not affine, so
/// upstream's ValueBounds cannot follow them; sizes only grow with their
/// symbols here, so plugging in the largest values gives the largest size.
struct LargestSizes {
  func::FuncOp func;
  DictionaryAttr ranges;
  bool divisors = false;

  std::optional<int64_t> ofValue(Value v) {
    if (std::optional<int64_t> c = getConstantIntValue(v))
      return divisors ? std::abs(*c) : *c;
    Operation *def = v.getDefiningOp();
    // tensor.dim and memref.dim.
    if (auto dim = dyn_cast_if_present<ShapedDimOpInterface>(def)) {
      std::optional<int64_t> index = getConstantIntValue(dim.getDimension());
      return index ? ofDim(dim.getShapedValue(), *index) : std::nullopt;
    }
    if (auto apply = dyn_cast_if_present<affine::AffineApplyOp>(def)) {
      SmallVector<int64_t> values;
      for (Value operand : apply.getMapOperands()) {
        std::optional<int64_t> size = ofValue(operand);
        if (!size)
          return std::nullopt;
        values.push_back(*size);
      }
      if (divisors)
        return divisorOf(apply.getMap().getResult(0),
                         apply.getMap().getNumDims(), values);
      return evaluate(apply.getMap().getResult(0), apply.getMap().getNumDims(),
                      values);
    }
    // A minimum is at most each of its terms: the smallest of those whose
    // largest value is known (min(16, n - i) of a tile is at most 16).
    if (auto min = dyn_cast_if_present<affine::AffineMinOp>(def)) {
      SmallVector<std::optional<int64_t>> operands = llvm::map_to_vector(
          min.getMapOperands(), [&](Value operand) { return ofValue(operand); });
      // It is one of its terms: what divides them all.
      if (divisors) {
        if (!llvm::all_of(operands, [](auto o) { return o.has_value(); }))
          return std::nullopt;
        SmallVector<int64_t> values = llvm::map_to_vector(
            operands, [](std::optional<int64_t> o) { return *o; });
        int64_t common = 0;
        for (AffineExpr term : min.getMap().getResults())
          common = std::gcd(common, divisorOf(term, min.getMap().getNumDims(),
                                              values));
        return common;
      }
      std::optional<int64_t> smallest;
      for (AffineExpr term : min.getMap().getResults()) {
        SmallVector<int64_t> values;
        bool known = true;
        for (auto [i, operand] : llvm::enumerate(operands)) {
          bool used = i < min.getMap().getNumDims()
                          ? term.isFunctionOfDim(i)
                          : term.isFunctionOfSymbol(i - min.getMap().getNumDims());
          known &= operand.has_value() || !used;
          values.push_back(operand.value_or(0));
        }
        std::optional<int64_t> value =
            known ? evaluate(term, min.getMap().getNumDims(), values) : std::nullopt;
        // Only a term that grows with its operands is largest at theirs.
        if (value && growsWithOperands(term))
          smallest = smallest ? std::min(*smallest, *value) : *value;
      }
      return smallest;
    }
    return std::nullopt;
  }

  std::optional<int64_t> ofSize(OpFoldResult size) {
    if (auto v = dyn_cast<Value>(size))
      return ofValue(v);
    return getConstantIntValue(size);
  }

  std::optional<int64_t> ofDim(Value tensor, int64_t d) {
    auto type = cast<ShapedType>(tensor.getType());
    if (!type.isDynamicDim(d))
      return type.getDimSize(d);
    if (auto arg = dyn_cast<BlockArgument>(tensor))
      return ofArgument(arg, d);
    Operation *def = tensor.getDefiningOp();
    if (auto empty = dyn_cast<tensor::EmptyOp>(def))
      return ofValue(empty.getDynamicSize(d));
    if (auto alloc = dyn_cast<memref::AllocOp>(def))
      return ofValue(
          alloc.getDynamicSizes()[alloc.getType().getDynamicDimIndex(d)]);
    // Dim d of a slice (tensor.extract_slice, memref.subview) is its d-th
    // size that the slice keeps.
    auto sliceSize = [&](auto slice) -> std::optional<int64_t> {
      llvm::SmallBitVector dropped = slice.getDroppedDims();
      SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
      for (int64_t i = 0, kept = 0; i < int64_t(sizes.size()); ++i)
        if (!dropped.test(i) && kept++ == d)
          return ofSize(sizes[i]);
      return std::nullopt;
    };
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def))
      return sliceSize(slice);
    if (auto view = dyn_cast<memref::SubViewOp>(def))
      return sliceSize(view);
    if (auto cast = dyn_cast<memref::ReinterpretCastOp>(def))
      return ofSize(cast.getMixedSizes()[d]);
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def))
      return ofSize(expand.getMixedOutputShape()[d]);
    // A padded dim (a convolution's image): its source's and the padding,
    // which the source's divisor divides only with the padding's.
    if (auto pad = dyn_cast<tensor::PadOp>(def)) {
      std::optional<int64_t> size = ofDim(pad.getSource(), d),
                             low = ofSize(pad.getMixedLowPad()[d]),
                             high = ofSize(pad.getMixedHighPad()[d]);
      if (!size || !low || !high)
        return std::nullopt;
      return divisors ? std::gcd(*size, *low + *high) : *low + *size + *high;
    }
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
      int64_t product = 1;
      // A copy: the range of a for over a temporary's element dangles.
      SmallVector<ReassociationIndices> groups =
          collapse.getReassociationIndices();
      for (int64_t i : groups[d]) {
        std::optional<int64_t> size = ofDim(collapse.getSrc(), i);
        if (!size)
          return std::nullopt;
        product *= *size;
      }
      return product;
    }
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(def))
      return ofDim(dps.getTiedOpOperand(cast<OpResult>(tensor))->get(), d);
    return std::nullopt;
  }

  std::optional<int64_t> ofArgument(BlockArgument arg, int64_t d) {
    auto shape = func.getArgAttrOfType<tessel::graph::ShapeAttr>(arg.getArgNumber(),
                                                         tessel::kArgumentShape);
    if (!shape || !ranges || arg.getOwner() != &func.getBody().front())
      return std::nullopt;
    SmallVector<int64_t> values;
    for (StringAttr name : shape.getNames()) {
      auto range = dyn_cast_if_present<tessel::graph::DimAttr>(ranges.get(name));
      if (!range)
        return std::nullopt;
      values.push_back(divisors ? range.getMultiple() : range.getMax());
    }
    if (divisors)
      return divisorOf(shape.getSizes().getResult(d), 0, values);
    return evaluate(shape.getSizes().getResult(d), 0, values);
  }
};

} // namespace

std::optional<int64_t> tessel::largestSize(Value shaped, int64_t dim) {
  auto func = shaped.getParentRegion()->getParentOfType<func::FuncOp>();
  if (!func)
    return std::nullopt;
  LargestSizes largest{func, func->getAttrOfType<DictionaryAttr>("graph.dims")};
  return largest.ofDim(shaped, dim);
}

std::optional<SmallVector<int64_t>>
tessel::largestLoopExtents(TilingInterface root) {
  auto func = root->getParentOfType<func::FuncOp>();
  LargestSizes largest{func, func->getAttrOfType<DictionaryAttr>("graph.dims")};
  return loopExtents(root,
                     [&](OpFoldResult size) { return largest.ofSize(size); });
}

std::optional<SmallVector<int64_t>>
tessel::loopExtentDivisors(TilingInterface root) {
  auto func = root->getParentOfType<func::FuncOp>();
  LargestSizes divisors{func, func->getAttrOfType<DictionaryAttr>("graph.dims"),
                        /*divisors=*/true};
  return loopExtents(root,
                     [&](OpFoldResult size) { return divisors.ofSize(size); });
}

FailureOr<TilingInterface>
tessel::tileAndFuseRoot(RewriterBase &rewriter, TilingInterface root,
                        ArrayRef<int64_t> sizes, bool sequential,
                        ArrayRef<Attribute> mapping,
                        const llvm::SmallPtrSetImpl<Operation *> &returned) {
  // A loop over a reduction revisits each slice of the result: in
  // parallel its tiles would race, and sequentially the producer of the
  // accumulator (its fill) must run once before the loop, not per tile.
  bool tilesReduction = false;
  for (auto [size, type] : llvm::zip(sizes, root.getLoopIteratorTypes()))
    tilesReduction |= size != 0 && type == utils::IteratorType::reduction;
  if (tilesReduction && !sequential)
    return root->emitError("cannot tile a reduction loop in parallel: the "
                           "tiles would race on the result");
  scf::SCFTileAndFuseOptions options;
  options.tilingOptions.setTileSizes(
      getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  options.tilingOptions.setLoopType(
      sequential ? scf::SCFTilingOptions::LoopType::ForOp
                 : scf::SCFTilingOptions::LoopType::ForallOp);
  if (!mapping.empty())
    options.tilingOptions.setMapping(mapping);
  options.setFusionControlFn(
      [&](tensor::ExtractSliceOp, OpResult producer, bool isDestination)
          -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        if (!isa<linalg::LinalgOp>(producer.getOwner()) ||
            (isDestination && tilesReduction))
          return std::nullopt;
        return scf::SCFTileAndFuseOptions::ControlFnResult{
            returned.contains(producer.getOwner())};
      });
  rewriter.setInsertionPoint(root);
  FailureOr<scf::SCFTileAndFuseResult> result =
      scf::tileConsumerAndFuseProducersUsingSCF(rewriter, root, options);
  if (failed(result))
    return failure();
  // Only uses after the loop take its results: the untiled ops before it
  // (the root, producers) and leftovers inside it keep theirs and die.
  // Reshapes of a yielded value that sit before the loop (a returned
  // intermediate) move after it first, or the untiled op would stay alive
  // for them and run a second time.
  if (!result->loops.empty()) {
    Operation *loop = result->loops.front().getOperation();
    auto afterLoop = [&](Operation *op) {
      return op->getBlock() == loop->getBlock() && loop->isBeforeInBlock(op);
    };
    for (auto [original, replacement] : result->replacements)
      for (Operation *user : llvm::to_vector(original.getUsers()))
        if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user) &&
            user->getBlock() == loop->getBlock() &&
            user->isBeforeInBlock(loop) &&
            llvm::all_of(user->getUsers(), afterLoop))
          rewriter.moveOpAfter(user, loop);
  }
  DominanceInfo dominance(root->getParentOfType<func::FuncOp>());
  for (auto [original, replacement] : result->replacements)
    rewriter.replaceUsesWithIf(original, replacement, [&](OpOperand &use) {
      return dominance.properlyDominates(replacement, use.getOwner());
    });
  // The first tiled op is the tiled root.
  return cast<TilingInterface>(result->tiledAndFusedOps.front());
}

FailureOr<scf::SCFTilingResult>
tessel::tileInLoops(RewriterBase &rewriter, TilingInterface op,
                    ArrayRef<int64_t> sizes, ArrayRef<int64_t> interchange) {
  rewriter.setInsertionPoint(op);
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  options.setInterchange(interchange);
  FailureOr<scf::SCFTilingResult> tiled =
      scf::tileUsingSCF(rewriter, op, options);
  if (succeeded(tiled))
    rewriter.replaceOp(op, tiled->replacements);
  return tiled;
}
