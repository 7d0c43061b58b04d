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

/// Parses `source` as one loop.schedule op and verifies it on its own (its
/// kernel need not exist: symbol uses are checked where it is inserted).
/// Returns a module holding just that op, or a null module after
/// diagnostics naming `sourceName`.
MLIR_CAPI_EXPORTED MlirModule tesselParseSchedule(MlirContext context,
                                                  MlirStringRef source,
                                                  MlirStringRef sourceName);

/// Writes the knob table of `module`'s schedules (passes/loop/KnobTable.h)
/// as JSON through `callback`.
MLIR_CAPI_EXPORTED void tesselKnobTable(MlirModule module,
                                        MlirStringCallback callback,
                                        void *userData);

/// Calls `callback` with the name of each known target, in table order.
MLIR_CAPI_EXPORTED void tesselTargetNames(MlirStringCallback callback,
                                          void *userData);

/// Calls `callback` with the name of each instruction a target may list.
MLIR_CAPI_EXPORTED void tesselTargetInstructions(MlirStringCallback callback,
                                                 void *userData);

/// Writes target `name`'s description as JSON through `callback`; false
/// (and nothing written) when no target has that name.
MLIR_CAPI_EXPORTED bool tesselTargetDescription(MlirStringRef name,
                                                MlirStringCallback callback,
                                                void *userData);

/// Adds the target described by JSON `description` to the table; on
/// failure returns false and writes why through `callback`.
MLIR_CAPI_EXPORTED bool tesselRegisterTarget(MlirStringRef description,
                                             MlirStringCallback callback,
                                             void *userData);

/// Bits of the vector registers of a CPU with `count` LLVM `features` of
/// architecture `arch` (what the cpu target's vector_bits is made of).
MLIR_CAPI_EXPORTED int64_t tesselVectorBitsOf(const MlirStringRef *features,
                                              intptr_t count,
                                              MlirStringRef arch);

/// Whether `attribute` is a #loop.target.
MLIR_CAPI_EXPORTED bool tesselAttributeIsATarget(MlirAttribute attribute);

/// The name of #loop.target `attribute`.
MLIR_CAPI_EXPORTED MlirStringRef tesselTargetAttrGetName(MlirAttribute attribute);

#ifdef __cplusplus
}
#endif

#endif // TESSEL_CAPI_H
