//===- GraphToLinalg.cpp - graph ops to linalg on tensors -----------------===//
//
// Elementwise ops share one lowering: a linalg.generic whose indexing maps
// encode numpy broadcasting and whose body comes from scalarBody(). Adding an
// elementwise op means adding one case there.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/Graph.h"
#include "passes/Passes.h"
#include "passes/TileAndFuseRoot.h"
#include "passes/linalg/Contractions.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

namespace tessel {
#define GEN_PASS_DEF_CONVERTGRAPHTOLINALG
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

bool isLowPrecisionFloat(Type t) { return t.isF16() || t.isBF16(); }

/// Maps the loops of a `resultShape` iteration space onto an operand that
/// broadcasts to it (numpy rules: align right, size-1 dims repeat).
AffineMap broadcastMap(RankedTensorType operand, ArrayRef<int64_t> resultShape,
                       MLIRContext *ctx) {
  int64_t rank = resultShape.size();
  int64_t offset = rank - operand.getRank();
  SmallVector<AffineExpr> exprs;
  for (auto [i, dim] : llvm::enumerate(operand.getShape())) {
    if (dim == 1 && resultShape[i + offset] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(i + offset, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// Booleans live in memory as one byte (as in numpy): i1 memrefs cannot be
/// stored to by the LLVM lowering. Values are i1 only inside scalar bodies.
/// Size symbols (#graph.shape) leave the types: upstream dialects see plain
/// `?` dims, whose sizes the lowering computes (see `mixedSizes`).
struct StorageConverter : TypeConverter {
  StorageConverter() {
    addConversion([](Type t) { return t; });
    addConversion([](RankedTensorType t) -> Type {
      Type elem = t.getElementType();
      if (elem.isInteger(1))
        elem = IntegerType::get(t.getContext(), 8);
      Attribute encoding = t.getEncoding();
      if (isa_and_present<graph::ShapeAttr>(encoding))
        encoding = {};
      if (elem == t.getElementType() && encoding == t.getEncoding())
        return t;
      return RankedTensorType::get(t.getShape(), elem, encoding);
    });
  }
};

/// The function attribute, set for the length of the pass, that says where
/// each size can be read: {size = [argument, dim]}, keyed by the size as
/// #graph.shape prints it (a symbol's name, or "m + n").
constexpr StringLiteral kSizeArguments = "graph.size_arguments";

/// The argument dim whose size is `size` (over `names`), per `where`.
std::optional<ArrayRef<int64_t>> sizeArgument(DictionaryAttr where,
                                              AffineExpr size,
                                              ArrayRef<StringAttr> names) {
  auto at = dyn_cast_if_present<DenseI64ArrayAttr>(
      where ? where.get(graph::sizeString(size, names)) : Attribute());
  if (!at)
    return std::nullopt;
  return at.asArrayRef();
}

/// The sizes of `type`'s dims where `anchor` is: static ones as attributes,
/// each `?` read with tensor.dim from an argument dim of that very size
/// (`kSizeArguments`) or, where none is, computed from its symbols'.
SmallVector<OpFoldResult> mixedSizes(OpBuilder &b, Location loc,
                                     Operation *anchor, RankedTensorType type) {
  SmallVector<OpFoldResult> sizes =
      getAsIndexOpFoldResult(b.getContext(), type.getShape());
  auto shape = dyn_cast_if_present<graph::ShapeAttr>(type.getEncoding());
  if (!shape || type.hasStaticShape())
    return sizes;
  auto func = anchor->getParentOfType<FunctionOpInterface>();
  auto where = func->getAttrOfType<DictionaryAttr>(kSizeArguments);
  auto read = [&](ArrayRef<int64_t> at) -> OpFoldResult {
    return tensor::DimOp::create(b, loc, func.getArgument(at[0]), at[1])
        .getResult();
  };
  ArrayRef<StringAttr> names = shape.getNames();
  for (auto [i, size] : llvm::enumerate(sizes)) {
    if (!type.isDynamicDim(i))
      continue;
    AffineExpr expr = shape.getSizes().getResult(i);
    if (std::optional<ArrayRef<int64_t>> at = sizeArgument(where, expr, names)) {
      size = read(*at);
      continue;
    }
    // The pass checked that each symbol of such a size has an entry.
    SmallVector<OpFoldResult> symbols;
    for (auto [s, name] : llvm::enumerate(names))
      symbols.push_back(
          expr.isFunctionOfSymbol(s)
              ? read(*sizeArgument(where, getAffineSymbolExpr(0, b.getContext()),
                                   {name}))
              : OpFoldResult(b.getIndexAttr(0)));
    size = affine::makeComposedFoldedAffineApply(
        b, loc, AffineMap::get(0, symbols.size(), expr), symbols);
  }
  return sizes;
}

/// Records `kSizeArguments` on each function whose types name size
/// symbols: for each size of its arguments, the first argument dim of that
/// size; failure, with an error at the op, where a size is neither one of
/// those nor computed from symbols that are.
LogicalResult recordSizeArguments(FunctionOpInterface func) {
  MLIRContext *ctx = func.getContext();
  llvm::MapVector<StringAttr, Attribute> where;
  for (auto [n, t] : llvm::enumerate(func.getArgumentTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    // Destinations (addDestinations) have plain types and the attribute.
    auto shape = func.getArgAttrOfType<graph::ShapeAttr>(n, kArgumentShape);
    if (!shape && tensor)
      shape = dyn_cast_if_present<graph::ShapeAttr>(tensor.getEncoding());
    if (!shape)
      continue;
    // The schedules read the arguments' symbols once the types lose them.
    func.setArgAttr(n, kArgumentShape, shape);
    for (auto [d, size] : llvm::enumerate(shape.getSizes().getResults()))
      if (!isa<AffineConstantExpr>(size))
        where.try_emplace(
            StringAttr::get(ctx, graph::sizeString(size, shape.getNames())),
            DenseI64ArrayAttr::get(ctx, {int64_t(n), int64_t(d)}));
  }
  WalkResult missing = func->walk([&](Operation *op) {
    for (Type t : llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes())) {
      auto tensor = dyn_cast<RankedTensorType>(t);
      auto shape = tensor ? dyn_cast_if_present<graph::ShapeAttr>(tensor.getEncoding())
                          : graph::ShapeAttr();
      if (!shape)
        continue;
      ArrayRef<StringAttr> names = shape.getNames();
      for (AffineExpr size : shape.getSizes().getResults()) {
        if (isa<AffineConstantExpr>(size) ||
            where.count(StringAttr::get(ctx, graph::sizeString(size, names))))
          continue;
        for (auto [s, name] : llvm::enumerate(names))
          if (size.isFunctionOfSymbol(s) && !where.count(name)) {
            op->emitOpError("has a size over symbol '")
                << name.getValue() << "' (" << graph::sizeString(size, names)
                << "), which is neither the size of a dim of its function's "
                << "arguments nor computed from symbols that are; "
                << "graph-to-linalg reads each size from an argument";
            return WalkResult::interrupt();
          }
      }
    }
    return WalkResult::advance();
  });
  if (missing.wasInterrupted())
    return failure();
  if (!where.empty())
    func->setAttr(kSizeArguments,
                  DictionaryAttr::get(ctx, llvm::to_vector(llvm::map_range(
                                               where, [&](auto &entry) {
                                                 return NamedAttribute(
                                                     entry.first, entry.second);
                                               }))));
  return success();
}

bool hasDynamicResult(func::FuncOp func) {
  return llvm::any_of(func.getResultTypes(), [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && !tensor.hasStaticShape();
  });
}

/// Destination-passing style for the functions with a dynamically shaped
/// result: one destination argument per result, appended in order (its
/// type without the encoding, which it keeps as `kArgumentShape`), and
/// every call passes tensors of the results' sizes, computed in the caller.
/// Only the caller can size a kernel's results, a result may be the only
/// tensor of a kernel that names a symbol, and the entry function's
/// results become buffers its caller (the runtime) allocates. A call whose
/// result the caller returns passes the caller's own destination. The
/// results are written into the destinations once types are plain
/// (writeDestinations). Sizes are read as `mixedSizes` reads them, so the
/// callers' size arguments are recorded here too.
LogicalResult addDestinations(ModuleOp module, const TypeConverter &converter) {
  MLIRContext *ctx = module.getContext();
  llvm::SmallPtrSet<Operation *, 8> converted;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || !hasDynamicResult(func))
      continue;
    unsigned first = func.getNumArguments();
    for (auto [i, t] : llvm::enumerate(func.getResultTypes())) {
      auto tensor = dyn_cast<RankedTensorType>(t);
      if (!tensor)
        return func.emitOpError("result ") << i << " is not a ranked tensor";
      SmallVector<NamedAttribute> attrs;
      if (auto shape = dyn_cast_if_present<graph::ShapeAttr>(tensor.getEncoding()))
        attrs.push_back(NamedAttribute(kArgumentShape, shape));
      if (failed(func.insertArgument(first + i, converter.convertType(tensor),
                                     DictionaryAttr::get(ctx, attrs),
                                     func.getLoc())))
        return failure();
    }
    func->setAttr(kDestinationsAttr,
                  IntegerAttr::get(IntegerType::get(ctx, 64), func.getNumResults()));
    converted.insert(func);
  }
  for (auto func : module.getOps<FunctionOpInterface>())
    if (failed(recordSizeArguments(func)))
      return failure();
  SymbolTable symbols(module);
  WalkResult result = module.walk([&](func::CallOp call) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || !converted.contains(callee))
      return WalkResult::advance();
    auto caller = call->getParentOfType<func::FuncOp>();
    OpBuilder b(call);
    SmallVector<Value> destinations;
    for (auto [i, r] : llvm::enumerate(call.getResults())) {
      // The caller's own destination, when it returns this result.
      auto returned = r.hasOneUse() ? dyn_cast<func::ReturnOp>(*r.user_begin())
                                    : func::ReturnOp();
      if (returned && caller->hasAttr(kDestinationsAttr)) {
        unsigned position = r.use_begin()->getOperandNumber();
        destinations.push_back(caller.getArgument(
            caller.getNumArguments() - caller.getNumResults() + position));
        continue;
      }
      auto type = cast<RankedTensorType>(r.getType());
      destinations.push_back(tensor::EmptyOp::create(
          b, call.getLoc(), mixedSizes(b, call.getLoc(), call, type),
          cast<RankedTensorType>(converter.convertType(type)).getElementType()));
    }
    call.getOperandsMutable().append(destinations);
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Each result of a function in destination-passing style written into its
/// destination argument (see addDestinations).
void writeDestinations(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>()) {
    auto count = func->getAttrOfType<IntegerAttr>(kDestinationsAttr);
    if (!count)
      continue;
    unsigned first = func.getNumArguments() - count.getInt();
    func.walk([&](func::ReturnOp ret) {
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value destination = func.getArgument(first + operand.getOperandNumber());
        if (operand.get() == destination)
          continue;
        operand.set(bufferization::MaterializeInDestinationOp::create(
                        b, ret.getLoc(), operand.get(), destination)
                        .getResult());
      }
    });
  }
}

RankedTensorType storageType(const TypeConverter *converter, Type t) {
  return cast<RankedTensorType>(converter->convertType(t));
}

/// Emits `fn` on the scalars of `operands` as a parallel linalg.generic whose
/// result has type `resultType` and sizes `sizes`.
Value buildElementwise(
    OpBuilder &b, Location loc, RankedTensorType resultType,
    ArrayRef<OpFoldResult> sizes, ValueRange operands,
    function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value v : operands)
    maps.push_back(broadcastMap(cast<RankedTensorType>(v.getType()),
                                resultType.getShape(), ctx));
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  Value init =
      tensor::EmptyOp::create(b, loc, sizes, resultType.getElementType());
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, operands, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = fn(nb, nloc, args.drop_back());
        // Booleans are stored as i8 (see StorageConverter).
        if (r.getType().isInteger(1) && !resultType.getElementType().isInteger(1))
          r = arith::ExtUIOp::create(nb, nloc, resultType.getElementType(), r);
        linalg::YieldOp::create(nb, nloc, r);
      });
  return generic.getResult(0);
}

