//===- BufferCache.h - the heap of CPU executables ------------------------===//
//
// malloc, aligned_alloc and free as JIT-compiled code calls them (memref
// allocations, coroutine frames), bound to these functions in its place.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PYTHON_RUNTIME_BUFFERCACHE_H
#define TESSEL_PYTHON_RUNTIME_BUFFERCACHE_H

#include <cstddef>

/// Like the C library's; a block from either is freed by tesselFree only.
void *tesselMalloc(size_t size);
void *tesselAlignedAlloc(size_t alignment, size_t size);
void tesselFree(void *pointer);

/// Bytes of freed large blocks kept for reuse, and the most kept.
size_t tesselCachedBytes();
size_t tesselCacheLimit();

#endif // TESSEL_PYTHON_RUNTIME_BUFFERCACHE_H
