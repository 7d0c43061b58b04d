//===- Contractions.cpp - the matmuls that schedules recognize -----------===//

#include "passes/linalg/Contractions.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace tessel;

std::optional<unsigned> tessel::matmulBatchLoops(linalg::LinalgOp op,
                                                 bool broadcast) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return std::nullopt;
  if (auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation()))
    return matmul.hasUserDefinedMaps() ? std::nullopt : std::optional(0u);
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || generic.getNumLoops() < 3 ||
      !linalg::isaContractionOpInterface(generic))
    return std::nullopt;
  unsigned batch = generic.getNumLoops() - 3;
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  for (unsigned i = 0; i < batch + 2; ++i)
    if (iterators[i] != utils::IteratorType::parallel)
      return std::nullopt;
  // Dims: batch..., m = batch, n = batch + 1, k = batch + 2. With
  // `broadcast`, an operand reads some of the batch loops. Batch dims come
  // in order; an operand may read them after its row too (A split along K
  // by loop.split_k reads (m, part, k)), as long as its column is last.
  auto matches = [&](AffineMap map, unsigned row, unsigned col,
                     bool isOperand) {
    unsigned results = map.getNumResults();
    if (results < 2 || results > batch + 2 ||
        (results != batch + 2 && !(isOperand && broadcast)) ||
        map.getResult(results - 1) != getAffineDimExpr(col, op.getContext()))
      return false;
    int64_t previous = -1;
    unsigned batchRead = 0;
    bool rowRead = false;
    for (unsigned i = 0; i + 1 < results; ++i) {
      auto dim = dyn_cast<AffineDimExpr>(map.getResult(i));
      if (!dim)
        return false;
      if (dim.getPosition() == row) {
        if (rowRead || (!isOperand && i + 2 != results))
          return false;
        rowRead = true;
        continue;
      }
      if (dim.getPosition() >= batch ||
          static_cast<int64_t>(dim.getPosition()) <= previous ||
          (!broadcast && dim.getPosition() != batchRead))
        return false;
      previous = dim.getPosition();
      ++batchRead;
    }
    return rowRead;
  };
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (!matches(maps[0], batch, batch + 2, true) ||
      !matches(maps[1], batch + 2, batch + 1, true) ||
      !matches(maps[2], batch, batch + 1, false))
    return std::nullopt;
  return batch;
}

Value tessel::multiplyAccumulate(OpBuilder &b, Location loc, Value lhs,
                                 Value rhs, Value acc) {
  Type type = acc.getType();
  Value x = convertScalarToDtype(b, loc, lhs, type, /*isUnsignedCast=*/false);
  Value y = convertScalarToDtype(b, loc, rhs, type, /*isUnsignedCast=*/false);
  if (isa<FloatType>(type))
    return arith::AddFOp::create(b, loc, acc,
                                 arith::MulFOp::create(b, loc, x, y));
  return arith::AddIOp::create(b, loc, acc,
                               arith::MulIOp::create(b, loc, x, y));
}

/// `v` before any tensor.collapse_shape and tensor.expand_shape, and before
/// the copy into its destination of a result in destination-passing style.
static Value reshapeSource(Value v) {
  while (isa_and_present<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
                         bufferization::MaterializeInDestinationOp>(
      v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  return v;
}

bool tessel::isKernelArgument(Value v) {
  return isa<BlockArgument>(reshapeSource(v));
}

linalg::LinalgOp tessel::computingOp(Value v) {
  return reshapeSource(v).getDefiningOp<linalg::LinalgOp>();
}

linalg::LinalgOp tessel::findRootContraction(func::FuncOp func,
                                             TilingInterface root,
                                             std::string &why) {
  SmallVector<linalg::LinalgOp> contractions;
  func.walk([&](linalg::LinalgOp op) {
    if (linalg::isaContractionOpInterface(op))
      contractions.push_back(op);
  });
  if (contractions.size() != 1) {
    why = "the kernel has " + std::to_string(contractions.size()) +
          " contractions, not exactly one";
    return {};
  }
  linalg::LinalgOp contraction = contractions.front();
  if (root.getOperation() == contraction.getOperation())
    return contraction;
  // The epilogue: the generics after the contraction that read its result
  // or an earlier one's, elementwise; the root must be the last of them.
  Value result = contraction->getResult(0);
  llvm::SmallPtrSet<Value, 4> tile = {result};
  llvm::SmallPtrSet<Operation *, 4> chain;
  Operation *last = nullptr;
  unsigned loops = contraction.getNumParallelLoops();
  for (Operation *op = contraction->getNextNode(); op; op = op->getNextNode()) {
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if (!generic || !llvm::any_of(generic.getDpsInputs(),
                                  [&](Value v) { return tile.contains(v); }))
      continue;
    bool elementwise = generic.getNumLoops() == loops &&
                       generic.getNumParallelLoops() == loops &&
                       generic.getNumDpsInits() == 1;
    for (OpOperand *in : generic.getDpsInputOperands())
      elementwise &= tile.contains(in->get())
                         ? generic.getMatchingIndexingMap(in).isIdentity()
                         : isKernelArgument(in->get()) ||
                               isa_and_present<arith::ConstantOp>(
                                   in->get().getDefiningOp());
    if (!elementwise)
      break;
    tile.insert(generic->getResult(0));
    chain.insert(generic);
    last = generic;
  }
  // Tile values are read by one op of the chain (tiling would fuse a value
  // read twice once per reader, the contraction included) or returned
  // (maybe reshaped), never by other computation; the contraction's result
  // is only read.
  auto isReturned = [&](Operation *user) {
    while (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
               bufferization::MaterializeInDestinationOp>(user) &&
           user->hasOneUse())
      user = *user->getUsers().begin();
    return isa<func::ReturnOp>(user);
  };
  bool contained = llvm::all_of(tile, [&](Value v) {
    llvm::SmallPtrSet<Operation *, 2> readers;
    for (Operation *user : v.getUsers()) {
      if (chain.contains(user))
        readers.insert(user);
      else if (v == result || !isReturned(user))
        return false;
    }
    return readers.size() <= 1;
  });
  if (last != root.getOperation() || !contained) {
    why = "the kernel's root is not the contraction or an elementwise "
          "epilogue of it over kernel arguments";
    return {};
  }
  return contraction;
}

linalg::LinalgOp tessel::findRootContraction(Operation *primitive,
                                             func::FuncOp func,
                                             TilingInterface root) {
  std::string why;
  linalg::LinalgOp contraction = findRootContraction(func, root, why);
  if (!contraction)
    primitive->emitError("cannot apply to kernel '")
        << func.getSymName() << "': " << why;
  return contraction;
}
