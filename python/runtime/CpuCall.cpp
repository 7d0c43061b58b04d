//===- CpuCall.cpp - the fast path of a CPU executable's call -------------===//
//
// A call of a CPU executable (tessel/backends/cpu.py) in its common case:
// every argument a C-contiguous, aligned numpy array of the format and the
// shape the thread's last call had, and a free pooled buffer for every
// result. Such a call is checked, its memref descriptors' data pointers set
// and the entry called without running Python code: in Python the checks
// and the pool cost three times a tiny kernel's run. Any other call (other
// argument types, conversions, new sizes, a result buffer to make) returns
// None, and the Python path, which handles everything, takes it.
//
//===----------------------------------------------------------------------===//

#include "python/runtime/CpuCall.h"

#include "nanobind/stl/string.h"
#include "nanobind/stl/vector.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace {

/// Entries taking up to this many descriptor pointers are called here.
constexpr size_t kMaxArguments = 32;

using Invoker = void (*)(uintptr_t, void *const *);

template <size_t... I>
void invoke(uintptr_t entry, void *const *pointers, std::index_sequence<I...>) {
  using Entry = void (*)(decltype((void)I, (void *)nullptr)...);
  reinterpret_cast<Entry>(entry)(pointers[I]...);
}

template <size_t... N>
constexpr std::array<Invoker, sizeof...(N)>
invokers(std::index_sequence<N...>) {
  return {{[](uintptr_t entry, void *const *pointers) {
    invoke(entry, pointers, std::make_index_sequence<N>());
  }...}};
}

constexpr auto kInvokers =
    invokers(std::make_index_sequence<kMaxArguments + 1>());

/// A numpy array's buffer, released when this goes.
class View {
public:
  /// Whether `object` exports a buffer with `flags`; a refusal is cleared.
  bool get(PyObject *object, int flags) {
    if (PyObject_GetBuffer(object, &view, flags) == 0)
      return held = true;
    PyErr_Clear();
    return false;
  }
  ~View() {
    if (held)
      PyBuffer_Release(&view);
  }
  /// Whether the buffer is C-contiguous of `format` and `shape`.
  bool is(const std::string &format, const std::vector<int64_t> &shape) const {
    if (view.ndim != static_cast<int>(shape.size()) || !view.format ||
        format != view.format || !PyBuffer_IsContiguous(&view, 'C'))
      return false;
    for (size_t d = 0; d < shape.size(); ++d)
      if (view.shape[d] != shape[d])
        return false;
    return true;
  }
  uintptr_t address() const { return reinterpret_cast<uintptr_t>(view.buf); }

private:
  Py_buffer view;
  bool held = false;
};

/// One thread's fast path of one executable (see the file comment).
class CpuCall {
public:
  CpuCall(uintptr_t entry, std::vector<uintptr_t> descriptors,
          nb::handle arrayType, std::vector<std::string> formats,
          std::vector<size_t> itemsizes, size_t inputs, size_t alignment,
          nb::list pools)
      : entry(entry), descriptors(std::move(descriptors)),
        arrayType(nb::borrow<nb::object>(arrayType)),
        formats(std::move(formats)), itemsizes(std::move(itemsizes)),
        inputs(inputs), alignment(alignment), pools(std::move(pools)),
        shapes(this->descriptors.size()) {
    size_t count = this->descriptors.size();
    if (count > kMaxArguments)
      throw nb::value_error("too many arguments for the fast call path");
    if (this->formats.size() != count || this->itemsizes.size() != count ||
        inputs > count || nb::len(this->pools) != count - inputs)
      throw nb::value_error("a format and an itemsize per argument and "
                            "result, and a pool per result");
    for (uintptr_t d : this->descriptors)
      pointers.push_back(reinterpret_cast<void *>(d));
  }

  /// The shapes the next calls take, per argument then per result.
  void setShapes(std::vector<std::vector<int64_t>> next) {
    if (next.size() != shapes.size())
      throw nb::value_error("a shape per argument and result");
    shapes = std::move(next);
  }

