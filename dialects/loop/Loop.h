//===- Loop.h - tessel loop (schedule) dialect ------------------*- C++ -*-===//
#ifndef TESSEL_DIALECTS_LOOP_LOOP_H
#define TESSEL_DIALECTS_LOOP_LOOP_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/DeviceMappingInterface.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/OpAsmSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/loop/LoopDialect.h.inc"
#include "dialects/loop/Target.h"

#define GET_ATTRDEF_CLASSES
#include "dialects/loop/LoopAttrs.h.inc"

namespace tessel::loop {
/// A target of the table by its name (a string), with the error naming the
/// known ones.
mlir::FailureOr<TargetAttr> parseKnownTarget(mlir::AsmParser &parser);
} // namespace tessel::loop

namespace tessel::loop {
/// A list of tunable values (constants and loop.knob results, as
/// custom<DynamicIndexList> stores them) with knob values substituted.
llvm::SmallVector<int64_t> resolveValues(mlir::ValueRange dynamic,
                                         llvm::ArrayRef<int64_t> statics);
/// The largest tunable value (tile size, factor, count) a schedule takes.
constexpr int64_t kMaxTunableValue = (int64_t(1) << 31) - 1;
/// Bytes of an encoded tensor map (a CUtensorMap): loop.tensor_map's result.
constexpr int64_t kTensorMapBytes = 128;

/// The phases of a schedule, in the order its primitives are written and
/// carried out (loop.schedule's verifier checks the order): each needs what
/// the earlier ones made. loop.split_k reshapes the inputs that
/// loop.materialize computes; the loop.tile levels (outermost first) tile
/// the split contraction; the last phase acts on the innermost tile, its
/// primitives in any order.
enum class Phase : unsigned {
  Kernel,    // loop.grid_reduce: the kernel's reductions to single values
  Inputs,    // loop.materialize
  Split,     // loop.split_k
  Levels,    // loop.tile
  Tile,      // everything else
};
/// The phase of primitive `op`; none for a loop.knob, which is a value.
std::optional<Phase> phaseOf(mlir::Operation *op);

/// What the entries of a primitive's list of tunable values cut.
enum class Cuts {
  Nothing,              // a size within a tile, a count
  RootLoops,            // entry i tiles the root's loop i
  RootInnermostLoop,    // threads or lanes share the root's innermost loop
  ContractionReduction, // a block of the contraction's K
};

/// One list of tunable values of a primitive: constants in `statics`, with
/// ShapedType::kDynamic where the next of `dynamic` (a knob) goes.
struct TunableList {
  llvm::StringRef name; // as printed: "" for the leading unnamed list
  mlir::ValueRange dynamic;
  llvm::ArrayRef<int64_t> statics;
  Cuts cuts = Cuts::Nothing;
};
} // namespace tessel::loop

#include "dialects/loop/LoopInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/loop/LoopOps.h.inc"

namespace tessel::loop {

/// The attribute that carries a schedule's tensor-core primitives
/// (loop.mma, loop.promote, loop.pipeline) as a #loop.mma_config on the
/// contraction they apply to,
/// from loop-apply-schedule through bufferization to gpu-lower-mma.
constexpr llvm::StringLiteral kMmaAttrName = "tessel.mma";
/// The same for loop.warp_reduce, on the block tile's scf.forall: the
/// number of threads that share its rows (gpu-distribute-rows).
constexpr llvm::StringLiteral kWarpReduceAttrName = "tessel.warp_reduce";
/// Beside it, for rows whose length is a size symbol: their largest length,
/// by which gpu-distribute-rows may keep a thread's columns in registers.
constexpr llvm::StringLiteral kRowColumnsAttrName = "tessel.row_columns";
/// The same for loop.unroll, on each linalg op of the innermost tile: the
/// factor its innermost loop is unrolled by (loop-unroll).
constexpr llvm::StringLiteral kUnrollAttrName = "tessel.unroll";
/// The same for loop.vector_access, on each elementwise op of the innermost
/// tile: the vector width of its loads and stores (loop-vector-access).
constexpr llvm::StringLiteral kVectorAccessAttrName = "tessel.vector_access";

/// Threads that one processor of a GPU mapping attribute stands for: a warp
/// is 32 threads, a warpgroup 128, a block, thread or lane id one.
int64_t threadsPerProcessor(mlir::Attribute mapping);

} // namespace tessel::loop

#endif // TESSEL_DIALECTS_LOOP_LOOP_H
