//===- AsyncRuntime.h - the async runtime of CPU executables --------------===//
//
// The entry points of MLIR's async runtime ABI that tessel implements, and
// the heap of BufferCache.h, by the symbol names that JIT-compiled code
// calls them by.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PYTHON_RUNTIME_ASYNCRUNTIME_H
#define TESSEL_PYTHON_RUNTIME_ASYNCRUNTIME_H

struct TesselRuntimeSymbol {
  const char *name;
  void *address;
};

/// The runtime's functions, ended by a null name.
const TesselRuntimeSymbol *tesselAsyncRuntimeSymbols();

#endif // TESSEL_PYTHON_RUNTIME_ASYNCRUNTIME_H
