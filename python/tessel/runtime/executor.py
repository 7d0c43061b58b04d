"""Running an artifact's host program on a device driver.

:class:`Executable` walks the manifest's steps (alloc, launch, copy, free)
against a :class:`Driver`: :class:`~tessel.runtime.cuda_driver.CudaDriver`
on a GPU, :class:`DryDriver` anywhere (it checks every step, pointer and
launch shape, and launches nothing). Temporaries and uploaded inputs are
freed even when a step fails.

Tensor maps (TMA): a launch argument may be one of the manifest's maps,
which the executor has its driver encode for the address its buffer has in
this call (``Driver.encode_tensor_map``: ``cuTensorMapEncodeTiled`` on a
GPU, the emulator's encoding, the dry driver's checks) into 128 bytes of
device memory of its own, whose address the kernel gets. A map is encoded
again only when its buffer's address or its sizes changed since (an input
used in place, a pooled buffer handed out elsewhere, another call's sizes).

Size symbols (docs/dynamic-shapes.md): each call binds them from the
inputs' shapes (``Artifact.bind``: ValueError naming the argument, the dim,
the value and the range, as the CPU executable's) and evaluates the
manifest's expressions once per binding (``Artifact.sized``, kept for the
last ``SIZED_CACHE`` bindings): buffer shapes, launch shapes, tensor maps,
and the size arguments kernels get as 64-bit integer parameters. Memory is
pooled by each buffer's bytes at the largest sizes, so that calls at any
sizes reuse it: the program's memory is that of a call at the largest
sizes, reached by the first call. A driver with ``exact_sizes`` (the
emulator) gets each call's sizes instead, so that its bounds checks see
them.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from .. import dlpack
from ..dtypes import described, host_array
from ..errors import RuntimeError, UnsupportedError
from .artifact import Artifact, BufferInfo, KernelInfo, MapArgument, Sized, SizeValue, TargetInfo
from .sizes import sizes_text
from .tensormaps import ADDRESS_ALIGNMENT, SIZE, TensorMapError, TensorMapInfo, check, field_path

__all__ = ["SIZED_CACHE", "DeviceArray", "Driver", "DryDriver", "Executable"]

SIZED_CACHE = 64  # bindings of the size symbols whose evaluated manifest an executable keeps


class Driver(Protocol):
    """What the executor needs from a device."""

    device_name: str
    ordinal: int  # the CUDA device, as DLPack names it
    stream_handle: int | None  # the stream kernels run on, for DLPack producers to order work before
    exports_dlpack: bool  # whether DeviceArrays may hand its pointers to DLPack consumers as CUDA memory
    # Whether buffers of symbolic shape get each call's bytes rather than the largest (optional; False).
    exact_sizes: bool

    def load(self, kernel: KernelInfo) -> Any: ...
    def alloc(self, nbytes: int) -> int: ...
    def free(self, pointer: int) -> None: ...
    def upload(self, pointer: int, array: np.ndarray) -> None: ...
    def download(self, array: np.ndarray, pointer: int) -> None: ...
    def copy(self, target: int, source: int, nbytes: int) -> None: ...
    # ``kernel`` at the call's sizes (grid and block ints); ``arguments``: device addresses, and each size
    # argument's value (a 64-bit integer parameter).
    def launch(self, function: Any, kernel: KernelInfo, arguments: Sequence[int | SizeValue]) -> None: ...
    def synchronize(self) -> None: ...
    # The 128 bytes a kernel reads tensor map ``tensor_map`` from, its global address ``address``.
    def encode_tensor_map(self, tensor_map: TensorMapInfo, address: int) -> bytes: ...


class DryDriver:
    """A device that checks instead of running: allocations are address
    ranges, every pointer a step passes must be a live allocation, launch
    shapes and shared memory must fit ``target`` (the description of the
    artifact's target), every size argument must fit its 64-bit parameter,
    every tensor map must pass the driver's rules with its address and lie
    inside a live allocation. Kernels do not run; downloads give zeros.
    ``launches`` records each launch's kernel and arguments, ``launch_shapes``
    its grid and block."""

    device_name = "dry run (no device)"
    ordinal, stream_handle = 0, None
    exports_dlpack = True  # DLPack exports of its fake pointers are checked, never read
    exact_sizes = False  # pooled as on a GPU

    def __init__(self, target: TargetInfo) -> None:
        self.target = target
        self._next = 1 << 20
        self.live: dict[int, int] = {}  # pointer -> bytes
        self.launches: list[tuple[str, tuple[int | SizeValue, ...]]] = []
        self.launch_shapes: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

    def load(self, kernel: KernelInfo) -> str:
        return kernel.name

    def alloc(self, nbytes: int) -> int:
        pointer, self._next = self._next, self._next + max(nbytes, 1) + 255 & ~255
        self.live[pointer] = nbytes
        return pointer

    def free(self, pointer: int) -> None:
        if self.live.pop(pointer, None) is None:
            raise RuntimeError(f"dry run: free of {pointer:#x}, which is not allocated")

    def _check(self, pointer: int, nbytes: int, what: str) -> None:
        if not any(start <= pointer and pointer + nbytes <= start + size for start, size in self.live.items()):
            raise RuntimeError(f"dry run: {what} touches {nbytes} bytes at {pointer:#x}, "
                               "which is not inside a live allocation")

    def upload(self, pointer: int, array: np.ndarray) -> None:
        self._check(pointer, array.nbytes, "an upload")

    def download(self, array: np.ndarray, pointer: int) -> None:
        self._check(pointer, array.nbytes, "a download")
        array[...] = 0

    def copy(self, target: int, source: int, nbytes: int) -> None:
        self._check(source, nbytes, "a copy")
        self._check(target, nbytes, "a copy")

    def launch(self, function: str, kernel: KernelInfo, arguments: Sequence[int | SizeValue]) -> None:
        target = self.target
        shape = tuple(kernel.grid) + tuple(kernel.block)
        if not all(type(n) is int for n in shape):
            raise RuntimeError(f"dry run: kernel {kernel.name} launched with sizes not evaluated: "
                               f"{sizes_text(kernel.grid)} x {sizes_text(kernel.block)}")
        if min(shape) < 1 or int(np.prod(kernel.block)) > target.max_threads_per_block or any(
                n > m for n, m in zip(shape, target.max_grid + target.max_block)):
            raise RuntimeError(f"dry run: kernel {kernel.name} launch {kernel.grid} x {kernel.block} "
                               f"is over the hardware limits of {target.name}")
        if kernel.dynamic_shared_bytes > target.shared_per_block:
            raise RuntimeError(f"dry run: kernel {kernel.name} asks {kernel.dynamic_shared_bytes} bytes "
                               "of shared memory")
        for k, argument in enumerate(arguments):
            if isinstance(argument, SizeValue):
                low, high = (-(1 << 63), (1 << 63) - 1) if argument.signed else (0, (1 << 64) - 1)
                if not low <= argument.value <= high:
                    raise RuntimeError(f"dry run: kernel {kernel.name} gets {argument.value} as argument {k}, "
                                       f"which its {'.s64' if argument.signed else '.u64'} parameter cannot hold")
            elif argument not in self.live:
                raise RuntimeError(f"dry run: kernel {kernel.name} gets {argument:#x}, "
                                   "which is not a live allocation")
        self.launches.append((kernel.name, tuple(arguments)))
        self.launch_shapes.append((tuple(kernel.grid), tuple(kernel.block)))

    def encode_tensor_map(self, tensor_map: TensorMapInfo, address: int) -> bytes:
        where = f"the tensor map of buffer {tensor_map.buffer}"
        try:
            check(tensor_map, address, field_path(where))
        except TensorMapError as e:
            raise RuntimeError(f"dry run: {e}") from None
        self._check(address, tensor_map.extent, where)
        return bytes(SIZE)  # no device reads it

    def synchronize(self) -> None:
        pass


class DeviceArray:
    """A result left on the device. DLPack (``torch.from_dlpack``, cupy, jax)
    and ``__cuda_array_interface__`` (numba; not for bfloat16, which it cannot
    name) take it without a copy; ``numpy()`` copies it to the host. Its
    memory goes back to the executable's pool when the last reference,
    including a consumer's, goes."""

    def __init__(self, driver: Driver, pointer: int, shape: tuple[int, ...], dtype: np.dtype,
                 release: Callable[[int, int], None] | None = None) -> None:
        # ``release(pointer, nbytes)`` takes the memory back (nbytes: the array's); default: freed.
        self._driver, self.pointer, self.shape, self.dtype = driver, pointer, shape, dtype
        self._release = release or (lambda pointer, nbytes: driver.free(pointer))

    def __dlpack_device__(self) -> tuple[int, int]:
        return dlpack.CUDA, self._driver.ordinal

    def __dlpack__(self, *, stream: int | None = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        # The executable synchronized its stream before returning this
        # array, so the consumer's stream needs no ordering.
        if not self._driver.exports_dlpack:
            raise BufferError(f"a DeviceArray of {self._driver.device_name} is no CUDA memory; use .numpy()")
        if dl_device not in (None, self.__dlpack_device__()) or copy:
            raise BufferError("a tessel DeviceArray is exported only in place, on its own device")
        return dlpack.export(self.pointer, self.shape, self.dtype, self.__dlpack_device__(), self)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if not self._driver.exports_dlpack:
            raise AttributeError(f"a DeviceArray of {self._driver.device_name} is no CUDA memory")
        if self.dtype.kind == "V":
            raise AttributeError(f"__cuda_array_interface__ has no {self.dtype.name}; use DLPack")
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.pointer, False),
                "version": 3, "strides": None}

    def numpy(self) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        self._driver.synchronize()
        self._driver.download(out, self.pointer)
        return out

    def __del__(self) -> None:
        if getattr(self, "pointer", None) is not None:
            self._release(self.pointer, int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize)
            self.pointer = None


