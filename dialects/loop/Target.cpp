//===- Target.cpp - the table of known targets ----------------------------===//

#include "dialects/loop/Target.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <mutex>
#include <thread>

using namespace llvm;
using namespace tessel::loop;
// Qualified: llvm::Instruction is visible too wherever llvm/IR is included.
namespace loop = tessel::loop;

ArrayRef<StringLiteral> tessel::loop::instructionNames() {
  static constexpr StringLiteral names[] = {
      "mma_sync_f16", "mma_sync_bf16", "mma_sync_tf32", "ldmatrix",
      "cp_async",     "tma",           "mbarrier_tx",   "wgmma",
      "setmaxnreg",   "non_temporal_stores"};
  static_assert(std::size(names) == size_t(loop::Instruction::Count));
  return names;
}

static uint32_t bits(std::initializer_list<loop::Instruction> list) {
  uint32_t mask = 0;
  for (loop::Instruction i : list)
    mask |= 1u << static_cast<uint32_t>(i);
  return mask;
}

namespace {

/// What every NVIDIA GPU tessel targets shares (compute capability 8.0 and
/// newer): the limits of CUDA's programming guide, table "Technical
/// Specifications per Compute Capability".
TargetDescription cudaChip(StringRef name, int64_t sm, StringRef ptx,
                           int64_t multiprocessors, int64_t sharedKiB,
                           uint32_t instructions) {
  TargetDescription d;
  d.name = name.str();
  d.kind = TargetDescription::Kind::Cuda;
  d.sm = sm;
  d.ptxFeatures = ptx.str();
  d.multiprocessors = multiprocessors;
  d.warpSize = kWarpSize;
  d.maxThreadsPerBlock = 1024;
  d.maxBlock = {1024, 1024, 64};
  d.maxGrid = {(int64_t(1) << 31) - 1, 65535, 65535};
  d.staticSharedPerBlock = 48 * 1024;
  // A block may opt in to all of an SM's shared memory but 1 KiB, which
  // the system reserves per block.
  d.sharedPerBlock = sharedKiB * 1024;
  d.sharedPerMultiprocessor = (sharedKiB + 1) * 1024;
  d.registersPerMultiprocessor = 64 * 1024;
  d.registersPerThread = 255;
  d.vectorBytes = kMaxVectorBytes;
  d.instructions = instructions;
  return d;
}

/// The facts of the CPU this process runs on, which the CPU backend
/// JIT-compiles for.
TargetDescription hostCpu() {
  TargetDescription d;
  d.name = "cpu";
  d.kind = TargetDescription::Kind::Cpu;
  SmallVector<StringRef> features;
  StringMap<bool> host = sys::getHostCPUFeatures();
  for (const auto &feature : host)
    if (feature.getValue())
      features.push_back(feature.getKey());
  Triple triple(sys::getProcessTriple());
  d.vectorBits = vectorBitsOf(features, triple.getArchName());
  d.vectorBytes = d.vectorBits / 8;
  d.cores = std::max<int64_t>(std::thread::hardware_concurrency(), 1);
  if (triple.isX86())
    d.instructions = bits({loop::Instruction::NonTemporalStores});
  // Linux describes each cache level under sysfs; elsewhere they stay
  // unknown (0).
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    auto read = [&](StringRef file) -> std::string {
      // sysfs files report a size they do not have: read them as streams.
      auto buffer = MemoryBuffer::getFileAsStream(dir + "/" + file.str());
      return buffer ? (*buffer)->getBuffer().trim().str() : std::string();
    };
    std::string level = read("level"), type = read("type"), size = read("size");
    if (level.empty())
      break;
    int64_t bytes = 0;
    StringRef text(size);
    int64_t scale = text.consume_back("K") ? 1024
                    : text.consume_back("M") ? 1024 * 1024
                                             : 1;
    if (text.getAsInteger(10, bytes) || type == "loop::Instruction")
      continue;
    unsigned l = level == "1" ? 0 : level == "2" ? 1 : level == "3" ? 2 : 3;
    if (l < 3)
      d.cacheBytes[l] = bytes * scale;
  }
  return d;
}

/// The table: built-in targets first, then registered ones. Lookups hand
/// out pointers into it, so entries are never moved or removed.
struct Table {
  std::mutex mutex;
  std::vector<std::unique_ptr<TargetDescription>> entries;

