//===- ShapeInference.cpp - graph result-type rules -----------------------===//

#include "dialects/graph/ShapeInference.h"

#include "dialects/graph/Graph.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/BitVector.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/raw_ostream.h"
#include <numeric>

using namespace mlir;

namespace tessel::graph {

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

LogicalResult broadcastShapes(std::optional<Location> loc,
                              ArrayRef<ArrayRef<int64_t>> shapes,
                              SmallVectorImpl<int64_t> &result) {
  result.clear();
  for (ArrayRef<int64_t> shape : shapes) {
    SmallVector<int64_t> next;
    if (!OpTrait::util::getBroadcastedShape(result, shape, next)) {
      std::string all;
      llvm::raw_string_ostream os(all);
      llvm::interleave(
          shapes, os, [&](ArrayRef<int64_t> s) { os << shapeString(s); },
          " and ");
      return emitOptionalError(loc, "operand shapes ", all,
                               " are not broadcast-compatible");
    }
    result.assign(next);
  }
  return success();
}

FailureOr<int64_t> normalizeAxis(std::optional<Location> loc, int64_t axis,
                                 int64_t rank, StringRef what) {
  if (axis < -rank || axis >= rank) {
    (void)emitOptionalError(loc, what, " ", axis, " is out of range for rank ",
                            rank, " (valid: ", -rank, " to ", rank - 1, ")");
    return failure();
  }
  return positiveAxis(axis, rank);
}

namespace {
/// The sizes of tensors over one sorted list of symbol names: each dim a
/// constant, an expression over the names, or null (a ? without
/// #graph.shape, which the rules treat as upstream does).
struct SymbolicSizes {
  SmallVector<StringAttr> names;

  explicit SymbolicSizes(ArrayRef<RankedTensorType> types) {
    for (RankedTensorType type : types)
      if (auto shape = dyn_cast_if_present<ShapeAttr>(type.getEncoding()))
        llvm::append_range(names, shape.getNames());
    llvm::sort(names, [](StringAttr a, StringAttr b) {
      return a.getValue() < b.getValue();
    });
    names.erase(llvm::unique(names), names.end());
  }

  bool any() const { return !names.empty(); }

  SmallVector<AffineExpr> of(RankedTensorType type) const {
    MLIRContext *context = type.getContext();
    SmallVector<AffineExpr> sizes;
    if (auto shape = dyn_cast_if_present<ShapeAttr>(type.getEncoding())) {
      SmallVector<AffineExpr> renamed;
      for (StringAttr name : shape.getNames())
        renamed.push_back(getAffineSymbolExpr(
            llvm::find(names, name) - names.begin(), context));
      for (AffineExpr size : shape.getSizes().getResults())
        sizes.push_back(size.replaceSymbols(renamed));
      return sizes;
    }
    for (int64_t d : type.getShape())
      sizes.push_back(ShapedType::isDynamic(d)
                          ? AffineExpr()
                          : getAffineConstantExpr(d, context));
    return sizes;
  }

  std::string show(AffineExpr size) const {
    return size ? sizeString(size, names) : "?";
  }

  std::string show(ArrayRef<AffineExpr> sizes) const {
    std::string text = "[";
    for (auto [i, size] : llvm::enumerate(sizes))
      text += (i ? ", " : "") + show(size);
    return text + "]";
  }