/// Transcendental functions run in f32 for f16/bf16 inputs, then round once.
Value inF32(OpBuilder &b, Location loc, Value x,
            function_ref<Value(OpBuilder &, Location, Value)> fn) {
  Type t = x.getType();
  if (!isLowPrecisionFloat(t))
    return fn(b, loc, x);
  Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  return arith::TruncFOp::create(b, loc, t, fn(b, loc, wide));
}

template <typename MathOp>
Value mathInF32(OpBuilder &b, Location loc, Value x) {
  return inF32(b, loc, x, [](OpBuilder &nb, Location l, Value v) -> Value {
    return MathOp::create(nb, l, v);
  });
}

Value floatConstant(OpBuilder &b, Location loc, Type t, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, value));
}

/// 1 / (1 + exp(-x)) on a float scalar.
Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  Value one = floatConstant(b, loc, t, 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e));
}

/// GELU on a float scalar: 0.5 x (1 + erf(x / sqrt 2)), or the tanh form.
Value gelu(OpBuilder &b, Location loc, Value x, bool tanhForm) {
  Type t = x.getType();
  auto c = [&](double v) { return floatConstant(b, loc, t, v); };
  Value inner;
  if (tanhForm) {
    Value x3 = arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
    Value poly = arith::AddFOp::create(
        b, loc, x, arith::MulFOp::create(b, loc, c(0.044715), x3));
    inner = math::TanhOp::create(
        b, loc, arith::MulFOp::create(b, loc, c(0.7978845608028654), poly));
  } else {
    inner = math::ErfOp::create(
        b, loc, arith::MulFOp::create(b, loc, x, c(0.7071067811865476)));
  }
  Value half = arith::MulFOp::create(b, loc, c(0.5), x);
  return arith::MulFOp::create(b, loc, half,
                               arith::AddFOp::create(b, loc, c(1.0), inner));
}

/// An f64 as the f32 rounded to odd (toward zero, the last bit set when
/// inexact): rounding that once more to f16 or bf16 is the correct rounding
/// of the f64 (f32 has 2 more bits than either needs), with no libcall
/// (x86 has no f64 -> f16 conversion; __truncdfhf2 is not in every process).
Value truncateToOddF32(OpBuilder &b, Location loc, Value v) {
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  Value nearest = arith::TruncFOp::create(b, loc, f32, v);
  Value back = arith::ExtFOp::create(b, loc, v.getType(), nearest);
  Value bits = arith::BitcastOp::create(b, loc, i32, nearest);
  auto c = [&](int64_t x) { return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(x)); };
  // Rounded away from zero: the next magnitude down (sign-magnitude bits).
  Value away = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                     math::AbsFOp::create(b, loc, back),
                                     math::AbsFOp::create(b, loc, v));
  Value towardZero = arith::SelectOp::create(
      b, loc, away, arith::SubIOp::create(b, loc, bits, c(1)), bits);
  Value inexact = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, back, v);
  Value odd = arith::SelectOp::create(
      b, loc, inexact, arith::OrIOp::create(b, loc, towardZero, c(1)), bits);
  return arith::BitcastOp::create(b, loc, f32, odd);
}

/// numpy astype on one scalar: floats round to nearest, float to integer
/// truncates toward zero, to i1 is `!= 0`, from i1 is 0 or 1.
Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (to.isInteger(1)) {
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(from));
    if (isa<FloatType>(from))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero);
  }
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  if (fromFloat && toFloat) {
    if (fromFloat.getWidth() < toFloat.getWidth())
      return arith::ExtFOp::create(b, loc, to, v);
    if (fromFloat.isF64() && toFloat.getWidth() == 16)
      return arith::TruncFOp::create(b, loc, to, truncateToOddF32(b, loc, v));
    if (fromFloat.getWidth() > toFloat.getWidth())
      return arith::TruncFOp::create(b, loc, to, v);
    // f16 <-> bf16 goes through f32.
    return arith::TruncFOp::create(
        b, loc, to, arith::ExtFOp::create(b, loc, b.getF32Type(), v));
  }
  if (toFloat)
    return from.isInteger(1) ? Value(arith::UIToFPOp::create(b, loc, to, v))
                             : Value(arith::SIToFPOp::create(b, loc, to, v));
  if (fromFloat)
    return arith::FPToSIOp::create(b, loc, to, v);
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return from.isInteger(1) ? Value(arith::ExtUIOp::create(b, loc, to, v))
                             : Value(arith::ExtSIOp::create(b, loc, to, v));
  return arith::TruncIOp::create(b, loc, to, v);
}

