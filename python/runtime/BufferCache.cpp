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
#include <atomic>
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

/// Threads share the cache in this many shards, round-robin.
constexpr unsigned kShards = 16;

/// Freed blocks by capacity, of the threads that freed them.
struct Shard {
  std::mutex mutex;
  std::map<size_t, std::vector<void *>> blocks;
  /// Bytes kept here, read without the lock to pass over empty shards.
  std::atomic<size_t> bytes{0};

  /// The last freed of the smallest blocks here that hold `capacity`
  /// bytes, if it is at most 8 times that: blocks of other sizes serve each
  /// other, so that a model's intermediates touch fewer distinct bytes,
  /// which stay in cache (MobileNetV2 at batch 1: 22 MiB kept, 12 MiB now;
  /// 0.66x -> 0.70x onnxruntime's speed).
  void *take(size_t capacity) {
    if (bytes.load(std::memory_order_relaxed) < capacity)
      return nullptr;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = blocks.lower_bound(capacity);
    if (it == blocks.end() || it->first > 8 * capacity)
      return nullptr;
    void *pointer = it->second.back();
    it->second.pop_back();
    bytes.fetch_sub(it->first, std::memory_order_relaxed);
    if (it->second.empty())
      blocks.erase(it);
    return pointer;
  }
};

/// Each thread keeps the blocks it frees in a shard of its own, and takes
/// from it first, from the others only when none there fits: a task's
/// packed operands are then mostly a block its own core last wrote, still
/// in its caches, not one the other core just freed. From one pool, the
/// two threads' tiles traded blocks in turn (ResNet-18 at batch 1 19.26 ->
/// 19.04 ms, MobileNetV2 4.74 -> 4.65 ms; medians of ~260 windows each on
/// the 2-core VM, and about as much when its vCPUs are far apart).
struct Cache {
  Shard shards[kShards];
  /// Bytes kept in all shards.
  std::atomic<size_t> bytes{0};
  std::atomic<unsigned> threads{0};

  Shard &home() {
    thread_local unsigned index =
        threads.fetch_add(1, std::memory_order_relaxed) % kShards;
    return shards[index];
  }

  void *take(size_t capacity) {
    Shard *first = &home();
    void *pointer = first->take(capacity);
    for (unsigned i = 0; !pointer && i < kShards; ++i)
      if (&shards[i] != first)
        pointer = shards[i].take(capacity);
    if (pointer)
      bytes.fetch_sub(headerOf(pointer)->capacity, std::memory_order_relaxed);
    return pointer;
  }

  /// Keeps `pointer`, unless that would pass the limit.
  bool keep(void *pointer) {
    size_t capacity = headerOf(pointer)->capacity;
    if (bytes.fetch_add(capacity, std::memory_order_relaxed) + capacity >
        kCacheLimit) {
      bytes.fetch_sub(capacity, std::memory_order_relaxed);
      return false;
    }
    Shard &shard = home();
    std::lock_guard<std::mutex> lock(shard.mutex);
    shard.blocks[capacity].push_back(pointer);
    shard.bytes.fetch_add(capacity, std::memory_order_relaxed);
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
  return cache().bytes.load(std::memory_order_relaxed);
}

size_t tesselCacheLimit() { return kCacheLimit; }

void tesselReleaseCachedBlocks() {
  Cache &kept = cache();
  for (Shard &shard : kept.shards) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    for (auto &[capacity, blocks] : shard.blocks)
      for (void *pointer : blocks) {
        std::free(headerOf(pointer)->raw);
        shard.bytes.fetch_sub(capacity, std::memory_order_relaxed);
        kept.bytes.fetch_sub(capacity, std::memory_order_relaxed);
      }
    shard.blocks.clear();
  }
}
