//===- TesselExtension.cpp - tessel's nanobind extension ------------------===//
//
// Python objects of the `mlir` package cross into C++ as C API handles
// (capsules), so tessel and `mlir` share one MLIR library and registry.
//
//===----------------------------------------------------------------------===//

#include "mlir/Bindings/Python/NanobindAdaptors.h"
#include "python/capi/TesselCAPI.h"
#include "python/runtime/AsyncRuntime.h"

#include <cstdint>

namespace nb = nanobind;

NB_MODULE(_tessel, m) {
  m.doc() = "tessel's C++ dialects and passes";
  m.def("register_dialects", &tesselRegisterDialects, nb::arg("registry"),
        "Adds the graph and loop dialects to an mlir.ir.DialectRegistry.");
  m.def("register_passes", &tesselRegisterPasses,
        "Registers tessel's passes with MLIR's global pass registry (once).");
  m.def(
      "parse_module",
      [](MlirContext context, const std::string &source,
         const std::string &sourceName) -> nb::object {
        MlirModule module = tesselParseModule(
            context, mlirStringRefCreate(source.data(), source.size()),
            mlirStringRefCreate(sourceName.data(), sourceName.size()));
        if (mlirModuleIsNull(module))
          return nb::none();
        return nb::cast(module);
      },
      nb::arg("context"), nb::arg("source"), nb::arg("source_name"),
      "Parses and verifies a module; None on failure (diagnostics go to the "
      "context's handlers).");
  m.def(
      "async_runtime_symbols",
      [] {
        nb::dict symbols;
        for (const TesselRuntimeSymbol *symbol = tesselAsyncRuntimeSymbols();
             symbol->name; ++symbol)
          symbols[symbol->name] = reinterpret_cast<uintptr_t>(symbol->address);
        return symbols;
      },
      "The addresses of tessel's async runtime functions (MLIR's async "
      "runtime ABI), by symbol name, for binding into JIT-compiled code.");
}