Value compareScalars(OpBuilder &b, Location loc, graph::ComparePredicate pred,
                     Value lhs, Value rhs) {
  using P = graph::ComparePredicate;
  if (isa<FloatType>(lhs.getType())) {
    // Ordered except `ne`, which holds for NaN like numpy's !=.
    arith::CmpFPredicate f = [&] {
      switch (pred) {
      case P::eq: return arith::CmpFPredicate::OEQ;
      case P::ne: return arith::CmpFPredicate::UNE;
      case P::lt: return arith::CmpFPredicate::OLT;
      case P::le: return arith::CmpFPredicate::OLE;
      case P::gt: return arith::CmpFPredicate::OGT;
      case P::ge: return arith::CmpFPredicate::OGE;
      }
      llvm_unreachable("unknown graph.compare predicate");
    }();
    return arith::CmpFOp::create(b, loc, f, lhs, rhs);
  }
  // i1 compares as unsigned (false < true); other integers are signed.
  bool u = lhs.getType().isInteger(1);
  arith::CmpIPredicate i = [&] {
    switch (pred) {
    case P::eq: return arith::CmpIPredicate::eq;
    case P::ne: return arith::CmpIPredicate::ne;
    case P::lt: return u ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt;
    case P::le: return u ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle;
    case P::gt: return u ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt;
    case P::ge: return u ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge;
    }
    llvm_unreachable("unknown graph.compare predicate");
  }();
  return arith::CmpIOp::create(b, loc, i, lhs, rhs);
}

/// The scalar computation of one elementwise graph op.
Value scalarBody(Operation *op, OpBuilder &b, Location loc, ValueRange args) {
  Type t = args[0].getType();
  bool isFloat = isa<FloatType>(t);
  auto zero = [&]() -> Value {
    return arith::ConstantOp::create(b, loc, b.getZeroAttr(t));
  };
  auto pick = [&](auto floatOp, auto intOp) -> Value {
    using F = decltype(floatOp);
    using I = decltype(intOp);
    if (isFloat)
      return F::create(b, loc, args[0], args[1]);
    return I::create(b, loc, args[0], args[1]);
  };
  // An integer divisor that cannot trap (x86) or be poison: 1 where it is 0
  // or -1 (MIN / -1 overflows), with those two conditions for the caller.
  auto guardedDivisor = [&]() -> std::tuple<Value, Value, Value> {
    Value one = arith::ConstantOp::create(b, loc, b.getOneAttr(t));
    Value minusOne =
        arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, -1));
    Value byZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         args[1], zero());
    Value byMinusOne = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, args[1], minusOne);
    Value divisor = arith::SelectOp::create(
        b, loc, arith::OrIOp::create(b, loc, byZero, byMinusOne), one,
        args[1]);
    return {divisor, byZero, byMinusOne};
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](graph::AddOp) { return pick(arith::AddFOp(), arith::AddIOp()); })
      .Case([&](graph::SubOp) { return pick(arith::SubFOp(), arith::SubIOp()); })
      .Case([&](graph::MulOp) { return pick(arith::MulFOp(), arith::MulIOp()); })
      .Case([&](graph::DivOp) -> Value {
        if (isFloat)
          return arith::DivFOp::create(b, loc, args[0], args[1]);
        // x / 0 = 0 and MIN / -1 = MIN (0 - x wraps), as numpy.
        auto [divisor, byZero, byMinusOne] = guardedDivisor();
        Value quotient = arith::DivSIOp::create(b, loc, args[0], divisor);
        Value negated = arith::SubIOp::create(b, loc, zero(), args[0]);
        return arith::SelectOp::create(
            b, loc, byZero, zero(),
            arith::SelectOp::create(b, loc, byMinusOne, negated, quotient));
      })
      .Case([&](graph::RemOp) -> Value {
        if (isFloat)
          return arith::RemFOp::create(b, loc, args[0], args[1]);
        // A remainder by 0 or -1 is 0.
        auto [divisor, byZero, byMinusOne] = guardedDivisor();
        return arith::SelectOp::create(
            b, loc, arith::OrIOp::create(b, loc, byZero, byMinusOne), zero(),
            arith::RemSIOp::create(b, loc, args[0], divisor));
      })
      .Case([&](graph::MaximumOp) {
        return pick(arith::MaximumFOp(), arith::MaxSIOp());
      })
      .Case([&](graph::MinimumOp) {
        return pick(arith::MinimumFOp(), arith::MinSIOp());
      })
      .Case([&](graph::ReluOp) -> Value {
        if (isFloat)
          return arith::MaximumFOp::create(b, loc, args[0], zero());
        return arith::MaxSIOp::create(b, loc, args[0], zero());
      })
      .Case([&](graph::NegOp) -> Value {
        if (isFloat)
          return arith::NegFOp::create(b, loc, args[0]);
        return arith::SubIOp::create(b, loc, zero(), args[0]);
      })
      .Case([&](graph::AbsOp) -> Value {
        if (isFloat)
          return math::AbsFOp::create(b, loc, args[0]);
        // max(x, 0 - x), not math.absi: LLVM lowering takes that only on
        // scalars and 1-D vectors, and CPU reductions vectorize in 2-D. The
        // minimum integer stays itself, as in numpy.
        return arith::MaxSIOp::create(
            b, loc, args[0], arith::SubIOp::create(b, loc, zero(), args[0]));
      })
      .Case([&](graph::ExpOp) { return mathInF32<math::ExpOp>(b, loc, args[0]); })
      .Case([&](graph::TanhOp) {
        return mathInF32<math::TanhOp>(b, loc, args[0]);
      })
      .Case([&](graph::SinOp) { return mathInF32<math::SinOp>(b, loc, args[0]); })
      .Case([&](graph::CosOp) { return mathInF32<math::CosOp>(b, loc, args[0]); })
      .Case([&](graph::ErfOp) { return mathInF32<math::ErfOp>(b, loc, args[0]); })
      .Case([&](graph::FloorOp) { return mathInF32<math::FloorOp>(b, loc, args[0]); })
      .Case([&](graph::CeilOp) { return mathInF32<math::CeilOp>(b, loc, args[0]); })
      .Case([&](graph::RoundOp) {
        return mathInF32<math::RoundEvenOp>(b, loc, args[0]);
      })
      .Case([&](graph::LogOp) { return mathInF32<math::LogOp>(b, loc, args[0]); })
      .Case([&](graph::SqrtOp) {
        return mathInF32<math::SqrtOp>(b, loc, args[0]);
      })
      .Case([&](graph::RsqrtOp) {
        return mathInF32<math::RsqrtOp>(b, loc, args[0]);
      })
      .Case([&](graph::SigmoidOp) { return inF32(b, loc, args[0], sigmoid); })
      .Case([&](graph::SiluOp) {
        return inF32(b, loc, args[0], [](OpBuilder &nb, Location l, Value x) -> Value {
          return arith::MulFOp::create(nb, l, x, sigmoid(nb, l, x));
        });
      })
      .Case([&](graph::GeluOp op) {
        bool tanhForm = op.getApproximateTanh();
        return inF32(b, loc, args[0], [&](OpBuilder &nb, Location l, Value x) {
          return gelu(nb, l, x, tanhForm);
        });
      })
      .Case([&](graph::PowOp) -> Value {
        Value x = args[0], y = args[1];
        if (!isLowPrecisionFloat(t))
          return math::PowFOp::create(b, loc, x, y);
        Type f32 = b.getF32Type();
        Value p = math::PowFOp::create(b, loc, arith::ExtFOp::create(b, loc, f32, x),
                                       arith::ExtFOp::create(b, loc, f32, y));
        return arith::TruncFOp::create(b, loc, t, p);
      })
      .Case([&](graph::CompareOp op) {
        return compareScalars(b, loc, op.getPredicate(), args[0], args[1]);
      })
      .Case([&](graph::SelectOp) -> Value {
        return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
      })
      .Case([&](graph::CastOp op) {
        return convertScalar(b, loc, args[0], op.getElementType());
      })
      .Case([&](graph::BroadcastToOp) { return args[0]; })
      .Default([](Operation *op) -> Value {
        llvm_unreachable("elementwise pattern registered without a body");
      });
}

