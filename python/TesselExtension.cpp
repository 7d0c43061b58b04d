//===- TesselExtension.cpp - tessel's nanobind extension ------------------===//
//
// Python objects of the `mlir` package cross into C++ as C API handles
// (capsules), so tessel and `mlir` share one MLIR library and registry.
//
//===----------------------------------------------------------------------===//

#include "mlir/Bindings/Python/NanobindAdaptors.h"
#include "python/capi/HostCode.h"
#include "python/capi/TesselCAPI.h"
#include "python/runtime/AsyncRuntime.h"
#include "python/runtime/BufferCache.h"
#include "python/runtime/CpuCall.h"

#include "nanobind/stl/map.h"
#include "nanobind/stl/string.h"
#include "nanobind/stl/vector.h"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {

void appendText(MlirStringRef text, void *into) {
  static_cast<std::string *>(into)->append(text.data, text.length);
}

/// Objects linked into the process (python/capi/HostCode.h); the code lives
/// as long as this object.
class ObjectJIT {
public:
  ObjectJIT(const std::vector<nb::bytes> &objects,
            const std::map<std::string, uint64_t> &symbols) {
    std::vector<MlirStringRef> objectRefs, names;
    std::vector<uint64_t> addresses;
    for (const nb::bytes &o : objects)
      objectRefs.push_back(mlirStringRefCreate(o.c_str(), o.size()));
    for (const auto &[name, address] : symbols) {
      names.push_back(mlirStringRefCreate(name.data(), name.size()));
      addresses.push_back(address);
    }
    std::string why;
    jit = tesselObjectJITCreate(objectRefs.data(), objectRefs.size(),
                                names.data(), addresses.data(), names.size(),
                                appendText, &why);
    if (!jit)
      throw std::runtime_error(why);
  }
  ObjectJIT(const ObjectJIT &) = delete;
  ObjectJIT &operator=(const ObjectJIT &) = delete;
  ~ObjectJIT() { tesselObjectJITDestroy(jit); }

  uint64_t lookup(const std::string &name) {
    std::string why;
    uint64_t address = tesselObjectJITLookup(
        jit, mlirStringRefCreate(name.data(), name.size()), appendText, &why);
    if (!address)
      throw std::runtime_error(why);
    return address;
  }

private:
  TesselObjectJIT *jit;
};

} // namespace

NB_MODULE(_tessel, m) {
  m.doc() = "tessel's C++ dialects and passes";
  // Compiled code held at exit (by torch.compile's caches, or the executables
  // retired a second before) is a normal end, not a leak to report.
  nb::set_leak_warnings(false);
  tesselBindCpuCall(m);
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
  m.def(
      "buffer_address",
      [](nb::handle object) -> uintptr_t {
        // numpy's own `.ctypes.data` builds a ctypes object per read: a
        // microsecond, a quarter of a small kernel's call.
        Py_buffer view;
        if (PyObject_GetBuffer(object.ptr(), &view, PyBUF_SIMPLE) != 0)
          throw nb::python_error();
        auto address = reinterpret_cast<uintptr_t>(view.buf);
        PyBuffer_Release(&view);
        return address;
      },
      nb::arg("object"),
      "The address of a C-contiguous buffer's first byte (a numpy array's "
      "data); the buffer protocol's error for an object that has no such "
      "buffer (TypeError; numpy's ValueError for a strided array).");
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
      "buffer_cache_bytes", [] { return tesselCachedBytes(); },
      "Bytes of large blocks that compiled CPU code freed and the buffer "
      "cache keeps for its next allocations (at most buffer_cache_limit()).");
  m.def(
      "buffer_cache_limit", [] { return tesselCacheLimit(); },
      "The most bytes the buffer cache of compiled CPU code keeps.");
  m.def(
      "buffer_cache_release", [] { tesselReleaseCachedBlocks(); },
      "Returns the blocks the buffer cache keeps to the C library (blocks in "
      "use are kept again when freed).");
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
  m.def(
      "emit_host_objects",
      [](MlirModule module, unsigned optLevel, unsigned partitions) {
        std::vector<nb::bytes> objects;
        std::string why;
        struct Sinks {
          std::vector<nb::bytes> *objects;
          std::string *why;
        } sinks{&objects, &why};
        bool ok = tesselEmitHostObjects(
            module, optLevel, partitions,
            [](MlirStringRef text, void *s) {
              static_cast<Sinks *>(s)->objects->emplace_back(text.data,
                                                             text.length);
            },
            [](MlirStringRef text, void *s) {
              appendText(text, static_cast<Sinks *>(s)->why);
            },
            &sinks);
        if (!ok)
          throw std::runtime_error(why);
        return objects;
      },
      nb::arg("module"), nb::arg("opt_level"), nb::arg("partitions"),
      "Relocatable objects for this CPU from an LLVM-dialect module, compiled "
      "in up to `partitions` parts on threads of their own; RuntimeError "
      "with why (and diagnostics to the context's handlers) on failure.");
  nb::class_<ObjectJIT>(m, "ObjectJIT",
                        "Objects linked into this process; the code lives as "
                        "long as this object.")
      .def(nb::init<const std::vector<nb::bytes> &,
                    const std::map<std::string, uint64_t> &>(),
           nb::arg("objects"), nb::arg("symbols"),
           "Links `objects`; their undefined symbols resolve to `symbols` "
           "(name -> address), else to the process's own. RuntimeError with "
           "why on failure.")
      .def("lookup", &ObjectJIT::lookup, nb::arg("name"),
           "The address of symbol `name`; RuntimeError if it cannot be "
           "linked.");
}
