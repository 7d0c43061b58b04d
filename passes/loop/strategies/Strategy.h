//===- Strategy.h - one schedule strategy per kernel class ----*- C++ -*-===//
//
// A strategy is what tessel knows about scheduling one class of kernels on
// one kind of target (tensor-core contractions, row reductions, CPU
// matmuls, ...), in one file: whether it applies to a kernel and the
// default schedule it writes (loop-default-schedule), the checks of the
// primitives particular to its class (loop-validate) and how they are
// carried out (loop-apply-schedule). The three passes are drivers: they
// ask the strategies of the schedule's target (strategiesFor), in order.
// What every class shares stays with the drivers: loop.tile's levels,
// loop.split_k and loop.unroll, and the limits every tile is checked
// against.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LOOP_STRATEGIES_STRATEGY_H
#define TESSEL_PASSES_LOOP_STRATEGIES_STRATEGY_H

#include "dialects/loop/Loop.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <optional>

namespace tessel {

//===----------------------------------------------------------------------===//
// What the drivers hand a strategy
//===----------------------------------------------------------------------===//

/// One root of a kernel that has no schedule yet (loop-default-schedule).
struct DefaultRequest {
  mlir::ModuleOp module;
  mlir::func::FuncOp func;
  mlir::TilingInterface root;
  /// The root's loop extents (static; none is 0 on GPUs).
  llvm::ArrayRef<int64_t> extents;
  /// The kernel's class as the graph outlined it (`tessel.kernel`).
  mlir::StringAttr kind;
  /// The root's result index; none for the kernel's first root.
  std::optional<unsigned> result;
  /// Whether a schedule may cover the whole kernel (the first root of a
  /// kernel given no schedule).
  bool mayCoverKernel;
  loop::TargetAttr target;
  const loop::TargetDescription &info;
  bool allowTf32;
  /// The CPU's vector register width the schedules are for.
  int64_t vectorBits;
  /// The CPU cores that small kernels' tiles are shared out to.
  int64_t cores;

  bool isKind(llvm::StringRef name) const {
    return kind && kind.getValue() == name;
  }
  /// A new empty schedule of the root at the module's end, `b` inside it.
  loop::ScheduleOp begin(mlir::OpBuilder &b);
};

/// What a strategy did with a DefaultRequest.
enum class Default {
  /// The kernel is not of its class: the next strategy is asked.
  Declined,
  /// The root is done, with a schedule or with none (too small to tile,
  /// nothing to distribute).
  Done,
  /// One schedule covers the whole kernel: its other roots get none.
  DoneKernel,
};

/// A schedule being checked (loop-validate), after the checks every class
/// shares: its tiles fit the root and the target.
struct ScheduleCheck {
  loop::ScheduleOp schedule;
  mlir::func::FuncOp func;
  mlir::TilingInterface root;
  /// The root's loop extents, and the innermost tile's.
  llvm::ArrayRef<int64_t> extents, tile;
  /// GPUs: the tile mapped to blocks (if any), and whether a tile maps
  /// loops to threads.
  loop::TileOp blockTile;
  bool threadMapped = false;
  /// loop.split_k's part count (1 without it).
  int64_t parts = 1;
};

/// One loop.tile level, as sizes of some root's loops.
struct Level {
  mlir::Operation *origin; // the schedule op it comes from, for diagnostics
  llvm::SmallVector<int64_t> sizes;
  llvm::SmallVector<mlir::Attribute> mapping;
  bool sequential;