template <typename OpTy>
struct ElementwiseToLinalg : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = storageType(this->getTypeConverter(), op.getType());
    Operation *raw = op.getOperation();
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType,
        mixedSizes(rewriter, op.getLoc(), op, op.getType()),
        adaptor.getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          SmallVector<Value> scalars(args);
          for (auto [scalar, operand] : llvm::zip(scalars, raw->getOperands()))
            if (getElementTypeOrSelf(operand.getType()).isInteger(1) &&
                !scalar.getType().isInteger(1))
              scalar = arith::TruncIOp::create(b, loc, b.getI1Type(), scalar);
          return scalarBody(raw, b, loc, scalars);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConstantToArith : OpConversionPattern<graph::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto value = cast<TypedAttr>(op.getValue());
    auto type = storageType(getTypeConverter(), value.getType());
    if (type != value.getType()) {
      auto dense = dyn_cast<DenseElementsAttr>(value);
      if (!dense)
        return rewriter.notifyMatchFailure(
            op, "boolean constants must be dense elements");
      value = dense.mapValues(type.getElementType(), [](const APInt &bit) {
        return bit.zext(8);
      });
    }
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

/// A linalg.generic without inputs whose body is the index along `dim`.
struct IotaToLinalg : OpConversionPattern<graph::IotaOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::IotaOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = storageType(getTypeConverter(), op.getType());
    Value empty = tensor::EmptyOp::create(
        rewriter, loc, mixedSizes(rewriter, loc, op, op.getType()),
        type.getElementType());
    int64_t rank = type.getRank();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{}, empty,
        SmallVector<AffineMap>{rewriter.getMultiDimIdentityMap(rank)},
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange) {
          Value index = linalg::IndexOp::create(b, l, op.getDim());
          Value i64 = arith::IndexCastOp::create(b, l, b.getI64Type(), index);
          linalg::YieldOp::create(
              b, l, convertScalar(b, l, i64, type.getElementType()));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elem) {
  return tensor::EmptyOp::create(b, loc, shape, elem);
}

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                   TypedAttr value) {
  Value v = arith::ConstantOp::create(b, loc, value);
  return linalg::FillOp::create(
             b, loc, v,
             tensor::EmptyOp::create(b, loc, sizes, value.getType()).getResult())
      .result();
}

/// A 2-D weight makes one linalg.matmul (the lhs's batch dims fold into its
/// rows, as in x @ W of a transformer); other batched matmuls are a generic
/// contraction whose batch maps broadcast. f16/bf16 accumulate in f32.
struct MatmulToLinalg : OpConversionPattern<graph::MatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto resultType = storageType(getTypeConverter(), op.getType());
    Type elem = resultType.getElementType();
    Type acc = isLowPrecisionFloat(elem) ? rewriter.getF32Type() : elem;
    auto accType = resultType.clone(acc);
    SmallVector<OpFoldResult> sizes = mixedSizes(rewriter, loc, op, op.getType());
    Value init = filledTensor(rewriter, loc, sizes, rewriter.getZeroAttr(acc));

    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    int64_t lhsRank = cast<RankedTensorType>(lhs.getType()).getRank();
    Value product;
    if (cast<RankedTensorType>(rhs.getType()).getRank() == 2) {
      SmallVector<ReassociationIndices> rows = {
          llvm::to_vector(llvm::seq<int64_t>(0, lhsRank - 1)), {lhsRank - 1}};
      Value lhs2d = lhs, init2d = init;
      if (lhsRank > 2) {
        lhs2d = tensor::CollapseShapeOp::create(rewriter, loc, lhs, rows);
        init2d = tensor::CollapseShapeOp::create(rewriter, loc, init, rows);
      }
      product = linalg::MatmulOp::create(rewriter, loc, ValueRange{lhs2d, rhs},
                                         ValueRange{init2d})
                    .getResult(0);
      if (lhsRank > 2)
        product = tensor::ExpandShapeOp::create(rewriter, loc, accType, product,
                                                rows, sizes);
    } else {
      // Loops: batch dims of the result, then m, n, and the reduction k.
      int64_t rank = resultType.getRank();
      int64_t numLoops = rank + 1;
      AffineExpr m = getAffineDimExpr(rank - 2, ctx);
      AffineExpr n = getAffineDimExpr(rank - 1, ctx);
      AffineExpr k = getAffineDimExpr(rank, ctx);
      // A batch dim of size 1 that broadcasts is dropped from its operand
      // (a rank-reducing slice), so that every map is a projection and the
      // generic is a contraction.
      auto operandMap = [&](Value &v, AffineExpr row, AffineExpr col) {
        auto type = cast<RankedTensorType>(v.getType());
        AffineMap batch = broadcastMap(
            RankedTensorType::get(type.getShape().drop_back(2), acc),
            resultType.getShape().drop_back(2), ctx);
        int64_t operandRank = type.getRank();
        SmallVector<AffineExpr> exprs;
        SmallVector<int64_t> kept(type.getShape().take_back(2));
        for (int64_t i = operandRank - 3; i >= 0; --i) {
          if (isa<AffineConstantExpr>(batch.getResult(i)))
            continue;
          exprs.insert(exprs.begin(), batch.getResult(i));
          kept.insert(kept.begin(), type.getDimSize(i));
        }
        if (static_cast<int64_t>(kept.size()) != operandRank)
          v = tensor::ExtractSliceOp::create(
              rewriter, loc, type.clone(kept), v,
              getAsIndexOpFoldResult(ctx, SmallVector<int64_t>(operandRank, 0)),
              tensor::getMixedSizes(rewriter, loc, v),
              getAsIndexOpFoldResult(ctx, SmallVector<int64_t>(operandRank, 1)));
        exprs.push_back(row);
        exprs.push_back(col);
        return AffineMap::get(numLoops, 0, exprs, ctx);
      };
      SmallVector<AffineExpr> outExprs;
      for (int64_t i = 0; i < rank; ++i)
        outExprs.push_back(getAffineDimExpr(i, ctx));
      SmallVector<AffineMap> maps = {
          operandMap(lhs, m, k), operandMap(rhs, k, n),
          AffineMap::get(numLoops, 0, outExprs, ctx)};
      SmallVector<utils::IteratorType> iterators(
          rank, utils::IteratorType::parallel);
      iterators.push_back(utils::IteratorType::reduction);
      product =
          linalg::GenericOp::create(
              rewriter, loc, accType, ValueRange{lhs, rhs}, init, maps,
              iterators,
              [&](OpBuilder &b, Location l, ValueRange args) {
                linalg::YieldOp::create(
                    b, l,
                    tessel::multiplyAccumulate(b, l, args[0], args[1], args[2]));
              })
              .getResult(0);
    }
    if (acc != elem)
      product = buildElementwise(
          rewriter, loc, resultType, sizes, product,
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            return arith::TruncFOp::create(b, l, elem, args[0]);
          });
    rewriter.replaceOp(op, product);
    return success();
  }
};

/// Float sums of f16/bf16 accumulate in f32.
Type accumulatorType(OpBuilder &b, Type elem) {
  return isLowPrecisionFloat(elem) ? b.getF32Type() : elem;
}

