"""The CUDA driver through NVIDIA's ``cuda-bindings`` (``cuda.bindings.driver``).

Every call is checked: a failure raises tessel.RuntimeError with the CUDA
error's name and, for kernel work, the kernel's name; a PTX the driver's JIT
rejects carries the JIT's log. Modules are loaded once per context.

Tensor maps are encoded by the driver's ``cuTensorMapEncodeTiled``, with
the arguments :func:`tensor_map_arguments` builds (a function of its own,
so that a machine without a GPU tests them against ``cuda.bindings``).
"""

from __future__ import annotations

import ctypes
from typing import Any, Sequence

import numpy as np

from ..errors import RuntimeError
from .artifact import KernelInfo, SizeValue, TargetInfo
from .tensormaps import FILLS, INTERLEAVES, L2_PROMOTIONS, TensorMapError, TensorMapInfo, check, field_path

__all__ = ["CudaDriver", "tensor_map_arguments"]

_LOG_BYTES = 1 << 14


def tensor_map_arguments(cu: Any, tensor_map: TensorMapInfo, address: int) -> tuple:
    """The arguments of ``cu.cuTensorMapEncodeTiled`` (``cu``: the module
    ``cuda.bindings.driver``) for ``tensor_map`` at device ``address``,
    after checking them by the driver's documented rules (a broken map is
    a tessel.RuntimeError naming the field, not the driver's bare
    CUDA_ERROR_INVALID_VALUE)."""
    try:
        check(tensor_map, address, field_path(f"the tensor map of buffer {tensor_map.buffer}"))
    except TensorMapError as e:
        raise RuntimeError(str(e)) from None
    m = tensor_map
    return (getattr(cu.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{m.element.driver}"), m.rank, address,
            [cu.cuuint64_t(d) for d in m.dims], [cu.cuuint64_t(s) for s in m.strides],
            [cu.cuuint32_t(b) for b in m.box], [cu.cuuint32_t(e) for e in m.element_strides],
            getattr(cu.CUtensorMapInterleave, f"CU_TENSOR_MAP_INTERLEAVE_{INTERLEAVES[m.interleave]}"),
            getattr(cu.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{m.swizzle.upper()}"),
            getattr(cu.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{L2_PROMOTIONS[m.l2_promotion]}"),
            getattr(cu.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{FILLS[m.fill]}"))


def _parameter(argument: int | SizeValue) -> ctypes.c_uint64 | ctypes.c_int64:
    """The 8-byte kernel parameter of a launch argument: a device address
    or an unsigned size as ``c_uint64``, a signed size as ``c_int64``.
    ctypes wraps a value out of range silently, so one is an error here
    (the artifact's reader bounds sizes by their types already)."""
    signed = isinstance(argument, SizeValue) and argument.signed
    value = argument.value if isinstance(argument, SizeValue) else int(argument)
    low, high = (-(1 << 63), (1 << 63) - 1) if signed else (0, (1 << 64) - 1)
    if not low <= value <= high:
        raise RuntimeError(f"a kernel parameter of type {'.s64' if signed else '.u64'} cannot hold {value}")
    return ctypes.c_int64(value) if signed else ctypes.c_uint64(value)


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
        # More shared memory than a block has without opting in (48 KB), static (mbarriers, say) and
        # dynamic together, must be asked for: the dynamic part's maximum raised to what it asks.
        static = self._check(cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                                   function), "cuFuncGetAttribute", kernel.name)
        if static + kernel.dynamic_shared_bytes > self.target.static_shared_per_block:
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

    def launch(self, function: Any, kernel: KernelInfo, arguments: Sequence[int | SizeValue]) -> None:
        # Every parameter is 8 bytes: a device pointer (bare-pointer ABI, .u64) or a size argument's value
        # (.u64, or .s64 when signed). The driver takes an array of the addresses of the values, which it
        # copies when the launch is enqueued: they need to live only until cuLaunchKernel returns.
        values = [_parameter(a) for a in arguments]
        addresses = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.addressof(v) for v in values])
        self._check(self._cu.cuLaunchKernel(
            function, *kernel.grid, *kernel.block, kernel.dynamic_shared_bytes, self.stream,
            ctypes.addressof(addresses) if values else 0, 0), "cuLaunchKernel", kernel.name)

    def synchronize(self) -> None:
        self._check(self._cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize")

    def encode_tensor_map(self, tensor_map: TensorMapInfo, address: int) -> bytes:
        """The 128-byte CUtensorMap ``cuTensorMapEncodeTiled`` encodes for ``tensor_map`` at ``address``."""
        encoded = self._check(self._cu.cuTensorMapEncodeTiled(*tensor_map_arguments(self._cu, tensor_map, address)),
                              "cuTensorMapEncodeTiled")
        return b"".join(int(word).to_bytes(8, "little") for word in encoded.opaque)
