//===- GraphAttrs.cpp - symbolic sizes of graph tensors -------------------===//
//
// #graph.shape (a tensor encoding: each dim's size over named symbols) and
// #graph.dim (a symbol's range), and the verifier of a function's
// `graph.dims`. docs/dynamic-shapes.md says how the layers use them.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/Graph.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>
#include <numeric>

using namespace mlir;
using namespace tessel::graph;

#define GET_ATTRDEF_CLASSES
#include "dialects/graph/GraphAttrs.cpp.inc"

void GraphDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/graph/GraphAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// #graph.shape
//===----------------------------------------------------------------------===//

namespace {
/// Recursive descent over `expr := term (('+' | '-') term)*`,
/// `term := factor (('*' | 'floordiv' | 'ceildiv' | 'mod') factor)*`,
/// `factor := integer | name | '(' expr ')' | '-' factor`; each new name
/// gets the next symbol position.
struct SizeParser {
  AsmParser &parser;
  SmallVector<StringAttr> &names;

  FailureOr<AffineExpr> factor() {
    MLIRContext *context = parser.getContext();
    if (succeeded(parser.parseOptionalMinus())) {
      FailureOr<AffineExpr> inner = factor();
      return failed(inner) ? inner : FailureOr<AffineExpr>(-*inner);
    }
    if (succeeded(parser.parseOptionalLParen())) {
      FailureOr<AffineExpr> inner = expr();
      if (failed(inner) || parser.parseRParen())
        return failure();
      return inner;
    }
    int64_t value;
    OptionalParseResult integer = parser.parseOptionalInteger(value);
    if (integer.has_value())
      return failed(*integer) ? FailureOr<AffineExpr>(failure())
                              : getAffineConstantExpr(value, context);
    StringRef name;
    if (failed(parser.parseOptionalKeyword(&name)))
      return parser.emitError(parser.getCurrentLocation(),
                              "expected a size: an integer, a symbol name "
                              "or a parenthesized expression");
    StringAttr attr = StringAttr::get(context, name);
    auto *it = llvm::find(names, attr);
    if (it == names.end()) {
      names.push_back(attr);
      it = names.end() - 1;
    }
    return getAffineSymbolExpr(it - names.begin(), context);
  }

  FailureOr<AffineExpr> term() {
    FailureOr<AffineExpr> lhs = factor();
    while (succeeded(lhs)) {
      SMLoc loc = parser.getCurrentLocation();
      AffineExprKind kind;
      if (succeeded(parser.parseOptionalStar()))
        kind = AffineExprKind::Mul;
      else if (succeeded(parser.parseOptionalKeyword("floordiv")))
        kind = AffineExprKind::FloorDiv;
      else if (succeeded(parser.parseOptionalKeyword("ceildiv")))
        kind = AffineExprKind::CeilDiv;
      else if (succeeded(parser.parseOptionalKeyword("mod")))
        kind = AffineExprKind::Mod;
      else
        return lhs;
      FailureOr<AffineExpr> rhs = factor();
      if (failed(rhs))
        return failure();
      // Division by a symbol is not affine even in MLIR's semi-affine sense
      // of what simplification understands; sizes only divide by constants.
      if (kind != AffineExprKind::Mul && !isa<AffineConstantExpr>(*rhs))
        return parser.emitError(loc, "a size can only be divided by an "
                                     "integer");
      if (kind != AffineExprKind::Mul &&
          cast<AffineConstantExpr>(*rhs).getValue() <= 0)
        return parser.emitError(loc, "a size can only be divided by a "
                                     "positive integer");
      lhs = getAffineBinaryOpExpr(kind, *lhs, *rhs);
    }
    return lhs;
  }