/// Sum, mean, max or min as one linalg.generic with reduction iterators,
/// followed by the scaling (mean) and rounding (f16/bf16) of the result.
struct ReduceToLinalg : OpConversionPattern<graph::ReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::ReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value input = adaptor.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    auto resultType = op.getType();
    Type elem = inType.getElementType();
    graph::ReduceKind kind = op.getKind();
    bool isSum = kind == graph::ReduceKind::sum || kind == graph::ReduceKind::mean;
    Type acc = isSum ? accumulatorType(rewriter, elem) : elem;
    SmallVector<int64_t> dims = op.getReducedDims();

    // Loops: the result's dims (with keepdims' 1s), then the reduced dims,
    // so the result needs no reshape.
    int64_t resultRank = resultType.getRank();
    int64_t numLoops = resultRank + dims.size();
    SmallVector<AffineExpr> inExprs;
    int64_t kept = 0;
    // The number of elements reduced, for a mean.
    OpFoldResult count = rewriter.getIndexAttr(1);
    for (int64_t d = 0; d < inType.getRank(); ++d) {
      auto at = llvm::find(dims, d);
      if (at != dims.end()) {
        AffineExpr s0, s1;
        bindSymbols(ctx, s0, s1);
        count = affine::makeComposedFoldedAffineApply(
            rewriter, loc, s0 * s1,
            {count, tensor::getMixedSize(rewriter, loc, input, d)});
        inExprs.push_back(getAffineDimExpr(resultRank + (at - dims.begin()), ctx));
        if (op.getKeepdims())
          ++kept;
        continue;
      }
      inExprs.push_back(getAffineDimExpr(kept++, ctx));
    }
    SmallVector<utils::IteratorType> iterators(resultRank,
                                               utils::IteratorType::parallel);
    iterators.append(dims.size(), utils::IteratorType::reduction);
    SmallVector<OpFoldResult> sizes = mixedSizes(rewriter, loc, op, resultType);
    TypedAttr init = graph::reductionInitialValue(rewriter, kind, acc);
    Value out = filledTensor(rewriter, loc, sizes, init);
    SmallVector<AffineMap> maps = {
        AffineMap::get(numLoops, 0, inExprs, ctx),
        AffineMap::getMinorIdentityMap(numLoops, numLoops, ctx)
            .getSliceMap(0, resultRank)};
    bool isFloat = isa<FloatType>(acc);
    Value reduced =
        linalg::GenericOp::create(
            rewriter, loc, out.getType(), input, out, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value x = convertScalar(b, l, args[0], acc), a = args[1];
              Value r;
              switch (kind) {
              case graph::ReduceKind::sum:
              case graph::ReduceKind::mean:
                r = isFloat ? Value(arith::AddFOp::create(b, l, a, x))
                            : Value(arith::AddIOp::create(b, l, a, x));
                break;
              case graph::ReduceKind::max:
                r = isFloat ? Value(arith::MaximumFOp::create(b, l, a, x))
                            : Value(arith::MaxSIOp::create(b, l, a, x));
                break;
              case graph::ReduceKind::min:
                r = isFloat ? Value(arith::MinimumFOp::create(b, l, a, x))
                            : Value(arith::MinSIOp::create(b, l, a, x));
                break;
              }
              linalg::YieldOp::create(b, l, r);
            })
            .getResult(0);

    bool isMean = kind == graph::ReduceKind::mean;
    Value scale;
    if (isMean) {
      if (std::optional<int64_t> c = getConstantIntValue(count)) {
        scale = floatConstant(rewriter, loc, acc, 1.0 / *c);
      } else {
        Value n = arith::IndexCastOp::create(
            rewriter, loc, rewriter.getI64Type(),
            getValueOrCreateConstantIndexOp(rewriter, loc, count));
        scale = arith::DivFOp::create(
            rewriter, loc, floatConstant(rewriter, loc, acc, 1.0),
            arith::SIToFPOp::create(rewriter, loc, acc, n));
      }
    }
    if (isMean || acc != elem)
      reduced = buildElementwise(
          rewriter, loc, cast<RankedTensorType>(reduced.getType()).clone(elem),
          sizes, reduced, [&](OpBuilder &b, Location l, ValueRange args) {
            Value v = args[0];
            if (isMean)
              v = arith::MulFOp::create(b, l, v, scale);
            return convertScalar(b, l, v, elem);
          });
    rewriter.replaceOp(op, reduced);
    return success();
  }
};

struct TransposeToLinalg : OpConversionPattern<graph::TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = storageType(getTypeConverter(), op.getType());
    Value init = tensor::EmptyOp::create(
        rewriter, op.getLoc(),
        mixedSizes(rewriter, op.getLoc(), op, op.getType()),
        type.getElementType());
    rewriter.replaceOp(op, linalg::TransposeOp::create(
                               rewriter, op.getLoc(), adaptor.getInput(), init,
                               op.getPerm())
                               .getResult());
    return success();
  }
};

/// Groups of input and output dims of a reshape whose sizes multiply to the
/// same product (graph::SizeProduct), each as small as can be: [b, s, 256]
/// into [b, s, 4, 64] is [0], [1], [2] into [0], [1], [2, 3]. Nothing when
/// the shapes do not split so (a `?` without a symbol, a group of only 1s).
static std::optional<std::pair<SmallVector<ReassociationIndices>,
                               SmallVector<ReassociationIndices>>>
reshapeGroups(RankedTensorType in, RankedTensorType out, DictionaryAttr dims) {
  SmallVector<ReassociationIndices> inGroups, outGroups;
  int64_t i = 0, j = 0;
  while (i < in.getRank() && j < out.getRank()) {
    graph::SizeProduct a(dims), b(dims);
    ReassociationIndices ig = {i}, og = {j};
    a.multiply(in, i++);
    b.multiply(out, j++);
    while (!(a == b)) {
      if (a.unknown() || b.unknown())
        return std::nullopt;
      // Grow the side that holds less: fewer symbolic factors, else the
      // smaller constant.
      bool growIn = a.factors.size() != b.factors.size()
                        ? a.factors.size() < b.factors.size()
                        : a.constantBelow(b);
      if (growIn ? i == in.getRank() : j == out.getRank())
        return std::nullopt;
      if (growIn) {
        ig.push_back(i);
        a.multiply(in, i++);
      } else {
        og.push_back(j);
        b.multiply(out, j++);
      }
    }
    inGroups.push_back(ig);
    outGroups.push_back(og);
  }
  // Trailing 1s join the last group.
  for (; i < in.getRank(); ++i) {
    if (in.getDimSize(i) != 1 || inGroups.empty())
      return std::nullopt;
    inGroups.back().push_back(i);
  }
  for (; j < out.getRank(); ++j) {
    if (out.getDimSize(j) != 1 || outGroups.empty())
      return std::nullopt;
    outGroups.back().push_back(j);
  }
  return std::make_pair(inGroups, outGroups);
}

/// A reshape as a collapse of its input's groups of dims and an expansion
/// into the output's (reshapeGroups), or, when the shapes do not split into
/// groups, through one dimension (rank-0 sides need no collapse or
/// expansion group). Small groups keep each group's dynamic dims apart:
/// memref lowering expands a group with one dynamic dim only.
struct ReshapeToTensor : OpConversionPattern<graph::ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value v = adaptor.getInput();
    auto out = storageType(getTypeConverter(), op.getType());
    auto all = [](int64_t rank) {
      SmallVector<ReassociationIndices> r;
      if (rank > 0)
        r.push_back(llvm::to_vector(llvm::seq<int64_t>(0, rank)));
      return r;
    };
    SmallVector<OpFoldResult> sizes = mixedSizes(rewriter, loc, op, op.getType());
    auto isIdentity = [](ArrayRef<ReassociationIndices> groups) {
      return llvm::all_of(groups, [](auto &g) { return g.size() == 1; });
    };
    auto groups = reshapeGroups(op.getInput().getType(), op.getType(),
                                graph::sizeSymbols(op));
    // An output group of two dynamic dims ([m, n] into [n, m]) cannot be an
    // expand_shape, which memref lowering expands by one dynamic size per
    // group: each result element is read from the input's 1-D collapse at
    // its row-major position, strides computed from the sizes at run time.
    auto twoDynamic = [&](const ReassociationIndices &g) {
      return llvm::count_if(g, [&](int64_t d) { return out.isDynamicDim(d); }) > 1;
    };
    if (groups && llvm::any_of(groups->second, twoDynamic)) {
      auto in = cast<RankedTensorType>(v.getType());
      if (in.getRank() != 1)
        v = tensor::CollapseShapeOp::create(rewriter, loc, v, all(in.getRank()));
      int64_t rank = out.getRank();
      SmallVector<Value> strides(rank);
      Value stride = arith::ConstantIndexOp::create(rewriter, loc, 1);
      for (int64_t d = rank - 1; d >= 0; --d) {
        strides[d] = stride;
        stride = arith::MulIOp::create(
            rewriter, loc, stride,
            getValueOrCreateConstantIndexOp(rewriter, loc, sizes[d]));
      }
      Value flat = v;
      auto generic = linalg::GenericOp::create(
          rewriter, loc, out, ValueRange{},
          tensor::EmptyOp::create(rewriter, loc, sizes, out.getElementType())
              .getResult(),
          SmallVector<AffineMap>{rewriter.getMultiDimIdentityMap(rank)},
          SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
          [&](OpBuilder &b, Location l, ValueRange) {
            Value position = arith::ConstantIndexOp::create(b, l, 0);
            for (int64_t d = 0; d < rank; ++d)
              position = arith::AddIOp::create(
                  b, l, position,
                  arith::MulIOp::create(b, l, linalg::IndexOp::create(b, l, d),
                                        strides[d]));
            linalg::YieldOp::create(
                b, l, tensor::ExtractOp::create(b, l, flat, position).getResult());
          });
      rewriter.replaceOp(op, generic.getResult(0));
      return success();
    }
    if (groups) {
      auto [inGroups, outGroups] = *groups;
      if (!isIdentity(inGroups))
        v = tensor::CollapseShapeOp::create(rewriter, loc, v, inGroups);
      if (!isIdentity(outGroups))
        v = tensor::ExpandShapeOp::create(rewriter, loc, out, v, outGroups,
                                          sizes);
      rewriter.replaceOp(op, v);
      return success();
    }
    auto in = cast<RankedTensorType>(v.getType());
    if (in.getRank() != 1 && out.getRank() != 0) {
      v = tensor::CollapseShapeOp::create(rewriter, loc, v, all(in.getRank()));
    } else if (out.getRank() == 0) {
      rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
          op, out, v, all(out.getRank()));
      return success();
    }
    if (in.getRank() == 0 || out.getRank() != 1)
      v = tensor::ExpandShapeOp::create(
          rewriter, loc, out, v, all(in.getRank() == 0 ? 0 : out.getRank()),
          sizes);
    rewriter.replaceOp(op, v);
    return success();
  }
};

