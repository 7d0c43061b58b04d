//===- BufferCache.cpp - the heap of CPU executables ----------------------===//
//
// A call of a compiled model allocates its intermediates and frees them
// again: with glibc, a block over its mmap threshold (at most 32 MiB) is
// mapped and unmapped each time, and every call faults its pages in anew,
// zeroed by the kernel (MobileNetV2 at batch 8: 9,400 faults and 20 ms of
// system time in a 61 ms call). Blocks of 4 KiB or more freed here are kept
// instead, up to a bound, by capacity, and handed to the next allocation
// they hold, as PyTorch's and IREE's allocators do; smaller ones go to the
// C library.
//
//===----------------------------------------------------------------------===//

#include "python/runtime/BufferCache.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <map>
#include <vector>

namespace {

/// Blocks at least this large are kept when freed: a tile's packed
/// operands and accumulators are tens of KiB, allocated and freed by every
/// task (in glibc's free lists, chunks that large are split and merged
/// again: 7% of MobileNetV2's time went to malloc and free).
constexpr size_t kKeptBlock = size_t(4) << 10;
/// The most bytes kept: a block freed past it goes back to the C library.
constexpr size_t kCacheLimit = size_t(1) << 30;
/// Kept blocks are aligned so, whatever alignment they were first asked
/// for, to serve any later request up to it.
constexpr size_t kKeptAlignment = 64;

/// What precedes every block handed out.
struct Header {
  void *raw;       // what the C library allocated
  size_t capacity; // bytes usable from the pointer handed out
};
/// The C library's malloc aligns to this, as the header keeps it.
constexpr size_t kMallocAlignment = alignof(std::max_align_t);
static_assert(sizeof(Header) <= kMallocAlignment, "the header fits");

Header *headerOf(void *pointer) {
  return reinterpret_cast<Header *>(static_cast<char *>(pointer) -
                                    sizeof(Header));
}

/// The capacity a block of `size` bytes gets: kept ones are rounded up (to
/// 4 KiB, and from 256 KiB on to 64 KiB), so that blocks of nearly equal
/// sizes (a ragged edge tile's) serve each other.
size_t capacityOf(size_t size) {
  if (size < kKeptBlock)
    return size;
  size_t grain = size < (size_t(256) << 10) ? size_t(4) << 10 : size_t(64) << 10;
  return (size + grain - 1) / grain * grain;
}

/// Freed blocks by capacity.
struct Cache {
  std::mutex mutex;
  std::map<size_t, std::vector<void *>> blocks;
  size_t bytes = 0;

  /// The last freed of the smallest kept blocks that hold `capacity` bytes,
  /// if it is at most 8 times that: blocks of other sizes serve each other,
  /// so that a model's intermediates touch fewer distinct bytes, which stay
  /// in cache (MobileNetV2 at batch 1: 22 MiB kept, 12 MiB now; 0.66x ->
  /// 0.70x onnxruntime's speed).
  void *take(size_t capacity) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = blocks.lower_bound(capacity);
    if (it == blocks.end() || it->first > 8 * capacity)
      return nullptr;
    void *pointer = it->second.back();
    it->second.pop_back();
    bytes -= it->first;
    if (it->second.empty())
      blocks.erase(it);
    return pointer;
  }

  /// Keeps `pointer`, unless that would pass the limit.
  bool keep(void *pointer) {
    size_t capacity = headerOf(pointer)->capacity;
    std::lock_guard<std::mutex> lock(mutex);
    if (bytes + capacity > kCacheLimit)
      return false;
    blocks[capacity].push_back(pointer);
    bytes += capacity;
    return true;
  }
};

Cache &cache() {
  // Never destroyed: compiled code may free after static destructors ran.
  static Cache *instance = new Cache;
  return *instance;
}

} // namespace

void *tesselAlignedAlloc(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return nullptr;
  size_t capacity = capacityOf(size);
  bool kept = capacity >= kKeptBlock;
  if (kept && alignment <= kKeptAlignment)
    if (void *pointer = cache().take(capacity))
      return pointer;
  // The block starts `offset` bytes into what the C library gives: its
  // header before it, its alignment kept. Small blocks of the usual
  // alignment come from malloc (aligned_alloc splits chunks, slower).
  size_t offset = std::max({kept ? kKeptAlignment : kMallocAlignment,
                            alignment, kMallocAlignment});
  void *raw = offset == kMallocAlignment
                  ? std::malloc(offset + capacity)
                  : std::aligned_alloc(offset, (offset + capacity + offset - 1) /
                                                   offset * offset);
  if (!raw)
    return nullptr;
  void *pointer = static_cast<char *>(raw) + offset;
  *headerOf(pointer) = {raw, capacity};
  return pointer;
}

void *tesselMalloc(size_t size) { return tesselAlignedAlloc(16, size); }

void *tesselCalloc(size_t count, size_t size) {
  if (size != 0 && count > SIZE_MAX / size)
    return nullptr;
  void *pointer = tesselMalloc(count * size);
  // A kept block holds what its last user left.
  if (pointer)
    std::memset(pointer, 0, count * size);
  return pointer;
}

void tesselFree(void *pointer) {
  if (!pointer)
    return;
  Header *header = headerOf(pointer);
  if (header->capacity < kKeptBlock || !cache().keep(pointer))
    std::free(header->raw);
}

size_t tesselCachedBytes() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().bytes;
}

size_t tesselCacheLimit() { return kCacheLimit; }

void tesselReleaseCachedBlocks() {
  Cache &kept = cache();
  std::lock_guard<std::mutex> lock(kept.mutex);
  for (auto &[capacity, blocks] : kept.blocks)
    for (void *pointer : blocks)
      std::free(headerOf(pointer)->raw);
  kept.blocks.clear();
  kept.bytes = 0;
}
