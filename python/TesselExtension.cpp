//===- TesselExtension.cpp - tessel's nanobind extension ------------------===//
//
// Python objects of the `mlir` package cross into C++ as C API handles
// (capsules), so tessel and `mlir` share one MLIR library and registry.
//
//===----------------------------------------------------------------------===//

#include "mlir/Bindings/Python/NanobindAdaptors.h"
#include "python/capi/TesselCAPI.h"

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
}