  /// The shape and #graph.shape of `sizes`, keeping only the names used.
  void build(ArrayRef<AffineExpr> sizes, MLIRContext *context,
             SmallVectorImpl<int64_t> &shape, Attribute &encoding) const {
    shape.clear();
    llvm::BitVector used(names.size());
    for (AffineExpr size : sizes) {
      auto constant = dyn_cast<AffineConstantExpr>(size);
      shape.push_back(constant ? constant.getValue() : ShapedType::kDynamic);
      if (size)
        size.walk([&](AffineExpr e) {
          if (auto s = dyn_cast<AffineSymbolExpr>(e))
            used.set(s.getPosition());
        });
    }
    encoding = nullptr;
    if (used.none())
      return;
    SmallVector<AffineExpr> renamed(names.size(),
                                    getAffineConstantExpr(0, context));
    SmallVector<StringAttr> kept;
    for (unsigned i : used.set_bits()) {
      renamed[i] = getAffineSymbolExpr(kept.size(), context);
      kept.push_back(names[i]);
    }
    // One canonical form per size (m + n + m is m * 2 + n), as the parser
    // gives, so that equal sizes are equal attributes.
    SmallVector<AffineExpr> results;
    for (AffineExpr size : sizes)
      results.push_back(
          simplifyAffineExpr(size.replaceSymbols(renamed), 0, kept.size()));
    encoding = ShapeAttr::get(
        context, AffineMap::get(0, kept.size(), results, context), kept);
  }
};

bool isOne(AffineExpr size) {
  auto c = dyn_cast_if_present<AffineConstantExpr>(size);
  return c && c.getValue() == 1;
}

/// The sizes of each of `types`; failure if one has a ? without
/// #graph.shape, which cannot be compared with a symbol.
LogicalResult sizesOf(std::optional<Location> loc,
                      const SymbolicSizes &symbols,
                      ArrayRef<RankedTensorType> types,
                      SmallVectorImpl<SmallVector<AffineExpr>> &all) {
  for (RankedTensorType type : types) {
    all.push_back(symbols.of(type));
    if (llvm::is_contained(all.back(), AffineExpr()))
      return emitOptionalError(loc, "operand ", type,
                               " has a ? dim without #graph.shape among "
                               "operands with size symbols");
  }
  return success();
}

/// numpy broadcasting of symbolic sizes.
LogicalResult broadcastSizes(std::optional<Location> loc,
                             const SymbolicSizes &symbols,
                             ArrayRef<SmallVector<AffineExpr>> all,
                             MLIRContext *context,
                             SmallVectorImpl<AffineExpr> &result) {
  result.clear();
  for (ArrayRef<AffineExpr> sizes : all) {
    if (sizes.size() > result.size())
      result.insert(result.begin(), sizes.size() - result.size(),
                    getAffineConstantExpr(1, context));
    for (auto [a, b] : llvm::zip(llvm::reverse(result), llvm::reverse(sizes))) {
      if (a == b || isOne(b))
        continue;
      if (isOne(a)) {
        a = b;
        continue;
      }
      bool symbolic = !isa<AffineConstantExpr>(a) || !isa<AffineConstantExpr>(b);
      return emitOptionalError(
          loc, "operand shapes ", symbols.show(result), " and ",
          symbols.show(sizes), " are not broadcast-compatible",
          symbolic ? " (a size symbol broadcasts only against 1 or the same "
                     "size)"
                   : "");
    }
  }
  return success();
}
} // namespace

LogicalResult broadcastTypes(std::optional<Location> loc,
                             ArrayRef<RankedTensorType> types,
                             SmallVectorImpl<int64_t> &shape,
                             Attribute &encoding) {
  SymbolicSizes symbols(types);
  if (!symbols.any()) {
    SmallVector<ArrayRef<int64_t>> shapes;
    for (RankedTensorType type : types)
      shapes.push_back(type.getShape());
    encoding = nullptr;
    return broadcastShapes(loc, shapes, shape);
  }
  MLIRContext *context = types.front().getContext();
  SmallVector<SmallVector<AffineExpr>> all;
  SmallVector<AffineExpr> result;
  if (failed(sizesOf(loc, symbols, types, all)) ||
      failed(broadcastSizes(loc, symbols, all, context, result)))
    return failure();
  symbols.build(result, context, shape, encoding);
  return success();
}

LogicalResult concatTypes(std::optional<Location> loc,
                          ArrayRef<RankedTensorType> types, int64_t axis,
                          SmallVectorImpl<int64_t> &shape,
                          Attribute &encoding) {
  SymbolicSizes symbols(types);
  MLIRContext *context = types.front().getContext();
  if (!symbols.any()) {
    shape.assign(types.front().getShape().begin(),
                 types.front().getShape().end());
    for (RankedTensorType t : types.drop_front())
      shape[axis] = ShapedType::isDynamic(t.getDimSize(axis)) ||
                            ShapedType::isDynamic(shape[axis])
                        ? ShapedType::kDynamic
                        : shape[axis] + t.getDimSize(axis);
    encoding = nullptr;
    return success();
  }
  SmallVector<SmallVector<AffineExpr>> all;
  if (failed(sizesOf(loc, symbols, types, all)))
    return failure();
  SmallVector<AffineExpr> result = all.front();
  for (auto [i, sizes] : llvm::enumerate(ArrayRef(all).drop_front())) {
    for (auto [d, size] : llvm::enumerate(sizes))
      if (int64_t(d) != axis && size != result[d])
        return emitOptionalError(loc, "concat input #", i + 1, " ",
                                 symbols.show(sizes), " does not match input #0 ",
                                 symbols.show(all.front()), " outside axis ",
                                 axis);
    result[axis] = result[axis] + sizes[axis];
  }
  symbols.build(result, context, shape, encoding);
  return success();
}

RankedTensorType derivedType(RankedTensorType input, ArrayRef<int64_t> shape,
                             ArrayRef<int64_t> from) {
  SymbolicSizes symbols(ArrayRef<RankedTensorType>{input});
  if (!symbols.any())
    return RankedTensorType::get(shape, input.getElementType());
  SmallVector<AffineExpr> in = symbols.of(input), sizes;
  for (auto [size, source] : llvm::zip_equal(shape, from))
    sizes.push_back(source >= 0 ? in[source]
                                : getAffineConstantExpr(size, input.getContext()));
  SmallVector<int64_t> result;
  Attribute encoding;
  symbols.build(sizes, input.getContext(), result, encoding);
  return RankedTensorType::get(result, input.getElementType(), encoding);
}

LogicalResult inferBroadcastResultType(std::optional<Location> loc, Type lhs,
                                       Type rhs,
                                       SmallVectorImpl<Type> &results) {
  auto l = cast<RankedTensorType>(lhs);
  auto r = cast<RankedTensorType>(rhs);
  SmallVector<int64_t> shape;
  Attribute encoding;
  if (failed(broadcastTypes(loc, {l, r}, shape, encoding)))
    return failure();
  results.push_back(
      RankedTensorType::get(shape, l.getElementType(), encoding));
  return success();
}

LogicalResult inferMatmulResultType(std::optional<Location> loc, Type lhs,
                                    Type rhs, SmallVectorImpl<Type> &results) {
  auto l = cast<RankedTensorType>(lhs);
  auto r = cast<RankedTensorType>(rhs);
  if (l.getRank() < 2 || r.getRank() < 2)
    return emitOptionalError(loc, "matmul operands need rank >= 2, got ranks ",
                             l.getRank(), " and ", r.getRank());
  if (l.getElementType() != r.getElementType())
    return emitOptionalError(loc, "matmul operands have different element "
                                  "types: ",
                             l.getElementType(), " and ", r.getElementType());
  if (SymbolicSizes symbols(ArrayRef<RankedTensorType>{l, r}); symbols.any()) {
    MLIRContext *context = l.getContext();
    SmallVector<SmallVector<AffineExpr>> all;
    if (failed(sizesOf(loc, symbols, {l, r}, all)))
      return failure();
    ArrayRef<AffineExpr> ls = all[0], rs = all[1];
    if (ls.back() != rs[rs.size() - 2])
      return emitOptionalError(loc, "matmul contraction dimensions differ: "
                                    "lhs ",
                               symbols.show(ls), " has K = ",
                               symbols.show(ls.back()), ", rhs ",
                               symbols.show(rs), " has K = ",
                               symbols.show(rs[rs.size() - 2]));
    SmallVector<SmallVector<AffineExpr>> batches = {
        SmallVector<AffineExpr>(ls.drop_back(2)),
        SmallVector<AffineExpr>(rs.drop_back(2))};
    SmallVector<AffineExpr> sizes;
    if (failed(broadcastSizes(loc, symbols, batches, context, sizes)))
      return failure();
    sizes.push_back(ls[ls.size() - 2]);
    sizes.push_back(rs.back());
    SmallVector<int64_t> shape;
    Attribute encoding;
    symbols.build(sizes, context, shape, encoding);
    results.push_back(
        RankedTensorType::get(shape, l.getElementType(), encoding));
    return success();
  }
  int64_t k1 = l.getShape().back(), k2 = r.getShape()[r.getRank() - 2];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return emitOptionalError(loc, "matmul contraction dimensions differ: lhs ",
                             shapeString(l.getShape()), " has K = ", k1,
                             ", rhs ", shapeString(r.getShape()), " has K = ",
                             k2);
  SmallVector<int64_t> batch;
  if (!OpTrait::util::getBroadcastedShape(l.getShape().drop_back(2),
                                          r.getShape().drop_back(2), batch))
    return emitOptionalError(loc, "matmul batch dimensions ",
                             shapeString(l.getShape().drop_back(2)), " and ",
                             shapeString(r.getShape().drop_back(2)),
                             " are not broadcast-compatible");
  batch.push_back(l.getShape()[l.getRank() - 2]);
  batch.push_back(r.getShape().back());
  results.push_back(RankedTensorType::get(batch, l.getElementType()));
  return success();
}

RankedTensorType gatheredType(RankedTensorType input, RankedTensorType indices,
                              int64_t axis) {
  SymbolicSizes symbols(ArrayRef<RankedTensorType>{input, indices});
  SmallVector<int64_t> shape(input.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, input.getShape().drop_front(axis + 1));
  if (!symbols.any())
    return RankedTensorType::get(shape, input.getElementType());
  SmallVector<AffineExpr> in = symbols.of(input), idx = symbols.of(indices);
  SmallVector<AffineExpr> sizes(ArrayRef<AffineExpr>(in).take_front(axis));
  llvm::append_range(sizes, idx);
  llvm::append_range(sizes, ArrayRef<AffineExpr>(in).drop_front(axis + 1));
  Attribute encoding;
  symbols.build(sizes, input.getContext(), shape, encoding);
  return RankedTensorType::get(shape, input.getElementType(), encoding);
}

FailureOr<RankedTensorType> slicedType(std::optional<Location> loc,
                                       RankedTensorType input,
                                       ArrayRef<int64_t> starts,
                                       ArrayRef<int64_t> limits,
                                       ArrayRef<int64_t> steps) {
  int64_t rank = input.getRank();
  if (int64_t(starts.size()) != rank || int64_t(limits.size()) != rank ||
      int64_t(steps.size()) != rank)
    return emitOptionalError(loc, "slice needs one start, limit and step per "
                                  "dimension of ",
                             input);
  SymbolicSizes symbols(ArrayRef<RankedTensorType>{input});
  SmallVector<AffineExpr> in = symbols.of(input), sizes;
  MLIRContext *context = input.getContext();
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = input.getDimSize(d);
    if (symbols.any() && ShapedType::isDynamic(size)) {
      // A dim whose size is a symbol is taken whole: its size is unknown
      // until the call, so no static bound could be checked.
      if (starts[d] != 0 || steps[d] != 1 || limits[d] != kSliceToEnd)
        return emitOptionalError(
            loc, "slice ", starts[d], ":", limits[d], ":", steps[d],
            " of dimension ", d, ", whose size is ", symbols.show(in[d]),
            ": a dim of a size symbol is only taken whole (0:", kSliceToEnd,
            ":1) so far");
      sizes.push_back(in[d]);
      continue;
    }
    if (steps[d] < 1 || starts[d] < 0 || starts[d] > limits[d] ||
        (!ShapedType::isDynamic(size) && limits[d] > size))
      return emitOptionalError(loc, "slice ", starts[d], ":", limits[d], ":",
                               steps[d], " of dimension ", d, " (size ", size,
                               ") needs 0 <= start <= limit <= size and "
                               "step >= 1");
    sizes.push_back(getAffineConstantExpr(
        (limits[d] - starts[d] + steps[d] - 1) / steps[d], context));
  }
  if (!symbols.any())
    return RankedTensorType::get(
        llvm::map_to_vector(sizes, [](AffineExpr e) {
          return cast<AffineConstantExpr>(e).getValue();
        }),
        input.getElementType());
  SmallVector<int64_t> shape;
  Attribute encoding;
  symbols.build(sizes, context, shape, encoding);
  return RankedTensorType::get(shape, input.getElementType(), encoding);
}

