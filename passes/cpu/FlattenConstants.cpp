//===- FlattenConstants.cpp - constant globals as one-dimensional arrays --===//
//
// LLVM IR spells an N-D global as nested arrays, one constant per innermost
// row: a 512x512x3x3 convolution weight became 786,432 arrays of three
// floats, and translating, optimising and emitting such arrays took 28 s of
// a 31 s ResNet-18 compile. A rank-1 global is one ConstantDataArray. Uses
// read the flat global through memref.expand_shape, a view of the same
// bytes in the same order.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

namespace tessel {
#define GEN_PASS_DEF_CPUFLATTENCONSTANTS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace {
struct CpuFlattenConstantsPass
    : tessel::impl::CpuFlattenConstantsBase<CpuFlattenConstantsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Each flattened global's name and its type before.
    DenseMap<StringAttr, MemRefType> shaped;
    for (auto global : module.getOps<memref::GlobalOp>()) {
      MemRefType type = global.getType();
      auto value =
          dyn_cast_or_null<DenseElementsAttr>(global.getInitialValueAttr());
      if (!global.getConstant() || !value || type.getRank() < 2 ||
          !type.hasStaticShape() || !type.getLayout().isIdentity())
        continue;
      int64_t count = type.getNumElements();
      global.setType(MemRefType::get({count}, type.getElementType(),
                                     MemRefLayoutAttrInterface(),
                                     type.getMemorySpace()));
      global.setInitialValueAttr(value.reshape(
          RankedTensorType::get({count}, value.getElementType())));
      shaped[global.getSymNameAttr()] = type;
    }
    if (shaped.empty())
      return;
    SmallVector<memref::GetGlobalOp> uses;
    module.walk([&](memref::GetGlobalOp get) {
      if (shaped.contains(get.getNameAttr().getAttr()))
        uses.push_back(get);
    });
    for (memref::GetGlobalOp get : uses) {
      MemRefType type = shaped.lookup(get.getNameAttr().getAttr());
      OpBuilder builder(get);
      MemRefType flat =
          MemRefType::get({type.getNumElements()}, type.getElementType(),
                          MemRefLayoutAttrInterface(), type.getMemorySpace());
      Value whole = memref::GetGlobalOp::create(builder, get.getLoc(), flat,
                                                get.getNameAttr());
      SmallVector<ReassociationIndices> allDims = {
          llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()))};
      Value view = memref::ExpandShapeOp::create(builder, get.getLoc(), type,
                                                 whole, allDims);
      get.replaceAllUsesWith(view);
      get.erase();
    }
  }
};
} // namespace
