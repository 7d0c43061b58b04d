//===- LoopOps.cpp - tessel loop ops --------------------------------------===//

#include "dialects/loop/Loop.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tessel::loop;

//===----------------------------------------------------------------------===//
// ScheduleOp
//===----------------------------------------------------------------------===//

TargetAttr TargetAttr::lookup(MLIRContext *context, StringRef name) {
  const TargetDescription *description = lookupTarget(name);
  return description ? TargetAttr::get(context, *description) : TargetAttr();
}

FailureOr<TargetAttr> tessel::loop::parseKnownTarget(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseString(&name))
    return failure();
  if (TargetAttr target = TargetAttr::lookup(parser.getContext(), name))
    return target;
  return parser.emitError(loc, "unknown target '")
         << name << "'; expected one of: " << llvm::join(targetNames(), ", ");
}

static ParseResult parseTargetName(AsmParser &parser, TargetAttr &target) {
  FailureOr<TargetAttr> known = parseKnownTarget(parser);
  if (failed(known))
    return failure();
  target = *known;
  return success();
}

static void printTargetName(AsmPrinter &printer, TargetAttr target) {
  printer.printString(target.getName());
}

Attribute TargetAttr::parse(AsmParser &parser, Type) {
  TargetAttr target;
  if (parser.parseLess() || parseTargetName(parser, target) ||
      parser.parseGreater())
    return {};
  return target;
}

void TargetAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printTargetName(printer, *this);
  printer << ">";
}

LogicalResult
MmaConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      TargetAttr, int64_t blockM, int64_t blockN, int64_t warpM,
                      int64_t warpN, int64_t k, int64_t stages, int64_t pad,
                      int64_t shapeM, int64_t shapeN, int64_t producers,
                      int64_t groupM) {
  if (groupM < 0)
    return emitError() << "mma_config: group_m = " << groupM
                       << " is negative";
  if (producers != 0 && producers != 1)
    return emitError() << "mma_config: producers = " << producers
                       << " is not 0 or 1";
  for (auto [name, value] :
       {std::pair<StringRef, int64_t>{"block_m", blockM}, {"block_n", blockN},
        {"warp_m", warpM}, {"warp_n", warpN}, {"k", k}, {"stages", stages},
        {"shape_m", shapeM}, {"shape_n", shapeN}})
    if (value <= 0)
      return emitError() << "mma_config: " << name << " = " << value
                         << " is not positive";
  // Whether the tiles fit the instructions and the target is
  // MmaConfig::check's, with the tile's extents that only the lowering sees.
  if (pad < 0)
    return emitError() << "mma_config: pad = " << pad << " is negative";
  return success();
}

static ParseResult parseTargetName(OpAsmParser &parser, TargetAttr &target) {
  return parseTargetName(static_cast<AsmParser &>(parser), target);
}

static void printTargetName(OpAsmPrinter &printer, ScheduleOp,
                            TargetAttr target) {
  printTargetName(static_cast<AsmPrinter &>(printer), target);
}

std::optional<Phase> tessel::loop::phaseOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<Phase>>(op)
      .Case<KnobOp>([](auto) { return std::nullopt; })
      .Case<GridReduceOp>([](auto) { return Phase::Kernel; })
      .Case<MaterializeOp>([](auto) { return Phase::Inputs; })
      .Case<SplitKOp>([](auto) { return Phase::Split; })
      .Case<TileOp>([](auto) { return Phase::Levels; })
      .Default([](auto) { return Phase::Tile; });
}

LogicalResult ScheduleOp::verifyRegions() {
  llvm::StringSet<> names;
  for (auto knob : getBody().getOps<KnobOp>())
    if (!names.insert(knob.getName()).second)
      return knob.emitOpError("knob name '")
             << knob.getName() << "' is already used in this schedule";
  Operation *latest = nullptr;
  for (Operation &op : getBody().getOps()) {
    std::optional<Phase> phase = phaseOf(&op);
    if (!phase)
      continue;
    if (latest && *phaseOf(latest) > *phase)
      return op.emitOpError("comes after ")
             << latest->getName() << ", but primitives apply in the order "
             << "written: loop.grid_reduce, loop.materialize, loop.split_k, "
             << "the loop.tile levels (outermost first), then the primitives "
             << "of the innermost tile";
    latest = &op;
  }
  return success();
}