  Table() {
    uint32_t ampere =
        bits({loop::Instruction::MmaSyncF16, loop::Instruction::MmaSyncBf16,
              loop::Instruction::MmaSyncTf32, loop::Instruction::Ldmatrix,
              loop::Instruction::CpAsync});
    uint32_t hopper =
        ampere | bits({loop::Instruction::Tma, loop::Instruction::MbarrierTx});
    // Reference chips: A100, A40, L40S, H100/H200 (SMs, shared memory per
    // block opted in).
    for (TargetDescription d :
         {hostCpu(), cudaChip("sm_80", 80, "+ptx70", 108, 163, ampere),
          cudaChip("sm_86", 86, "+ptx71", 84, 99, ampere),
          cudaChip("sm_89", 89, "+ptx78", 142, 99, ampere),
          cudaChip("sm_90", 90, "+ptx80", 132, 227, hopper),
          cudaChip("sm_90a", 90, "+ptx83", 132, 227,
                   hopper | bits({loop::Instruction::Wgmma,
                                  loop::Instruction::Setmaxnreg}))})
      entries.push_back(std::make_unique<TargetDescription>(std::move(d)));
  }
};

Table &table() {
  static Table instance;
  return instance;
}

} // namespace

int64_t tessel::loop::vectorBitsOf(ArrayRef<StringRef> features,
                                   StringRef arch) {
  if (llvm::is_contained(features, "avx512f"))
    return 512;
  bool x86 = arch == "x86_64" || arch == "amd64" || arch == "i386" ||
             arch == "i686";
  if (llvm::is_contained(features, "avx") || (features.empty() && x86))
    return 256;
  return 128;
}

const TargetDescription *tessel::loop::lookupTarget(StringRef name) {
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (const auto &entry : t.entries)
    if (entry->name == name)
      return entry.get();
  return nullptr;
}

std::vector<std::string> tessel::loop::targetNames() {
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::vector<std::string> names;
  for (const auto &entry : t.entries)
    names.push_back(entry->name);
  return names;
}

std::string tessel::loop::registerTarget(const TargetDescription &d) {
  if (std::string why = d.check(); !why.empty())
    return why;
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (const auto &known : t.entries)
    if (known->name == d.name)
      return *known == d ? "" : "a different target named '" + d.name +
                                    "' is already registered";
  t.entries.push_back(std::make_unique<TargetDescription>(d));
  return "";
}

std::string TargetDescription::chip() const {
  bool specific = has(loop::Instruction::Wgmma) || has(loop::Instruction::Setmaxnreg);
  return "sm_" + std::to_string(sm) + (specific ? "a" : "");
}

std::string TargetDescription::check() const {
  auto positive = [](int64_t v) { return v > 0; };
  if (name.empty() || !llvm::all_of(name, [](char c) {
        return isAlnum(c) || c == '_' || c == '-' || c == '.';
      }))
    return "a target name is letters, digits, '_', '-' and '.', not '" +
           name + "'";
  if (instructions >> static_cast<uint32_t>(loop::Instruction::Count))
    return "unknown instruction bits";
  if (vectorBytes <= 0 || !isPowerOf2_64(vectorBytes))
    return "vector_bytes must be a positive power of two";
  if (isCpu()) {
    if (cores <= 0 || vectorBits != vectorBytes * 8)
      return "a CPU needs cores > 0 and vector_bits = 8 * vector_bytes";
    return "";
  }
  if (sm <= 0 || multiprocessors <= 0 || warpSize <= 0 ||
      !llvm::all_of(maxBlock, positive) || !llvm::all_of(maxGrid, positive) ||
      registersPerMultiprocessor <= 0 || registersPerThread <= 0)
    return "a GPU needs sm, multiprocessors, warp_size, max_block, max_grid "
           "and registers > 0";
  if (maxThreadsPerBlock < warpSize || maxThreadsPerBlock % warpSize)
    return "max_threads_per_block must be a multiple of warp_size";
  if (staticSharedPerBlock <= 0 || sharedPerBlock < staticSharedPerBlock ||
      sharedPerMultiprocessor < sharedPerBlock)
    return "shared memory must grow from static_shared_per_block to "
           "shared_per_block to shared_per_multiprocessor";
  if (!StringRef(ptxFeatures).starts_with("+ptx"))
    return "ptx_features must name a PTX ISA version (+ptx80)";
  return "";
}

json::Value TargetDescription::toJSON() const {
  json::Array names;
  for (auto [i, n] : llvm::enumerate(instructionNames()))
    if (has(static_cast<loop::Instruction>(i)))
      names.push_back(n);
  auto triple = [](const std::array<int64_t, 3> &v) {
    return json::Array{v[0], v[1], v[2]};
  };
  return json::Object{
      {"name", name},
      {"kind", isCpu() ? "cpu" : "cuda"},
      {"sm", sm},
      {"ptx_features", ptxFeatures},
      {"chip", chip()}, // derived: fromJSON ignores it
      {"multiprocessors", multiprocessors},
      {"warp_size", warpSize},
      {"max_threads_per_block", maxThreadsPerBlock},
      {"max_block", triple(maxBlock)},
      {"max_grid", triple(maxGrid)},
      {"static_shared_per_block", staticSharedPerBlock},
      {"shared_per_block", sharedPerBlock},
      {"shared_per_multiprocessor", sharedPerMultiprocessor},
      {"registers_per_multiprocessor", registersPerMultiprocessor},
      {"registers_per_thread", registersPerThread},
      {"vector_bytes", vectorBytes},
      {"instructions", std::move(names)},
      {"cores", cores},
      {"vector_bits", vectorBits},
      {"cache_bytes", triple(cacheBytes)},
  };
}