  FailureOr<AffineExpr> expr() {
    FailureOr<AffineExpr> lhs = term();
    while (succeeded(lhs)) {
      bool minus = succeeded(parser.parseOptionalMinus());
      if (!minus && failed(parser.parseOptionalPlus()))
        return lhs;
      FailureOr<AffineExpr> rhs = term();
      if (failed(rhs))
        return failure();
      lhs = minus ? *lhs - *rhs : *lhs + *rhs;
    }
    return lhs;
  }
};

/// Prints `e` with symbol names to `p` (an AsmPrinter or a raw_ostream);
/// `parent` is the precedence of the context (0: none, 1: a sum, 2: a
/// product), which decides the parentheses.
template <typename Stream>
void printSize(Stream &p, AffineExpr e, ArrayRef<StringAttr> names,
               int parent = 0) {
  if (auto c = dyn_cast<AffineConstantExpr>(e)) {
    if (c.getValue() < 0 && parent == 2)
      p << "(" << c.getValue() << ")";
    else
      p << c.getValue();
    return;
  }
  if (auto s = dyn_cast<AffineSymbolExpr>(e)) {
    p << names[s.getPosition()].getValue();
    return;
  }
  auto bin = cast<AffineBinaryOpExpr>(e);
  AffineExpr lhs = bin.getLHS(), rhs = bin.getRHS();
  if (e.getKind() == AffineExprKind::Add) {
    if (parent == 2)
      p << "(";
    printSize(p, lhs, names, 1);
    auto c = dyn_cast<AffineConstantExpr>(rhs);
    auto product = dyn_cast<AffineBinaryOpExpr>(rhs);
    auto factor = product && product.getKind() == AffineExprKind::Mul
                      ? dyn_cast<AffineConstantExpr>(product.getRHS())
                      : AffineConstantExpr();
    if (c && c.getValue() < 0) {
      p << " - " << -c.getValue();
    } else if (factor && factor.getValue() < 0) {
      p << " - ";
      printSize(p, product.getLHS(), names, 2);
      if (factor.getValue() != -1)
        p << " * " << -factor.getValue();
    } else {
      p << " + ";
      printSize(p, rhs, names, 1);
    }
    if (parent == 2)
      p << ")";
    return;
  }
  auto negated = dyn_cast<AffineConstantExpr>(rhs);
  if (e.getKind() == AffineExprKind::Mul && negated &&
      negated.getValue() == -1) {
    p << "-";
    printSize(p, lhs, names, 2);
    return;
  }
  StringRef op = e.getKind() == AffineExprKind::Mul        ? " * "
                 : e.getKind() == AffineExprKind::FloorDiv ? " floordiv "
                 : e.getKind() == AffineExprKind::CeilDiv  ? " ceildiv "
                                                           : " mod ";
  printSize(p, lhs, names, 2);
  p << op;
  // A product on the right keeps its parentheses: a * (b * c) re-parses
  // as it was only with them.
  bool nested = isa<AffineBinaryOpExpr>(rhs);
  if (nested)
    p << "(";
  printSize(p, rhs, names, nested ? 0 : 2);
  if (nested)
    p << ")";
}
} // namespace

std::string tessel::graph::sizeString(AffineExpr size,
                                      ArrayRef<StringAttr> names) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printSize(os, size, names);
  return text;
}

Attribute ShapeAttr::parse(AsmParser &parser, Type) {
  SmallVector<StringAttr> names;
  SmallVector<AffineExpr> sizes;
  SizeParser sizeParser{parser, names};
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square,
          [&]() -> ParseResult {
            FailureOr<AffineExpr> size = sizeParser.expr();
            if (failed(size))
              return failure();
            sizes.push_back(*size);
            return success();
          }) ||
      parser.parseGreater())
    return {};
  // Symbols in name order, so that one shape has one attribute however
  // its text ordered them.
  SmallVector<unsigned> order(names.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::sort(order, [&](unsigned a, unsigned b) {
    return names[a].getValue() < names[b].getValue();
  });
  SmallVector<AffineExpr> renamed(names.size());
  SmallVector<StringAttr> sorted;
  for (auto [position, old] : llvm::enumerate(order)) {
    renamed[old] = getAffineSymbolExpr(position, parser.getContext());
    sorted.push_back(names[old]);
  }
  // One canonical form per size, as the shape rules build them (m + n + m
  // is m * 2 + n), so that equal sizes are equal attributes.
  for (AffineExpr &size : sizes)
    size = simplifyAffineExpr(size.replaceSymbols(renamed), 0, names.size());
  MLIRContext *context = parser.getContext();
  return parser.getChecked<ShapeAttr>(
      context, AffineMap::get(0, names.size(), sizes, context),
      ArrayRef<StringAttr>(sorted));
}

void ShapeAttr::print(AsmPrinter &p) const {
  p << "<[";
  llvm::interleaveComma(getSizes().getResults(), p, [&](AffineExpr e) {
    printSize(p, e, getNames());
  });
  p << "]>";
}

