//===- BufferCache.cpp - the heap of CPU executables ----------------------===//
//
// A call of a compiled model allocates its intermediates and frees them
// again: with glibc, a block over its mmap threshold (at most 32 MiB) is
// mapped and unmapped each time, and every call faults its pages in anew,
// zeroed by the kernel (MobileNetV2 at batch 8: 9,400 faults and 20 ms of
// system time in a 61 ms call). Large blocks freed here are kept instead,
// up to a bound, and handed to the next allocation they fit, as PyTorch's
// and IREE's allocators do; small ones go to the C library.
//
//===----------------------------------------------------------------------===//

#include "python/runtime/BufferCache.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <list>
#include <mutex>

namespace {

/// Blocks at least this large are kept when freed: below it glibc reuses
/// its own free chunks well.
constexpr size_t kLargeBlock = size_t(256) << 10;
/// The most bytes kept (the oldest freed go first past it).
constexpr size_t kCacheLimit = size_t(1) << 30;
/// Every block starts with a header this large, so the pointer handed out
/// keeps any alignment up to it.
constexpr size_t kHeader = 64;

struct Header {
  void *raw;       // what the C library allocated
  size_t capacity; // bytes usable from the pointer handed out
};

Header *headerOf(void *pointer) {
  return reinterpret_cast<Header *>(static_cast<char *>(pointer) -
                                    sizeof(Header));
}

struct Cache {
  std::mutex mutex;
  std::list<void *> blocks; // freed large blocks, the most recent first
  size_t bytes = 0;

  /// A kept block of at least `size` bytes, the smallest, if it wastes at
  /// most a quarter of itself; else null.
  void *take(size_t size) {
    std::lock_guard<std::mutex> lock(mutex);
    auto best = blocks.end();
    for (auto it = blocks.begin(); it != blocks.end(); ++it) {
      size_t capacity = headerOf(*it)->capacity;
      if (capacity >= size && capacity - size <= capacity / 4 &&
          (best == blocks.end() || capacity < headerOf(*best)->capacity))
        best = it;
    }
    if (best == blocks.end())
      return nullptr;
    void *pointer = *best;
    bytes -= headerOf(pointer)->capacity;
    blocks.erase(best);
    return pointer;
  }

  /// Keeps `pointer`, freeing the oldest blocks past the limit.
  void keep(void *pointer) {
    std::list<void *> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex);
      blocks.push_front(pointer);
      bytes += headerOf(pointer)->capacity;
      while (bytes > kCacheLimit) {
        bytes -= headerOf(blocks.back())->capacity;
        evicted.splice(evicted.end(), blocks, std::prev(blocks.end()));
      }
    }
    for (void *old : evicted)
      std::free(headerOf(old)->raw);
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
  if (size >= kLargeBlock && alignment <= kHeader)
    if (void *pointer = cache().take(size))
      return pointer;
  size_t offset = std::max(kHeader, alignment);
  // Large blocks round up to 64 KiB, so that sizes that differ a little
  // (a batch's ragged tile) find each other's blocks.
  size_t capacity =
      size >= kLargeBlock ? (size + 0xFFFF) & ~size_t(0xFFFF) : size;
  size_t total = (offset + capacity + offset - 1) / offset * offset;
  void *raw = std::aligned_alloc(offset, total);
  if (!raw)
    return nullptr;
  void *pointer = static_cast<char *>(raw) + offset;
  *headerOf(pointer) = {raw, capacity};
  return pointer;
}

void *tesselMalloc(size_t size) { return tesselAlignedAlloc(16, size); }

void tesselFree(void *pointer) {
  if (!pointer)
    return;
  Header *header = headerOf(pointer);
  if (header->capacity >= kLargeBlock)
    cache().keep(pointer);
  else
    std::free(header->raw);
}

size_t tesselCachedBytes() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().bytes;
}

size_t tesselCacheLimit() { return kCacheLimit; }