/// Each input is inserted at its offset along the axis of one empty tensor.
struct ConcatToTensor : OpConversionPattern<graph::ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = storageType(getTypeConverter(), op.getType());
    int64_t axis = graph::positiveAxis(op.getAxis(), type.getRank());
    Value result = tensor::EmptyOp::create(
        rewriter, loc, mixedSizes(rewriter, loc, op, op.getType()),
        type.getElementType());
    OpFoldResult offset = rewriter.getIndexAttr(0);
    AffineExpr s0, s1;
    bindSymbols(getContext(), s0, s1);
    for (Value in : adaptor.getInputs()) {
      auto inType = cast<RankedTensorType>(in.getType());
      if (inType.hasStaticShape() && inType.getNumElements() == 0)
        continue; // nothing to insert, and its offset may be out of bounds
      SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, in);
      offsets[axis] = offset;
      offset = affine::makeComposedFoldedAffineApply(rewriter, loc, s0 + s1,
                                                     {offset, sizes[axis]});
      result = tensor::InsertSliceOp::create(
          rewriter, loc, in, result, offsets, sizes,
          SmallVector<OpFoldResult>(type.getRank(), rewriter.getIndexAttr(1)));
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SliceToTensor : OpConversionPattern<graph::SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = storageType(getTypeConverter(), op.getType());
    // An empty slice may start at the end of a dim, which extract_slice
    // rejects; it has nothing to read anyway.
    if (type.hasStaticShape() && type.getNumElements() == 0) {
      rewriter.replaceOpWithNewOp<tensor::EmptyOp>(op, type.getShape(),
                                                   type.getElementType());
      return success();
    }
    MLIRContext *ctx = getContext();
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, adaptor.getInput(), getAsIndexOpFoldResult(ctx, op.getStarts()),
        mixedSizes(rewriter, op.getLoc(), op, op.getType()),
        getAsIndexOpFoldResult(ctx, op.getSteps()));
    return success();
  }
};

