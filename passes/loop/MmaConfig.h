//===- MmaConfig.h - what loop.mma accepts -------------------*- C++ -*-===//
//
// One definition of a tensor-core schedule's legality, shared by the pass
// that chooses default schedules, the validator, and gpu-lower-mma.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LOOP_MMACONFIG_H
#define TESSEL_PASSES_LOOP_MMACONFIG_H

#include "dialects/loop/Target.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/TilingInterface.h"

#include <functional>
#include <string>

namespace tessel {

/// Bytes per cp.async copy, and per row of an ldmatrix 8x8 b16 matrix.
constexpr int64_t kCopyBytes = 16;
/// wgmma: the m of every shape, threads of a warpgroup, and the bytes of K
/// in one row of a 128-byte-swizzled operand tile (the K step).
constexpr int64_t kWgmmaM = 64;
constexpr int64_t kWarpgroupThreads = 128;
constexpr int64_t kSwizzleBytes = 128;

/// The knobs of one tensor-core contraction and its full extents.
struct MmaConfig {
  int64_t m, n, k;    // the contraction's extents
  int64_t bm, bn;     // block tile
  int64_t wm, wn, bk; // warp tile and K step
  int64_t stages, pad;
  // Of A and B: 2 (f16, bf16: mma.m16n8k16) or 4 (f32 multiplied as tf32:
  // mma.m16n8k8).
  int64_t elementBytes = 2;
  // The instruction's m and n: 16 x 8 is mma.sync; m 64 is wgmma.mma_async
  // of n = shapeN, whose "warp" tile (wm x wn) is a warpgroup's.
  int64_t shapeM = 16, shapeN = 8;
  // Warpgroups that only copy (loop.warp_specialize): 0 or 1.
  int64_t producers = 0;
  // A persistent grid's tile rows per group (loop.persistent); 0: none.
  int64_t groupM = 0;

  bool wgmma() const { return shapeM == kWgmmaM; }

  /// Elements per 16-byte copy (and per ldmatrix row).
  int64_t copyElements() const { return kCopyBytes / elementBytes; }
  /// The k of one mma instruction (wgmma's too: 32 bytes of K).
  int64_t instructionK() const { return elementBytes == 4 ? 8 : 16; }
  /// Warps (mma.sync) or warpgroups (wgmma) of the block.
  int64_t groups() const { return (bm / wm) * warpsN(); }
  /// The n a warp tile steps in: B fragments of 16-bit operands come two
  /// n8 tiles per ldmatrix.x4; tf32 ones one tile at a time.
  int64_t warpNStep() const { return elementBytes == 4 ? 8 : 16; }
  int64_t warpsN() const { return bn / wn; }
  /// Blocks of the grid (edge tiles included), per batch index.
  int64_t blocks() const {
    return llvm::divideCeil(m, bm) * llvm::divideCeil(n, bn);
  }
  /// Threads of the block, and those that compute (and copy with
  /// cp.async): all but a producer warpgroup's.
  int64_t threads() const;
  int64_t consumerThreads() const;
  int64_t sharedBytes() const;
  /// The fields a message can name, in the order above.
  enum Field {
    BlockM, BlockN, WarpM, WarpN, BlockK, Stages, Pad, Producers, GroupM
  };
  /// The first limit this config breaks on `target`, as a message naming
  /// the offending value through `name` (e.g. "knob 'block_m'"), or "".
  std::string check(const loop::TargetDescription &target,
                    const std::function<std::string(Field)> &name) const;
  /// The default schedule's knob name of each field ("block_m", ...).
  static llvm::StringRef knobName(Field field);
};

/// Leading batch loops of a contraction loop.mma can compute (tensors or
/// buffers): a linalg.matmul (0), or a generic over (batch..., m, n, k)
/// reading A at (batch..., m, k) and B at (batch..., k, n) into C at
/// (batch..., m, n), batch dims maybe after A's or B's row, A or B maybe
/// broadcast (matmulBatchLoops); f16, bf16 or f32 (as tf32) inputs, f32
/// accumulator.
/// Nothing otherwise.
std::optional<unsigned> mmaBatchLoops(mlir::linalg::LinalgOp op);

/// Bytes per element of a contraction mmaBatchLoops accepts.
int64_t mmaElementBytes(mlir::linalg::LinalgOp op);

/// The contraction of a kernel that loop.mma can take, on tensors: one
/// whose accumulator is an f32 fill and which is the kernel's root or read
/// at the identity by an elementwise root whose other inputs are
/// arguments. Its inputs are kernel arguments or computed by linalg ops of
/// the kernel (which loop.materialize must then compute first); `computed`
/// receives the positions of the latter. Null, with the reason in `why`,
/// otherwise.
mlir::linalg::LinalgOp
findMmaContraction(mlir::func::FuncOp func, mlir::TilingInterface root,
                   std::string &why,
                   llvm::SmallVectorImpl<int64_t> *computed = nullptr);

} // namespace tessel

#endif // TESSEL_PASSES_LOOP_MMACONFIG_H