std::optional<TargetDescription>
TargetDescription::fromJSON(const json::Value &value, std::string &why) {
  const json::Object *o = value.getAsObject();
  if (!o) {
    why = "a target description is a JSON object";
    return std::nullopt;
  }
  TargetDescription d;
  auto fail = [&](StringRef key, StringRef what) {
    why = (key + " must be " + what).str();
    return std::nullopt;
  };
  // Every field is required: a description is complete or refused.
  auto integer = [&](StringRef key, int64_t &out) {
    std::optional<int64_t> v = o->getInteger(key);
    if (!v || *v < 0)
      return false;
    out = *v;
    return true;
  };
  auto triple = [&](StringRef key, std::array<int64_t, 3> &out) {
    const json::Array *a = o->getArray(key);
    if (!a || a->size() != 3)
      return false;
    for (auto [i, v] : llvm::enumerate(*a)) {
      std::optional<int64_t> n = v.getAsInteger();
      if (!n || *n < 0)
        return false;
      out[i] = *n;
    }
    return true;
  };
  std::optional<StringRef> name = o->getString("name"),
                           kind = o->getString("kind"),
                           ptx = o->getString("ptx_features");
  if (!name)
    return fail("name", "a string");
  if (!kind || (*kind != "cpu" && *kind != "cuda"))
    return fail("kind", "\"cpu\" or \"cuda\"");
  if (!ptx)
    return fail("ptx_features", "a string");
  d.name = name->str();
  d.kind = *kind == "cpu" ? Kind::Cpu : Kind::Cuda;
  d.ptxFeatures = ptx->str();
  for (auto [key, field] :
       {std::pair<StringRef, int64_t *>{"sm", &d.sm},
        {"multiprocessors", &d.multiprocessors},
        {"warp_size", &d.warpSize},
        {"max_threads_per_block", &d.maxThreadsPerBlock},
        {"static_shared_per_block", &d.staticSharedPerBlock},
        {"shared_per_block", &d.sharedPerBlock},
        {"shared_per_multiprocessor", &d.sharedPerMultiprocessor},
        {"registers_per_multiprocessor", &d.registersPerMultiprocessor},
        {"registers_per_thread", &d.registersPerThread},
        {"vector_bytes", &d.vectorBytes},
        {"cores", &d.cores},
        {"vector_bits", &d.vectorBits}})
    if (!integer(key, *field))
      return fail(key, "a non-negative integer");
  for (auto [key, field] :
       {std::pair<StringRef, std::array<int64_t, 3> *>{"max_block",
                                                        &d.maxBlock},
        {"max_grid", &d.maxGrid},
        {"cache_bytes", &d.cacheBytes}})
    if (!triple(key, *field))
      return fail(key, "three non-negative integers");
  const json::Array *list = o->getArray("instructions");
  if (!list)
    return fail("instructions", "a list of instruction names");
  for (const json::Value &v : *list) {
    std::optional<StringRef> n = v.getAsString();
    const auto *known = n ? llvm::find(instructionNames(), *n)
                          : instructionNames().end();
    if (known == instructionNames().end())
      return fail("instructions",
                  "names among " + llvm::join(instructionNames(), ", "));
    d.instructions |= 1u << (known - instructionNames().begin());
  }
  return d;
}

bool TargetDescription::operator==(const TargetDescription &o) const {
  return std::tie(name, kind, sm, ptxFeatures, multiprocessors, warpSize,
                  maxThreadsPerBlock, maxBlock, maxGrid, staticSharedPerBlock,
                  sharedPerBlock, sharedPerMultiprocessor,
                  registersPerMultiprocessor, registersPerThread, vectorBytes,
                  instructions, cores, vectorBits, cacheBytes) ==
         std::tie(o.name, o.kind, o.sm, o.ptxFeatures, o.multiprocessors,
                  o.warpSize, o.maxThreadsPerBlock, o.maxBlock, o.maxGrid,
                  o.staticSharedPerBlock, o.sharedPerBlock,
                  o.sharedPerMultiprocessor, o.registersPerMultiprocessor,
                  o.registersPerThread, o.vectorBytes, o.instructions,
                  o.cores, o.vectorBits, o.cacheBytes);
}

llvm::hash_code tessel::loop::hash_value(const TargetDescription &d) {
  // The name identifies a description within a process (the table refuses
  // two different ones under one name).
  return llvm::hash_value(d.name);
}
