/*===- HostCode.h - machine code for this CPU, and its linker ----*- C -*-===*\
|* The CPU backend's last step, behind the C API like the rest of tessel's   *|
|* C++: an LLVM-dialect module becomes relocatable objects for this         *|
|* machine, and objects (fresh, or from the compile cache) are linked into  *|
|* the process.                                                             *|
\*===----------------------------------------------------------------------===*/
#ifndef TESSEL_CAPI_HOSTCODE_H
#define TESSEL_CAPI_HOSTCODE_H

#include "mlir-c/IR.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Compiles `module` (LLVM dialect) for this machine's CPU: translated to
/// LLVM IR, split into at most `partitions` modules (kernels apart, each
/// with the private functions it uses), each optimised at `optLevel` and
/// compiled to an ELF object on a thread of its own. Calls `object` once
/// per object. On failure returns false after calling `error` with why.
MLIR_CAPI_EXPORTED bool tesselEmitHostObjects(MlirModule module,
                                              unsigned optLevel,
                                              unsigned partitions,
                                              MlirStringCallback object,
                                              MlirStringCallback error,
                                              void *userData);

/// Objects linked into this process by an ORC JIT.
typedef struct TesselObjectJIT TesselObjectJIT;

/// Links `objects` into the process: their undefined symbols resolve to
/// `symbolNames[i]` at `symbolAddresses[i]`, else to the process's own
/// (libc, libm). Returns null after calling `error` with why.
MLIR_CAPI_EXPORTED TesselObjectJIT *
tesselObjectJITCreate(const MlirStringRef *objects, intptr_t objectCount,
                      const MlirStringRef *symbolNames,
                      const uint64_t *symbolAddresses, intptr_t symbolCount,
                      MlirStringCallback error, void *userData);

/// The address of `name` (linking what it needs first); 0 after calling
/// `error` with why.
MLIR_CAPI_EXPORTED uint64_t tesselObjectJITLookup(TesselObjectJIT *jit,
                                                  MlirStringRef name,
                                                  MlirStringCallback error,
                                                  void *userData);

/// Frees the JIT and the code it linked.
MLIR_CAPI_EXPORTED void tesselObjectJITDestroy(TesselObjectJIT *jit);

#ifdef __cplusplus
}
#endif

#endif // TESSEL_CAPI_HOSTCODE_H
