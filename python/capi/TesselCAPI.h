/*===- TesselCAPI.h - C API of tessel's dialects and passes -------*- C -*-===*\
|* The narrow, C-only surface through which the Python extension (compiled   *|
|* with RTTI and exceptions for nanobind) reaches tessel's C++ (compiled     *|
|* without, like the LLVM it links to).                                      *|
\*===----------------------------------------------------------------------===*/
#ifndef TESSEL_CAPI_H
#define TESSEL_CAPI_H

#include "mlir-c/IR.h"
#include "mlir-c/RegisterEverything.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Graph, graph);
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Loop, loop);

/// Adds the graph and loop dialects to `registry`.
MLIR_CAPI_EXPORTED void tesselRegisterDialects(MlirDialectRegistry registry);

/// Registers tessel's passes with the global pass registry, once per process.
MLIR_CAPI_EXPORTED void tesselRegisterPasses(void);

/// Parses `source` as a module (wrapping top-level ops in an implicit
/// builtin.module) and verifies it. Diagnostics go to the context's handlers
/// and name `sourceName`; returns a null module on failure.
MLIR_CAPI_EXPORTED MlirModule tesselParseModule(MlirContext context,
                                                MlirStringRef source,
                                                MlirStringRef sourceName);

#ifdef __cplusplus
}
#endif

#endif // TESSEL_CAPI_H
