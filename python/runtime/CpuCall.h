//===- CpuCall.h - the fast path of a CPU executable's call ---------------===//

#ifndef TESSEL_PYTHON_RUNTIME_CPUCALL_H
#define TESSEL_PYTHON_RUNTIME_CPUCALL_H

#include "nanobind/nanobind.h"

/// Adds `CpuCall` (see CpuCall.cpp) to the extension module.
void tesselBindCpuCall(nanobind::module_ &m);

#endif // TESSEL_PYTHON_RUNTIME_CPUCALL_H
