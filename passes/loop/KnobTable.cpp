//===- KnobTable.cpp - the knobs of a scheduled module, as data -----------===//

#include "passes/loop/KnobTable.h"

#include "dialects/loop/Loop.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/linalg/Contractions.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"

using namespace mlir;
using namespace tessel;
namespace json = llvm::json;

namespace {

/// The kernel loops a schedule's lists can cut, where static.
struct KernelLoops {
  SmallVector<std::optional<int64_t>> root;
  std::optional<int64_t> reduction; // the contraction's K (all K dims)

  std::optional<int64_t> cut(loop::Cuts cuts, size_t entry) const {
    switch (cuts) {
    case loop::Cuts::RootLoops:
      return entry < root.size() ? root[entry] : std::nullopt;
    case loop::Cuts::RootInnermostLoop:
      return root.empty() ? std::nullopt : root.back();
    case loop::Cuts::ContractionReduction:
      return reduction;
    case loop::Cuts::Nothing:
      return std::nullopt;
    }
    llvm_unreachable("unknown Cuts");
  }
};

std::optional<int64_t> product(linalg::LinalgOp op, ArrayRef<unsigned> dims) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t extent = 1;
  for (unsigned d : dims) {
    if (ShapedType::isDynamic(ranges[d]))
      return std::nullopt;
    extent *= ranges[d];
  }
  return extent;
}

KernelLoops kernelLoops(loop::ScheduleOp schedule, SymbolTable &symbols) {
  KernelLoops loops;
  auto func = symbols.lookup<func::FuncOp>(schedule.getKernel());
  if (!func)
    return loops;
  // The root as scheduledRoot picks it, without its errors.
  TilingInterface root;
  for (auto [index, candidate] : findKernelRoots(func))
    if (!root && (!schedule.getResult() || index == *schedule.getResult()))
      root = candidate;
  auto linalgRoot = dyn_cast_if_present<linalg::LinalgOp>(
      root ? root.getOperation() : nullptr);
  if (!linalgRoot)
    return loops;
  for (int64_t r : linalgRoot.getStaticLoopRanges())
    loops.root.push_back(ShapedType::isDynamic(r) ? std::nullopt
                                                  : std::optional(r));
  std::string why;
  if (linalg::LinalgOp contraction = findRootContraction(func, root, why)) {
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(contraction);
    if (succeeded(dims) && !dims->k.empty())
      loops.reduction = product(contraction, dims->k);
  }
  return loops;
}

json::Object knobEntry(loop::KnobOp knob) {
  json::Object entry{{"name", knob.getName()},
                     {"value", knob.getValueAttr().getInt()}};
  if (std::optional<ArrayRef<int64_t>> choices = knob.getChoices()) {
    entry["choices"] = json::Array(*choices);
  } else {
    entry["lower"] = knob.getLowerAttr().getInt();
    entry["upper"] = knob.getUpperAttr().getInt();
    entry["step"] = knob.getStepAttr().getInt();
  }
  return entry;
}

json::Object primitiveEntry(Operation &op, const KernelLoops &loops) {
  json::Object primitive{{"op", op.getName().getStringRef()}};
  if (auto tile = dyn_cast<loop::TileOp>(op))
    primitive["parallel"] = tile.getParallel() || tile.getMapping();
  json::Array lists;
  if (auto tunable = dyn_cast<loop::TunableOpInterface>(op)) {
    for (const loop::TunableList &list : tunable.getTunableLists()) {
      json::Array entries;
      auto next = list.dynamic.begin();
      for (auto [position, constant] : llvm::enumerate(list.statics)) {
        json::Object entry;
        int64_t value = constant;
        if (ShapedType::isDynamic(value)) {
          auto knob = (*next++).getDefiningOp<loop::KnobOp>();
          entry["knob"] = knob.getName();
          value = knob.getValueAttr().getInt();
        }
        entry["value"] = value;
        std::optional<int64_t> extent = loops.cut(list.cuts, position);
        entry["extent"] = extent ? json::Value(*extent) : json::Value(nullptr);
        entries.push_back(std::move(entry));
      }
      lists.push_back(json::Object{{"name", list.name},
                                   {"entries", std::move(entries)}});
    }
  }
  primitive["lists"] = std::move(lists);
  return primitive;
}

} // namespace

json::Array tessel::knobTable(ModuleOp module) {
  SymbolTable symbols(module);
  json::Array table;
  for (auto schedule : module.getOps<loop::ScheduleOp>()) {
    KernelLoops loops = kernelLoops(schedule, symbols);
    json::Array knobs, primitives;
    for (Operation &op : schedule.getBody().front()) {
      if (auto knob = dyn_cast<loop::KnobOp>(op))
        knobs.push_back(knobEntry(knob));
      else
        primitives.push_back(primitiveEntry(op, loops));
    }
    std::optional<uint64_t> result = schedule.getResult();
    table.push_back(json::Object{
        {"kernel", schedule.getKernel()},
        {"result", result ? json::Value(int64_t(*result)) : json::Value(nullptr)},
        {"target", schedule.getTarget().getName()},
        {"knobs", std::move(knobs)},
        {"primitives", std::move(primitives)}});
  }
  return table;
}
