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
  is an error, unless both wrote the same value. Accesses are tracked in
  granules (the largest size that divides every shared access of the
  kernel), which is exact and far cheaper than bytes.

A failed check raises :class:`Fault` with the lanes at fault; the machine
turns it into an EmulationError naming the block, thread and instruction.
"""

from __future__ import annotations

import bisect

import numpy as np

__all__ = ["Fault", "GlobalMemory", "LocalMemory", "SharedMemory", "GLOBAL_BASE", "LOCAL_WINDOW",
           "SHARED_WINDOW", "WINDOW_BYTES"]

# Generic address space: a window for shared memory, one for local memory,
# global allocations above both (cvta.to.global is the identity, as on NVIDIA GPUs).
SHARED_WINDOW = 1 << 40
LOCAL_WINDOW = 2 << 40
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

    def store(self, addresses: np.ndarray, data: np.ndarray, lanes: np.ndarray) -> None:
        """Writes rows of ``data`` ((k, size) uint8) at the addresses, in lane order."""
        size = data.shape[1]
        for base, pick, offsets in self._groups(addresses, size, lanes, "store"):
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


class SharedMemory:
    """The shared memory of each block of a wave, with the race detector.

    ``layout`` marks the bytes of one block's memory that belong to a
    variable or to the dynamic region; the rest (alignment padding between
    variables) is not memory a kernel may touch.
    """

    def __init__(self, blocks: int, size: int, layout: np.ndarray, granule: int, lanes_per_block: int) -> None:
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
        self.many_readers = np.zeros(cells, bool)
        self.pending = np.zeros(cells, np.uint8)  # cp.async copies in flight
        self.epoch = np.zeros(blocks, np.int32)  # barrier intervals completed, per block
        self.lanes_per_block = lanes_per_block

    def offsets(self, offsets: np.ndarray, size: int, lanes: np.ndarray, what: str) -> np.ndarray:
        """Checked byte positions of ``size``-byte accesses at block offsets: (k,) int64 into ``data``."""
        offsets = offsets.astype(np.int64)
        if ((offsets < 0) | (offsets + size > self.size)).any():
            bad = np.flatnonzero((offsets < 0) | (offsets + size > self.size))[0]
            raise Fault(f"{what} of {size} bytes at shared offset {int(offsets[bad])} is outside the block's "
                        f"{self.size} bytes of shared memory", lanes[bad:bad + 1])
        if size > 1 and (offsets % size).any():
            bad = np.flatnonzero(offsets % size)[0]
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
             what: str = "shared load") -> np.ndarray:
        """(k, size) bytes, after the checks; records the reads."""
        cells = self._cells(positions, size)
        lane = np.repeat(lanes, cells.shape[1]).astype(np.int32)
        epoch = np.repeat(epochs, cells.shape[1])
        flat = cells.reshape(-1)
        if self.pending[flat].any():
            raise Fault(f"{what} reads shared memory that a cp.async is still copying into (its "
                        "cp.async.wait_group has not let it land)", _first(self.pending[flat] > 0, lanes, cells.shape[1]))
        writer = self.writer[flat]
        if (writer < 0).any():
            raise Fault(f"{what} reads shared memory that nothing wrote", _first(writer < 0, lanes, cells.shape[1]))
        race = (self.write_epoch[flat] == epoch) & (writer != lane)
        if race.any():
            k = np.flatnonzero(race)[0]
            raise Fault(f"race: {what} of shared memory that {{other}} wrote, with no bar.sync between",
                        lane[k:k + 1], int(writer[k]))
        same = self.read_epoch[flat] == epoch
        other = same & (self.reader[flat] != lane)
        self.many_readers[flat] = self.many_readers[flat] & same
        self.reader[flat] = lane
        self.read_epoch[flat] = epoch
        duplicate = self.reader[flat] != lane
        self.many_readers[flat[other | duplicate]] = True
        return gather(self.data, positions, size, _width(size, size))

    def write(self, positions: np.ndarray, data: np.ndarray, lanes: np.ndarray, epochs: np.ndarray,
              what: str = "shared store", pending_ok: bool = False) -> None:
        """Writes (k, size) bytes, after the race checks."""
        size = data.shape[1]
        cells = self._cells(positions, size)
        per = cells.shape[1]
        lane = np.repeat(lanes, per).astype(np.int32)
        epoch = np.repeat(epochs, per)
        flat = cells.reshape(-1)
        if not pending_ok and self.pending[flat].any():
            raise Fault(f"{what} writes shared memory that a cp.async is still copying into",
                        _first(self.pending[flat] > 0, lanes, per))
        width = _width(size, size)
        old = gather(self.data, positions, size, width)
        g = self.granule
        changed = (old != data).reshape(len(lanes), per, g).any(axis=2).reshape(-1)
        writer = self.writer[flat]
        race = (self.write_epoch[flat] == epoch) & (writer >= 0) & (writer != lane) & changed
        if race.any():
            k = np.flatnonzero(race)[0]
            raise Fault(f"race: {what} overwrites shared memory that {{other}} wrote with a different value, "
                        "with no bar.sync between", lane[k:k + 1], int(writer[k]))
        readers = self.reader[flat]
        war = (self.read_epoch[flat] == epoch) & ((readers != lane) | self.many_readers[flat])
        if war.any():
            k = np.flatnonzero(war)[0]
            many = bool(self.many_readers[flat][k])
            raise Fault(f"race: {what} overwrites shared memory that {'several threads' if many else '{other}'} "
                        "read, with no bar.sync between", lane[k:k + 1], None if many else int(readers[k]))
        scatter(self.data, positions, data, width)
        self.writer[flat] = lane
        self.write_epoch[flat] = epoch
        # Lanes of this one access that stored to the same place: a race unless the values agree.
        lost = self.writer[flat] != lane
        if lost.any():
            rows = np.flatnonzero(lost.reshape(len(lanes), per).any(axis=1))
            differ = (gather(self.data, positions[rows], size, width) != data[rows]).any(axis=1)
            if differ.any():
                bad = rows[differ][0]
                raise Fault(f"race: lanes of one {what} write different values to the same shared memory",
                            lanes[bad:bad + 1])


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