/// A parallel generic over the result that loads input[..., idx, ...] with
/// idx read from `indices`, wrapped if negative and clamped into range.
struct GatherToLinalg : OpConversionPattern<graph::GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value input = adaptor.getInput(), indices = adaptor.getIndices();
    auto inType = cast<RankedTensorType>(input.getType());
    auto idxType = cast<RankedTensorType>(indices.getType());
    auto type = storageType(getTypeConverter(), op.getType());
    int64_t rank = type.getRank();
    int64_t axis = graph::positiveAxis(op.getAxis(), inType.getRank());
    int64_t idxRank = idxType.getRank();
    SmallVector<AffineExpr> idxExprs;
    for (int64_t d = 0; d < idxRank; ++d)
      idxExprs.push_back(getAffineDimExpr(axis + d, ctx));
    SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, idxExprs, ctx),
                                   rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    // The axis's size (maybe a size symbol's) and last index, for wrapping
    // and clamping; computed once, outside the loop.
    Value n = getValueOrCreateConstantIndexOp(
        rewriter, loc, tensor::getMixedSize(rewriter, loc, input, axis));
    Value last = arith::SubIOp::create(
        rewriter, loc, n, arith::ConstantIndexOp::create(rewriter, loc, 1));
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, type, indices,
            tensor::EmptyOp::create(rewriter, loc,
                                    mixedSizes(rewriter, loc, op, op.getType()),
                                    type.getElementType())
                .getResult(),
            maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value i = arith::IndexCastOp::create(b, l, b.getIndexType(),
                                                   args[0]);
              auto c = [&](int64_t v) -> Value {
                return arith::ConstantIndexOp::create(b, l, v);
              };
              Value negative = arith::CmpIOp::create(
                  b, l, arith::CmpIPredicate::slt, i, c(0));
              i = arith::SelectOp::create(
                  b, l, negative, arith::AddIOp::create(b, l, i, n), i);
              i = arith::MaxSIOp::create(
                  b, l, arith::MinSIOp::create(b, l, i, last), c(0));
              SmallVector<Value> coords;
              for (int64_t d = 0; d < axis; ++d)
                coords.push_back(linalg::IndexOp::create(b, l, d));
              coords.push_back(i);
              for (int64_t d = axis + idxRank; d < rank; ++d)
                coords.push_back(linalg::IndexOp::create(b, l, d));
              linalg::YieldOp::create(
                  b, l, tensor::ExtractOp::create(b, l, input, coords).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Pads the two spatial dims (`hDim`, `wDim`) with `value`.
Value padSpatial(OpBuilder &b, Location loc, Value input, int64_t hDim,
                 int64_t wDim, ArrayRef<int64_t> padding, TypedAttr value) {
  if (llvm::all_of(padding, [](int64_t p) { return p == 0; }))
    return input;
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> low(type.getRank(), 0), high(type.getRank(), 0);
  low[hDim] = padding[0];
  low[wDim] = padding[1];
  high[hDim] = padding[2];
  high[wDim] = padding[3];
  SmallVector<int64_t> shape(type.getShape());
  shape[hDim] += padding[0] + padding[2];
  shape[wDim] += padding[1] + padding[3];
  Value pad = arith::ConstantOp::create(b, loc, value);
  return tensor::PadOp::create(b, loc, type.clone(shape), input,
                               getAsIndexOpFoldResult(b.getContext(), low),
                               getAsIndexOpFoldResult(b.getContext(), high), pad)
      .getResult();
}

/// groups == 1 uses linalg's named NCHW/FCHW and NHWC/HWCF convolutions;
/// grouped ones a generic over [N, G, F/G, OH, OW] (or NHWC order) on
/// inputs reshaped to expose the group dimension, depthwise ones (one
/// channel per group) a generic over [N, C, OH, OW] on the image as it is.
/// f16/bf16 accumulate in f32; bias and rounding follow in one elementwise
/// generic.
struct Conv2DToLinalg : OpConversionPattern<graph::Conv2DOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::Conv2DOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    bool nchw = op.getLayout() == graph::ImageLayout::nchw;
    auto type = storageType(getTypeConverter(), op.getType());
    // A size symbol's batch dim is sized at run time.
    SmallVector<OpFoldResult> sizes = mixedSizes(rewriter, loc, op, op.getType());
    Type elem = type.getElementType();
    Type acc = accumulatorType(rewriter, elem);
    int64_t groups = op.getGroups();
    Value input = padSpatial(rewriter, loc, adaptor.getInput(), nchw ? 2 : 1,
                             nchw ? 3 : 2, op.getPadding(),
                             rewriter.getZeroAttr(elem));
    Value weight = adaptor.getWeight();
    auto strides = rewriter.getI64TensorAttr(op.getStrides());
    auto dilations = rewriter.getI64TensorAttr(op.getDilations());
    Value out = filledTensor(rewriter, loc, sizes, rewriter.getZeroAttr(acc));
    Value conv;
    if (groups == 1 && nchw) {
      conv = linalg::Conv2DNchwFchwOp::create(rewriter, loc, out.getType(),
                                              ValueRange{input, weight}, out,
                                              strides, dilations)
                 .getResult(0);
    } else if (groups == 1) {
      conv = linalg::Conv2DNhwcHwcfOp::create(rewriter, loc, out.getType(),
                                              ValueRange{input, weight}, out,
                                              strides, dilations)
                 .getResult(0);
    } else {
      conv = groupedConv(rewriter, loc, ctx, op, nchw, input, weight, out);
    }
    Value bias = adaptor.getBias();
    int64_t channelDim = nchw ? 1 : 3;
    SmallVector<Value> operands = {conv};
    if (bias)
      operands.push_back(bias);
    // The bias is [F]: map it to the channel dim of the result.
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(4)};
    if (bias)
      maps.push_back(AffineMap::get(4, 0, getAffineDimExpr(channelDim, ctx)));
    maps.push_back(rewriter.getMultiDimIdentityMap(4));
    if (!bias && acc == elem) {
      rewriter.replaceOp(op, conv);
      return success();
    }
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, type, operands,
            tensor::EmptyOp::create(rewriter, loc, sizes, elem).getResult(), maps,
            SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value v = args[0];
              if (bias) {
                Value bv = convertScalar(b, l, args[1], acc);
                v = isa<FloatType>(acc) ? Value(arith::AddFOp::create(b, l, v, bv))
                                        : Value(arith::AddIOp::create(b, l, v, bv));
              }
              linalg::YieldOp::create(b, l, convertScalar(b, l, v, elem));
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }

  static Value groupedConv(OpBuilder &b, Location loc, MLIRContext *ctx,
                           graph::Conv2DOp op, bool nchw, Value input,
                           Value weight, Value out) {
    int64_t g = op.getGroups();
    auto d = [&](int i) { return getAffineDimExpr(i, ctx); };
    ArrayRef<int64_t> s = op.getStrides(), dl = op.getDilations();
    using It = utils::IteratorType;
    auto conv = [&](Value in, Value w, Value o, ArrayRef<AffineMap> maps,
                    ArrayRef<It> iterators) {
      return linalg::GenericOp::create(
                 b, loc, o.getType(), ValueRange{in, w}, o, maps, iterators,
                 [&](OpBuilder &nb, Location l, ValueRange args) {
                   linalg::YieldOp::create(
                       nb, l,
                       tessel::multiplyAccumulate(nb, l, args[0], args[1],
                                                  args[2]));
                 })
          .getResult(0);
    };
    // Depthwise (one input and one output channel per group): loops
    // (n, c, oh, ow, kh, kw) on the image as it is, so that the result
    // needs no reshape, which would keep tiling from fusing the
    // convolution with its epilogue. Only the weight drops its unit dim.
    auto outType = cast<RankedTensorType>(out.getType());
    auto wType = cast<RankedTensorType>(weight.getType());
    if (outType.getDimSize(nchw ? 1 : 3) == g &&
        wType.getDimSize(nchw ? 1 : 2) == 1) {
      SmallVector<ReassociationIndices> drop =
          nchw ? SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}}
               : SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}};
      Value w = tensor::CollapseShapeOp::create(b, loc, weight, drop);
      AffineExpr n = d(0), c = d(1), oh = d(2), ow = d(3), kh = d(4),
                 kw = d(5);
      AffineExpr h = oh * s[0] + kh * dl[0], wd = ow * s[1] + kw * dl[1];
      SmallVector<AffineMap> maps =
          nchw ? SmallVector<AffineMap>{AffineMap::get(6, 0, {n, c, h, wd}, ctx),
                                        AffineMap::get(6, 0, {c, kh, kw}, ctx),
                                        AffineMap::get(6, 0, {n, c, oh, ow}, ctx)}
               : SmallVector<AffineMap>{AffineMap::get(6, 0, {n, h, wd, c}, ctx),
                                        AffineMap::get(6, 0, {kh, kw, c}, ctx),
                                        AffineMap::get(6, 0, {n, oh, ow, c}, ctx)};
      return conv(input, w, out, maps,
                  {It::parallel, It::parallel, It::parallel, It::parallel,
                   It::reduction, It::reduction});
    }
    auto split = [&](Value v, int64_t dim, int64_t outer) {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(t.getShape());
      shape[dim] /= outer;
      shape.insert(shape.begin() + dim, outer);
      SmallVector<ReassociationIndices> r;
      for (int64_t d = 0, e = 0; d < t.getRank(); ++d) {
        if (d == dim)
          r.push_back({e, e + 1}), e += 2;
        else
          r.push_back({e++});
      }
      return tensor::ExpandShapeOp::create(b, loc, t.clone(shape), v, r)
          .getResult();
    };
    // Expanded operands (loop names: n, g, f, oh, ow, c, kh, kw):
    //   nchw: input [N, G, C, H, W], weight [G, F, C, KH, KW], out [N, G, F, OH, OW]
    //   nhwc: input [N, H, W, G, C], weight [KH, KW, C, G, F], out [N, OH, OW, G, F]
    Value in = split(input, nchw ? 1 : 3, g);
    Value w = split(weight, nchw ? 0 : 3, g);
    Value o = split(out, nchw ? 1 : 3, g);
    AffineExpr n = d(0), gg = d(1), f = d(2), oh = d(3), ow = d(4), c = d(5),
               kh = d(6), kw = d(7);
    AffineExpr h = oh * s[0] + kh * dl[0], wd = ow * s[1] + kw * dl[1];
    SmallVector<AffineMap> maps;
    if (nchw)
      maps = {AffineMap::get(8, 0, {n, gg, c, h, wd}, ctx),
              AffineMap::get(8, 0, {gg, f, c, kh, kw}, ctx),
              AffineMap::get(8, 0, {n, gg, f, oh, ow}, ctx)};
    else
      maps = {AffineMap::get(8, 0, {n, h, wd, gg, c}, ctx),
              AffineMap::get(8, 0, {kh, kw, c, gg, f}, ctx),
              AffineMap::get(8, 0, {n, oh, ow, gg, f}, ctx)};
    Value grouped = conv(in, w, o, maps,
                         {It::parallel, It::parallel, It::parallel,
                          It::parallel, It::parallel, It::reduction,
                          It::reduction, It::reduction});
    SmallVector<ReassociationIndices> merge =
        nchw ? SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}}
             : SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3, 4}};
    return tensor::CollapseShapeOp::create(b, loc, outType, grouped, merge);
  }
};

