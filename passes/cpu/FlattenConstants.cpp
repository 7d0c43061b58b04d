//===- FlattenConstants.cpp - constant globals as arrays of bytes ---------===//
//
// LLVM IR spells an N-D global as nested arrays, one constant per innermost
// row: a 512x512x3x3 convolution weight became 786,432 arrays of three
// floats, and translating, optimising and emitting such arrays took 28 s of
// a 31 s ResNet-18 compile. Even flat, a float array is emitted element by
// element (16 MB: 0.23 s), while an array of bytes is written as one blob
// (0.01 s). So each constant becomes its bytes, read through memref.view:
// the same bytes, in the same order, at the same alignment.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

namespace tessel {
#define GEN_PASS_DEF_CPUFLATTENCONSTANTS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {

/// The bytes of `value` in memory order, when its elements are whole bytes
/// (i1 is stored as bits).
std::optional<SmallVector<char>> bytesOf(DenseElementsAttr value) {
  Type elem = value.getElementType();
  if (!elem.isIntOrFloat() || elem.getIntOrFloatBitWidth() % 8)
    return std::nullopt;
  ArrayRef<char> raw = value.getRawData();
  if (!value.isSplat())
    return SmallVector<char>(raw);
  SmallVector<char> bytes;
  bytes.reserve(raw.size() * value.getNumElements());
  for (int64_t i = 0, e = value.getNumElements(); i < e; ++i)
    bytes.append(raw.begin(), raw.end());
  return bytes;
}

struct CpuFlattenConstantsPass
    : tessel::impl::CpuFlattenConstantsBase<CpuFlattenConstantsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder builder(&getContext());
    // Each global made bytes: its name and its type before.
    DenseMap<StringAttr, MemRefType> typed;
    for (auto global : module.getOps<memref::GlobalOp>()) {
      MemRefType type = global.getType();
      auto value =
          dyn_cast_or_null<DenseElementsAttr>(global.getInitialValueAttr());
      if (!global.getConstant() || !value || !type.hasStaticShape() ||
          !type.getLayout().isIdentity() || type.getMemorySpace())
        continue;
      std::optional<SmallVector<char>> bytes = bytesOf(value);
      if (!bytes)
        continue;
      int64_t count = bytes->size();
      global.setType(MemRefType::get({count}, builder.getI8Type()));
      global.setInitialValueAttr(DenseElementsAttr::getFromRawBuffer(
          RankedTensorType::get({count}, builder.getI8Type()), *bytes));
      typed[global.getSymNameAttr()] = type;
    }
    SmallVector<memref::GetGlobalOp> uses;
    module.walk([&](memref::GetGlobalOp get) {
      if (typed.contains(get.getNameAttr().getAttr()))
        uses.push_back(get);
    });
    for (memref::GetGlobalOp get : uses) {
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          get, get.getNameAttr());
      OpBuilder b(get);
      Location loc = get.getLoc();
      Value bytes =
          memref::GetGlobalOp::create(b, loc, global.getType(), get.getNameAttr());
      Value start = arith::ConstantIndexOp::create(b, loc, 0);
      Value view = memref::ViewOp::create(
          b, loc, typed.lookup(get.getNameAttr().getAttr()), bytes, start,
          ValueRange());
      get.replaceAllUsesWith(view);
      get.erase();
    }
  }
};
} // namespace
