//===- FormFusionGroups.cpp - group graph ops into kernels ----------------===//
//
// Every compute op of a function ends up in exactly one graph.fused group,
// which later becomes one kernel. Ops are visited in program order and each
// either joins the group of one of its producers or starts a new group:
//
//   injective   elementwise, broadcast, cast, compare, select and data
//               movement (transpose, reshape, slice, concat, gather)
//   reduction   graph.reduce, graph.pool2d
//   contraction graph.matmul, graph.conv2d
//
//   R1 elementwise chain: an injective op joins an injective-only group.
//   R2 reduction over fused producers: a reduction joins a group of
//      injective ops and reductions over the same iteration space, so a
//      softmax or a layer_norm is one group.
//   R3 epilogue: an injective op joins a reduction or contraction group,
//      and, for a contraction group, only when it keeps the contraction's
//      result shape (bias, activation, residual add, cast).
//   Contractions always start a group: their producers are not recomputed
//   per tile. No op is ever duplicated, so heavy work is never repeated for
//   a second consumer; a value used outside its group becomes a group
//   result.
//   An op never joins a group that one of its other operands' groups
//   depends on (that would make the groups cyclic). Among legal groups it
//   prefers contraction, then reduction, then the latest group.
//
// Splat constants and constants of at most 16 elements are cloned into the
// groups that use them; larger ones are group inputs.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/Graph.h"
#include "passes/Passes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace tessel {
#define GEN_PASS_DEF_GRAPHFORMFUSIONGROUPS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;
using namespace tessel::graph;

namespace {

constexpr int64_t kInlineConstantLimit = 16;

enum class OpClass { injective, reduction, contraction };

OpClass classify(Operation *op) {
  if (isa<MatmulOp, Conv2DOp>(op))
    return OpClass::contraction;
  if (isa<ReduceOp, Pool2DOp>(op))
    return OpClass::reduction;
  return OpClass::injective;
}

/// An op each group that reads it computes for itself: a small constant,
/// or an iota whose every user joins a group (recomputing it is cheaper
/// than reading it from memory).
bool isInlinedConstant(Operation *op) {
  if (isa_and_present<IotaOp>(op))
    return llvm::all_of(op->getUsers(), [](Operation *user) {
      return isa<GraphDialect>(user->getDialect()) && !isa<FusedOp>(user) &&
             !user->hasTrait<OpTrait::IsTerminator>();
    });
  auto c = dyn_cast_if_present<ConstantOp>(op);
  if (!c)
    return false;
  auto value = dyn_cast<DenseElementsAttr>(c.getValue());
  return value && (value.isSplat() ||
                   value.getNumElements() <= kInlineConstantLimit);
}

struct Group {
  unsigned id;
  SmallVector<Operation *> ops;
  FusionKind kind = FusionKind::elementwise;
  Operation *root = nullptr; // the contraction, or the first reduction
  bool opaque = false;       // a non-graph op: only tracked for dependencies
  SmallVector<std::string> reasons;
};

/// The shape a reduction iterates over (its input's).
ArrayRef<int64_t> reductionSpace(Operation *op) {
  return cast<RankedTensorType>(op->getOperand(0).getType()).getShape();
}

struct GroupBuilder {
  std::vector<std::unique_ptr<Group>> groups;
  DenseMap<Operation *, Group *> groupOf;

  Group *producerGroup(Value v) {
    Operation *def = v.getDefiningOp();
    return def ? groupOf.lookup(def) : nullptr;
  }

  /// Why `op` may join `g` (one of R1-R3), or nullopt.
  std::optional<StringRef> rule(Operation *op, Group &g) {
    if (g.opaque)
      return std::nullopt;
    OpClass c = classify(op);
    if (c == OpClass::contraction)
      return std::nullopt;
    if (c == OpClass::reduction) {
      if (g.kind == FusionKind::contraction || isa<Pool2DOp>(op) ||
          llvm::any_of(g.ops, [](Operation *o) { return isa<Pool2DOp>(o); }))
        return std::nullopt;
      if (g.root && reductionSpace(g.root) != reductionSpace(op))
        return std::nullopt;
      return StringRef("R2 reduction over fused producers");
    }
    switch (g.kind) {
    case FusionKind::elementwise:
      return StringRef("R1 elementwise chain");
    case FusionKind::reduction:
      return StringRef("R3 epilogue of a reduction");
    case FusionKind::contraction:
      if (cast<ShapedType>(op->getResult(0).getType()).getShape() !=
          cast<ShapedType>(g.root->getResult(0).getType()).getShape())
        return std::nullopt;
      return StringRef("R3 epilogue of a contraction");
    }
    llvm_unreachable("unknown fusion kind");
  }

  /// Whether `from` uses, transitively, a value of `to`. Computed on the
  /// current membership: groups grow, so a cached answer would go stale.
  bool dependsOn(Group *from, Group *to) {
    SmallVector<Group *> stack = {from};
    llvm::SmallPtrSet<Group *, 16> seen = {from};
    while (!stack.empty()) {
      Group *g = stack.pop_back_val();
      for (Operation *op : g->ops)
        for (Value v : op->getOperands()) {
          Group *h = producerGroup(v);
          if (!h || h == g)
            continue;
          if (h == to)
            return true;
          if (seen.insert(h).second)
            stack.push_back(h);
        }
    }
    return false;
  }