LogicalResult
ScheduleOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *kernel =
      symbolTable.lookupNearestSymbolFrom(*this, getKernelAttr());
  if (!kernel)
    return emitOpError("schedules '")
           << getKernel() << "', which is not defined in this module";
  if (!isa<FunctionOpInterface>(kernel))
    return emitOpError("schedules '")
           << getKernel() << "', which is not a function";
  return success();
}

//===----------------------------------------------------------------------===//
// KnobOp
//===----------------------------------------------------------------------===//

void KnobOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

LogicalResult KnobOp::verify() {
  bool isRange = getLower().has_value();
  if (getChoices().has_value() == isRange)
    return emitOpError("knob '")
           << getName() << "' needs exactly one domain: choices or range";
  if (getChoices() && getChoices()->empty())
    return emitOpError("knob '") << getName() << "' has no choices";
  if (isRange) {
    if (*getStep() <= 0)
      return emitOpError("knob '")
             << getName() << "' has step " << *getStep()
             << "; the step must be positive";
    if (*getLower() > *getUpper())
      return emitOpError("knob '")
             << getName() << "' has an empty range [" << *getLower() << ", "
             << *getUpper() << "]";
  }
  // Ranges are checked arithmetically: a wide range must not be materialized.
  int64_t v = getValue();
  bool inDomain =
      isRange ? v >= *getLower() && v <= *getUpper() &&
                    // Unsigned: v - lower cannot overflow when v >= lower.
                    (static_cast<uint64_t>(v) -
                     static_cast<uint64_t>(*getLower())) %
                            static_cast<uint64_t>(*getStep()) ==
                        0
              : llvm::is_contained(*getChoices(), v);
  if (!inDomain) {
    InFlightDiagnostic diag = emitOpError("knob '")
                              << getName() << "' = " << v
                              << " is outside its domain ";
    if (isRange)
      diag << "range [" << *getLower() << ", " << *getUpper() << "] step "
           << *getStep();
    else
      diag << "choices [" << *getChoices() << "]";
    return diag;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// TileOp
//===----------------------------------------------------------------------===//

SmallVector<int64_t> tessel::loop::resolveValues(ValueRange dynamic,
                                                 ArrayRef<int64_t> statics) {
  SmallVector<int64_t> values;
  auto next = dynamic.begin();
  for (int64_t s : statics) {
    if (ShapedType::isDynamic(s))
      values.push_back((*next++).getDefiningOp<KnobOp>().getValue());
    else
      values.push_back(s);
  }
  return values;
}

/// Tunable values are knob results or constants in [0, 2^31): none
/// negative, and products of a few (threads, tiles, bytes) cannot overflow
/// the passes' int64 arithmetic. `what` names one value ("tile size").
static LogicalResult verifyValues(Operation *op, StringRef what,
                                  ValueRange dynamic,
                                  ArrayRef<int64_t> statics) {
  for (Value v : dynamic)
    if (!v.getDefiningOp<KnobOp>())
      return op->emitOpError() << what
                               << "s must be constants or loop.knob values";
  for (int64_t s : resolveValues(dynamic, statics)) {
    if (s < 0)
      return op->emitOpError() << what << " " << s << " is negative";
    if (s > kMaxTunableValue)
      return op->emitOpError() << what << " " << s << " exceeds the largest "
                               << "tunable value, " << kMaxTunableValue;
  }
  return success();
}

SmallVector<int64_t> TileOp::getResolvedSizes() {
  return resolveValues(getDynamicSizes(), getStaticSizes());
}

int64_t tessel::loop::threadsPerProcessor(Attribute mapping) {
  if (isa<gpu::GPUWarpMappingAttr>(mapping))
    return kWarpSize;
  if (isa<gpu::GPUWarpgroupMappingAttr>(mapping))
    return 4 * kWarpSize;
  return 1;
}

/// The kind of processor a mapping attribute names ("block", "warp", ...).
static StringRef mappingKind(Attribute attr) {
  return llvm::TypeSwitch<Attribute, StringRef>(attr)
      .Case<gpu::GPUBlockMappingAttr>([](auto) { return "block"; })
      .Case<gpu::GPUWarpgroupMappingAttr>([](auto) { return "warpgroup"; })
      .Case<gpu::GPUWarpMappingAttr>([](auto) { return "warp"; })
      .Case<gpu::GPUThreadMappingAttr>([](auto) { return "thread"; })
      .Case<gpu::GPULaneMappingAttr>([](auto) { return "lane"; })
      .Default([](auto) { return "unknown"; });
}

LogicalResult TileOp::verify() {
  if (failed(verifyValues(*this, "tile size", getDynamicSizes(),
                          getStaticSizes())))
    return failure();
  if (llvm::all_of(getResolvedSizes(), [](int64_t s) { return s == 0; }))
    return emitOpError("tiles no loop: every size is 0");
  std::optional<ArrayAttr> mapping = getMapping();
  if (mapping && getParallel())
    return emitOpError("is either mapped to GPU ids or `parallel` on the CPU, "
                       "not both");
  if (!mapping)
    return success();
  int64_t tiled = llvm::count_if(getStaticSizes(), [](int64_t s) {
    return s != 0;
  });
  if (static_cast<int64_t>(mapping->size()) != tiled)
    return emitOpError("has ")
           << tiled << " tiled loops but " << mapping->size()
           << " mapping entries; give one entry per non-zero size";
  StringRef kind = mappingKind((*mapping)[0]);
  if (kind == "unknown")
    return emitOpError("mapping must use #gpu.block, #gpu.warpgroup, "
                       "#gpu.warp, #gpu.thread or #gpu.lane");
  for (Attribute attr : *mapping)
    if (mappingKind(attr) != kind)
      return emitOpError("mixes ")
             << kind << " and " << mappingKind(attr)
             << " mappings; tile each level with its own loop.tile";
  llvm::SmallDenseSet<Attribute> seen;
  for (Attribute attr : *mapping)
    if (!seen.insert(attr).second)
      return emitOpError("maps two loops to ") << attr;
  return success();
}

//===----------------------------------------------------------------------===//
// PromoteOp, PipelineOp, MmaOp, WarpReduceOp, GridReduceOp, VectorizeOp,
// SplitReductionOp
//===----------------------------------------------------------------------===//

/// One value per list entry that the op's syntax names.
static LogicalResult verifyCount(Operation *op, StringRef what,
                                 ArrayRef<int64_t> statics, size_t count) {
  if (statics.size() != count)
    return op->emitOpError() << "needs " << count << " " << what << ", got "
                             << statics.size();
  return success();
}

/// A list of `count` tunable values (`countName` in the count's message),
/// each a constant or a knob (`valueName` in the value's).
static LogicalResult verifyList(Operation *op, StringRef countName,
                                StringRef valueName, ValueRange dynamic,
                                ArrayRef<int64_t> statics, size_t count) {
  if (failed(verifyCount(op, countName, statics, count)))
    return failure();
  return verifyValues(op, valueName, dynamic, statics);
}

/// One tunable count (`countName`), at least one (`tooFew` otherwise).
static LogicalResult verifyPositiveCount(Operation *op, StringRef countName,
                                         ValueRange dynamic,
                                         ArrayRef<int64_t> statics,
                                         StringRef tooFew) {
  if (failed(verifyList(op, countName, countName, dynamic, statics, 1)))
    return failure();
  if (resolveValues(dynamic, statics).front() < 1)
    return op->emitOpError(tooFew);
  return success();
}

/// A non-empty list of contraction inputs (0 is A, 1 is B); `none` names
/// the error of an empty one.
static LogicalResult verifyContractionInputs(Operation *op,
                                             ArrayRef<int64_t> inputs,
                                             StringRef none) {
  if (inputs.empty())
    return op->emitOpError(none);
  for (int64_t operand : inputs)
    if (operand < 0 || operand > 1)
      return op->emitOpError("input ")
             << operand << " is not a contraction input (0 is A, 1 is B)";
  return success();
}

LogicalResult PromoteOp::verify() {
  if (failed(verifyList(*this, "pad value", "pad", getDynamicPad(),
                        getStaticPad(), 1)))
    return failure();
  return verifyContractionInputs(*this, getInputs(), "promotes no input");
}

LogicalResult PipelineOp::verify() {
  return verifyPositiveCount(*this, "stage count", getDynamicStages(),
                             getStaticStages(), "needs at least one stage");
}

LogicalResult MmaOp::verify() {
  if (failed(verifyList(*this, "sizes (warp_m, warp_n, k)", "size",
                        getDynamicSizes(), getStaticSizes(), 3)) ||
      failed(verifyCount(*this, "shape entries (m, n, k)", getShape(), 3)))
    return failure();
  if (llvm::is_contained(getResolvedSizes(), 0))
    return emitOpError("sizes must be positive");
  return success();
}

/// One thread count, a positive multiple of the warp size.
static LogicalResult verifyThreads(Operation *op, ValueRange dynamic,
                                   ArrayRef<int64_t> statics) {
  if (failed(verifyList(op, "thread count", "thread count", dynamic, statics,
                        1)))
    return failure();
  int64_t threads = resolveValues(dynamic, statics).front();
  if (threads < kWarpSize || threads % kWarpSize)
    return op->emitOpError("threads = ")
           << threads << " is not a positive multiple of the warp size "
           << kWarpSize;
  return success();
}

LogicalResult TensorMapOp::verify() {
  auto source = cast<MemRefType>(getSource().getType());
  auto map = cast<MemRefType>(getMap().getType());
  if (map.getShape() != ArrayRef<int64_t>{kTensorMapBytes} ||
      !map.getLayout().isIdentity())
    return emitOpError("result must be a memref<") << kTensorMapBytes
                                                   << "xi8>: an encoded tensor map";
  if (!source.getLayout().isIdentity())
    return emitOpError("takes a whole row-major buffer, not a view of ")
           << source;
  if (source.getRank() < 1 || source.getRank() > 5)
    return emitOpError("tensor maps have 1 to 5 dims, not ") << source.getRank();
  ArrayRef<int64_t> box = getBox();
  if (static_cast<int64_t>(box.size()) != source.getRank())
    return emitOpError("box has ") << box.size() << " dims; the buffer has "
                                   << source.getRank();
  for (int64_t size : box)
    if (size < 1 || size > 256)
      return emitOpError("box sizes are 1 to 256 elements, not ") << size;
  int64_t span = llvm::StringSwitch<int64_t>(getSwizzle())
                     .Case("none", 0)
                     .Case("32B", 32)
                     .Case("64B", 64)
                     .Case("128B", 128)
                     .Default(-1);
  if (span < 0)
    return emitOpError("swizzle is one of none, 32B, 64B, 128B, not '")
           << getSwizzle() << "'";
  int64_t row = box.back() * source.getElementTypeBitWidth() / 8;
  if (row % 16)
    return emitOpError("the box's innermost dim is ")
           << row << " bytes, not a multiple of 16";
  if (span && row > span)
    return emitOpError("the box's innermost dim is ")
           << row << " bytes, more than the " << getSwizzle() << " swizzle";
  return success();
}

LogicalResult WarpReduceOp::verify() {
  return verifyThreads(*this, getDynamicThreads(), getStaticThreads());
}

LogicalResult GridReduceOp::verify() {
  if (failed(verifyPositiveCount(*this, "part count", getDynamicParts(),
                                 getStaticParts(), "needs at least one part")))
    return failure();
  // No threads: a CPU schedule's (the validator checks the target).
  if (getStaticThreads().empty())
    return success();
  return verifyThreads(*this, getDynamicThreads(), getStaticThreads());
}

LogicalResult VectorizeOp::verify() {
  if (failed(verifyList(*this, "sizes (rows, columns, depth)", "size",
                        getDynamicSizes(), getStaticSizes(), 3)) ||
      failed(verifyList(*this, "depth value", "depth", getDynamicDepth(),
                        getStaticDepth(), 1)) ||
      failed(verifyList(*this, "rows value", "rows", getDynamicRows(),
                        getStaticRows(), 1)))
    return failure();
  if (llvm::is_contained(getResolvedSizes(), 0) || getResolvedDepth() == 0 ||
      getResolvedRows() == 0)
    return emitOpError("sizes, depth and rows must be positive");
  return success();
}

LogicalResult SplitReductionOp::verify() {
  return verifyPositiveCount(*this, "lane count", getDynamicLanes(),
                             getStaticLanes(), "needs at least one lane");
}

LogicalResult MaterializeOp::verify() {
  return verifyContractionInputs(*this, getInputs(), "materializes no input");
}

LogicalResult WarpSpecializeOp::verify() {
  if (failed(verifyList(*this, "producers", "value", getDynamicProducers(),
                        getStaticProducers(), 1)))
    return failure();
  int64_t producers = getStaticProducers().front();
  if (!ShapedType::isDynamic(producers) && producers != 0 && producers != 1)
    return emitOpError("producers is 0 or 1, not ") << producers;
  return success();
}

LogicalResult PersistentOp::verify() {
  // 0 is a block per tile.
  return verifyList(*this, "group_m", "group_m", getDynamicGroupM(),
                    getStaticGroupM(), 1);
}

LogicalResult UnrollOp::verify() {
  return verifyPositiveCount(*this, "unroll factor", getDynamicFactor(),
                             getStaticFactor(),
                             "needs a factor of at least one");
}

LogicalResult VectorAccessOp::verify() {
  if (failed(verifyPositiveCount(*this, "vector width", getDynamicWidth(),
                                 getStaticWidth(), "needs a width of at least "
                                                   "one")))
    return failure();
  if (!llvm::isPowerOf2_64(getResolvedWidth()))
    return emitOpError("width = ")
           << getResolvedWidth() << " is not a power of two";
  return success();
}

LogicalResult SplitKOp::verify() {
  return verifyPositiveCount(*this, "part count", getDynamicParts(),
                             getStaticParts(), "needs at least one part");
}

//===----------------------------------------------------------------------===//
// TunableOpInterface
//===----------------------------------------------------------------------===//

SmallVector<TunableList> TileOp::getTunableLists() {
  return {{"", getDynamicSizes(), getStaticSizes(), Cuts::RootLoops}};
}
SmallVector<TunableList> PromoteOp::getTunableLists() {
  return {{"pad", getDynamicPad(), getStaticPad()}};
}
SmallVector<TunableList> MaterializeOp::getTunableLists() { return {}; }
SmallVector<TunableList> PipelineOp::getTunableLists() {
  return {{"stages", getDynamicStages(), getStaticStages()}};
}
// Warp tiles cut the block tile, not the kernel's loops.
SmallVector<TunableList> MmaOp::getTunableLists() {
  return {{"", getDynamicSizes(), getStaticSizes()}};
}
SmallVector<TunableList> WarpReduceOp::getTunableLists() {
  return {{"threads", getDynamicThreads(), getStaticThreads(),
           Cuts::RootInnermostLoop}};
}
// Parts cut the reduced elements merged into one loop.
SmallVector<TunableList> GridReduceOp::getTunableLists() {
  return {{"parts", getDynamicParts(), getStaticParts()},
          {"threads", getDynamicThreads(), getStaticThreads()}};
}
// Register blocks and row blocks cut a tile; depth blocks cut K.
SmallVector<TunableList> VectorizeOp::getTunableLists() {
  return {{"", getDynamicSizes(), getStaticSizes()},
          {"depth", getDynamicDepth(), getStaticDepth(),
           Cuts::ContractionReduction},
          {"rows", getDynamicRows(), getStaticRows()}};
}
SmallVector<TunableList> SplitReductionOp::getTunableLists() {
  return {{"lanes", getDynamicLanes(), getStaticLanes(),
           Cuts::RootInnermostLoop}};
}
SmallVector<TunableList> SplitKOp::getTunableLists() {
  return {{"parts", getDynamicParts(), getStaticParts(),
           Cuts::ContractionReduction}};
}
SmallVector<TunableList> WarpSpecializeOp::getTunableLists() {
  return {{"producers", getDynamicProducers(), getStaticProducers()}};
}
SmallVector<TunableList> PersistentOp::getTunableLists() {
  return {{"group_m", getDynamicGroupM(), getStaticGroupM()}};
}
SmallVector<TunableList> UnrollOp::getTunableLists() {
  return {{"factor", getDynamicFactor(), getStaticFactor()}};
}
SmallVector<TunableList> VectorAccessOp::getTunableLists() {
  return {{"width", getDynamicWidth(), getStaticWidth(),
           Cuts::RootInnermostLoop}};
}

#include "dialects/loop/LoopInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/loop/LoopOps.cpp.inc"