  /// The results of a call of the common case, or None (see the file comment).
  nb::object call(nb::args args) {
    if (args.size() != inputs)
      return nb::none();
    for (size_t i = 0; i < inputs; ++i) {
      PyObject *argument = args[i].ptr();
      if (Py_TYPE(argument) != reinterpret_cast<PyTypeObject *>(arrayType.ptr()))
        return nb::none();
      View view;
      if (!view.get(argument, PyBUF_RECORDS_RO) ||
          !view.is(formats[i], shapes[i]) ||
          view.address() % alignment || view.address() % itemsizes[i])
        return nb::none();
      setAddress(i, view.address());
    }
    std::vector<nb::object> results;
    for (size_t r = 0; r < shapes.size() - inputs; ++r) {
      nb::handle array = freeResult(r);
      if (!array)
        return nb::none();
      results.push_back(nb::borrow<nb::object>(array));
    }
    {
      nb::gil_scoped_release released;
      kInvokers[pointers.size()](entry, pointers.data());
    }
    if (results.size() == 1)
      return results[0];
    nb::list all;
    for (nb::object &r : results)
      all.append(r);
    return nb::tuple(all);
  }

private:
  void setAddress(size_t i, uintptr_t address) {
    // A memref descriptor starts with its allocated and aligned pointers.
    auto *fields = reinterpret_cast<uintptr_t *>(descriptors[i]);
    fields[0] = fields[1] = address;
  }

  /// Result `r`'s array in a pooled buffer that nothing else references
  /// (entries [buffer, address, array, lease], as cpu.py keeps them: the
  /// array referenced by the pool alone, its lease by the pool and the
  /// array), writable and of the result's format and shape; its descriptor
  /// set. A null handle where there is none.
  nb::handle freeResult(size_t r) {
    size_t slot = inputs + r;
    nb::list pool = nb::borrow<nb::list>(pools[r]);
    for (nb::handle entry : pool) {
      PyObject *fields = entry.ptr();
      if (!PyList_Check(fields) || PyList_GET_SIZE(fields) != 4)
        continue;
      PyObject *array = PyList_GET_ITEM(fields, 2);
      PyObject *lease = PyList_GET_ITEM(fields, 3);
      if (array == Py_None || Py_REFCNT(array) > 1 || Py_REFCNT(lease) > 2)
        continue;
      View view;
      if (!view.get(array, PyBUF_RECORDS) ||
          !view.is(formats[slot], shapes[slot]))
        continue;
      setAddress(slot, view.address());
      return array;
    }
    return nb::handle();
  }

  uintptr_t entry;
  std::vector<uintptr_t> descriptors;
  std::vector<void *> pointers;
  nb::object arrayType;
  std::vector<std::string> formats;
  std::vector<size_t> itemsizes;
  size_t inputs;
  size_t alignment;
  nb::list pools;
  std::vector<std::vector<int64_t>> shapes;
};

} // namespace

void tesselBindCpuCall(nb::module_ &m) {
  m.attr("CPU_CALL_MAX_ARGUMENTS") = kMaxArguments;
  nb::class_<CpuCall>(
      m, "CpuCall",
      "One thread's fast path of a CPU executable's call: a call whose "
      "arguments are C-contiguous, aligned arrays of type `array_type`, of "
      "the formats and the shapes last set, with a free buffer in each "
      "result's pool, runs the entry and returns the pooled arrays; any "
      "other call returns None and changes nothing.")
      .def(nb::init<uintptr_t, std::vector<uintptr_t>, nb::handle,
                    std::vector<std::string>, std::vector<size_t>, size_t,
                    size_t, nb::list>(),
           nb::arg("entry"), nb::arg("descriptors"), nb::arg("array_type"),
           nb::arg("formats"), nb::arg("itemsizes"), nb::arg("inputs"),
           nb::arg("alignment"), nb::arg("pools"),
           "`entry`'s C interface takes the memref descriptors at "
           "`descriptors` (per argument, then per result); `formats` and "
           "`itemsizes` are their elements' buffer formats and sizes; the "
           "first `inputs` are arguments; `pools` holds each result's "
           "[buffer, address, array, lease] entries.")
      .def("set_shapes", &CpuCall::setShapes, nb::arg("shapes"),
           "The shapes of the arguments and results that calls take.")
      .def("__call__", &CpuCall::call,
           "The results, or None where the Python path must take the call.");
}
