"""The emulator's memories: global allocations, a block's shared memory, per-thread local memory.

Every access is checked, as a GPU with a memory checker would:

* global: inside one live allocation (allocations are spaced apart, so
  running off the end of one never lands in the next) and naturally
  aligned. New allocations hold a poison pattern (all bits set: NaN for
  floats, -1 for integers), as a GPU's hold garbage, so results computed
  from bytes nothing wrote do not match; with ``check_initialized`` such a
  read is an error at once (compute-sanitizer's initcheck; it also flags
  dead copies of uninitialized bytes that compilers emit); local memory
  likewise, per thread;
* shared: inside a declared variable or the dynamic region of the block's
  real size, never reading bytes nothing wrote nor the destination of a
  ``cp.async`` still in flight, and free of races. Two threads touching
  the same bytes, at least one writing, with no ``bar.sync`` between them
  is an error, unless both wrote the same value or an mbarrier orders them
  (the first thread arrived on it after its access, the second saw the
  phase complete before its own). Accesses are tracked in
  granules (the largest size that divides every shared access of the
  kernel), which is exact and far cheaper than bytes;
* the asynchronous proxy (Hopper): an initialised mbarrier's bytes are
  only for mbarrier instructions; a ``cp.async.bulk`` into shared memory
  lands at once but is readable by a thread only after it has seen the
  mbarrier phase the copy signals complete (a successful
  ``try_wait``/``test_wait``, or a ``bar.sync`` with a thread that has);
  the source of a bulk store is not to be overwritten before its
  ``cp.async.bulk.wait_group.read``, nor the operands of a
  ``wgmma.mma_async`` before the ``wgmma.wait_group`` that retires it;
  and what the async proxy reads (a bulk or tensor store's source, a
  wgmma's operands) that threads wrote through the generic proxy (st,
  stmatrix, cp.async) must have a ``fence.proxy.async`` ordered between
  the write and the read: by the writer after its write and before the
  barrier or mbarrier that orders the write before the reader, or by the
  reading thread after it (the ISA's proxy fence on the causality path);
  without one the hardware may read stale data, here it is an error naming
  the granule and the writer's instruction;
* ``bar.warp.sync`` orders the shared accesses of its threads as a
  barrier among them (the ISA's memory ordering of the warp barrier).

A failed check raises :class:`Fault` with the lanes at fault; the machine
turns it into an EmulationError naming the block, thread and instruction.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from .ptx import Instruction

__all__ = ["BULK_SOURCE", "Fault", "GlobalMemory", "LocalMemory", "MBarrier", "SharedMemory", "GLOBAL_BASE",
           "LOCAL_WINDOW", "PARAM_WINDOW", "SHARED_WINDOW", "WGMMA_OPERAND", "WINDOW_BYTES"]

# Generic address space: a window for shared memory, one for local memory,
# one for the kernel's parameters (read-only, e.g. a grid-constant tensor map),
# global allocations above them (cvta.to.global is the identity, as on NVIDIA GPUs).
SHARED_WINDOW = 1 << 40
LOCAL_WINDOW = 2 << 40
PARAM_WINDOW = 3 << 40
WINDOW_BYTES = 1 << 32
GLOBAL_BASE = 1 << 44
# Allocations are 256-byte aligned (as cudaMalloc) with a gap after each.
_ALIGN, _GAP = 256, 4096


class Fault(Exception):
    """A failed memory or synchronization check: ``lanes`` are the wave
    lanes at fault (the first is reported); ``{other}`` in the message
    stands for the thread of wave lane ``other`` (the other side of a race)."""

    def __init__(self, message: str, lanes: np.ndarray, other: int | None = None) -> None:
        super().__init__(message)
        self.message, self.lanes, self.other = message, np.asarray(lanes).reshape(-1), other


def _first(mask: np.ndarray, lanes: np.ndarray, size: int = 1) -> np.ndarray:
    """The lanes of ``lanes`` (each repeated ``size`` times in ``mask``) where ``mask`` holds."""
    return lanes[np.flatnonzero(mask.reshape(len(lanes), -1).any(axis=1))] if size > 1 else lanes[mask]


class GlobalMemory:
    """Device memory: live allocations in an address space with gaps."""

    POISON = 0xFF

    def __init__(self, check_initialized: bool = False) -> None:
        self.check_initialized = check_initialized
        self._next = GLOBAL_BASE
        self.buffers: dict[int, np.ndarray] = {}  # base -> bytes (padded to 16)
        self.written: dict[int, np.ndarray] = {}  # base -> bool per byte
        self.sizes: dict[int, int] = {}
        self._index()

    def _index(self) -> None:
        bases = sorted(self.buffers)
        self._bases = np.array(bases, dtype=np.uint64)
        self._ends = np.array([b + self.sizes[b] for b in bases], dtype=np.uint64)
        self._order = bases  # sorted

    def alloc(self, nbytes: int) -> int:
        base = self._next
        padded = max(nbytes + 15 & ~15, 16)
        self.buffers[base] = np.full(padded, self.POISON, np.uint8)
        self.written[base] = np.zeros(padded, bool)
        self.sizes[base] = nbytes
        self._next = base + padded + _GAP + _ALIGN - 1 & ~(_ALIGN - 1)
        self._index()
        return base

    def free(self, base: int) -> None:
        if base not in self.buffers:
            raise KeyError(base)
        del self.buffers[base], self.written[base], self.sizes[base]
        self._index()

    def find(self, pointer: int, nbytes: int) -> tuple[int, int] | None:
        """(base, offset) of ``nbytes`` at ``pointer`` inside one allocation."""
        i = bisect.bisect_right(self._order, pointer) - 1
        if i >= 0 and pointer + nbytes <= self._order[i] + self.sizes[self._order[i]]:
            return self._order[i], pointer - self._order[i]
        return None

    def host_write(self, pointer: int, data: bytes | np.ndarray) -> None:
        raw = np.frombuffer(bytes(data) if not isinstance(data, np.ndarray) else data.tobytes(), np.uint8)
        found = self.find(pointer, raw.size)
        if found is None:
            raise KeyError(pointer)
        base, offset = found
        self.buffers[base][offset:offset + raw.size] = raw
        self.written[base][offset:offset + raw.size] = True

    def host_read(self, pointer: int, nbytes: int) -> np.ndarray:
        found = self.find(pointer, nbytes)
        if found is None:
            raise KeyError(pointer)
        base, offset = found
        return self.buffers[base][offset:offset + nbytes].copy()

    def _groups(self, addresses: np.ndarray, size: int, lanes: np.ndarray, what: str,
                align: int | None = None) -> list[tuple[int, np.ndarray | None, np.ndarray]]:
        """The accesses by allocation, after the bounds and alignment checks:
        [(base, which of them (None: all), byte offsets)]."""
        align = size if align is None else align
        if align > 1:
            misaligned = addresses % np.uint64(align)
            if misaligned.any():
                bad = np.flatnonzero(misaligned)[0]
                raise Fault(f"misaligned {what} of {size} bytes at {int(addresses[bad]):#x}", lanes[bad:bad + 1])
        if not self._order:
            raise Fault(f"{what} of {size} bytes at {int(addresses[0]):#x}: no memory is allocated", lanes[:1])
        low, high = int(addresses.min()), int(addresses.max())
        one = self.find(low, high + size - low)
        if one is not None:  # all in one allocation
            return [(one[0], None, (addresses - np.uint64(one[0])).astype(np.int64))]
        which = np.searchsorted(self._bases, addresses, side="right").astype(np.int64) - 1
        safe = np.maximum(which, 0)
        inside = (which >= 0) & (addresses + np.uint64(size) <= self._ends[safe])
        if not inside.all():
            bad = np.flatnonzero(~inside)[0]
            raise Fault(f"{what} of {size} bytes at {int(addresses[bad]):#x} is outside every live "
                        "allocation (out of bounds)", lanes[bad:bad + 1])
        groups = []
        for position in np.unique(safe):
            base = self._order[position]
            pick = safe == position
            groups.append((base, pick, (addresses[pick] - np.uint64(base)).astype(np.int64)))
        return groups

    def load(self, addresses: np.ndarray, size: int, lanes: np.ndarray, align: int | None = None) -> np.ndarray:
        """``size`` bytes at each address (aligned to ``align``, default
        ``size``), as a (k, size) uint8 array."""
        width = _width(size, size if align is None else align)
        groups = self._groups(addresses, size, lanes, "load", align)
        out = None if len(groups) == 1 else np.empty((len(addresses), size), np.uint8)
        for base, pick, offsets in groups:
            if self.check_initialized:
                seen = self.written[base][offsets[:, None] + np.arange(size)]
                if not seen.all():
                    bad = np.flatnonzero(~seen.all(axis=1))[0]
                    address = base + int(offsets[bad])
                    raise Fault(f"load of {size} bytes at {address:#x} (byte {address - base} of the "
                                f"{self.sizes[base]}-byte allocation at {base:#x}) reads global memory that "
                                "nothing wrote", (lanes if pick is None else lanes[pick])[bad:bad + 1])
            data = gather(self.buffers[base], offsets, size, width)
            if out is None:
                return data
            out[pick] = data
        return out

    def store(self, addresses: np.ndarray, data: np.ndarray, lanes: np.ndarray, align: int | None = None) -> None:
        """Writes rows of ``data`` ((k, size) uint8) at the addresses (aligned
        to ``align``, default size), in lane order."""
        size = data.shape[1]
        for base, pick, offsets in self._groups(addresses, size, lanes, "store", align):
            scatter(self.buffers[base], offsets, data if pick is None else data[pick], _width(size, size))
            if self.check_initialized:
                self.written[base][offsets[:, None] + np.arange(size)] = True

    def views(self, addresses: np.ndarray, size: int, lanes: np.ndarray, what: str):
        """For read-modify-write (atomics): [(buffer, byte offsets, which lanes)] per allocation."""
        out = []
        for base, pick, offsets in self._groups(addresses, size, lanes, what):
            if self.check_initialized:
                index = offsets[:, None] + np.arange(size)
                if not self.written[base][index].all():
                    raise Fault(f"{what} reads global memory that nothing wrote",
                                (lanes if pick is None else lanes[pick])[:1])
                self.written[base][index] = True
            out.append((self.buffers[base], offsets, np.ones(len(addresses), bool) if pick is None else pick))
        return out


_UNSIGNED = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _width(size: int, align: int) -> int:
    """The widest element (up to 8 bytes) that both divides and aligns accesses of ``size``."""
    for width in (8, 4, 2):
        if size % width == 0 and align % width == 0:
            return width
    return 1


def gather(buffer: np.ndarray, offsets: np.ndarray, size: int, width: int) -> np.ndarray:
    """(k, size) bytes of ``buffer`` at byte ``offsets``, moved as ``width``-byte elements."""
    if width == 1:
        return buffer[offsets[:, None] + np.arange(size)]
    view = buffer.view(_UNSIGNED[width])
    index = offsets // width
    values = view[index] if size == width else view[index[:, None] + np.arange(size // width)]
    return values.view(np.uint8).reshape(len(offsets), size)


def scatter(buffer: np.ndarray, offsets: np.ndarray, data: np.ndarray, width: int) -> None:
    """Writes (k, size) bytes to ``buffer`` at byte ``offsets`` (the last of equal offsets wins)."""
    size = data.shape[1]
    if width == 1:
        buffer[offsets[:, None] + np.arange(size)] = data
        return
    values = np.ascontiguousarray(data).view(_UNSIGNED[width])
    index = offsets // width
    if size == width:
        buffer.view(_UNSIGNED[width])[index] = values[:, 0]
    else:
        buffer.view(_UNSIGNED[width])[index[:, None] + np.arange(size // width)] = values


# SharedMemory.proxy bits of a granule: part of an initialised mbarrier, landed by a
# cp.async.bulk (readable once its phase is seen complete), held by an asynchronous reader in flight
# (a bulk store's source, a wgmma.mma_async's operand), which nothing may overwrite until it retires.
_MBARRIER, _LANDED, BULK_SOURCE, WGMMA_OPERAND = 1, 2, 4, 8
_HELD = {BULK_SOURCE: "the source of a cp.async.bulk store before its cp.async.bulk.wait_group.read",
         WGMMA_OPERAND: "an operand of a wgmma.mma_async in flight, before the wgmma.wait_group that retires it"}
_TX_LIMIT = (1 << 20) - 1  # the ISA's range of an mbarrier's counts


class MBarrier:
    """An mbarrier object (PTX ISA 9.7.13.15): its current phase, the
    arrivals a phase expects and those still pending, its tx-count, who
    initialised it and when (the barrier interval), and for each thread of
    its block how many of its phases the thread has seen complete.

    Its release/acquire order (PTX ISA memory model: arrive.release,
    try_wait.acquire) is a vector clock over the threads of its block:
    ``arrived`` joins the clocks of every release (arrival or complete_tx)
    so far, ``released`` is that join when its latest phase completed,
    which a thread acquires when it sees the phase complete.
    """

    __slots__ = ("phase", "expected", "pending", "tx", "lane", "epoch", "seen", "arrived", "released")

    def __init__(self, count: int, lane: int, epoch: int, threads: int) -> None:
        self.phase, self.expected, self.pending, self.tx = 0, count, count, 0
        self.lane, self.epoch = lane, epoch
        self.seen = np.zeros(threads, np.int64)
        self.arrived = np.zeros(threads, np.int32)
        self.released = np.zeros(threads, np.int32)

    def settle(self) -> None:
        """The phase completes once no arrival and no transaction byte is pending."""
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.expected
            self.released = self.arrived.copy()

    def add_tx(self, count: int, lane: int, what: str) -> None:
        self.tx += count
        if abs(self.tx) > _TX_LIMIT:
            raise Fault(f"{what} takes the mbarrier's tx-count to {self.tx}, outside the ISA's range "
                        f"±{_TX_LIMIT}", np.array([lane]))
        self.settle()


class SharedMemory:
    """The shared memory of each block of a wave, with the race detector.

    ``layout`` marks the bytes of one block's memory that belong to a
    variable or to the dynamic region; the rest (alignment padding between
    variables) is not memory a kernel may touch.
    """

    def __init__(self, blocks: int, size: int, layout: np.ndarray, granule: int, lanes_per_block: int,
                 instructions: Sequence[Instruction] = ()) -> None:
        self.blocks, self.size, self.granule = blocks, size, granule
        self.stride = size + 15 & ~15
        self.data = np.zeros(blocks * self.stride, np.uint8)
        self.layout = layout
        self.gapless = bool(layout.all())
        cells = blocks * (self.stride // granule)
        self.writer = np.full(cells, -1, np.int32)  # -1: never written
        self.write_epoch = np.zeros(cells, np.int32)
        self.reader = np.full(cells, -1, np.int32)
        self.read_epoch = np.full(cells, -1, np.int32)
        # The instruction (index into ``instructions``, the kernel's) that last wrote each granule, for
        # errors; ``op`` is the one running, which the machine sets.
        self.instructions, self.op = instructions, 0
        self.write_op = np.zeros(cells, np.int32)
        self.many_readers = np.zeros(cells, bool)
        self.pending = np.zeros(cells, np.uint8)  # cp.async copies in flight
        self.epoch = np.zeros(blocks, np.int32)  # barrier intervals completed, per block
        self.lanes_per_block = lanes_per_block
        # The asynchronous proxy's state, made by the first instruction that uses it.
        self.proxy: np.ndarray | None = None  # per granule: _MBARRIER, _LANDED and _HELD bits
        self.mbarriers: dict[int, MBarrier] = {}  # byte position -> the mbarrier initialised there
        # Within a barrier interval an mbarrier orders accesses too (FastTrack on top of the epochs): each
        # lane's release count (``clock``), the counts of its block's threads it has acquired (``acq``),
        # the clock of each granule's last writer and reader, and for granules that several threads read
        # in the interval, {lane: clock} of every reader (``readers``, granule -> (epoch, that dict)).
        self.acq: np.ndarray | None = None
        # The proxy fences (fence.proxy.async), made with the rest of the async state: per granule the
        # count of its writer's fences when it wrote (``write_fences``; -1: the async proxy wrote it, a bulk
        # copy landing), per lane how many fences followed a generic write of its (``fences``; the k-th one's
        # barrier epoch and release count in ``fence_log[lane, :, k]``) and whether it wrote since the
        # last (``wrote``), and its latest fence's epoch and acquired clocks (``fence_epoch``, ``fence_acq``).
        self.write_fences: np.ndarray | None = None

    def sync(self, done: np.ndarray | None = None) -> None:
        """A bar.sync of the blocks ``done`` (None: all) completed: a new
        barrier interval, in which every thread there has seen each mbarrier
        phase complete that one of them had."""
        if done is None:
            self.epoch += 1
        else:
            self.epoch[done] += 1
        for position, barrier in self.mbarriers.items():
            if done is None or done[position // self.stride]:
                barrier.seen[:] = barrier.seen.max()

    def offsets(self, offsets: np.ndarray, size: int, lanes: np.ndarray, what: str,
                align: int | None = None) -> np.ndarray:
        """Checked byte positions of ``size``-byte accesses at block offsets
        (aligned to ``align``, default ``size``): (k,) int64 into ``data``."""
        offsets = offsets.astype(np.int64)
        align = size if align is None else align
        if ((offsets < 0) | (offsets + size > self.size)).any():
            bad = np.flatnonzero((offsets < 0) | (offsets + size > self.size))[0]
            raise Fault(f"{what} of {size} bytes at shared offset {int(offsets[bad])} is outside the block's "
                        f"{self.size} bytes of shared memory", lanes[bad:bad + 1])
        if align > 1 and (offsets % align).any():
            bad = np.flatnonzero(offsets % align)[0]
            raise Fault(f"misaligned {what} of {size} bytes at shared offset {int(offsets[bad])}",
                        lanes[bad:bad + 1])
        inside = True if self.gapless else self.layout[offsets[:, None] + np.arange(size)].all(axis=1)
        if not np.all(inside):
            bad = np.flatnonzero(~inside)[0]
            raise Fault(f"{what} of {size} bytes at shared offset {int(offsets[bad])} is in no shared "
                        "variable (padding between variables, or past a variable that the code indexes "
                        "beyond its declared size)", lanes[bad:bad + 1])
        return offsets + (lanes // self.lanes_per_block).astype(np.int64) * self.stride

    def _cells(self, positions: np.ndarray, size: int) -> np.ndarray:
        """Granule indices (k, size // granule) of accesses at byte positions."""
        g = self.granule
        first = positions // g
        return first[:, None] + np.arange(size // g) if size > g else first[:, None]

    def read(self, positions: np.ndarray, size: int, lanes: np.ndarray, epochs: np.ndarray,
             what: str = "shared load", async_proxy: bool = False) -> np.ndarray:
        """(k, size) bytes, after the checks; records the reads. ``async_proxy``:
        the async proxy reads them for the lanes (a bulk store, a wgmma), so
        generic writes need a proxy fence ordered before (:meth:`_check_fenced`)."""
        cells = self._cells(positions, size)
        lane = np.repeat(lanes, cells.shape[1]).astype(np.int32)
        epoch = np.repeat(epochs, cells.shape[1])
        flat = cells.reshape(-1)
        if self.pending[flat].any():
            raise Fault(f"{what} reads shared memory that a cp.async is still copying into (its "
                        "cp.async.wait_group has not let it land)", _first(self.pending[flat] > 0, lanes, cells.shape[1]))
        if self.proxy is not None:
            self._check_proxy(flat, lane, what, False)
        writer = self.writer[flat]
        if (writer < 0).any():
            raise Fault(f"{what} reads shared memory that nothing wrote", _first(writer < 0, lanes, cells.shape[1]))
        race = (self.write_epoch[flat] == epoch) & (writer != lane)
        if race.any() and self.acq is not None:
            race &= ~self._after(lane, writer, self.write_clock[flat])
        if race.any():
            k = np.flatnonzero(race)[0]
            raise Fault(f"race: {what} of shared memory that {{other}} wrote, with no bar.sync between",
                        lane[k:k + 1], int(writer[k]))
        if async_proxy:
            self._check_fenced(flat, lane, epoch, what)
        same = self.read_epoch[flat] == epoch
        other = same & (self.reader[flat] != lane)
        before, before_clock = self.reader[flat], None if self.acq is None else self.read_clock[flat]
        self.many_readers[flat] = self.many_readers[flat] & same
        self.reader[flat] = lane
        self.read_epoch[flat] = epoch
        duplicate = self.reader[flat] != lane
        self.many_readers[flat[other | duplicate]] = True
        if self.acq is not None:
            self._note_reads(flat, lane, epoch, same, before, before_clock)
        return gather(self.data, positions, size, _width(size, size))

    def write(self, positions: np.ndarray, data: np.ndarray, lanes: np.ndarray, epochs: np.ndarray,
              what: str = "shared store", pending_ok: bool = False, landing: bool = False,
              op: int | None = None) -> None:
        """Writes (k, size) bytes, after the race checks (``landing``: a bulk
        copy's, which :meth:`land` checks against the async proxy; else the
        generic proxy's) by instruction ``op`` (default: the one running)."""
        size = data.shape[1]
        cells = self._cells(positions, size)
        per = cells.shape[1]
        lane = np.repeat(lanes, per).astype(np.int32)
        epoch = np.repeat(epochs, per)
        flat = cells.reshape(-1)
        if not pending_ok and self.pending[flat].any():
            raise Fault(f"{what} writes shared memory that a cp.async is still copying into",
                        _first(self.pending[flat] > 0, lanes, per))
        if self.proxy is not None and not landing:
            self._check_proxy(flat, lane, what, True)
        width = _width(size, size)
        old = gather(self.data, positions, size, width)
        g = self.granule
        changed = (old != data).reshape(len(lanes), per, g).any(axis=2).reshape(-1)
        writer = self.writer[flat]
        race = (self.write_epoch[flat] == epoch) & (writer >= 0) & (writer != lane) & changed
        if race.any() and self.acq is not None:
            race &= ~self._after(lane, writer, self.write_clock[flat])
        if race.any():
            k = np.flatnonzero(race)[0]
            raise Fault(f"race: {what} overwrites shared memory that {{other}} wrote with a different value, "
                        "with no bar.sync between", lane[k:k + 1], int(writer[k]))
        readers = self.reader[flat]
        war = (self.read_epoch[flat] == epoch) & ((readers != lane) | self.many_readers[flat])
        if war.any() and self.acq is not None:
            war &= ~self._reads_before(flat, lane, readers)
        if war.any():
            k = np.flatnonzero(war)[0]
            many = bool(self.many_readers[flat][k])
            raise Fault(f"race: {what} overwrites shared memory that {'several threads' if many else '{other}'} "
                        "read, with no bar.sync between", lane[k:k + 1], None if many else int(readers[k]))
        scatter(self.data, positions, data, width)
        self.writer[flat] = lane
        self.write_epoch[flat] = epoch
        self.write_op[flat] = self.op if op is None else op
        if self.acq is not None:
            self.write_clock[flat] = self.clock[lane]
            if landing:
                self.write_fences[flat] = -1
            else:
                self.write_fences[flat] = self.fences[lane]
                self.wrote[lanes] = True
        if self.proxy is not None:
            self.proxy[flat] &= ~np.uint8(_LANDED)  # the thread has seen the copy's phase: plain data now
        # Lanes of this one access that stored to the same place: a race unless the values agree.
        lost = self.writer[flat] != lane
        if lost.any():
            rows = np.flatnonzero(lost.reshape(len(lanes), per).any(axis=1))
            differ = (gather(self.data, positions[rows], size, width) != data[rows]).any(axis=1)
            if differ.any():
                bad = rows[differ][0]
                raise Fault(f"race: lanes of one {what} write different values to the same shared memory",
                            lanes[bad:bad + 1])


    # -- the asynchronous proxy: mbarriers and bulk copies
    def start_async(self) -> None:
        """Makes the asynchronous proxy's state and the mbarrier-ordered race
        detection (vector clocks), before the first access that needs them."""
        if self.proxy is None:
            cells = len(self.writer)
            self.proxy = np.zeros(cells, np.uint8)
            self.landed_at = np.full(cells, -1, np.int64)  # the mbarrier (byte position) a bulk copy signals
            self.landed_phase = np.zeros(cells, np.int64)  # and its phase
            self.holds = {flag: np.zeros(cells, np.int32) for flag in _HELD}  # its readers in flight, by kind
            lanes = self.blocks * self.lanes_per_block
            self.clock = np.zeros(lanes, np.int32)
            self.acq = np.zeros((lanes, self.lanes_per_block), np.int32)
            self.write_clock = np.zeros(cells, np.int32)  # accesses so far were all at clock 0
            self.read_clock = np.zeros(cells, np.int32)
            self.readers: dict[int, tuple[int, dict[int, int]]] = {}
            # Writes so far were generic (nothing asynchronous ran yet) and before any proxy fence.
            self.write_fences = np.zeros(cells, np.int32)
            self.fences = np.zeros(lanes, np.int32)
            self.wrote = np.ones(lanes, bool)
            self.fence_log = np.zeros((lanes, 2, 4), np.int64)
            self.fence_epoch = np.full(lanes, -1, np.int64)
            self.fence_acq = np.zeros((lanes, self.lanes_per_block), np.int32)

    def _after(self, lane: np.ndarray, other: np.ndarray, clocks: np.ndarray) -> np.ndarray:
        """Whether each lane has acquired the access ``other`` made at its release count ``clocks``."""
        return self.acq[lane, other % self.lanes_per_block] > clocks

    def _note_reads(self, flat: np.ndarray, lane: np.ndarray, epoch: np.ndarray, same: np.ndarray,
                    before: np.ndarray, before_clock: np.ndarray) -> None:
        """Records the reads' clocks: the last reader's, and every reader's where several read."""
        self.read_clock[flat] = self.clock[lane]
        for k in np.flatnonzero(self.many_readers[flat]).tolist():
            cell = int(flat[k])
            entry = self.readers.get(cell)
            if entry is None or entry[0] != epoch[k]:
                entry = self.readers[cell] = (int(epoch[k]), {})
                if same[k]:
                    entry[1][int(before[k])] = int(before_clock[k])
            entry[1][int(lane[k])] = int(self.clock[lane[k]])

    def _reads_before(self, flat: np.ndarray, lane: np.ndarray, readers: np.ndarray) -> np.ndarray:
        """Whether each writing lane has acquired every other thread's read of its granule."""
        ordered = (readers == lane) | self._after(lane, readers, self.read_clock[flat])
        for k in np.flatnonzero(self.many_readers[flat]).tolist():
            seen, entry = self.acq[lane[k]], self.readers.get(int(flat[k]))
            # No entry: read by several before the first mbarrier, which orders none of them.
            ordered[k] = entry is not None and all(r == lane[k] or seen[r % self.lanes_per_block] > c
                                                   for r, c in entry[1].items())
        return ordered

    def release(self, barrier: MBarrier, lanes: np.ndarray) -> None:
        """Arrivals (or complete_tx) of ``lanes`` on ``barrier`` release every access they made so far."""
        self.clock[lanes] += 1
        barrier.arrived = np.maximum(barrier.arrived, self.acq[lanes].max(axis=0))
        threads = lanes % self.lanes_per_block
        barrier.arrived[threads] = np.maximum(barrier.arrived[threads], self.clock[lanes])

    def acquire(self, barrier: MBarrier, lanes: np.ndarray) -> None:
        """``lanes`` saw the barrier's latest phase complete: they are ordered after its releases."""
        self.acq[lanes] = np.maximum(self.acq[lanes], barrier.released)

    def proxy_fence(self, lanes: np.ndarray) -> None:
        """fence.proxy.async (of shared memory) by ``lanes``: each orders the
        generic writes it made before it, and those it is ordered after (it
        saw them through a barrier or an mbarrier), before the async proxy's
        later reads (:meth:`_check_fenced`)."""
        self.start_async()
        epochs = self.epoch[lanes // self.lanes_per_block]
        # Only the first fence after a thread's writes is logged: a later one orders them no earlier.
        logged = self.wrote[lanes]
        if logged.any():
            first, count = lanes[logged], self.fences[lanes[logged]]
            if count.max() >= self.fence_log.shape[2]:
                self.fence_log = np.concatenate([self.fence_log, np.zeros_like(self.fence_log)], axis=2)
            self.fence_log[first, 0, count] = epochs[logged]
            self.fence_log[first, 1, count] = self.clock[first]
            self.fences[first] += 1
        self.wrote[lanes] = False
        self.fence_epoch[lanes] = epochs
        self.fence_acq[lanes] = self.acq[lanes]

    def _check_fenced(self, flat: np.ndarray, lane: np.ndarray, epoch: np.ndarray, what: str) -> None:
        """Granules ``flat`` read by the async proxy for ``lane`` (in barrier
        ``epoch``): each written through the generic proxy needs a proxy
        fence on the causality path from its write to this read (PTX ISA,
        memory consistency model: proxies): its writer's first fence after
        the write, ordered before the read by a bar.sync (an earlier epoch)
        or a release the reader acquired; or the reader's latest fence,
        ordered after the write the same ways. Data a bulk copy landed is
        the async proxy's own. A fence by a third thread between them is not
        followed: an error here, though the ISA would allow it."""
        k = self.write_fences[flat]
        generic = k >= 0
        if not generic.any():
            return
        flat, lane, epoch, k = flat[generic], lane[generic], epoch[generic], k[generic]
        writer = self.writer[flat]
        writer_thread = writer % self.lanes_per_block
        fenced = self.fences[writer] > k
        slot = np.minimum(k, self.fence_log.shape[2] - 1)
        fence_epoch, fence_clock = self.fence_log[writer, 0, slot], self.fence_log[writer, 1, slot]
        ordered = fenced & ((writer == lane) | (fence_epoch < epoch) | (
            (fence_epoch == epoch) & (self.acq[lane, writer_thread] > fence_clock)))
        seen = self.fence_epoch[lane]
        write_epoch = self.write_epoch[flat]
        ordered |= (seen >= 0) & ((write_epoch < seen) | (
            (write_epoch == seen) & (self.fence_acq[lane, writer_thread] > self.write_clock[flat])))
        if ordered.all():
            return
        bad = np.flatnonzero(~ordered)[0]
        ins = self.instructions[int(self.write_op[flat[bad]])] if self.instructions else None
        site = f" at line {ins.line} ({ins.opcode})" if ins is not None else ""
        raise Fault(f"{what} reads shared memory at shared address {int(flat[bad]) * self.granule % self.stride:#x} "
                    f"that {{other}} wrote{site} through the generic proxy, with no fence.proxy.async between the "
                    "write and this read of the async proxy (which may read stale data): the writing thread fences "
                    "after its write and before the barrier that orders it for this one, or this thread after that "
                    "barrier", lane[bad:bad + 1], int(writer[bad]))

    def _check_proxy(self, flat: np.ndarray, lane: np.ndarray, what: str, writing: bool) -> None:
        flags = self.proxy[flat]
        if not flags.any():
            return
        verb = "writes" if writing else "reads"
        bad = (flags & _MBARRIER) > 0
        if bad.any():
            raise Fault(f"{what} {verb} the bytes of an initialised mbarrier (only mbarrier instructions may "
                        "touch them until its mbarrier.inval)", lane[bad][:1])
        if writing:
            for flag, held in _HELD.items():
                bad = (flags & flag) > 0
                if bad.any():
                    raise Fault(f"{what} overwrites {held}", lane[bad][:1])
        landed = np.flatnonzero(flags & _LANDED)
        at, phase, lanes = self.landed_at[flat[landed]], self.landed_phase[flat[landed]], lane[landed]
        for position in np.unique(at):
            barrier = self.mbarriers[int(position)]
            pick = np.flatnonzero(at == position)
            early = barrier.seen[lanes[pick] % self.lanes_per_block] <= phase[pick]
            if early.any():
                k = pick[np.flatnonzero(early)[0]]
                state = "has completed, but the thread has not seen it complete in an mbarrier.try_wait or " \
                    "test_wait" if phase[k] < barrier.phase else "has not completed"
                raise Fault(f"{what} {verb} a bulk-copy destination before its mbarrier phase completed (phase "
                            f"{int(phase[k])} of the mbarrier at shared offset {int(position) % self.stride} "
                            f"{state})", lanes[k:k + 1])

    def mbarriers_at(self, positions: np.ndarray, lanes: np.ndarray, what: str) -> list[tuple[MBarrier, np.ndarray]]:
        """The initialised mbarriers at byte ``positions``, each with the
        indices of the lanes naming it, after checking that each lane may
        see its initialisation."""
        out = []
        for position in np.unique(positions):
            pick = np.flatnonzero(positions == position)
            barrier = self.mbarriers.get(int(position))
            if barrier is None:
                raise Fault(f"{what} on shared offset {int(position) % self.stride}, where no mbarrier is "
                            "initialised (mbarrier.init)", lanes[pick[:1]])
            users = lanes[pick]
            unseen = (self.epoch[users // self.lanes_per_block] == barrier.epoch) & (users != barrier.lane)
            if unseen.any():
                raise Fault(f"{what} uses an mbarrier that {{other}} initialised, with no bar.sync between",
                            users[unseen][:1], barrier.lane)
            out.append((barrier, pick))
        return out

    def init_mbarrier(self, positions: np.ndarray, counts: np.ndarray, lanes: np.ndarray) -> None:
        self.start_async()
        for k, position in enumerate(positions.tolist()):
            count, lane = int(counts[k]), int(lanes[k])
            if position in self.mbarriers:
                raise Fault("mbarrier.init of an mbarrier that is already initialised (mbarrier.inval it first)",
                            lanes[k:k + 1])
            if not 1 <= count <= _TX_LIMIT:
                raise Fault(f"mbarrier.init with count {count}, outside 1..{_TX_LIMIT}", lanes[k:k + 1])
            block = lane // self.lanes_per_block
            # An ordinary write of its bytes for the race detector; from now on they are the mbarrier's.
            self.write(positions[k:k + 1], np.zeros((1, 8), np.uint8), lanes[k:k + 1], self.epoch[block:block + 1],
                       "mbarrier.init")
            self.proxy[self._cells(positions[k:k + 1], 8).reshape(-1)] |= _MBARRIER
            self.mbarriers[position] = MBarrier(count, lane, int(self.epoch[block]), self.lanes_per_block)

    def inval_mbarrier(self, positions: np.ndarray, lanes: np.ndarray) -> None:
        for barrier, pick in self.mbarriers_at(positions, lanes, "mbarrier.inval"):
            position = int(positions[pick[0]])
            signalled = self.landed_at == position
            if (signalled & (self.landed_phase >= barrier.phase)).any():
                raise Fault(f"mbarrier.inval of an mbarrier whose phase {barrier.phase} a cp.async.bulk still "
                            "signals (the phase has not completed)", lanes[pick[:1]])
            self.proxy[signalled] &= ~np.uint8(_LANDED)
            self.landed_at[signalled] = -1
            cells = self._cells(positions[pick[:1]], 8).reshape(-1)
            self.proxy[cells] &= ~np.uint8(_MBARRIER)
            self.writer[cells] = -1  # its bytes hold nothing a load may read
            del self.mbarriers[position]

    def land(self, position: int, data: np.ndarray, lane: int, barrier: MBarrier, at: int) -> None:
        """A cp.async.bulk's bytes into shared memory at byte ``position``,
        signalling the current phase of ``barrier`` (at byte position ``at``);
        its complete_tx is the caller's."""
        cells = self._cells(np.array([position]), len(data)).reshape(-1)
        lanes = np.array([lane])
        if (self.proxy[cells] & _MBARRIER).any():
            raise Fault("cp.async.bulk writes the bytes of an initialised mbarrier", lanes)
        for flag, held in _HELD.items():
            if (self.proxy[cells] & flag).any():
                raise Fault(f"cp.async.bulk overwrites {held}", lanes)
        block = lane // self.lanes_per_block
        self.write(np.array([position]), data[None], lanes, self.epoch[block:block + 1], "cp.async.bulk",
                   landing=True)
        # The mbarrier orders the copy before its readers, not a bar.sync: no epoch of its own.
        self.write_epoch[cells] = -1
        self.proxy[cells] |= _LANDED
        self.landed_at[cells] = at
        self.landed_phase[cells] = barrier.phase

    def read_for_bulk(self, position: int, size: int, lane: int) -> np.ndarray:
        """A bulk store's source bytes, held until :meth:`unhold`."""
        self.start_async()
        lanes = np.array([lane])
        block = lane // self.lanes_per_block
        data = self.read(np.array([position]), size, lanes, self.epoch[block:block + 1], "cp.async.bulk source",
                         async_proxy=True)
        self.hold(self._cells(np.array([position]), size).reshape(-1), BULK_SOURCE)
        return data[0]

    def hold(self, cells: np.ndarray, flag: int) -> None:
        """Granules ``cells`` are read by an asynchronous reader of kind ``flag`` until :meth:`unhold`."""
        self.start_async()
        np.add.at(self.holds[flag], cells, 1)
        self.proxy[cells] |= np.uint8(flag)

    def unhold(self, cells: np.ndarray, flag: int) -> None:
        np.subtract.at(self.holds[flag], cells, 1)
        self.proxy[cells[self.holds[flag][cells] == 0]] &= ~np.uint8(flag)

    def close_reads(self, readers: np.ndarray) -> np.ndarray:
        """The release counts at which ``readers`` made the reads of an
        asynchronous reader (a wgmma's), which end there: their later
        accesses are not part of it (:meth:`order_after`)."""
        self.start_async()
        clocks = self.clock[readers].copy()
        self.clock[readers] += 1
        return clocks

    def order_after(self, lanes: np.ndarray, readers: np.ndarray, clocks: np.ndarray) -> None:
        """``lanes`` are ordered after the accesses ``readers`` made up to release counts ``clocks``."""
        index = np.ix_(lanes, readers % self.lanes_per_block)
        self.acq[index] = np.maximum(self.acq[index], clocks + 1)

    def join(self, lanes: np.ndarray) -> None:
        """A barrier among ``lanes`` (the members of one warp's bar.warp.sync):
        each is ordered after every shared access the others made before it
        and has seen every mbarrier phase one of them had."""
        self.start_async()
        threads = lanes % self.lanes_per_block
        self.clock[lanes] += 1
        seen = self.acq[lanes].max(axis=0)
        seen[threads] = np.maximum(seen[threads], self.clock[lanes])
        self.acq[lanes] = np.maximum(self.acq[lanes], seen)
        block = int(lanes[0]) // self.lanes_per_block
        for position, barrier in self.mbarriers.items():
            if position // self.stride == block:
                barrier.seen[threads] = barrier.seen[threads].max()


class LocalMemory:
    """Per-thread local memory (the stack frame): ``size`` bytes a lane,
    poisoned as new global memory is (LLVM may load a whole vector of a
    frame and use only its written part); ``check_initialized`` makes
    reading a byte the thread never wrote an error."""

    def __init__(self, lanes: int, size: int, check_initialized: bool = False) -> None:
        self.size, self.check_initialized = size, check_initialized
        self.stride = size + 15 & ~15
        self.data = np.full(lanes * self.stride, GlobalMemory.POISON, np.uint8)
        self.written = np.zeros(lanes * self.stride, bool)

    def positions(self, offsets: np.ndarray, size: int, lanes: np.ndarray, what: str) -> np.ndarray:
        offsets = offsets.astype(np.int64)
        bad = (offsets < 0) | (offsets + size > self.size)
        if bad.any():
            k = np.flatnonzero(bad)[0]
            raise Fault(f"{what} of {size} bytes at local offset {int(offsets[k])} is outside the thread's "
                        f"{self.size} bytes of local memory", lanes[k:k + 1])
        if size > 1 and (offsets % size).any():
            k = np.flatnonzero(offsets % size)[0]
            raise Fault(f"misaligned {what} of {size} bytes at local offset {int(offsets[k])}", lanes[k:k + 1])
        return offsets + lanes.astype(np.int64) * self.stride

    def read(self, positions: np.ndarray, size: int, lanes: np.ndarray) -> np.ndarray:
        seen = self.written[positions[:, None] + np.arange(size)] if self.check_initialized else None
        if seen is not None and not seen.all():
            k = np.flatnonzero(~seen.all(axis=1))[0]
            raise Fault("local load reads local memory that the thread never wrote", lanes[k:k + 1])
        return gather(self.data, positions, size, _width(size, size))

    def write(self, positions: np.ndarray, data: np.ndarray) -> None:
        scatter(self.data, positions, data, _width(data.shape[1], data.shape[1]))
        self.written[positions[:, None] + np.arange(data.shape[1])] = True