  bool isBlockLevel() const {
    return !mapping.empty() && llvm::isa<mlir::gpu::GPUBlockMappingAttr>(mapping[0]);
  }
};

/// A schedule being carried out (loop-apply-schedule), its primitives in
/// the order written.
struct ApplyState {
  mlir::RewriterBase &rewriter;
  loop::ScheduleOp schedule;
  mlir::func::FuncOp func;
  /// The root; once the levels are tiled, the innermost tiled root.
  mlir::TilingInterface root;
  /// The contraction the root computes a tile of, for loop.materialize and
  /// loop.split_k (found before either changes the kernel).
  mlir::linalg::LinalgOp contraction;
  /// The schedule's levels (loop.split_k adds the part loop to them).
  llvm::SmallVector<Level> levels;
  /// The roots of every schedule of the module, as tiling changes them.
  llvm::SmallPtrSetImpl<mlir::Operation *> &roots;
};

//===----------------------------------------------------------------------===//
// Strategies
//===----------------------------------------------------------------------===//

class Strategy {
public:
  virtual ~Strategy() = default;
  /// The kernel class, for messages and docs.
  virtual llvm::StringRef name() const = 0;
  /// Writes the default schedule of `request`'s root, if the kernel is of
  /// this class.
  virtual Default addDefault(DefaultRequest request) const = 0;
  /// Whether `primitive` is one particular to this class, which validate
  /// and apply take. A class whose schedules are shared primitives alone
  /// (tiles) owns none.
  virtual bool owns(mlir::Operation *primitive) const { return false; }
  /// Whether `primitive` (one this class owns) writes the tile's loops
  /// itself, unrolled by its own knobs, so loop.unroll cannot join it.
  virtual bool writesTileLoops(mlir::Operation *primitive) const {
    return false;
  }
  /// Checks this class's primitives in `check.schedule` (or, for the
  /// target's last strategy, a schedule of shared primitives alone).
  virtual mlir::LogicalResult validate(ScheduleCheck check) const {
    return mlir::success();
  }
  /// Carries out `primitive` (one this class owns).
  virtual mlir::LogicalResult apply(ApplyState &state,
                                    mlir::Operation *primitive) const {
    return primitive->emitError("has no strategy to carry it out");
  }
  /// Dialects and interfaces that apply needs loaded.
  virtual void getDependentDialects(mlir::DialectRegistry &registry) const {}
};

/// The strategies of `target`'s kind, in the order loop-default-schedule
/// asks them; the last takes every kernel the others decline, and checks
/// schedules of shared primitives alone.
llvm::ArrayRef<const Strategy *>
strategiesFor(const loop::TargetDescription &target);

/// Every strategy of every target, once.
llvm::ArrayRef<const Strategy *> allStrategies();

/// Whether `primitive` is one every class shares (knobs, tiles,
/// loop.split_k, loop.unroll), which the drivers check and carry out.
bool isSharedPrimitive(mlir::Operation *primitive);

/// Refuses, at `at`, GPU kernel `kernel` for a loop of extent 0.
mlir::InFlightDiagnostic emitEmptyLoopError(mlir::Operation *at,
                                            llvm::StringRef kernel);

/// The strategy of `target` that owns `primitive`; null for a shared
/// primitive, or one of the other kind of target.
const Strategy *ownerOf(const loop::TargetDescription &target,
                        mlir::Operation *primitive);

const Strategy &tensorCoreContractionStrategy();
const Strategy &gpuRowReductionStrategy();
const Strategy &gridReductionStrategy();
const Strategy &gpuPointwiseStrategy();
const Strategy &cpuMatmulStrategy();
const Strategy &cpuContractionStrategy();
const Strategy &cpuTransposeStrategy();
const Strategy &cpuTilesStrategy();

//===----------------------------------------------------------------------===//
// Shared by several strategies and the drivers
//===----------------------------------------------------------------------===//

/// CPU tiles hold about this many points of the root's parallel loops: a
/// softmax tile of whole rows then stays in L2 between its passes.
inline constexpr int64_t kCpuTilePoints = 16384;
/// Parallel tiles a CPU kernel should have at least (a few cores' worth):
/// fewer, and a matmul's K is split (loop.split_k) when long enough, and a
/// loop that cuts rows into strips is tiled in quarters.
inline constexpr int64_t kCpuMinTiles = 4;
/// A CPU tile kernel of at most this many points per core runs in one task
/// per core: a few tens of microseconds each, where more tasks' starts
/// cost more than they even out.
inline constexpr int64_t kCpuSmallTaskPoints = 131072;

/// Grid dims in the order loops are mapped to them, innermost first.
inline constexpr mlir::gpu::MappingId kBlockIds[] = {
    mlir::gpu::MappingId::DimX, mlir::gpu::MappingId::DimY,
    mlir::gpu::MappingId::DimZ};

/// A knob of the schedule being written at `b`'s insertion point.
mlir::Value addKnob(mlir::OpBuilder &b, mlir::Location loc,
                    llvm::StringRef name, int64_t value,
                    llvm::ArrayRef<int64_t> choices);

/// loop.unroll of the tile's innermost loops, a knob left at 1 (LLVM and
/// ptxas unroll on their own; the tuner may find better).
void addUnrollKnob(mlir::OpBuilder &b, mlir::Location loc);

/// The parallel loops of `root`, outermost first.
llvm::SmallVector<int64_t> parallelLoops(mlir::TilingInterface root);

/// Powers of two below `extent`, and `extent` itself.
llvm::SmallVector<int64_t> powersOfTwoUpTo(int64_t extent);

/// The largest of `choices` (ascending) that is at most `preferred`, else
/// the smallest choice.
int64_t pick(llvm::ArrayRef<int64_t> choices, int64_t preferred);

/// How far apart two sizes are: the larger over the smaller (1 when equal).
double sizeRatio(int64_t a, int64_t b);

/// Part counts of loop.split_k for a K of `depth`: those up to 16 that
/// divide it into parts of at least `minPart`, whole multiples of
/// `multiple`.
llvm::SmallVector<int64_t> splitChoices(int64_t depth, int64_t minPart,
                                        int64_t multiple);

/// The fewest parts of `choices` that give `tiles` tiles at least `wanted`
/// parallel ones, each part keeping at least `minDepth` of K.
int64_t defaultParts(llvm::ArrayRef<int64_t> choices, int64_t tiles,
                     int64_t wanted, int64_t depth, int64_t minDepth);

/// The domain of a `threads` knob: powers of two from a warp to the most a
/// block may have.
llvm::SmallVector<int64_t> threadChoices(const loop::TargetDescription &target);

/// Part counts of loop.grid_reduce for a kernel's reductions to single
/// values: the default, its choices, and the longest reduction's elements.
struct GridParts {
  int64_t parts;
  llvm::SmallVector<int64_t> choices;
  int64_t longest;
};

/// Parts of at least `rowPoints` elements of the longest reduction to a
/// single value of `func` (at its largest), at most `maxParts`, dividing
/// every such reduction; with `uneven` (rows of unequal lengths, which GPU
/// rows take), the parts wanted where the most that divide are fewer than
/// half as many. The choices are the powers of two up to `maxParts` that
/// divide them all, and the default. None when the kernel has no such
/// reduction, or, without `uneven`, one over size symbols.
std::optional<GridParts> gridParts(mlir::func::FuncOp func, int64_t rowPoints,
                                   int64_t maxParts, bool uneven);

/// Whether an input of `root` that walks its innermost loop is contiguous
/// along loop `dim` instead (a transpose's input).
bool transposedAlong(mlir::TilingInterface root, int64_t dim);

/// A name for entry `index` of a list of tunable values in messages: its
/// knob, else `what` and (in a list of several) its position.
std::string valueName(mlir::ValueRange dynamic, llvm::ArrayRef<int64_t> statics,
                      unsigned index, llvm::StringRef what);
std::string sizeName(loop::TileOp tile, unsigned index);

/// A primitive that distributes the block tile itself (loop.mma,
/// loop.warp_reduce) needs one block-level tile and no other.
mlir::LogicalResult checkOnlyBlockTile(loop::ScheduleOp schedule,
                                       mlir::Operation *primitive,
                                       loop::TileOp blockTile);

/// Two tile levels: blocks, then threads (one point each, or `vector`
/// adjacent points of the innermost loop, and of `squareLoop`); for
/// vectors, a sequential level of single points of the loops that the
/// grid cannot take, when any.
struct PointwiseTiling {
  llvm::SmallVector<int64_t> blockSizes, threadSizes, pointSizes;
  llvm::SmallVector<mlir::Attribute> blockMapping, threadMapping;
  /// Points per thread, moved as vectors (loop.vector_access) when above 1.
  int64_t vector = 1;
  /// The vector widths legal for these block sizes (ascending).
  llvm::SmallVector<int64_t> vectorChoices;
  /// A loop that also has `vector` points per thread (on threads along y),
  /// along which an input is contiguous (a transpose's); -1 for none.
  int64_t squareLoop = -1;
};

/// The GPU tiling of `root` (of static shape), the GPU pointwise
/// strategy's: blocks of 256 threads along its innermost parallel loop,
/// outer parallel loops one index per block (up to the grid's three dims).
/// Each thread takes one point or, when the root is elementwise, a vector
/// of up to 16 bytes of its widest element along its innermost loop (the
/// most points that divide the loop). With `rowwise`, the innermost loop (a
/// reduced row) stays whole in a thread and blocks hold 64 rows. Nothing
/// when no loop can be distributed. loop-apply-schedule also gives it to
/// what a tensor-core or split-K schedule computes apart (materialized
/// inputs, the sum of the parts) and to what GPU schedules leave untiled.
std::optional<PointwiseTiling>
gpuPointwiseTiling(mlir::TilingInterface root, bool rowwise,
                   const loop::TargetDescription &target);

/// Tiles `root` by `levels` in turn, each fusing its producers; returns the
/// innermost tiled root. `returned` (the ops whose results leave the
/// current tile) and `roots` follow the tiling.
mlir::FailureOr<mlir::TilingInterface>
tileLevels(mlir::RewriterBase &rewriter, mlir::TilingInterface root,
           llvm::ArrayRef<Level> levels,
           llvm::SmallPtrSetImpl<mlir::Operation *> &returned,
           llvm::SmallPtrSetImpl<mlir::Operation *> &roots);

/// The levels of `tiling`, for diagnostics at `origin`.
llvm::SmallVector<Level> pointwiseLevels(mlir::Operation *origin,
                                         const PointwiseTiling &tiling);

/// Tiles `op` with `tiling` in a nest of its own (its linalg producers
/// fused), marking its tile for loop.vector_access; `origin` is the op
/// that asks, for diagnostics. `returned` and `roots` as for tileLevels.
mlir::LogicalResult
tilePointwise(mlir::RewriterBase &rewriter, mlir::Operation *origin,
              mlir::TilingInterface op, const PointwiseTiling &tiling,
              llvm::SmallPtrSetImpl<mlir::Operation *> &returned,
              llvm::SmallPtrSetImpl<mlir::Operation *> &roots);

/// Marks the elementwise ops of the innermost tile of `root` for
/// loop-vector-access (loop.vector_access of `width`).
void markVectorAccess(mlir::TilingInterface root, int64_t width);

/// The contraction in the tile of `root`: root itself or the one linalg
/// contraction fused into its block.
mlir::linalg::LinalgOp findTiledContraction(mlir::TilingInterface root);

} // namespace tessel

#endif // TESSEL_PASSES_LOOP_STRATEGIES_STRATEGY_H
