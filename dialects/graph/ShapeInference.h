//===- ShapeInference.h - graph result-type rules ---------------*- C++ -*-===//
//
// The shape rules of graph ops, shared by their InferTypeOpInterface
// implementations and by the Python builder (through the verifier).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DIALECTS_GRAPH_SHAPEINFERENCE_H
#define TESSEL_DIALECTS_GRAPH_SHAPEINFERENCE_H

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include <limits>
#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace tessel::graph {

/// numpy broadcasting of two ranked tensors with the same element type.
llvm::LogicalResult
inferBroadcastResultType(std::optional<mlir::Location> loc, mlir::Type lhs,
                         mlir::Type rhs,
                         llvm::SmallVectorImpl<mlir::Type> &results);

/// numpy.matmul for operands of rank >= 2: [b..., M, K] x [b..., K, N].
llvm::LogicalResult
inferMatmulResultType(std::optional<mlir::Location> loc, mlir::Type lhs,
                      mlir::Type rhs,
                      llvm::SmallVectorImpl<mlir::Type> &results);

/// The numpy broadcast of `shapes`, or failure with a located error.
llvm::LogicalResult
broadcastShapes(std::optional<mlir::Location> loc,
                llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes,
                llvm::SmallVectorImpl<int64_t> &result);

/// The numpy broadcast of the shapes of `types`, size symbols
/// (#graph.shape) included: a symbolic size broadcasts only against 1 or
/// the same size, never as if it were 1. The result's shape and its
/// #graph.shape (null when it has no symbolic size), or failure with a
/// located error.
llvm::LogicalResult broadcastTypes(std::optional<mlir::Location> loc,
                                   llvm::ArrayRef<mlir::RankedTensorType> types,
                                   llvm::SmallVectorImpl<int64_t> &shape,
                                   mlir::Attribute &encoding);

/// The shape and #graph.shape of concatenating `types` (of one rank, their
/// element types and static dims checked) along `axis`: the other dims the same size, the
/// axis their sum; failure with a located error.
llvm::LogicalResult concatTypes(std::optional<mlir::Location> loc,
                                llvm::ArrayRef<mlir::RankedTensorType> types,
                                int64_t axis,
                                llvm::SmallVectorImpl<int64_t> &shape,
                                mlir::Attribute &encoding);

/// `input`'s type with shape `shape`, whose dim i is input dim `from[i]`
/// (its size symbol kept) or, where `from[i]` < 0, the static `shape[i]`.
mlir::RankedTensorType derivedType(mlir::RankedTensorType input,
                                   llvm::ArrayRef<int64_t> shape,
                                   llvm::ArrayRef<int64_t> from);

/// The type of gathering `indices` from `axis` of `input`:
/// input[:axis] + indices + input[axis+1:], with the symbols of both.
mlir::RankedTensorType gatheredType(mlir::RankedTensorType input,
                                    mlir::RankedTensorType indices,
                                    int64_t axis);

/// A slice's limit that means "to the end of the dim": the only limit of a
/// dim whose size is a size symbol, taken whole.
constexpr int64_t kSliceToEnd = std::numeric_limits<int64_t>::max();

/// The type of slicing `input` by start:limit:step per dim, or failure with
/// a located error (bounds; a size symbol's dim not taken whole).
llvm::FailureOr<mlir::RankedTensorType>
slicedType(std::optional<mlir::Location> loc, mlir::RankedTensorType input,
           llvm::ArrayRef<int64_t> starts, llvm::ArrayRef<int64_t> limits,
           llvm::ArrayRef<int64_t> steps);

/// `size` over symbols `names`, as #graph.shape prints it ("2 * seq").
std::string sizeString(mlir::AffineExpr size,
                       llvm::ArrayRef<mlir::StringAttr> names);

/// `axis` in [-rank, rank) as a non-negative dimension, or failure with a
/// located error naming `what`.
llvm::FailureOr<int64_t> normalizeAxis(std::optional<mlir::Location> loc,
                                       int64_t axis, int64_t rank,
                                       llvm::StringRef what = "axis");

/// A verified op's `axis` in [-rank, rank) as a non-negative dimension.
inline int64_t positiveAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// "[2, 3, ?]"
std::string shapeString(llvm::ArrayRef<int64_t> shape);

/// A product of sizes, as a constant times symbolic factors (sizes that are
/// not products, printed over their symbols' names, kept sorted), so that
/// products of the same sizes compare equal whatever their order or
/// grouping: [batch, seq, 256] holds as many elements as [batch * seq, 4,
/// 64]. A `?` without a size symbol is the factor "?", equal to nothing.
/// With the function's `graph.dims`, an exact quotient (`seq floordiv 8`
/// where seq is declared a multiple of 8) is its dividend's factors over
/// the divisor, so [b, seq] holds as many as [b, seq floordiv 8, 8].
struct SizeProduct {
  explicit SizeProduct(mlir::DictionaryAttr dims = {}) : dims(dims) {}

  /// The constant is constant / divisor, kept in lowest terms.
  int64_t constant = 1, divisor = 1;
  llvm::SmallVector<std::string> factors;

  /// Multiplies in dim `d` of `type`.
  void multiply(mlir::RankedTensorType type, int64_t d);
  bool unknown() const { return llvm::is_contained(factors, "?"); }
  bool operator==(const SizeProduct &other) const {
    return !unknown() && constant == other.constant &&
           divisor == other.divisor && factors == other.factors;
  }
  /// Whether this product's constant is less than `other`'s.
  bool constantBelow(const SizeProduct &other) const {
    return constant * other.divisor < other.constant * divisor;
  }
  std::string str() const;

private:
  mlir::DictionaryAttr dims;
};

/// The `graph.dims` of the function holding `op`, or null.
mlir::DictionaryAttr sizeSymbols(mlir::Operation *op);

} // namespace tessel::graph

#endif // TESSEL_DIALECTS_GRAPH_SHAPEINFERENCE_H
