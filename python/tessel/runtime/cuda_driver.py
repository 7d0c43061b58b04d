"""The CUDA driver through NVIDIA's ``cuda-bindings`` (``cuda.bindings.driver``).

Every call is checked: a failure raises tessel.RuntimeError with the CUDA
error's name and, for kernel work, the kernel's name; a PTX the driver's JIT
rejects carries the JIT's log. Modules are loaded once per context.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import RuntimeError
from .artifact import KernelInfo, TargetInfo

__all__ = ["CudaDriver"]

_LOG_BYTES = 1 << 14


class CudaDriver:
    """Device ``ordinal``'s primary context and one stream. Kernels are
    configured by ``target``, the description of the artifact's target; a
    driver without one tells what the device is and loads no kernel."""

    exports_dlpack = True

    def __init__(self, ordinal: int = 0, target: TargetInfo | None = None) -> None:
        self.target = target
        try:
            from cuda.bindings import driver as cu
        except ImportError as e:
            raise RuntimeError("running artifacts on a GPU needs NVIDIA's cuda-bindings: "
                               f"pip install 'tessel[cuda]' ({e})") from None
        self._cu = cu
        try:
            self._check(cu.cuInit(0), "cuInit")
        # cuda-bindings raises its own error when libcuda itself is missing.
        except Exception as e:
            raise RuntimeError(f"no usable CUDA driver or GPU: {e}") from None
        count = self._check(cu.cuDeviceGetCount(), "cuDeviceGetCount")
        if ordinal >= count:
            raise RuntimeError(f"no CUDA device {ordinal}: this machine has {count}")
        self._device = self._check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
        self.device_name = self._check(cu.cuDeviceGetName(256, self._device), "cuDeviceGetName") \
            .split(b"\0", 1)[0].decode()
        attribute = cu.CUdevice_attribute
        self.capability = tuple(
            self._check(cu.cuDeviceGetAttribute(a, self._device), "cuDeviceGetAttribute")
            for a in (attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                      attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
        self._context = self._check(cu.cuDevicePrimaryCtxRetain(self._device), "cuDevicePrimaryCtxRetain")
        self._check(cu.cuCtxSetCurrent(self._context), "cuCtxSetCurrent")
        self.stream = self._check(cu.cuStreamCreate(0), "cuStreamCreate")
        self.ordinal, self.stream_handle = ordinal, int(self.stream)
        self._modules: dict[str, Any] = {}

    def _check(self, result: Any, what: str, kernel: str | None = None) -> Any:
        """The values of a cuda-bindings call, or tessel.RuntimeError."""
        error, *values = result if isinstance(result, tuple) else (result,)
        if error != self._cu.CUresult.CUDA_SUCCESS:
            _, name = self._cu.cuGetErrorName(error)
            where = f" in kernel {kernel}" if kernel else ""
            raise RuntimeError(f"{what} failed{where}: {name.decode() if name else int(error)}")
        return values[0] if len(values) == 1 else tuple(values) or None

    def load(self, kernel: KernelInfo) -> Any:
        if self.target is None:
            raise RuntimeError(f"cannot load kernel {kernel.name}: this CudaDriver was made without the "
                               "artifact's target description (CudaDriver(ordinal, target))")
        cu = self._cu
        if kernel.ptx not in self._modules:
            log = bytearray(_LOG_BYTES)
            options = [cu.CUjit_option.CU_JIT_ERROR_LOG_BUFFER,
                       cu.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
            image = np.frombuffer(kernel.ptx.encode() + b"\0", np.uint8)
            error, module = cu.cuModuleLoadDataEx(image.ctypes.data, len(options), options, [log, len(log)])
            if error != cu.CUresult.CUDA_SUCCESS:
                _, name = cu.cuGetErrorName(error)
                text = bytes(log).split(b"\0", 1)[0].decode(errors="replace")
                raise RuntimeError(f"cuModuleLoadDataEx failed in kernel {kernel.name}: "
                                   f"{name.decode() if name else int(error)}\n{text}")
            self._modules[kernel.ptx] = module
        function = self._check(cu.cuModuleGetFunction(self._modules[kernel.ptx], kernel.name.encode()),
                               "cuModuleGetFunction", kernel.name)
        # More dynamic shared memory than a block has without opting in must be asked for.
        if kernel.dynamic_shared_bytes > self.target.static_shared_per_block:
            self._check(cu.cuFuncSetAttribute(
                function, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                kernel.dynamic_shared_bytes), "cuFuncSetAttribute", kernel.name)
        return function

    def alloc(self, nbytes: int) -> int:
        return int(self._check(self._cu.cuMemAlloc(max(nbytes, 1)), "cuMemAlloc"))

    def free(self, pointer: int) -> None:
        self._check(self._cu.cuMemFree(pointer), "cuMemFree")

    def upload(self, pointer: int, array: np.ndarray) -> None:
        self._check(self._cu.cuMemcpyHtoD(pointer, array.ctypes.data, array.nbytes), "cuMemcpyHtoD")

    def download(self, array: np.ndarray, pointer: int) -> None:
        self._check(self._cu.cuMemcpyDtoH(array.ctypes.data, pointer, array.nbytes), "cuMemcpyDtoH")

    def copy(self, target: int, source: int, nbytes: int) -> None:
        self._check(self._cu.cuMemcpyDtoDAsync(target, source, nbytes, self.stream), "cuMemcpyDtoDAsync")

    def launch(self, function: Any, kernel: KernelInfo, pointers: Sequence[int]) -> None:
        # Bare-pointer ABI: each parameter is one device pointer; the driver
        # takes an array of addresses of the parameter values.
        values = np.array(pointers, dtype=np.uint64)
        addresses = np.array([values.ctypes.data + 8 * i for i in range(len(values))], dtype=np.uint64)
        self._check(self._cu.cuLaunchKernel(
            function, *kernel.grid, *kernel.block, kernel.dynamic_shared_bytes, self.stream,
            addresses.ctypes.data, 0), "cuLaunchKernel", kernel.name)

    def synchronize(self) -> None:
        self._check(self._cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize")
