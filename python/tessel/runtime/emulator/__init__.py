"""A PTX emulator: runs GPU kernels with numpy, without a GPU, checking as it goes.

Written from NVIDIA's PTX ISA, not from tessel's code generator, so it
checks tessel's kernels (and another compiler's: the tests run Triton's)
independently. Each block's threads are lanes of numpy arrays with their
own program counters; every block of every grid runs. What it checks, and
what a GPU would not tell you: out-of-bounds and misaligned accesses,
reads of memory nothing wrote, shared-memory races between barriers,
``cp.async`` data read before its ``wait_group`` (a bulk copy's before its
mbarrier phase, a ``wgmma``'s accumulators before its ``wgmma.wait_group``),
shared memory threads wrote read by the async proxy (a bulk or tensor
store, a ``wgmma``) with no ``fence.proxy.async`` between,
warp- and warpgroup-collective instructions reached by part of a warp or
warpgroup, launch shapes and shared memory
over the chip's limits (those of its ``tessel.targets`` description). What
it cannot tell: timing, bank conflicts, the memory model between blocks
(blocks never wait for each other here).

>>> from tessel.runtime import emulator
>>> gpu = emulator.Device("sm_80")
>>> mod = gpu.load_ptx(ptx_text)
>>> x, out = gpu.upload(np_array), gpu.alloc(4 * 3000)
>>> mod.launch("kernel", grid=(12, 1, 1), block=(256, 1, 1), args=[x, out, 3000, None])
>>> y = gpu.download(out, dtype=np.float32, shape=(3000,))

:class:`EmulatorDriver` is the same device as a driver of
:class:`tessel.runtime.Executable` (``tessel.load(path, emulate=True)``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..artifact import KernelInfo, SizeValue, TargetInfo
from ..tensormaps import TensorMapInfo
from .decode import decode_kernel
from .machine import Kernel, Launch, params_bytes, run
from .memory import GlobalMemory
from .ptx import EmulationError, parse
from .tensormap import encode_tensor_map

__all__ = ["Buffer", "Device", "EmulationError", "EmulatorDriver", "Module", "encode_tensor_map"]


@dataclass(frozen=True)
class Buffer:
    """Device memory of an emulated :class:`Device`."""

    pointer: int
    nbytes: int

    def __int__(self) -> int:
        return self.pointer


def _described(target: str | TargetInfo) -> TargetInfo:
    """``target``'s description: given, or a CUDA chip of ``tessel.targets`` by name."""
    if isinstance(target, TargetInfo):
        return target
    # The compiler's table: the emulator is a development tool, run where
    # tessel's extension is installed; artifacts bring their description.
    from ... import targets

    if target not in targets.names("cuda"):
        raise EmulationError(f"unknown target {target!r}; the emulator knows {', '.join(targets.names('cuda'))}")
    return TargetInfo.from_json(targets.get(target).to_json())


