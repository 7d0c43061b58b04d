//===- Target.h - what tessel knows about each target -----------*- C++ -*-===//
//
// One description per target holds every hardware fact a pass, the
// validator, the tuner or the runtime needs. The table of known targets is
// the only place those facts are written down: schedules carry a
// description as #loop.target, Python reads it through the C API, and CUDA
// artifacts record it in their manifest for the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DIALECTS_LOOP_TARGET_H
#define TESSEL_DIALECTS_LOOP_TARGET_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessel::loop {

/// Threads in a warp on every NVIDIA GPU (PTX's WARP_SZ).
constexpr int64_t kWarpSize = 32;
/// Bytes of the widest vector one GPU thread loads or stores (v4.b32): the
/// runtime aligns every buffer it gives a kernel to this.
constexpr int64_t kMaxVectorBytes = 16;

/// Instructions a lowering may need, by the name descriptions list them.
enum class Instruction : uint32_t {
  MmaSyncF16,    // mma.sync m16n8k16 f16 -> f32
  MmaSyncBf16,   // mma.sync m16n8k16 bf16 -> f32
  MmaSyncTf32,   // mma.sync m16n8k8 tf32 -> f32
  Ldmatrix,      // ldmatrix.sync.aligned
  CpAsync,       // cp.async (Ampere global -> shared copies)
  Tma,           // cp.async.bulk.tensor (Hopper tensor memory accelerator)
  MbarrierTx,    // mbarrier expect_tx / complete_tx
  Wgmma,         // wgmma.mma_async (sm_90a)
  Setmaxnreg,    // setmaxnreg (sm_90a)
  NonTemporalStores, // CPU: stores that skip the write-allocate read (x86)
  Count
};

/// The names of the instructions, in enum order.
llvm::ArrayRef<llvm::StringLiteral> instructionNames();

struct TargetDescription {
  enum class Kind { Cpu, Cuda };

  std::string name;
  Kind kind = Kind::Cuda;
  // CUDA: compute capability (90 for sm_90) and the PTX ISA features its
  // instructions need.
  int64_t sm = 0;
  std::string ptxFeatures;
  /// SMs of the target's reference chip (A100, H100/H200): a default tile
  /// is the largest that still gives every SM a block.
  int64_t multiprocessors = 0;
  int64_t warpSize = 0;
  int64_t maxThreadsPerBlock = 0;
  std::array<int64_t, 3> maxBlock = {0, 0, 0};
  std::array<int64_t, 3> maxGrid = {0, 0, 0};
  /// Shared memory per block without and with the dynamic opt-in.
  int64_t staticSharedPerBlock = 0;
  int64_t sharedPerBlock = 0;
  int64_t sharedPerMultiprocessor = 0;
  int64_t registersPerMultiprocessor = 0;
  int64_t registersPerThread = 0;
  /// GPU: the widest vector a thread loads or stores; CPU: a vector
  /// register. Buffers are aligned to it.
  int64_t vectorBytes = 0;
  uint32_t instructions = 0; // bit i: Instruction(i)
  // CPU: worker threads of the async runtime, vector register bits, and
  // L1 data / L2 / L3 cache bytes (0 where the system does not say).
  int64_t cores = 0;
  int64_t vectorBits = 0;
  std::array<int64_t, 3> cacheBytes = {0, 0, 0};

  bool isCpu() const { return kind == Kind::Cpu; }
  bool isGpu() const { return kind == Kind::Cuda; }
  bool has(Instruction i) const {
    return instructions & (1u << static_cast<uint32_t>(i));
  }

  /// The chip LLVM and ptxas compile for: sm_<sm>, with the arch-specific
  /// `a` where the target has instructions only that variant has.
  std::string chip() const;

  /// Why these facts cannot describe a target; empty if they can.
  std::string check() const;

  llvm::json::Value toJSON() const;
  /// The description `toJSON` gave; an error message in `why` otherwise.
  static std::optional<TargetDescription> fromJSON(const llvm::json::Value &,
                                                   std::string &why);

  bool operator==(const TargetDescription &other) const;
};

llvm::hash_code hash_value(const TargetDescription &description);

/// The description of target `name` ("cpu" is this machine, found on first
/// use), or null.
const TargetDescription *lookupTarget(llvm::StringRef name);
/// The known targets' names, in registration order (cpu first).
std::vector<std::string> targetNames();
/// Adds `description` to the table; registering an equal description again
/// succeeds. Returns why it cannot be added, or empty.
std::string registerTarget(const TargetDescription &description);

/// Bits of the vector registers LLVM uses on a CPU with `features` (as
/// llvm::sys::getHostCPUFeatures names them) of architecture `arch`: 512
/// with AVX-512, 256 with AVX, 128 otherwise (SSE, NEON); an x86 CPU whose
/// features are unknown is taken to have AVX2.
int64_t vectorBitsOf(llvm::ArrayRef<llvm::StringRef> features,
                     llvm::StringRef arch);

} // namespace tessel::loop

#endif // TESSEL_DIALECTS_LOOP_TARGET_H
