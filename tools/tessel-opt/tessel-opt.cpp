//===- tessel-opt.cpp - tessel's MlirOptMain driver -----------------------===//
//
// Every upstream dialect and pass plus tessel's, so any stage of a Python
// compile can be replayed from its dumped IR with one command.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/Graph.h"
#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates kernels to LLVM IR, then PTX.
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::registerAllPasses();
  registry.insert<tessel::graph::GraphDialect, tessel::loop::LoopDialect>();
  tessel::registerTesselPasses();
  tessel::registerTesselPipelines();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "tessel optimizer driver\n", registry));
}