LogicalResult ShapeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                AffineMap sizes, ArrayRef<StringAttr> names) {
  if (sizes.getNumDims() != 0 || sizes.getNumSymbols() != names.size())
    return emitError() << "#graph.shape needs one symbol per name and no dims";
  for (auto [i, name] : llvm::enumerate(names))
    if (llvm::is_contained(names.drop_front(i + 1), name))
      return emitError() << "#graph.shape names symbol '" << name.getValue()
                         << "' twice";
  return success();
}

LogicalResult
ShapeAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                          function_ref<InFlightDiagnostic()> emitError) const {
  ArrayRef<AffineExpr> sizes = getSizes().getResults();
  if (sizes.size() != shape.size())
    return emitError() << "#graph.shape has " << sizes.size()
                       << " sizes for a tensor of rank " << shape.size();
  for (auto [d, size] : llvm::enumerate(sizes)) {
    auto constant = dyn_cast<AffineConstantExpr>(size);
    if (ShapedType::isDynamic(shape[d]) && constant)
      return emitError() << "dim " << d << " is ? in the type but "
                         << constant.getValue() << " in #graph.shape";
    if (!ShapedType::isDynamic(shape[d]) &&
        (!constant || constant.getValue() != shape[d]))
      return emitError() << "dim " << d << " is " << shape[d]
                         << " in the type but not in #graph.shape";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// #graph.dim and graph.dims
//===----------------------------------------------------------------------===//

LogicalResult DimAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              int64_t min, int64_t max, int64_t multiple) {
  // Sizes reach GPU kernels as i32 arguments.
  constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();
  if (min < 0 || min > max || max > kMaxSize)
    return emitError() << "#graph.dim range " << min << " to " << max
                       << " is not within 0 to " << kMaxSize;
  if (multiple < 1)
    return emitError() << "#graph.dim multiple_of " << multiple
                       << " is not positive";
  if ((min + multiple - 1) / multiple * multiple > max)
    return emitError() << "#graph.dim range " << min << " to " << max
                       << " holds no multiple of " << multiple;
  return success();
}

static bool hasSymbols(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa_and_present<ShapeAttr>(tensor.getEncoding());
}

/// Every symbol a #graph.shape in `type` names is one of `dims`.
static LogicalResult checkDeclared(Operation *op, Type type,
                                   DictionaryAttr dims) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  auto shape =
      tensor ? dyn_cast_if_present<ShapeAttr>(tensor.getEncoding()) : nullptr;
  if (!shape)
    return success();
  for (StringAttr name : shape.getNames())
    if (!dims.get(name))
      return op->emitOpError("has type ")
             << type << ", whose size symbol '" << name.getValue()
             << "' is not declared in the function's graph.dims";
  return success();
}

LogicalResult GraphDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName() != kDimsAttrName)
    return op->emitError("unknown graph dialect attribute ") << attr.getName();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return op->emitError(kDimsAttrName) << " is a function's attribute";
  auto dims = dyn_cast<DictionaryAttr>(attr.getValue());
  if (!dims)
    return op->emitError(kDimsAttrName)
           << " must be a dictionary of #graph.dim, not " << attr.getValue();
  for (NamedAttribute dim : dims)
    if (!isa<DimAttr>(dim.getValue()))
      return op->emitError(kDimsAttrName)
             << " gives '" << dim.getName().getValue() << "' "
             << dim.getValue() << ", not a #graph.dim";
  for (Type type : llvm::concat<const Type>(func.getArgumentTypes(),
                                            func.getResultTypes()))
    if (failed(checkDeclared(op, type, dims)))
      return failure();
  WalkResult walk = func->walk([&](Operation *inner) {
    for (Type type : inner->getResultTypes())
      if (failed(checkDeclared(inner, type, dims)))
        return WalkResult::interrupt();
    if (isa<GraphDialect>(inner->getDialect()) &&
        !inner->hasTrait<OpTrait::GraphSymbolicSizes>() &&
        llvm::any_of(llvm::concat<const Type>(inner->getOperandTypes(),
                                              inner->getResultTypes()),
                     hasSymbols)) {
      inner->emitOpError("does not take size symbols (#graph.shape) yet");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}
