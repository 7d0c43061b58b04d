//===- BufferCache.h - the heap of CPU executables ------------------------===//
//
// malloc, calloc, aligned_alloc and free as JIT-compiled code calls them
// (memref allocations, coroutine frames; LLVM makes a malloc whose block is
// then zeroed a calloc), bound to these functions in their place.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PYTHON_RUNTIME_BUFFERCACHE_H
#define TESSEL_PYTHON_RUNTIME_BUFFERCACHE_H

#include <cstddef>

/// Like the C library's; a block from either is freed by tesselFree only.
void *tesselMalloc(size_t size);
void *tesselCalloc(size_t count, size_t size);
void *tesselAlignedAlloc(size_t alignment, size_t size);
void tesselFree(void *pointer);

/// Bytes of freed large blocks kept for reuse, and the most kept.
size_t tesselCachedBytes();
size_t tesselCacheLimit();
/// Frees the kept blocks to the C library.
void tesselReleaseCachedBlocks();

#endif // TESSEL_PYTHON_RUNTIME_BUFFERCACHE_H