class Device:
    """An emulated GPU of target ``target``: a CUDA chip of
    ``tessel.targets`` by name ("sm_80", "sm_90", ...), or a description
    (an artifact's ``target_description``), whose limits launches are
    checked against. ``max_steps`` bounds the instruction steps of one
    wave of blocks, so that an endless loop is an error, not a hang. New
    allocations hold a poison pattern (all bits set) as a GPU's hold
    garbage; with ``check_initialized`` a kernel's read of global or local
    bytes nothing wrote is an error (as compute-sanitizer's initcheck)."""

    def __init__(self, target: str | TargetInfo = "sm_80", *, max_steps: int = 20_000_000,
                 check_initialized: bool = False) -> None:
        self.description = _described(target)
        self.target, self.max_steps = self.description.name, max_steps
        self.memory = GlobalMemory(check_initialized)
        self.steps = 0  # instruction steps run so far, over all launches

    def alloc(self, nbytes: int) -> Buffer:
        return Buffer(self.memory.alloc(int(nbytes)), int(nbytes))

    def free(self, buffer: Buffer | int) -> None:
        try:
            self.memory.free(int(buffer))
        except KeyError:
            raise EmulationError(f"free of {int(buffer):#x}, which is not allocated") from None

    def upload(self, array: np.ndarray) -> Buffer:
        """A new buffer holding ``array``'s bytes."""
        array = np.ascontiguousarray(array)
        buffer = self.alloc(array.nbytes)
        self.memory.host_write(buffer.pointer, array.view(np.uint8).reshape(-1))
        return buffer

    def write(self, pointer: int, array: np.ndarray) -> None:
        try:
            self.memory.host_write(int(pointer), np.ascontiguousarray(array).view(np.uint8).reshape(-1))
        except KeyError:
            raise EmulationError(f"a write of {array.nbytes} bytes at {int(pointer):#x} is outside every "
                                 "allocation") from None

    def read(self, pointer: int, nbytes: int) -> np.ndarray:
        try:
            return self.memory.host_read(int(pointer), nbytes)
        except KeyError:
            raise EmulationError(f"a read of {nbytes} bytes at {int(pointer):#x} is outside every "
                                 "allocation") from None

    def download(self, buffer: Buffer | int, dtype: Any = np.uint8, shape: Sequence[int] | None = None) -> np.ndarray:
        """The buffer's contents as an array of ``dtype`` and ``shape`` (default: all of it, flat)."""
        dtype = np.dtype(dtype)
        if shape is None:
            nbytes = buffer.nbytes if isinstance(buffer, Buffer) else 0
            shape = (nbytes // dtype.itemsize,)
        nbytes = math.prod(shape) * dtype.itemsize
        return self.read(int(buffer), nbytes).view(dtype).reshape(shape)

    def copy(self, target: int, source: int, nbytes: int) -> None:
        self.write(target, self.read(source, nbytes))

    def load_ptx(self, ptx: str) -> Module:
        """The module of PTX text ``ptx``, every entry decoded; EmulationError
        (a tessel.RuntimeError) naming the PTX line of anything it cannot run."""
        return Module(self, ptx)


def _capability(target: str) -> int:
    match = re.fullmatch(r"sm_(\d+)a?", target.split(",")[0].strip())
    if match is None:
        raise EmulationError(f"the PTX targets {target!r}, not an sm_XX chip")
    return int(match.group(1))


class Module:
    """Loaded PTX: its entries, decoded, and its global variables in device memory."""

    def __init__(self, device: Device, ptx: str) -> None:
        self.device = device
        self.ptx = parse(ptx)
        needed = _capability(self.ptx.target or "sm_0")
        if needed > device.description.sm:
            raise EmulationError(f"the PTX targets {self.ptx.target}; this device is {device.target}")
        self.globals: dict[str, int] = {}
        for variable in self.ptx.variables:
            if variable.space in ("global", "const"):
                if variable.extern:
                    raise EmulationError(f"external {variable.space} variable {variable.name} is not defined",
                                         line=variable.line)
                pointer = device.memory.alloc(variable.size)
                device.memory.host_write(pointer, variable.init or bytes(variable.size))
                self.globals[variable.name] = pointer
        self.kernels: dict[str, Kernel] = {
            name: decode_kernel(self.ptx, function, self.globals, device.description.sm)
            for name, function in self.ptx.functions.items() if function.is_entry}

    def launch(self, name: str, grid: Sequence[int], block: Sequence[int], args: Sequence[Any],
               shared_bytes: int = 0) -> int:
        """Runs kernel ``name`` on every block of ``grid``; ``args`` are
        buffers (or device addresses), None for null pointers, and Python
        numbers for scalar parameters. Returns the instruction steps run."""
        kernel = self.kernels.get(name)
        if kernel is None:
            raise EmulationError(f"the PTX has no .entry {name!r} (entries: {', '.join(self.kernels) or 'none'})")
        grid, block = _dims(grid, "grid"), _dims(block, "block")
        self._check_launch(kernel, grid, block, int(shared_bytes))
        values = [int(a) if isinstance(a, Buffer) else a for a in args]
        launch = Launch(grid, block, int(shared_bytes), params_bytes(kernel.function, values),
                        self.device.max_steps)
        steps = run(kernel, launch, self.device.memory)
        self.device.steps += steps
        return steps

    def _check_launch(self, kernel: Kernel, grid: tuple[int, int, int], block: tuple[int, int, int],
                      shared: int) -> None:
        limits, name = self.device.description, kernel.name
        threads = math.prod(block)
        if threads > limits.max_threads_per_block or min(block) < 1:
            raise EmulationError(f"block {block} of kernel {name} has {threads} threads; "
                                 f"{self.device.target} allows 1 to {limits.max_threads_per_block}", kernel=name)
        if any(b > m for b, m in zip(block, limits.max_block)):
            raise EmulationError(f"block {block} of kernel {name} is over {self.device.target}'s limits "
                                 f"{limits.max_block}", kernel=name)
        if min(grid) < 1 or any(g > m for g, m in zip(grid, limits.max_grid)):
            raise EmulationError(f"grid {grid} of kernel {name} is over {self.device.target}'s limits "
                                 f"{limits.max_grid}", kernel=name)
        directives = kernel.function.directives
        if ".reqntid" in directives and tuple(directives[".reqntid"]) + (1,) * (3 - len(directives[".reqntid"])) \
                != block:
            raise EmulationError(f"kernel {name} requires blocks of {directives['.reqntid']} threads (.reqntid), "
                                 f"launched with {block}", kernel=name)
        if ".maxntid" in directives and threads > math.prod(directives[".maxntid"]):
            raise EmulationError(f"kernel {name} allows at most {directives['.maxntid']} threads (.maxntid), "
                                 f"launched with {block}", kernel=name)
        if kernel.static_shared > limits.static_shared_per_block:
            raise EmulationError(f"kernel {name} declares {kernel.static_shared} bytes of static shared memory; "
                                 f"the limit is {limits.static_shared_per_block}", kernel=name)
        if kernel.dynamic_offset + shared > limits.shared_per_block:
            raise EmulationError(f"kernel {name} asks {kernel.dynamic_offset + shared} bytes of shared memory; "
                                 f"{self.device.target} has {limits.shared_per_block} per block", kernel=name)


def _dims(value: Sequence[int], what: str) -> tuple[int, int, int]:
    dims = tuple(int(v) for v in value)
    if not 1 <= len(dims) <= 3:
        raise EmulationError(f"a {what} has 1 to 3 dimensions, got {value}")
    return dims + (1,) * (3 - len(dims))


class EmulatorDriver:
    """An emulated :class:`Device` of ``target`` (see there; an artifact's
    ``target_description`` when it runs one) as a driver of
    :class:`tessel.runtime.Executable`."""

    ordinal, stream_handle = 0, None
    exports_dlpack = False  # its pointers are no CUDA memory
    # Buffers of symbolic shape get each call's bytes, not the largest: an access past a buffer's end
    # at the call's sizes is then the emulator's error, not a silent read of pooled memory.
    exact_sizes = True

    def __init__(self, target: str | TargetInfo = "sm_90", **options: Any) -> None:
        self.device = Device(target, **options)
        self.device_name = f"PTX emulator ({self.device.target})"
        self._modules: dict[str, Module] = {}

    def load(self, kernel: KernelInfo) -> Module:
        if kernel.ptx not in self._modules:
            try:
                self._modules[kernel.ptx] = self.device.load_ptx(kernel.ptx)
            except EmulationError as e:
                if e.kernel is None:
                    e = EmulationError(e.message, kernel=kernel.name, line=e.line, source=e.source, text=e.text)
                raise e from None
        return self._modules[kernel.ptx]

    def alloc(self, nbytes: int) -> int:
        return self.device.alloc(nbytes).pointer

    def free(self, pointer: int) -> None:
        self.device.free(pointer)

    def upload(self, pointer: int, array: np.ndarray) -> None:
        self.device.write(pointer, array)

    def download(self, array: np.ndarray, pointer: int) -> None:
        array.reshape(-1).view(np.uint8)[...] = self.device.read(pointer, array.nbytes)

    def copy(self, target: int, source: int, nbytes: int) -> None:
        self.device.copy(target, source, nbytes)

    def launch(self, function: Module, kernel: KernelInfo, arguments: Sequence[int | SizeValue]) -> None:
        # A size argument is a Python int for its .u64/.s64 parameter (params_bytes checks its range).
        function.launch(kernel.name, kernel.grid, kernel.block,
                        [a.value if isinstance(a, SizeValue) else a for a in arguments], kernel.dynamic_shared_bytes)

    def synchronize(self) -> None:
        pass

    def encode_tensor_map(self, tensor_map: TensorMapInfo, address: int) -> bytes:
        """The emulator's encoding of ``tensor_map`` at ``address`` (:mod:`.tensormap`), from the
        same fields the CUDA driver gives cuTensorMapEncodeTiled."""
        m = tensor_map
        return encode_tensor_map(address, m.dtype, m.dims, m.strides, m.box, m.element_strides, swizzle=m.swizzle,
                                 fill=m.fill, interleave=m.interleave, l2_promotion=m.l2_promotion)