/// The largest constant `size` is known to be a multiple of, by the
/// symbols' declared multiples (`dims`); 1 where nothing is known.
static int64_t knownMultiple(AffineExpr size, ArrayRef<StringAttr> names,
                             DictionaryAttr dims) {
  if (auto c = dyn_cast<AffineConstantExpr>(size))
    return std::abs(c.getValue());
  if (auto s = dyn_cast<AffineSymbolExpr>(size)) {
    auto dim = dims ? dims.getAs<DimAttr>(names[s.getPosition()]) : nullptr;
    return dim ? dim.getMultiple() : 1;
  }
  auto bin = dyn_cast<AffineBinaryOpExpr>(size);
  if (!bin)
    return 1;
  int64_t lhs = knownMultiple(bin.getLHS(), names, dims),
          rhs = knownMultiple(bin.getRHS(), names, dims);
  if (size.getKind() == AffineExprKind::Mul)
    return lhs * rhs;
  if (size.getKind() == AffineExprKind::Add)
    return std::gcd(lhs, rhs);
  return 1;
}

void SizeProduct::multiply(RankedTensorType type, int64_t d) {
  if (!type.isDynamicDim(d)) {
    constant *= type.getDimSize(d);
  } else if (auto shape = dyn_cast_if_present<ShapeAttr>(type.getEncoding())) {
    ArrayRef<StringAttr> names = shape.getNames();
    std::function<void(AffineExpr)> factor = [&](AffineExpr e) {
      auto bin = dyn_cast<AffineBinaryOpExpr>(e);
      auto by = bin ? dyn_cast<AffineConstantExpr>(bin.getRHS()) : nullptr;
      if (auto c = dyn_cast<AffineConstantExpr>(e)) {
        constant *= c.getValue();
      } else if (e.getKind() == AffineExprKind::Mul) {
        factor(bin.getLHS());
        factor(bin.getRHS());
      } else if ((e.getKind() == AffineExprKind::FloorDiv ||
                  e.getKind() == AffineExprKind::CeilDiv) &&
                 by && by.getValue() > 0 &&
                 knownMultiple(bin.getLHS(), names, dims) % by.getValue() == 0) {
        divisor *= by.getValue();
        factor(bin.getLHS());
      } else {
        std::string s = sizeString(e, names);
        factors.insert(llvm::upper_bound(factors, s), s);
      }
    };
    factor(shape.getSizes().getResult(d));
  } else {
    factors.push_back("?");
  }
  if (int64_t g = std::gcd(constant, divisor); g > 1) {
    constant /= g;
    divisor /= g;
  }
}

std::string SizeProduct::str() const {
  std::string s;
  for (const std::string &f : factors)
    s += f + " * ";
  s += std::to_string(constant);
  return divisor == 1 ? s : s + " / " + std::to_string(divisor);
}

DictionaryAttr sizeSymbols(Operation *op) {
  auto func = op->getParentOfType<FunctionOpInterface>();
  return func ? func->getAttrOfType<DictionaryAttr>(GraphDialect::kDimsAttrName)
              : nullptr;
}

} // namespace tessel::graph
