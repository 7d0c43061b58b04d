//===- TesselCAPI.cpp - C API of tessel's dialects and passes -------------===//

#include "python/capi/TesselCAPI.h"

#include "dialects/graph/Graph.h"
#include "dialects/loop/Loop.h"
#include "passes/Passes.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Parser/Parser.h"

#include <mutex>

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Graph, graph,
                                      tessel::graph::GraphDialect)
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Loop, loop, tessel::loop::LoopDialect)

void tesselRegisterDialects(MlirDialectRegistry registry) {
  unwrap(registry)
      ->insert<tessel::graph::GraphDialect, tessel::loop::LoopDialect>();
}

void tesselRegisterPasses(void) {
  // The pass registry is process-global and rejects a second registration.
  static std::once_flag once;
  std::call_once(once, [] { tessel::registerTesselPasses(); });
}

MlirModule tesselParseModule(MlirContext context, MlirStringRef source,
                             MlirStringRef sourceName) {
  mlir::ParserConfig config(unwrap(context));
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(unwrap(source), config,
                                              unwrap(sourceName));
  return wrap(module.release());
}
