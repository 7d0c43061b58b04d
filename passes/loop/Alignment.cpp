//===- Alignment.cpp - which accesses can move vectors --------------------===//

#include "passes/loop/Alignment.h"
#include "dialects/loop/Loop.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <numeric>

using namespace mlir;
using namespace tessel;

namespace {

/// Divisors are tracked up to this power of two, so products cannot
/// overflow and 0 (a multiple of everything) stays representable.
constexpr int64_t kLargestDivisor = int64_t(1) << 30;

int64_t normalize(int64_t divisor) {
  return std::gcd(divisor, kLargestDivisor);
}

int64_t divisorOf(OpFoldResult ofr) {
  if (std::optional<int64_t> c = getConstantIntValue(ofr))
    return normalize(*c);
  return tessel::knownDivisor(cast<Value>(ofr));
}

/// The divisor of `expr` whose dims and symbols are `operands`.
int64_t divisorOf(AffineExpr expr, ValueRange operands, unsigned numDims) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return normalize(c.getValue());
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return tessel::knownDivisor(operands[d.getPosition()]);
  if (auto s = dyn_cast<AffineSymbolExpr>(expr))
    return tessel::knownDivisor(operands[numDims + s.getPosition()]);
  auto binary = cast<AffineBinaryOpExpr>(expr);
  int64_t lhs = divisorOf(binary.getLHS(), operands, numDims);
  int64_t rhs = divisorOf(binary.getRHS(), operands, numDims);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return std::gcd(lhs, rhs);
  case AffineExprKind::Mul:
    return normalize(lhs * rhs);
  default: // floordiv, ceildiv, mod
    return 1;
  }
}

/// Whether the run starting at `buffer`'s first element is aligned for
/// chunks of `width`, given its strides (checked by the caller).
bool startsAligned(Value buffer, int64_t width) {
  Operation *def = buffer.getDefiningOp();
  if (auto subview = dyn_cast_if_present<memref::SubViewOp>(def))
    return divisorOf(subview.getMixedOffsets().back()) % width == 0 &&
           tessel::isChunkAligned(subview.getSource(), width);
  if (isa_and_present<memref::CollapseShapeOp, memref::ExpandShapeOp,
                      memref::CastOp>(def))
    return tessel::isChunkAligned(def->getOperand(0), width);
  // A buffer of the host program: an argument of the kernel or an
  // allocation at its top level (allocations inside loops are per thread).
  if (auto arg = dyn_cast<BlockArgument>(buffer))
    return isa<func::FuncOp>(arg.getOwner()->getParentOp());
  return isa_and_present<memref::AllocOp>(def) &&
         isa<func::FuncOp>(def->getParentOp());
}

} // namespace

int64_t tessel::knownDivisor(Value value) {
  if (std::optional<int64_t> c = getConstantIntValue(value))
    return normalize(*c);
  if (auto apply = value.getDefiningOp<affine::AffineApplyOp>())
    return divisorOf(apply.getAffineMap().getResult(0), apply.getOperands(),
                     apply.getAffineMap().getNumDims());
  if (auto add = value.getDefiningOp<arith::AddIOp>())
    return std::gcd(knownDivisor(add.getLhs()), knownDivisor(add.getRhs()));
  if (auto mul = value.getDefiningOp<arith::MulIOp>())
    return normalize(knownDivisor(mul.getLhs()) * knownDivisor(mul.getRhs()));
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg)
    return 1;
  Operation *owner = arg.getOwner()->getParentOp();
  if (auto loop = dyn_cast<scf::ForOp>(owner);
      loop && arg == loop.getInductionVar())
    return std::gcd(knownDivisor(loop.getLowerBound()),
                    knownDivisor(loop.getStep()));
  if (auto forall = dyn_cast<scf::ForallOp>(owner);
      forall && arg.getArgNumber() < forall.getRank()) {
    unsigned i = arg.getArgNumber();
    return std::gcd(divisorOf(forall.getMixedLowerBound()[i]),
                    divisorOf(forall.getMixedStep()[i]));
  }
  return 1;
}

bool tessel::isChunkAligned(Value buffer, int64_t width) {
  auto type = dyn_cast<MemRefType>(buffer.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!type || !type.getElementType().isIntOrFloat() ||
      type.getElementTypeBitWidth() % 8 ||
      failed(type.getStridesAndOffset(strides, offset)) || strides.empty() ||
      strides.back() != 1)
    return false;
  for (int64_t stride : ArrayRef(strides).drop_back())
    if (ShapedType::isDynamic(stride) || stride % width)
      return false;
  return startsAligned(buffer, width);
}

int64_t tessel::chunkAlignment(Type element, int64_t width) {
  return std::min(loop::kMaxVectorBytes,
                  width * elementBytes(element));
}

Type tessel::widestElement(Operation *op) {
  Type widest;
  for (Value operand : op->getOperands()) {
    Type element = getElementTypeOrSelf(operand.getType());
    if (element.isIntOrFloat() &&
        (!widest || element.getIntOrFloatBitWidth() >
                        widest.getIntOrFloatBitWidth()))
      widest = element;
  }
  return widest;
}