/// Named linalg pooling ops over the padded input. Average pooling sums in
/// the accumulator type, then divides by the window size or, without
/// `count_include_pad`, by the number of cells inside the image.
struct Pool2DToLinalg : OpConversionPattern<graph::Pool2DOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::Pool2DOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    bool nchw = op.getLayout() == graph::ImageLayout::nchw;
    bool isMax = op.getKind() == graph::PoolKind::max;
    auto type = storageType(getTypeConverter(), op.getType());
    Type elem = type.getElementType();
    Type acc = isMax ? elem : accumulatorType(rewriter, elem);
    int64_t hDim = nchw ? 2 : 1, wDim = nchw ? 3 : 2;
    ArrayRef<int64_t> k = op.getKernel(), st = op.getStrides(),
                      pad = op.getPadding();
    TypedAttr padValue = graph::reductionInitialValue(
        rewriter, isMax ? graph::ReduceKind::max : graph::ReduceKind::sum,
        elem);
    int64_t inH = cast<RankedTensorType>(adaptor.getInput().getType())
                      .getDimSize(hDim);
    int64_t inW = cast<RankedTensorType>(adaptor.getInput().getType())
                      .getDimSize(wDim);
    Value input = padSpatial(rewriter, loc, adaptor.getInput(), hDim, wDim, pad,
                             padValue);
    TypedAttr init = isMax ? padValue : TypedAttr(rewriter.getZeroAttr(acc));
    Value out = filledTensor(rewriter, loc,
                             mixedSizes(rewriter, loc, op, op.getType()), init);
    Value window = emptyTensor(rewriter, loc, k, acc);
    auto strides = rewriter.getI64TensorAttr(st);
    auto dilations = rewriter.getI64TensorAttr({1, 1});
    SmallVector<Value> ins = {input, window};
    Value pooled;
    if (isMax && nchw)
      pooled = linalg::PoolingNchwMaxOp::create(rewriter, loc, out.getType(), ins,
                                                out, strides, dilations)
                   .getResult(0);
    else if (isMax)
      pooled = linalg::PoolingNhwcMaxOp::create(rewriter, loc, out.getType(), ins,
                                                out, strides, dilations)
                   .getResult(0);
    else if (nchw)
      pooled = linalg::PoolingNchwSumOp::create(rewriter, loc, out.getType(), ins,
                                                out, strides, dilations)
                   .getResult(0);
    else
      pooled = linalg::PoolingNhwcSumOp::create(rewriter, loc, out.getType(), ins,
                                                out, strides, dilations)
                   .getResult(0);
    if (isMax) {
      rewriter.replaceOp(op, pooled);
      return success();
    }
    bool includePad = op.getCountIncludePad();
    Value result = buildElementwise(
        rewriter, loc, type, tensor::getMixedSizes(rewriter, loc, pooled), pooled,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value count;
          if (includePad) {
            count = floatConstant(b, l, acc, double(k[0] * k[1]));
          } else {
            // Cells of the window inside [0, size) along one dim.
            auto inside = [&](int64_t dim, int64_t i) -> Value {
              auto c = [&](int64_t v) -> Value {
                return arith::ConstantIndexOp::create(b, l, v);
              };
              Value start = arith::SubIOp::create(
                  b, l,
                  arith::MulIOp::create(b, l, linalg::IndexOp::create(b, l, dim),
                                        c(st[i])),
                  c(pad[i]));
              Value end = arith::MinSIOp::create(
                  b, l, arith::AddIOp::create(b, l, start, c(k[i])),
                  c(i == 0 ? inH : inW));
              return arith::SubIOp::create(
                  b, l, end, arith::MaxSIOp::create(b, l, start, c(0)));
            };
            Value cells = arith::MulIOp::create(b, l, inside(hDim, 0),
                                                inside(wDim, 1));
            count = arith::SIToFPOp::create(
                b, l, acc,
                arith::IndexCastOp::create(b, l, b.getI64Type(), cells));
          }
          return convertScalar(b, l, arith::DivFOp::create(b, l, args[0], count),
                               elem);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Groups only mark kernel boundaries; exporting to linalg inlines them.
struct InlineFusedOp : OpConversionPattern<graph::FusedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(graph::FusedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    auto yield = cast<graph::YieldOp>(body.getTerminator());
    SmallVector<Value> results(yield.getValues());
    rewriter.inlineBlockBefore(&body, op, adaptor.getInputs());
    rewriter.eraseOp(yield);
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// tensor.dim of a value whose type loses its size symbols: `mixedSizes`
/// reads function arguments whose signature may not be converted yet.
struct DimOfConverted : OpConversionPattern<tensor::DimOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(tensor::DimOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<tensor::DimOp>(op, adaptor.getSource(),
                                               adaptor.getIndex());
    return success();
  }
};

struct ConvertGraphToLinalgPass
    : tessel::impl::ConvertGraphToLinalgBase<ConvertGraphToLinalgPass> {
  using ConvertGraphToLinalgBase::ConvertGraphToLinalgBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A `?` without a size symbol has no size the lowering could compute.
    WalkResult dynamic = module.walk([](Operation *op) {
      if (!isa<graph::GraphDialect>(op->getDialect()))
        return WalkResult::advance();
      for (Type t : llvm::concat<Type>(op->getOperandTypes(),
                                       op->getResultTypes()))
        if (auto shaped = dyn_cast<RankedTensorType>(t);
            shaped && !shaped.hasStaticShape() &&
            !isa_and_present<graph::ShapeAttr>(shaped.getEncoding())) {
          op->emitOpError("has dynamic shape ")
              << t << " without size symbols (#graph.shape); graph-to-linalg "
              << "needs each `?` named";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (dynamic.wasInterrupted())
      return signalPassFailure();
    StorageConverter converter;
    if (destinations) {
      if (failed(addDestinations(module, converter)))
        return signalPassFailure();
    } else {
      for (auto func : module.getOps<FunctionOpInterface>())
        if (failed(recordSizeArguments(func)))
          return signalPassFailure();
    }

    MLIRContext *ctx = &getContext();
    RewritePatternSet decompositions(ctx);
    populateGraphDecompositionPatterns(decompositions);
    if (failed(applyPatternsGreedily(module, std::move(decompositions))))
      return signalPassFailure();

    ConversionTarget target(*ctx);
    target.addIllegalDialect<graph::GraphDialect>();
    target.addLegalDialect<affine::AffineDialect, arith::ArithDialect,
                           linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect>();
    target.addDynamicallyLegalOp<tensor::DimOp>(
        [&](tensor::DimOp op) { return converter.isLegal(op.getOperation()); });
    // Everything else is legal once no boolean tensor crosses it.
    target.markUnknownOpDynamicallyLegal([&](Operation *op) {
      if (auto func = dyn_cast<FunctionOpInterface>(op))
        return converter.isLegal(func.getArgumentTypes()) &&
               converter.isLegal(func.getResultTypes());
      return converter.isLegal(op);
    });

    RewritePatternSet patterns(ctx);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    patterns.add<ConstantToArith, DimOfConverted, IotaToLinalg, MatmulToLinalg, InlineFusedOp,
                 ReduceToLinalg, TransposeToLinalg, ReshapeToTensor,
                 ConcatToTensor, SliceToTensor, GatherToLinalg, Conv2DToLinalg,
                 Pool2DToLinalg, ElementwiseToLinalg<graph::PowOp>,
                 ElementwiseToLinalg<graph::CompareOp>,
                 ElementwiseToLinalg<graph::SelectOp>,
                 ElementwiseToLinalg<graph::CastOp>,
                 ElementwiseToLinalg<graph::BroadcastToOp>,
                 ElementwiseToLinalg<graph::AddOp>,
                 ElementwiseToLinalg<graph::SubOp>,
                 ElementwiseToLinalg<graph::MulOp>,
                 ElementwiseToLinalg<graph::DivOp>,
                 ElementwiseToLinalg<graph::RemOp>,
                 ElementwiseToLinalg<graph::MaximumOp>,
                 ElementwiseToLinalg<graph::MinimumOp>,
                 ElementwiseToLinalg<graph::ReluOp>,
                 ElementwiseToLinalg<graph::NegOp>,
                 ElementwiseToLinalg<graph::AbsOp>,
                 ElementwiseToLinalg<graph::ExpOp>,
                 ElementwiseToLinalg<graph::TanhOp>,
                 ElementwiseToLinalg<graph::SinOp>,
                 ElementwiseToLinalg<graph::CosOp>,
                 ElementwiseToLinalg<graph::ErfOp>,
                 ElementwiseToLinalg<graph::FloorOp>,
                 ElementwiseToLinalg<graph::CeilOp>,
                 ElementwiseToLinalg<graph::RoundOp>,
                 ElementwiseToLinalg<graph::LogOp>,
                 ElementwiseToLinalg<graph::SqrtOp>,
                 ElementwiseToLinalg<graph::RsqrtOp>,
                 ElementwiseToLinalg<graph::SigmoidOp>,
                 ElementwiseToLinalg<graph::SiluOp>,
                 ElementwiseToLinalg<graph::GeluOp>>(converter, ctx);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    writeDestinations(module);
    for (auto func : module.getOps<FunctionOpInterface>())
      func->removeAttr(kSizeArguments);
  }
};

} // namespace
