//===- TesselExtension.cpp - tessel's nanobind extension ------------------===//
//
// Python objects of the `mlir` package cross into C++ as C API handles
// (capsules), so tessel and `mlir` share one MLIR library and registry.
//
//===----------------------------------------------------------------------===//

#include "mlir/Bindings/Python/NanobindAdaptors.h"
#include "python/capi/TesselCAPI.h"
#include "python/runtime/AsyncRuntime.h"

#include "nanobind/stl/string.h"
#include "nanobind/stl/vector.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nb = nanobind;

NB_MODULE(_tessel, m) {
  m.doc() = "tessel's C++ dialects and passes";
  m.def("register_dialects", &tesselRegisterDialects, nb::arg("registry"),
        "Adds the graph and loop dialects to an mlir.ir.DialectRegistry.");
  m.def("register_passes", &tesselRegisterPasses,
        "Registers tessel's passes with MLIR's global pass registry (once).");
  // Both parsers take (context, text, source name) and give a module, or
  // None after diagnostics to the context's handlers.
  using Parser = MlirModule (*)(MlirContext, MlirStringRef, MlirStringRef);
  auto parsing = [](Parser parse) {
    return [parse](MlirContext context, const std::string &source,
                   const std::string &sourceName) -> nb::object {
      MlirModule module =
          parse(context, mlirStringRefCreate(source.data(), source.size()),
                mlirStringRefCreate(sourceName.data(), sourceName.size()));
      if (mlirModuleIsNull(module))
        return nb::none();
      return nb::cast(module);
    };
  };
  m.def("parse_module", parsing(tesselParseModule), nb::arg("context"),
        nb::arg("source"), nb::arg("source_name"),
        "Parses and verifies a module; None on failure.");
  m.def("parse_schedule", parsing(tesselParseSchedule), nb::arg("context"),
        nb::arg("source"), nb::arg("source_name"),
        "Parses one loop.schedule op, verified on its own, into a module of "
        "its own; None on failure.");
  m.def(
      "clone_module",
      [](MlirModule module) {
        return mlirModuleFromOperation(
            mlirOperationClone(mlirModuleGetOperation(module)));
      },
      nb::arg("module"), "A deep copy of `module`, in its context.");
  // Targets (dialects/loop/Target.h), as tessel.targets reads them.
  auto collect = [](MlirStringRef text, void *list) {
    static_cast<nb::list *>(list)->append(nb::str(text.data, text.length));
  };
  using Lister = void (*)(MlirStringCallback, void *);
  auto listOf = [collect](Lister list) {
    nb::list names;
    list(collect, &names);
    return names;
  };
  m.def(
      "target_names", [listOf] { return listOf(tesselTargetNames); },
      "The known targets' names, in table order.");
  m.def(
      "target_instructions",
      [listOf] { return listOf(tesselTargetInstructions); },
      "The instructions a target description may list.");
  m.def(
      "target_json",
      [collect](const std::string &name) -> nb::object {
        nb::list text;
        if (!tesselTargetDescription(
                mlirStringRefCreate(name.data(), name.size()), collect, &text))
          return nb::none();
        return text[0];
      },
      nb::arg("name"), "Target `name`'s description as JSON; None if unknown.");
  m.def(
      "register_target_json",
      [collect](const std::string &json) -> nb::object {
        nb::list why;
        if (tesselRegisterTarget(mlirStringRefCreate(json.data(), json.size()),
                                 collect, &why))
          return nb::none();
        return why[0];
      },
      nb::arg("description"),
      "Adds a target from its JSON description; None, or why it cannot.");
  m.def(
      "vector_bits_of",
      [](const std::vector<std::string> &features, const std::string &arch) {
        std::vector<MlirStringRef> refs;
        for (const std::string &f : features)
          refs.push_back(mlirStringRefCreate(f.data(), f.size()));
        return tesselVectorBitsOf(refs.data(), refs.size(),
                                  mlirStringRefCreate(arch.data(), arch.size()));
      },
      nb::arg("features"), nb::arg("arch"),
      "Vector register bits of a CPU with these LLVM features.");
  m.def(
      "knob_table",
      [collect](MlirModule module) -> nb::object {
        nb::list text;
        tesselKnobTable(module, collect, &text);
        return text[0];
      },
      nb::arg("module"),
      "The knob table of the module's schedules (passes/loop/KnobTable.h), "
      "as JSON.");
  m.def(
      "target_name",
      [](MlirAttribute attribute) -> nb::object {
        if (!tesselAttributeIsATarget(attribute))
          return nb::none();
        MlirStringRef name = tesselTargetAttrGetName(attribute);
        return nb::str(name.data, name.length);
      },
      nb::arg("attribute"),
      "The target name of a #loop.target attribute; None for other attributes.");
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