  /// Joining `g` is cyclic if another operand's group depends on `g`.
  bool wouldCycle(Operation *op, Group &g) {
    for (Value v : op->getOperands())
      if (Group *h = producerGroup(v); h && h != &g && dependsOn(h, &g))
        return true;
    return false;
  }

  /// Non-graph ops are kept out of groups but take part in dependencies.
  void addOpaque(Operation *op) {
    groups.push_back(std::make_unique<Group>());
    Group &g = *groups.back();
    g.id = groups.size() - 1;
    g.opaque = true;
    g.ops.push_back(op);
    groupOf[op] = &g;
  }

  void add(Operation *op, Group &g, StringRef why) {
    g.ops.push_back(op);
    groupOf[op] = &g;
    g.reasons.push_back((op->getName().getStringRef() + " [" + why + "]").str());
    OpClass c = classify(op);
    if (c == OpClass::contraction) {
      g.kind = FusionKind::contraction;
      g.root = op;
    } else if (c == OpClass::reduction && g.kind == FusionKind::elementwise) {
      g.kind = FusionKind::reduction;
      g.root = op;
    }
  }

  void visit(Operation *op) {
    auto rank = [](Group *g) {
      return g->kind == FusionKind::contraction ? 2
             : g->kind == FusionKind::reduction ? 1
                                                : 0;
    };
    Group *best = nullptr;
    StringRef why;
    for (Value v : op->getOperands()) {
      Group *g = producerGroup(v);
      if (!g || wouldCycle(op, *g))
        continue;
      std::optional<StringRef> r = rule(op, *g);
      if (!r)
        continue;
      if (!best || rank(g) > rank(best) ||
          (rank(g) == rank(best) && g->id > best->id)) {
        best = g;
        why = *r;
      }
    }
    if (!best) {
      groups.push_back(std::make_unique<Group>());
      best = groups.back().get();
      best->id = groups.size() - 1;
      why = "starts the group";
    }
    add(op, *best, why);
  }
};

/// Replaces the ops of `g` by one graph.fused placed at its last op.
void materialize(Group &g, OpBuilder &b) {
  llvm::SmallPtrSet<Operation *, 16> members(g.ops.begin(), g.ops.end());
  llvm::SetVector<Value> inputs;
  SmallVector<Value> outputs;
  for (Operation *op : g.ops) {
    for (Value v : op->getOperands())
      if (!members.contains(v.getDefiningOp()) &&
          !isInlinedConstant(v.getDefiningOp()))
        inputs.insert(v);
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation *u) {
            return !members.contains(u);
          }))
        outputs.push_back(r);
  }
  b.setInsertionPoint(g.ops.back());
  SmallVector<Type> resultTypes = llvm::to_vector(
      llvm::map_range(outputs, [](Value v) { return v.getType(); }));
  SmallVector<Value> inputValues = inputs.takeVector();
  auto fused = FusedOp::create(b, g.ops.front()->getLoc(), resultTypes,
                               g.kind, inputValues);
  Block *body = b.createBlock(&fused.getBody());
  IRMapping map;
  for (Value in : inputValues)
    map.map(in, body->addArgument(in.getType(), in.getLoc()));
  b.setInsertionPointToStart(body);
  for (Operation *op : g.ops) {
    for (Value v : op->getOperands())
      if (!map.contains(v) && isInlinedConstant(v.getDefiningOp()))
        map.map(v, b.clone(*v.getDefiningOp())->getResult(0));
    b.clone(*op, map);
  }
  SmallVector<Value> yielded = llvm::to_vector(
      llvm::map_range(outputs, [&](Value v) { return map.lookup(v); }));
  YieldOp::create(b, fused.getLoc(), yielded);
  for (auto [old, now] : llvm::zip(outputs, fused.getResults()))
    old.replaceUsesWithIf(now, [&](OpOperand &use) {
      return !members.contains(use.getOwner());
    });
  for (Operation *op : llvm::reverse(g.ops))
    op->erase();
}

struct GraphFormFusionGroupsPass
    : tessel::impl::GraphFormFusionGroupsBase<GraphFormFusionGroupsPass> {
  using GraphFormFusionGroupsBase::GraphFormFusionGroupsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitOpError("graph-form-fusion-groups expects a single-block "
                       "function");
      return signalPassFailure();
    }
    Block &block = func.getBody().front();
    GroupBuilder builder;
    for (Operation &op : block) {
      if (isa<ConstantOp>(op) || op.hasTrait<OpTrait::IsTerminator>() ||
          (isa<IotaOp>(op) && isInlinedConstant(&op)))
        continue;
      if (isa<GraphDialect>(op.getDialect()) && !isa<FusedOp>(op))
        builder.visit(&op);
      else
        builder.addOpaque(&op);
    }

    OpBuilder b(func.getContext());
    unsigned formed = 0;
    for (auto &g : builder.groups) {
      if (g->opaque)
        continue;
      if (report) {
        std::string text;
        llvm::raw_string_ostream os(text);
        os << "fusion group " << formed << " ("
           << stringifyFusionKind(g->kind) << ", " << g->ops.size()
           << " ops): ";
        llvm::interleave(g->reasons, os, ", ");
        g->ops.front()->emitRemark(text);
      }
      materialize(*g, b);
      ++formed;
    }
    // Ops placed between a group's members may use its results.
    sortTopologically(&block);
    // Large constants no group inlined stay in the function; drop dead ones.
    for (Operation &op : llvm::make_early_inc_range(block))
      if (isa<ConstantOp, IotaOp>(op) && op.use_empty())
        op.erase();
  }
};

} // namespace