def _view(value: Any, driver: Driver) -> dlpack.DLTensorView | np.ndarray:
    """``value`` as a view of device memory (CUDA DLPack or
    ``__cuda_array_interface__``), or as a host array (numpy, CPU DLPack)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        device = tuple(value.__dlpack_device__())
        if device[0] == dlpack.CPU:
            return dlpack.read(value).numpy()
        if device != (dlpack.CUDA, driver.ordinal):
            raise UnsupportedError(f"DLPack device {device} is neither the CPU nor CUDA device {driver.ordinal}")
        view = dlpack.read(value, stream=driver.stream_handle)
    elif hasattr(value, "__cuda_array_interface__"):
        interface = value.__cuda_array_interface__
        shape, dtype = tuple(interface["shape"]), np.dtype(interface["typestr"])
        strides = interface.get("strides")
        strides = (tuple(s // dtype.itemsize for s in strides) if strides is not None
                   else dlpack.row_major_strides(shape))
        view = dlpack.DLTensorView(interface["data"][0], shape, strides, dtype, (dlpack.CUDA, driver.ordinal), value)
    else:
        return np.asarray(value)
    if not view.contiguous:
        raise UnsupportedError(f"device arrays must be contiguous (row-major); got strides {view.strides} "
                               f"(in elements) for shape {view.shape}")
    return view


class Executable:
    """An artifact ready to run on ``driver``: kernels loaded, constants
    uploaded once. Call it with one array per input. Device memory that a
    call frees is kept in a pool for the next call (allocating on a GPU
    synchronizes it), by each buffer's bytes at the largest sizes (see the
    module's doc); :meth:`close` returns everything."""

    def __init__(self, artifact: Artifact, driver: Driver) -> None:
        self.artifact, self.driver = artifact, driver
        self._functions = [driver.load(k) for k in artifact.kernels]
        self._constants: dict[int, int] = {}
        self.pool: dict[int, list[int]] = {}  # bytes -> free device pointers
        # Tensor map -> (device memory of its 128 bytes, the map and the buffer address they were encoded for).
        self._maps: dict[int, tuple[int, tuple[TensorMapInfo, int] | None]] = {}
        # The artifact at the latest bindings of its symbols, least recently used first.
        self._sized: OrderedDict[tuple[tuple[str, int], ...], Sized] = OrderedDict()
        self._exact_sizes = bool(getattr(driver, "exact_sizes", False))
        self._views: dict[int, list[int]] = {}  # buffer -> the views that alias it
        for b in artifact.buffers:
            if b.kind == "view":
                self._views.setdefault(b.view_of, []).append(b.id)
        # Kernels move vectors of the target's vector_bytes (cp.async, ld/st.global.v4), and a tensor
        # map's address must be 16-byte aligned: the alignment a device input needs to be used in place.
        self._input_alignment = {b.index: artifact.target_description.vector_bytes for b in artifact.buffers
                                 if b.kind == "input"}
        for m in artifact.tensor_maps:
            described = artifact.buffers[m.buffer]
            if described.kind == "view":
                described = artifact.buffers[described.view_of]
            if described.kind == "input":
                self._input_alignment[described.index] = max(self._input_alignment[described.index],
                                                             ADDRESS_ALIGNMENT)
        try:
            for b in artifact.buffers:
                if b.kind == "constant":
                    self._constants[b.id] = driver.alloc(b.nbytes)
                    driver.upload(self._constants[b.id], np.ascontiguousarray(artifact.constant(b)))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Frees the constants, the tensor maps and the pool (also done when collected)."""
        for pointer in self._constants.values():
            self.driver.free(pointer)
        for pointer, _ in self._maps.values():
            self.driver.free(pointer)
        for pointers in self.pool.values():
            for pointer in pointers:
                self.driver.free(pointer)
        self._constants, self._maps, self.pool = {}, {}, {}

    def __del__(self) -> None:
        if getattr(self, "_constants", None) or getattr(self, "pool", None) or getattr(self, "_maps", None):
            self.close()

    def _alloc(self, nbytes: int) -> int:
        free = self.pool.get(nbytes)
        return free.pop() if free else self.driver.alloc(nbytes)

    def _release(self, pointer: int, nbytes: int) -> None:
        self.pool.setdefault(nbytes, []).append(pointer)

    def _release_allocated(self, pointer: int, nbytes: int, *, capacity: int) -> None:
        """A DeviceArray's release: its memory back to the pool as the ``capacity`` bytes it was
        allocated with (the largest sizes'), not the ``nbytes`` of its array."""
        self._release(pointer, capacity)

    def _capacity(self, buffer: int, sized: Sized) -> int:
        """The bytes to allocate for ``buffer`` in the call at ``sized``: its
        bytes at the largest sizes, which the pool keys memory by, so that
        a call at any sizes reuses what an earlier call freed (the call's own
        bytes for a driver with ``exact_sizes``; the same for static buffers)."""
        return sized.nbytes[buffer] if self._exact_sizes else self.artifact.largest_nbytes[buffer]

    def _input(self, index: int, value: Any, held: list[Any]) -> dlpack.DLTensorView | np.ndarray:
        """Argument ``index`` as a view of device memory or a host array, its
        dtype, rank and static dims checked (its symbols are bound later).
        ``held`` keeps what the caller must keep alive until the kernels are done."""
        shape, dtype = self.artifact.inputs[index]
        try:
            view = _view(value, self.driver)
        except Exception as e:  # noqa: BLE001 - producers raise BufferError, RuntimeError, TypeError, ...
            raise RuntimeError(f"{self.artifact.entry}: argument {index}: {e}") from None
        device = isinstance(view, dlpack.DLTensorView)
        # Host arrays of the dtype in the other byte order are converted, as numpy would.
        if (len(view.shape) != len(shape) or any(type(d) is int and d != n for d, n in zip(shape, view.shape))
                or (view.dtype != dtype and (device or view.dtype.newbyteorder("=") != dtype))):
            raise RuntimeError(f"{self.artifact.entry}: argument {index} must be {described(dtype)}"
                               f"{sizes_text(shape)}, got {described(view.dtype)}{list(view.shape)}")
        if device:
            held.append(view.owner)
        return view

    def _argument(self, buffer: BufferInfo, view: dlpack.DLTensorView | np.ndarray, sized: Sized,
                  owned: list[tuple[int, int]]) -> int:
        """The device pointer of input ``buffer`` given as ``view``: device
        memory in place, host memory copied into memory added to ``owned``."""
        device = isinstance(view, dlpack.DLTensorView)
        if device and view.pointer % self._input_alignment[buffer.index] == 0:
            return view.pointer
        nbytes, capacity = sized.nbytes[buffer.id], self._capacity(buffer.id, sized)
        pointer = self._alloc(capacity)
        owned.append((pointer, capacity))
        if device:
            # A view at an odd offset (a slice of a larger tensor) is copied
            # to an aligned buffer first.
            self.driver.copy(pointer, view.pointer, nbytes)
        else:
            self.driver.upload(pointer, host_array(view, buffer.dtype))
        return pointer

    def _at(self, values: dict[str, int]) -> Sized:
        """The artifact at the sizes ``values``, evaluated once per binding
        (the latest ``SIZED_CACHE`` kept)."""
        key = tuple(sorted(values.items()))
        sized = self._sized.get(key)
        if sized is None:
            sized = self._sized[key] = self.artifact.sized(values)
            if len(self._sized) > SIZED_CACHE:
                self._sized.popitem(last=False)
        else:
            self._sized.move_to_end(key)
        return sized

    def _tensor_map(self, index: int, pointers: dict[int, int], sized: Sized) -> int:
        """The device address of tensor map ``index``'s 128 bytes, encoded
        for the address its buffer has now (``pointers``: buffer -> address)
        and the call's sizes (``sized``)."""
        tensor_map = sized.tensor_maps[index]
        encoding = (tensor_map, pointers[tensor_map.buffer])
        slot, encoded_for = self._maps.get(index, (None, None))
        if slot is not None and encoded_for == encoding:
            return slot
        raw = self.driver.encode_tensor_map(*encoding)
        if slot is None:
            slot = self.driver.alloc(SIZE)
            self._maps[index] = (slot, None)
        # Calls end synchronized and a buffer has one address in a call: no kernel this executable
        # launched still reads the bytes replaced here.
        self.driver.upload(slot, np.frombuffer(raw, np.uint8))
        self._maps[index] = (slot, encoding)
        return slot

    def __call__(self, *args: Any, device_outputs: bool = False) -> Any:
        """Runs the program. Inputs: numpy arrays or CPU DLPack tensors
        (copied in), or contiguous CUDA tensors (DLPack, e.g. torch, cupy,
        jax; or ``__cuda_array_interface__``), used in place. Results:
        numpy arrays, or :class:`DeviceArray` with ``device_outputs``; a
        tuple when there are several. With size symbols, the inputs' shapes
        bind them (ValueError when a size is outside its range or two that
        must agree do not) and the results have the shapes they give."""
        artifact, driver = self.artifact, self.driver
        if len(args) != len(artifact.inputs):
            raise RuntimeError(f"{artifact.entry} takes {len(artifact.inputs)} arguments, got {len(args)}")
        held: list[Any] = []  # the producers' exports of device inputs, until the kernels are done
        views = [self._input(i, a, held) for i, a in enumerate(args)]
        sized = self._at(artifact.bind([v.shape for v in views]))
        owned: list[tuple[int, int]] = []  # (pointer, bytes) released at the end, whatever happens
        pointers: dict[int, int] = dict(self._constants)
        outputs: list[tuple[BufferInfo, int, int]] = []  # (buffer, pointer, bytes allocated)

        def bind(buffer_id: int, pointer: int) -> None:
            for view in [buffer_id] + self._views.get(buffer_id, []):
                pointers[view] = pointer

        try:
            for b in artifact.buffers:
                if b.kind == "input":
                    bind(b.id, self._argument(b, views[b.index], sized, owned))
                elif b.kind == "output":
                    capacity = self._capacity(b.id, sized)
                    outputs.append((b, self._alloc(capacity), capacity))
                    bind(b.id, outputs[-1][1])
                elif b.kind == "constant":
                    bind(b.id, self._constants[b.id])
            for step, arguments in zip(artifact.steps, sized.arguments):
                op = step["op"]
                if op == "alloc":
                    capacity = self._capacity(step["buffer"], sized)
                    owned.append((self._alloc(capacity), capacity))
                    bind(step["buffer"], owned[-1][0])
                elif op == "free":
                    pointer = pointers[step["buffer"]]
                    entry = next(o for o in owned if o[0] == pointer)
                    owned.remove(entry)
                    self._release(*entry)
                elif op == "copy":
                    driver.copy(pointers[step["target"]], pointers[step["source"]], sized.nbytes[step["source"]])
                else:
                    driver.launch(self._functions[step["kernel"]], sized.kernels[step["kernel"]],
                                  [pointers[a] if isinstance(a, int) else
                                   self._tensor_map(a.index, pointers, sized) if isinstance(a, MapArgument) else a
                                   for a in arguments])
            driver.synchronize()
            results: list[Any] = []
            for b, pointer, capacity in sorted(outputs, key=lambda o: o[0].index):
                shape = sized.shapes[b.id]
                if device_outputs:
                    # Back to the pool under the bytes it was allocated with, not its array's.
                    release = functools.partial(self._release_allocated, capacity=capacity)
                    results.append(DeviceArray(driver, pointer, shape, b.dtype, release))
                else:
                    host = np.empty(shape, b.dtype)
                    driver.download(host, pointer)
                    results.append(host)
            if device_outputs:
                outputs = []  # the DeviceArrays own them now
        finally:
            for pointer, nbytes in owned:
                self._release(pointer, nbytes)
            for _, pointer, capacity in outputs:
                self._release(pointer, capacity)
        return results[0] if len(results) == 1 else tuple(results)
