//===- Im2Col.h - the geometry of a convolution's patches -----*- C++ -*-===//
//
// linalg-im2col marks the generic that gathers an NCHW convolution's
// patches with their geometry, so that a later stage can gather a block of
// them by rows of the input (cpu/PackPatches.cpp) instead of element by
// element through the generic's index arithmetic.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LINALG_IM2COL_H
#define TESSEL_PASSES_LINALG_IM2COL_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace tessel {

/// The patches [N, C*KH*KW, OH*OW] of an NCHW convolution whose input is
/// read in bounds everywhere (its padding, if any, materialized): patch
/// (n, (c, kh, kw), (oh, ow)) is input[n, c, oh * strides[0] + kh *
/// dilations[0], ow * strides[1] + kw * dilations[1]].
struct PatchGeometry {
  int64_t channels, kernel[2], strides[2], dilations[2], output[2];
};

/// The attribute of a gather generic that holds its PatchGeometry.
inline constexpr llvm::StringLiteral kPatchGeometryAttr = "tessel.patches";

/// Marks `gather` as computing patches of `geometry`.
void setPatchGeometry(mlir::Operation *gather, const PatchGeometry &geometry);

/// The geometry of the patches `gather` computes, if linalg-im2col marked it.
std::optional<PatchGeometry> getPatchGeometry(mlir::Operation *gather);

} // namespace tessel

#endif // TESSEL_PASSES_LINALG_IM2COL_H
