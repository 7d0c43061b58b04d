"""Running a decoded kernel: lanes, program counters, barriers, memory, async copies, mbarriers.

A *wave* is a set of blocks run together, each thread a lane of numpy
arrays. Every lane has its own program counter; each step runs the
instruction at the lowest counter among the lanes that can run, for the
lanes there. Divergent branches therefore reconverge where the lanes'
paths meet, loops run until their last lane leaves, and a warp's lanes
are together at a warp-collective instruction exactly when the program
brings them there. While all lanes share one counter (the common case),
the machine keeps one scalar counter and runs instructions on all lanes.

``bar.sync`` parks a lane until every live thread of its block has
arrived, then opens a new barrier interval of the block (the race
detector's epoch). Blocks never wait for each other, so running several
in one wave is one of the orders a GPU may choose; shared memory, epochs
and barriers are per block.

Hopper's asynchronous proxy: an mbarrier's phases complete as the ISA
says (no arrival and no transaction byte pending); a ``cp.async.bulk``
into shared memory reads and lands its bytes when issued and does its
``complete_tx`` then, but a thread may touch them only once it has seen
that phase complete (:class:`~.memory.SharedMemory` checks); a bulk store
reads its source and writes global memory when issued, and holds the
source until the issuing thread's ``cp.async.bulk.wait_group``.
A ``try_wait`` (or ``test_wait``) that finds its phase incomplete
suspends the lanes there until that mbarrier's state changes, then they
run it again: a consumer spinning at a lower counter than its producer
does not starve it. When nothing but such lanes (and lanes at bar.sync)
is left, a ``test_wait`` returns false (it never blocks), and with only
``try_wait`` left the kernel is deadlocked: an error.

Warpgroup MMA (:mod:`.warpgroup`): a ``wgmma.mma_async`` computes when
issued and stays in flight, per warpgroup, until the ``wgmma.wait_group``
that retires its group; meanwhile other instructions that name its
registers (``Op.touches``, checked before they run) and writes to the
shared memory it read are errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .memory import (BULK_SOURCE, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, WGMMA_OPERAND, WINDOW_BYTES, Fault,
                     GlobalMemory, LocalMemory, MBarrier, SharedMemory)
from .ptx import TYPES, EmulationError, Function, Instruction
from .tensormap import SIZE as TENSOR_MAP_BYTES
from .tensormap import TensorMap, decode_tensor_map, swizzled

__all__ = ["BARRIER", "BRANCH", "EXIT", "NORMAL", "WAIT", "SPECIAL_REGISTERS", "WIDE_SPECIAL_REGISTERS", "Kernel", "Launch",
           "Op", "Wave", "params_bytes", "run"]

NORMAL, BRANCH, BARRIER, EXIT, WAIT = range(5)  # WAIT: run returns the lanes that wait there
_IDLE = np.iinfo(np.int64).max  # the counter of a lane that cannot run
WARP = 32


class Op:
    """One decoded instruction. ``run(wave, mask)`` does its work for the
    lanes in ``mask`` (None: every lane of the wave)."""

    __slots__ = ("kind", "run", "target", "guard", "negate", "ins", "touches")

    def __init__(self, kind: int, run: Callable | None, ins: Instruction, target: int = -1) -> None:
        self.kind, self.run, self.ins, self.target = kind, run, ins, target
        self.guard, self.negate = (-1, False) if ins.guard is None else (ins.guard.slot, ins.guard.negated)
        # The registers of wgmma.mma_async operands that this (other) instruction accesses, or None.
        self.touches: frozenset[int] | None = None


@dataclass
class Kernel:
    """An entry function ready to run: its ops and its memory layout."""

    function: Function
    ops: list[Op]
    storage: list[np.dtype]  # per register slot
    static_shared: int  # bytes of static shared memory
    shared_vars: list[tuple[int, int]]  # (offset, size) of each static shared variable
    dynamic_offset: int  # where the dynamic region starts: after the static variables, aligned
    local_bytes: int
    granule: int  # of shared-memory race tracking
    uses_shared: bool
    wgmma_registers: tuple[int, ...] = ()  # slots of wgmma.mma_async accumulators and A fragments

    @property
    def name(self) -> str:
        return self.function.name

    def shared_layout(self, dynamic_bytes: int) -> tuple[int, np.ndarray]:
        """The block's shared memory size and which of its bytes are memory
        (a variable or the dynamic region)."""
        start = self.dynamic_offset if dynamic_bytes else self.static_shared
        size = start + dynamic_bytes
        layout = np.zeros(max(size, 1), bool)
        for offset, length in self.shared_vars:
            layout[offset:offset + length] = True
        layout[start:size] = True
        return size, layout[:size]


@dataclass
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared: int
    params: bytes
    max_steps: int


def _lane_mask(w: "Wave", compare) -> np.ndarray:
    """%lanemask_*: the lanes of the warp for which ``compare(lane, own lane)`` holds, as bits."""
    lane = (w.thread % WARP)[:, None]
    return (compare(np.arange(WARP)[None, :], lane) * (np.uint64(1) << np.arange(WARP, dtype=np.uint64))
            ).sum(axis=1, dtype=np.uint64)


def _tid(w: "Wave", axis: int) -> np.ndarray:
    bx, by, _ = w.launch.block
    return (w.thread % bx, w.thread // bx % by, w.thread // (bx * by))[axis]


def _ctaid(w: "Wave", axis: int) -> np.ndarray:
    gx, gy, _ = w.launch.grid
    return (w.block_ids % gx, w.block_ids // gx % gy, w.block_ids // (gx * gy))[axis]


# The special registers (PTX ISA chapter 10) as functions of a wave; clocks count instruction steps.
SPECIAL_REGISTERS: dict[str, Callable[["Wave"], Any]] = {
    **{f"%tid.{c}": (lambda w, i=i: _tid(w, i)) for i, c in enumerate("xyz")},
    **{f"%ntid.{c}": (lambda w, i=i: w.launch.block[i]) for i, c in enumerate("xyz")},
    **{f"%ctaid.{c}": (lambda w, i=i: _ctaid(w, i)) for i, c in enumerate("xyz")},
    **{f"%nctaid.{c}": (lambda w, i=i: w.launch.grid[i]) for i, c in enumerate("xyz")},
    "%laneid": lambda w: w.thread % WARP, "%warpid": lambda w: w.thread // WARP,
    "%nwarpid": lambda w: w.per_block // WARP,
    "%smid": lambda w: 0, "%nsmid": lambda w: 1, "%gridid": lambda w: 0,
    "%lanemask_eq": lambda w: _lane_mask(w, np.equal), "%lanemask_lt": lambda w: _lane_mask(w, np.less),
    "%lanemask_le": lambda w: _lane_mask(w, np.less_equal), "%lanemask_gt": lambda w: _lane_mask(w, np.greater),
    "%lanemask_ge": lambda w: _lane_mask(w, np.greater_equal),
    "%dynamic_smem_size": lambda w: w.launch.dynamic_shared,
    "%total_smem_size": lambda w: w.shared.size if w.shared else 0,
    "%clock": lambda w: w.steps, "%clock64": lambda w: w.steps, "%globaltimer": lambda w: w.steps,
    "%cluster_ctarank": lambda w: 0, "%cluster_nctarank": lambda w: 1, "%is_explicit_cluster": lambda w: 0,
}
WIDE_SPECIAL_REGISTERS = frozenset({"%clock64", "%globaltimer"})  # 64 bits; the others are 32
_CLOCKS = frozenset({"%clock", "%clock64", "%globaltimer"})  # change as the wave runs: never cached


@dataclass
class _Wgmma:
    """A warpgroup's wgmma.mma_async in flight: its lanes, the wgmma-group it
    joins (the warpgroup's commits before it), its accumulator and A registers
    (register slots), what may chain on its accumulators without a
    wgmma.wait_group (its shape and types), the shared granules it reads and
    the release counts of the lanes its reads are recorded as (the first of
    each warp)."""

    lanes: np.ndarray
    group: int
    accumulators: frozenset[int]
    inputs: frozenset[int]
    kind: tuple
    cells: np.ndarray
    clocks: np.ndarray
    ins: Instruction


class Wave:
    """The state of the blocks of one wave while they run."""

    def __init__(self, kernel: Kernel, launch: Launch, blocks: np.ndarray, memory: GlobalMemory,
                 shared: tuple[int, np.ndarray]) -> None:
        self.kernel, self.launch, self.memory = kernel, launch, memory
        bx, by, bz = launch.block
        self.threads = bx * by * bz
        self.per_block = -(-self.threads // WARP) * WARP
        self.blocks = blocks  # linear block ids
        self.n = n = len(blocks) * self.per_block
        lane = np.arange(n)
        self.block_index = (lane // self.per_block).astype(np.int64)  # block within the wave
        t = lane % self.per_block
        self.thread = t
        self.alive = t < self.threads
        self.live_count = int(self.alive.sum())
        self.block_ids = blocks[self.block_index]  # each lane's linear block id
        self.special: dict[str, np.ndarray] = {}
        self.R = [np.zeros(n, dtype) for dtype in kernel.storage]
        self.carry = np.zeros(n, np.uint8)  # CC.CF of add.cc, addc, mad.cc, ...
        size, layout = shared  # the launch's kernel.shared_layout, computed once for all its waves
        self.shared = SharedMemory(len(blocks), size, layout, kernel.granule, self.per_block,
                                   [op.ins for op in kernel.ops]) \
            if kernel.uses_shared else None
        self.local = LocalMemory(n, kernel.local_bytes, memory.check_initialized) if kernel.local_bytes else None
        self.params = np.frombuffer(launch.params, np.uint8)
        # cp.async: copies in flight as [lanes, byte positions, data, group, the cp.async's op], and per lane the
        # number of groups committed so far.
        self.copies: list[list[np.ndarray]] = []
        self.committed = np.zeros(n, np.int64)
        # cp.async.bulk stores in flight as (lane, shared byte position, size, group), and per lane
        # the bulk groups committed so far.
        self.bulk: list[tuple[int, int, int, int]] = []
        self.bulk_committed = np.zeros(n, np.int64)
        # Byte positions of the mbarriers whose state changed since the scheduler last looked: the
        # lanes suspended in a try_wait on one of them run it again.
        self.touched: set[int] = set()
        self.waits_on = np.full(n, -1, np.int64)  # the mbarrier of a lane's last incomplete wait
        self.impatient = np.zeros(n, bool)  # lanes whose next test_wait returns false rather than waiting
        # wgmma.mma_async in flight (a record per warpgroup), per lane the wgmma-groups committed so
        # far, and per register of a wgmma operand the lanes that (or whose other instructions) may
        # have accessed it since their last wgmma.fence: all of them before the first.
        self.wgmma: list[_Wgmma] = []
        self.wgmma_committed = np.zeros(n, np.int64)
        self.wgmma_row = {slot: i for i, slot in enumerate(kernel.wgmma_registers)}
        self.unfenced = np.ones((len(kernel.wgmma_registers), n), bool)
        self.steps = 0

    # -- registers
    def special_register(self, name: str) -> np.ndarray:
        """The value of special register ``name`` (a key of SPECIAL_REGISTERS) in every lane."""
        value = self.special.get(name)
        if value is None:
            dtype = np.uint64 if name in WIDE_SPECIAL_REGISTERS else np.uint32
            value = np.broadcast_to(np.asarray(SPECIAL_REGISTERS[name](self)), (self.n,)).astype(dtype)
            if name not in _CLOCKS:
                self.special[name] = value
        return value

    def lanes(self, mask: np.ndarray | None) -> np.ndarray:
        return np.arange(self.n) if mask is None else np.flatnonzero(mask)

    def epochs(self, lanes: np.ndarray) -> np.ndarray:
        return self.shared.epoch[self.block_index[lanes]]

    def describe(self, lane: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(block, thread) coordinates of a lane."""
        gx, gy, _ = self.launch.grid
        bx, by, _ = self.launch.block
        b = int(self.blocks[self.block_index[lane]])
        t = int(self.thread[lane])
        return (b % gx, b // gx % gy, b // (gx * gy)), (t % bx, t // bx % by, t // (bx * by))

    # -- memory
    def load(self, space: str, addresses: np.ndarray, size: int, lanes: np.ndarray,
             align: int | None = None) -> np.ndarray:
        """``size`` bytes per lane as (k, size) uint8, from ``space`` (generic:
        by address), aligned to ``align`` (default: ``size``)."""
        if space == "generic":
            parts = self._windows(addresses)
            if len(parts) == 1:
                return self.load(parts[0][0], parts[0][2], size, lanes, align)
            out = np.empty((len(lanes), size), np.uint8)
            for part, pick, offsets in parts:
                out[pick] = self.load(part, offsets, size, lanes[pick], align)
            return out
        if space in ("global", "const"):
            return self.memory.load(addresses.astype(np.uint64), size, lanes, align)
        if space == "shared":
            return self.read_shared(addresses, size, lanes, "shared load", align)[0]
        if space == "local":
            local = self._local(lanes)
            return local.read(local.positions(addresses, size, lanes, "local load"), size, lanes)
        if space == "param":
            offsets = addresses.astype(np.int64)
            if ((offsets < 0) | (offsets + size > len(self.params))).any():
                raise Fault("ld.param reads past the kernel's parameters", lanes[:1])
            return self.params[offsets[:, None] + np.arange(size)]
        raise AssertionError(space)

    def store(self, space: str, addresses: np.ndarray, data: np.ndarray, lanes: np.ndarray,
              align: int | None = None) -> None:
        if space == "generic":
            parts = self._windows(addresses)
            for part, pick, offsets in parts:
                self.store(part, offsets, data if len(parts) == 1 else data[pick],
                           lanes if len(parts) == 1 else lanes[pick], align)
        elif space == "global":
            self.memory.store(addresses.astype(np.uint64), data, lanes, align)
        elif space == "shared":
            positions = self._shared(addresses, data.shape[1], lanes, "shared store", align)
            self.shared.write(positions, data, lanes, self.epochs(lanes))
        elif space == "local":
            local = self._local(lanes)
            local.write(local.positions(addresses, data.shape[1], lanes, "local store"), data)
        else:
            raise Fault(f"a store to the .{space} state space", lanes[:1])

    @staticmethod
    def _windows(addresses: np.ndarray) -> list[tuple[str, np.ndarray | None, np.ndarray]]:
        """Generic addresses split by state space: (space, which lanes, address in the space)."""
        a = addresses.astype(np.uint64)
        shared = (a >= SHARED_WINDOW) & (a < SHARED_WINDOW + WINDOW_BYTES)
        local = (a >= LOCAL_WINDOW) & (a < LOCAL_WINDOW + WINDOW_BYTES)
        param = (a >= PARAM_WINDOW) & (a < PARAM_WINDOW + WINDOW_BYTES)
        parts = []
        for space, pick, base in (("shared", shared, SHARED_WINDOW), ("local", local, LOCAL_WINDOW),
                                  ("param", param, PARAM_WINDOW), ("global", ~(shared | local | param), 0)):
            if pick.all():
                return [(space, None, a - np.uint64(base))]
            if pick.any():
                parts.append((space, pick, a[pick] - np.uint64(base)))
        return parts

    def read_shared(self, addresses: np.ndarray, size: int, lanes: np.ndarray, what: str,
                    align: int | None = None, async_proxy: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``size`` bytes at each shared address read by ``lanes`` after the
        checks of a load, named ``what`` in errors (``async_proxy``: read
        through the async proxy, a wgmma's operands); also the granules read."""
        positions = self._shared(addresses, size, lanes, what, align)
        data = self.shared.read(positions, size, lanes, self.epochs(lanes), what, async_proxy)
        return data, self.shared._cells(positions, size).reshape(-1)

    def _shared(self, addresses: np.ndarray, size: int, lanes: np.ndarray, what: str,
                align: int | None = None) -> np.ndarray:
        if self.shared is None:
            raise Fault(f"{what}, but the kernel has no shared memory", lanes[:1])
        return self.shared.offsets(addresses.astype(np.int64), size, lanes, what, align)

    def _local(self, lanes: np.ndarray) -> LocalMemory:
        if self.local is None:
            raise Fault("a local-memory access, but the kernel declares no local memory", lanes[:1])
        return self.local

    # -- cp.async
    def async_copy(self, dst: np.ndarray, src: np.ndarray, size: int, src_size: np.ndarray,
                   lanes: np.ndarray) -> None:
        """Starts ``size``-byte copies global -> shared; the source is read now
        (bytes past ``src_size`` are zeros) and lands at the issuing
        thread's cp.async.wait_group."""
        positions = self._shared(dst, size, lanes, "cp.async destination")
        if (src_size > size).any():
            raise Fault(f"cp.async src-size is larger than its cp-size {size}", lanes[src_size > size][:1])
        reading = src_size > 0
        if (src[reading] % np.uint64(size)).any():
            raise Fault(f"misaligned cp.async source of {size} bytes", lanes[reading][src[reading] % np.uint64(size) > 0][:1])
        data = np.zeros((len(lanes), size), np.uint8)
        whole = src_size == size
        if whole.any():
            data[whole] = self.memory.load(src[whole].astype(np.uint64), size, lanes[whole])
        # Partial copies read only their first src-size bytes; the rest are zeros.
        for k in np.flatnonzero((src_size > 0) & ~whole):
            count = int(src_size[k])
            data[k, :count] = self.memory.load(src[k:k + 1].astype(np.uint64), count, lanes[k:k + 1], align=1)[0]
        cells = self.shared._cells(positions, size).reshape(-1)
        if self.shared.pending[cells].any():
            raise Fault("cp.async into shared memory that another cp.async is still copying into",
                        lanes[:1])
        self.shared.pending[cells] += 1
        self.copies.append([lanes, positions, data, self.committed[lanes].copy(), self.shared.op])

    def async_commit(self, lanes: np.ndarray) -> None:
        self.committed[lanes] += 1

    def async_wait(self, lanes: np.ndarray, keep: int) -> None:
        """The copies of ``lanes`` older than their ``keep`` most recent committed groups land."""
        limit = np.full(self.n, -1, np.int64)
        limit[lanes] = self.committed[lanes] - keep
        remaining = []
        for copy in self.copies:
            copy_lanes, positions, data, groups, op = copy
            done = groups < limit[copy_lanes]
            if done.any():
                cells = self.shared._cells(positions[done], data.shape[1]).reshape(-1)
                self.shared.pending[cells] -= 1
                # Written by the thread's cp.async (the generic proxy), as of now: a fence before its
                # wait_group does not order it.
                self.shared.write(positions[done], data[done], copy_lanes[done], self.epochs(copy_lanes[done]),
                                  "cp.async", op=op)
                if done.all():
                    continue
                copy = [copy_lanes[~done], positions[~done], data[~done], groups[~done], op]
            remaining.append(copy)
        self.copies = remaining

    def pending_copies(self, lanes: np.ndarray) -> np.ndarray:
        """Those of ``lanes`` with copies in flight."""
        if not self.copies:
            return lanes[:0]
        busy = np.zeros(self.n, bool)
        for copy in self.copies:
            busy[copy[0]] = True
        return lanes[busy[lanes]]

    # -- mbarriers and bulk copies (the asynchronous proxy)
    def mbarriers(self, addresses: np.ndarray, lanes: np.ndarray,
                  what: str) -> tuple[list[tuple[MBarrier, np.ndarray]], np.ndarray]:
        """[(mbarrier, which of the lanes)] at shared ``addresses``; also the barriers' byte positions."""
        positions = self._shared(addresses, 8, lanes, what)
        return self.shared.mbarriers_at(positions, lanes, what), positions

    def mbarrier_init(self, addresses: np.ndarray, counts: np.ndarray, lanes: np.ndarray) -> None:
        self.shared.init_mbarrier(self._shared(addresses, 8, lanes, "mbarrier.init"), counts, lanes)

    def mbarrier_inval(self, addresses: np.ndarray, lanes: np.ndarray) -> None:
        positions = self._shared(addresses, 8, lanes, "mbarrier.inval")
        self.shared.inval_mbarrier(positions, lanes)
        self.touched.update(positions.tolist())

    def mbarrier_arrive(self, addresses: np.ndarray, counts: np.ndarray, tx: np.ndarray | None, lanes: np.ndarray,
                        what: str, drop: bool = False, complete: bool = True, release: bool = True) -> np.ndarray:
        """Arrivals (after an expect-tx of ``tx`` bytes), in lane order; the
        state each lane gets: the phase it arrived in. ``release``: not .relaxed."""
        states = np.zeros(len(lanes), np.uint64)
        found, positions = self.mbarriers(addresses, lanes, what)
        self.touched.update(positions.tolist())
        for barrier, pick in found:
            if tx is None and counts[pick].sum() < barrier.pending:  # no phase completes
                if release:
                    self.shared.release(barrier, lanes[pick])
                states[pick] = barrier.phase
                barrier.pending -= int(counts[pick].sum())
                if drop:
                    barrier.expected -= int(counts[pick].sum())
                continue
            for k in pick:
                lane, count = int(lanes[k]), int(counts[k])
                if tx is not None:
                    barrier.add_tx(int(tx[k]), lane, what)  # the expect-tx comes first
                if count > barrier.pending:
                    raise Fault(f"{what} of {count} on an mbarrier with {barrier.pending} arrivals pending in "
                                "its phase", lanes[k:k + 1])
                if not complete and count == barrier.pending and barrier.tx == 0:
                    raise Fault(f"{what} completes the mbarrier's phase, which .noComplete forbids", lanes[k:k + 1])
                if release:
                    self.shared.release(barrier, lanes[k:k + 1])
                states[k] = barrier.phase
                barrier.pending -= count
                if drop:
                    barrier.expected -= count
                barrier.settle()
        return states

    def mbarrier_tx(self, addresses: np.ndarray, tx: np.ndarray, lanes: np.ndarray, what: str) -> None:
        """expect-tx (``tx`` > 0 bytes) or complete-tx (< 0) operations, in lane order."""
        found, positions = self.mbarriers(addresses, lanes, what)
        self.touched.update(positions.tolist())
        for barrier, pick in found:
            for k in pick:
                if tx[k] < 0:  # complete_tx releases what the thread did before, as an arrival does
                    self.shared.release(barrier, lanes[k:k + 1])
                barrier.add_tx(int(tx[k]), int(lanes[k]), what)

    def mbarrier_wait(self, addresses: np.ndarray, tokens: np.ndarray, parity: bool, lanes: np.ndarray,
                      what: str, acquire: bool = True) -> np.ndarray:
        """test_wait/try_wait: whether the phase of each lane's state (or of
        parity ``tokens``: the current or the preceding phase) has completed;
        a lane that sees it complete has seen every phase before it (and,
        ``acquire``, not .relaxed, is ordered after their releases). A lane
        that does not waits at the barrier's byte position in ``waits_on``."""
        done = np.zeros(len(lanes), bool)
        found, positions = self.mbarriers(addresses, lanes, what)
        for barrier, pick in found:
            token = tokens[pick].astype(np.int64)
            if parity:
                if ((token != 0) & (token != 1)).any():
                    raise Fault(f"{what} with phase parity {int(token[(token != 0) & (token != 1)][0])}, not 0 or 1",
                                lanes[pick[:1]])
                ok = token != barrier.phase % 2
                seen = np.full(len(pick), barrier.phase)
            else:
                stale = (token != barrier.phase) & (token != barrier.phase - 1)
                if stale.any():
                    raise Fault(f"{what} with the state of phase {int(token[stale][0])}; the mbarrier is in "
                                f"phase {barrier.phase} (a state is of the current or the preceding phase)",
                                lanes[pick[stale][:1]])
                ok = token < barrier.phase
                seen = token + 1
            done[pick] = ok
            threads = lanes[pick[ok]] % self.per_block
            barrier.seen[threads] = np.maximum(barrier.seen[threads], seen[ok])
            if acquire:
                self.shared.acquire(barrier, lanes[pick[ok]])
            self.waits_on[lanes[pick[~ok]]] = positions[pick[~ok]]
        return done

    def bulk_load(self, dst: np.ndarray, src: np.ndarray, sizes: np.ndarray, bars: np.ndarray,
                  lanes: np.ndarray) -> None:
        """cp.async.bulk global -> shared, each lane's copy in lane order."""
        _bulk_checks(dst, src, sizes, lanes, "destination", "source")
        found, positions = self.mbarriers(bars, lanes, "cp.async.bulk")
        barrier_of = {int(k): barrier for barrier, pick in found for k in pick}
        for k in range(len(lanes)):
            data = self.memory.load(src[k:k + 1].astype(np.uint64), int(sizes[k]), lanes[k:k + 1], align=16)[0]
            self.bulk_land(int(dst[k]), data, barrier_of[k], int(positions[k]), lanes[k:k + 1])

    def bulk_land(self, dst: int, data: np.ndarray, barrier: MBarrier, at: int, lane: np.ndarray) -> None:
        """A bulk copy's bytes (a tensor copy's box too) landing now at shared
        offset ``dst``, signalling the current phase of ``barrier`` (at byte
        position ``at``) with complete_tx of their size."""
        where = self.shared.offsets(np.array([dst]), len(data), lane, "cp.async.bulk destination", align=16)
        self.shared.land(int(where[0]), data, int(lane[0]), barrier, at)
        self.touched.add(at)
        self.shared.release(barrier, lane)
        barrier.add_tx(-len(data), int(lane[0]), "cp.async.bulk's complete_tx")

    def bulk_store(self, dst: np.ndarray, src: np.ndarray, sizes: np.ndarray, lanes: np.ndarray) -> None:
        """cp.async.bulk shared -> global, written now, each lane's in lane order."""
        _bulk_checks(src, dst, sizes, lanes, "source", "destination")
        for k in range(len(lanes)):
            data = self.bulk_source(int(src[k]), int(sizes[k]), lanes[k:k + 1])
            self.memory.store(dst[k:k + 1].astype(np.uint64), data[None], lanes[k:k + 1], align=16)

    def bulk_source(self, src: int, size: int, lane: np.ndarray) -> np.ndarray:
        """The source bytes of a bulk store (a tensor copy's box too) at shared
        offset ``src``, held until the bulk group the store joins is waited for."""
        where = int(self.shared.offsets(np.array([src]), size, lane, "cp.async.bulk source", align=16)[0])
        data = self.shared.read_for_bulk(where, size, int(lane[0]))
        self.bulk.append((int(lane[0]), where, size, int(self.bulk_committed[lane[0]])))
        return data

    def tensor_map_bytes(self, space: str, addresses: np.ndarray, lanes: np.ndarray) -> np.ndarray:
        """The 128 bytes of the tensor map (64-byte aligned) at each lane's address, (k, 128)."""
        bad = addresses % np.uint64(64) != 0
        if bad.any():
            raise Fault(f"the tensor map at {space} address {int(addresses[bad][0]):#x} is not 64-byte aligned",
                        lanes[bad][:1])
        return self.load(space, addresses, TENSOR_MAP_BYTES, lanes, align=64)

    def tensor_maps(self, space: str, addresses: np.ndarray, lanes: np.ndarray) -> list[TensorMap]:
        """The tensor maps at each lane's address, checked (:func:`~.tensormap.decode_tensor_map`)."""
        raw = self.tensor_map_bytes(space, addresses, lanes)
        maps = {}
        for k, row in enumerate(raw):
            key = row.tobytes()
            if key not in maps:
                try:
                    maps[key] = decode_tensor_map(key)
                except ValueError as error:
                    raise Fault(f"the tensor map at {space} address {int(addresses[k]):#x}: {error}",
                                lanes[k:k + 1]) from None
        return [maps[row.tobytes()] for row in raw]

    def tensor_load(self, dst: np.ndarray, maps: list[TensorMap], coords: np.ndarray, bars: np.ndarray,
                    lanes: np.ndarray) -> None:
        """cp.async.bulk.tensor global -> shared, each lane's box in lane order:
        the elements outside the tensor filled, the box's bytes (all of them,
        as hardware counts) signalled on the mbarrier."""
        found, positions = self.mbarriers(bars, lanes, "cp.async.bulk.tensor")
        barrier_of = {int(k): barrier for barrier, pick in found for k in pick}
        for k in range(len(lanes)):
            tmap, lane = maps[k], lanes[k:k + 1]
            start = _tensor_shared(dst[k], lane, "destination")
            addresses, inside = tmap.elements(coords[k])
            # All ones but the top bit: a NaN of every floating-point width.
            fill = np.array([0xFF] * (tmap.element - 1) + [0x7F], np.uint8) if tmap.nan else 0
            box = np.zeros((len(addresses), tmap.element), np.uint8)
            box[:] = fill
            if inside.any():
                box[inside] = self.memory.load(addresses[inside].astype(np.uint64), tmap.element,
                                               np.repeat(lane, inside.sum()))
            data = np.empty(tmap.bytes, np.uint8)
            data[_swizzle(start, tmap)] = box.reshape(-1)
            self.bulk_land(start, data, barrier_of[k], int(positions[k]), lane)

    def tensor_store(self, maps: list[TensorMap], coords: np.ndarray, src: np.ndarray, lanes: np.ndarray) -> None:
        """cp.async.bulk.tensor shared -> global, written now, each lane's box
        in lane order; the elements outside the tensor are not written."""
        for k in range(len(lanes)):
            tmap, lane = maps[k], lanes[k:k + 1]
            start = _tensor_shared(src[k], lane, "source")
            data = self.bulk_source(start, tmap.bytes, lane)
            box = data[_swizzle(start, tmap)].reshape(-1, tmap.element)
            addresses, inside = tmap.elements(coords[k])
            if inside.any():
                self.memory.store(addresses[inside].astype(np.uint64), box[inside], np.repeat(lane, inside.sum()))

    def proxy_fence(self, lanes: np.ndarray) -> None:
        """fence.proxy.async of shared memory by ``lanes`` (see :meth:`SharedMemory.proxy_fence`)."""
        if self.shared is not None and len(lanes):
            self.shared.proxy_fence(lanes)

    def bulk_commit(self, lanes: np.ndarray) -> None:
        self.bulk_committed[lanes] += 1

    def bulk_wait(self, lanes: np.ndarray, keep: int) -> None:
        """The bulk stores of ``lanes`` older than their ``keep`` most recent committed groups complete."""
        limit = np.full(self.n, -1, np.int64)
        limit[lanes] = self.bulk_committed[lanes] - keep
        remaining = []
        for store in self.bulk:
            lane, where, size, group = store
            if group < limit[lane]:
                self.shared.unhold(self.shared._cells(np.array([where]), size).reshape(-1), BULK_SOURCE)
            else:
                remaining.append(store)
        self.bulk = remaining

    def pending_bulk(self, lanes: np.ndarray) -> np.ndarray:
        """Those of ``lanes`` with bulk stores in flight."""
        if not self.bulk:
            return lanes[:0]
        busy = np.zeros(self.n, bool)
        busy[[store[0] for store in self.bulk]] = True
        return lanes[busy[lanes]]

    # -- warpgroup MMA (see :mod:`.warpgroup`)
    def warpgroups(self, mask: np.ndarray | None, what: str) -> np.ndarray:
        """The (warpgroups, 128) lanes of the warpgroups (threads 128i..128i+127
        of a block) executing a warpgroup-collective .sync.aligned instruction,
        after checking that all 128 threads of each execute it together."""
        lanes = self.lanes(mask)
        starts = np.unique(lanes - self.thread[lanes] % 128)
        partial = self.thread[starts] + 128 > self.threads
        if partial.any():
            raise Fault(f"{what} is warpgroup-collective, but the block has {self.threads} threads: its last "
                        "warpgroup is partial", starts[partial][:1])
        groups = starts[:, None] + np.arange(128)
        executing = np.zeros(self.n, bool)
        executing[lanes] = True
        missing = ~(executing[groups] & self.alive[groups])
        if missing.any():
            group, thread = np.argwhere(missing)[0]
            raise Fault(f"{what} is warpgroup-collective (.sync.aligned), but thread {thread} of the warpgroup is "
                        "not executing it with the others (divergent, waiting or exited)", starts[group:group + 1])
        return groups

    def wgmma_fence(self, lanes: np.ndarray) -> None:
        """wgmma.fence: the lanes' earlier register accesses are ordered before their next wgmma.mma_async."""
        self.unfenced[:, lanes] = False

    def wgmma_operands_ready(self, groups: np.ndarray, accumulators: frozenset[int], inputs: frozenset[int],
                             kind: tuple, what: str) -> None:
        """Checks a wgmma.mma_async's registers: no other instruction has
        accessed them since the warpgroup's wgmma.fence, and no wgmma in
        flight uses them, but as the accumulators of the same shape and types
        (the ISA orders those)."""
        lanes = groups.reshape(-1)
        self.shared.start_async()  # the wgmma's reads are recorded with the clocks its wait_group orders
        for slot in sorted(accumulators | inputs):
            unfenced = self.unfenced[self.wgmma_row[slot], lanes]
            if unfenced.any():
                raise Fault(f"{what} reads {self.kernel.function.registers[slot][0]}, which the thread may have "
                            "accessed since its last wgmma.fence: a wgmma.fence must come before the first "
                            "wgmma.mma_async and after other instructions access its accumulator or A registers",
                            lanes[unfenced][:1])
        for record in self.wgmma:
            overlap = (accumulators | inputs) & (record.accumulators | record.inputs)
            if not overlap or not np.isin(record.lanes[0], lanes):
                continue
            if record.kind != kind or not overlap <= accumulators & record.accumulators:
                raise Fault(f"{what} uses {self.kernel.function.registers[min(overlap)][0]}, a register of the "
                            f"wgmma.mma_async at line {record.ins.line} still in flight, other than as the "
                            "accumulator of the same shape and types: a wgmma.wait_group must retire it first",
                            record.lanes[:1])

    def wgmma_issue(self, groups: np.ndarray, cells: list[np.ndarray], accumulators: frozenset[int],
                    inputs: frozenset[int], kind: tuple, ins: Instruction) -> None:
        """Wgmma.mma_async of each warpgroup in flight, holding the shared
        granules ``cells[g]`` it read (as the first lane of each warp)."""
        for g, lanes in enumerate(groups):
            held = np.unique(cells[g])
            self.shared.hold(held, WGMMA_OPERAND)
            clocks = self.shared.close_reads(lanes[::WARP])
            self.wgmma.append(_Wgmma(lanes, int(self.wgmma_committed[lanes[0]]), accumulators, inputs, kind, held,
                                     clocks, ins))

    def wgmma_commit(self, lanes: np.ndarray) -> None:
        self.wgmma_committed[lanes] += 1

    def wgmma_wait(self, lanes: np.ndarray, keep: int) -> None:
        """The wgmma-groups of ``lanes`` older than their ``keep`` most recent
        committed ones retire: their shared memory is free, and every thread
        of the warpgroup is ordered after their reads."""
        limit = np.full(self.n, -1, np.int64)
        limit[lanes] = self.wgmma_committed[lanes] - keep
        remaining = []
        for record in self.wgmma:
            if record.group < limit[record.lanes[0]]:
                self.shared.unhold(record.cells, WGMMA_OPERAND)
                self.shared.order_after(record.lanes, record.lanes[::WARP], record.clocks)
            else:
                remaining.append(record)
        self.wgmma = remaining

    def wgmma_touch(self, op: Op, mask: np.ndarray | None) -> None:
        """Another instruction accesses registers of wgmma operands (``op.touches``):
        an error while a wgmma in flight uses them, else they need a
        wgmma.fence before the lanes' next wgmma.mma_async."""
        lanes = self.lanes(mask)
        if not len(lanes):
            return
        for record in self.wgmma:
            used = op.touches & (record.accumulators | record.inputs)
            if used:
                busy = np.isin(lanes, record.lanes)
                if busy.any():
                    slot = min(used)
                    role = "an accumulator" if slot in record.accumulators else "an A-fragment register"
                    raise Fault(f"{op.ins.opcode} accesses {self.kernel.function.registers[slot][0]}, {role} of the "
                                f"wgmma.mma_async at line {record.ins.line}, still in flight: no "
                                "wgmma.wait_group has retired it", lanes[busy][:1])
        self.unfenced[np.ix_([self.wgmma_row[slot] for slot in op.touches], lanes)] = True

    def pending_wgmma(self, lanes: np.ndarray) -> np.ndarray:
        """Those of ``lanes`` with a wgmma.mma_async in flight."""
        if not self.wgmma:
            return lanes[:0]
        return lanes[np.isin(lanes, np.concatenate([record.lanes for record in self.wgmma]))]

    # -- warps
    def warp_check(self, mask: np.ndarray | None, what: str, full: bool = False) -> None:
        """The live lanes of every warp with a lane in ``mask`` are all in it
        (``full``: and all 32 lanes live), as ``.aligned`` and ``.sync``
        collectives require."""
        if mask is None:
            if full and not self.alive.all():
                raise Fault(f"{what} needs all 32 lanes of the warp; the block's last warp is partial or "
                            "some of its threads have exited", np.flatnonzero(~self.alive)[:1])
            return
        m = mask.reshape(-1, WARP)
        alive = self.alive.reshape(-1, WARP)
        touched = m.any(axis=1)
        need = np.ones_like(alive) if full else alive
        missing = touched[:, None] & need & ~m
        if missing.any():
            warp = np.flatnonzero(missing.any(axis=1))[0]
            lane = warp * WARP + int(np.flatnonzero(missing[warp])[0])
            raise Fault(f"{what} is warp-collective, but lane {lane % WARP} of the warp is not executing it "
                        "with the others (divergent or exited)", np.array([warp * WARP + int(np.flatnonzero(m[warp])[0])]))


def _bulk_checks(shared: np.ndarray, other: np.ndarray, sizes: np.ndarray, lanes: np.ndarray, shared_role: str,
                 other_role: str) -> None:
    """cp.async.bulk's operands: a size that is a multiple of 16, 16-byte aligned addresses."""
    bad = sizes % 16 != 0
    if bad.any():
        raise Fault(f"cp.async.bulk of {int(sizes[bad][0])} bytes: the size must be a multiple of 16", lanes[bad][:1])
    for addresses, role, space in ((shared, shared_role, "shared"), (other, other_role, "global")):
        bad = addresses % np.uint64(16) != 0
        if bad.any():
            raise Fault(f"cp.async.bulk {role} at {space} address {int(addresses[bad][0]):#x} is not 16-byte aligned",
                        lanes[bad][:1])


def _tensor_shared(address: np.uint64, lane: np.ndarray, role: str) -> int:
    """A tensor copy's shared address, which must be 128-byte aligned (PTX ISA: cp.async.bulk.tensor)."""
    if int(address) % 128:
        raise Fault(f"cp.async.bulk.tensor {role} at shared address {int(address):#x} is not 128-byte aligned", lane)
    return int(address)


def _swizzle(start: int, tmap: TensorMap) -> np.ndarray:
    """Where each byte of the box (row-major) lies in the shared copy at
    ``start``: the swizzle is of the address bits, so a base off the
    pattern's repeat (1024 bytes for 128B) starts mid-pattern, as on hardware."""
    return swizzled(start + np.arange(tmap.bytes, dtype=np.int64), tmap.swizzle) - start


def run(kernel: Kernel, launch: Launch, memory: GlobalMemory, max_lanes: int = 1 << 14) -> int:
    """Runs every block of the launch; returns the instruction steps taken."""
    blocks = math.prod(launch.grid)
    per_block = -(-math.prod(launch.block) // WARP) * WARP
    shared = kernel.shared_layout(launch.dynamic_shared)
    size = shared[0]
    # Waves as large as the lane budget and about 64 MiB of shared-memory state allow.
    per_wave = max(1, min(max_lanes // per_block, (64 << 20) // max(size * 4, 1), blocks))
    steps = 0
    for start in range(0, blocks, per_wave):
        wave = Wave(kernel, launch, np.arange(start, min(start + per_wave, blocks)), memory, shared)
        steps += _execute(wave)
    return steps


def _execute(w: Wave) -> int:
    ops = w.kernel.ops
    n, R = w.n, w.R
    waiting = np.zeros(n, bool)
    suspended = np.zeros(n, bool)  # lanes in an mbarrier wait, until the mbarrier changes
    resume = np.zeros(n, np.int64)  # where a waiting or suspended lane goes on
    pc = 0
    pcs: np.ndarray | None = None  # per-lane counters while the lanes are apart
    mask: np.ndarray | None = None if w.alive.all() else w.alive.copy()  # the runnable lanes, with pc
    runnable = w.live_count
    limit = w.launch.max_steps
    shared = w.shared

    def apart() -> np.ndarray:
        spread = np.full(n, _IDLE, np.int64)
        spread[w.alive & ~waiting & ~suspended] = pc
        return spread

    with np.errstate(all="ignore"):
        while True:
            if w.touched:
                wake = suspended & np.isin(w.waits_on, list(w.touched)) if suspended.any() else None
                w.touched.clear()
                if wake is not None and wake.any():
                    if pcs is None:
                        pcs = apart()
                    suspended[wake] = False
                    pcs[wake] = resume[wake]
                    runnable += int(wake.sum())
            if not runnable:
                if not suspended.any():
                    break
                # Only waits are left: failed test_waits go on (they never block), else a deadlock.
                stuck = np.flatnonzero(suspended)
                testing = stuck[[ops[int(resume[k])].ins.opcode.startswith("mbarrier.test_wait") for k in stuck]]
                if not len(testing):
                    raise _deadlock(w, ops[int(resume[stuck[0]])].ins, int(stuck[0]))
                w.impatient[testing] = True
                suspended[testing] = False
                pcs[testing] = resume[testing]
                runnable += len(testing)
            if pcs is None:
                cur, act = pc, mask
            else:
                cur = int(pcs.min())
                act = pcs == cur
            w.steps += 1
            op = ops[cur]
            if w.steps > limit:
                raise _error(w, op.ins, w.lanes(act)[:1],
                             f"the kernel has not finished after {limit} instruction steps (an endless loop?); "
                             "Device(max_steps=...) raises the limit")
            if op.guard >= 0:
                g = R[op.guard]
                if op.negate:
                    g = ~g
                eff = g if act is None else act & g
            else:
                eff = act
            kind = op.kind
            if shared is not None:
                shared.op = cur  # the instruction its writes are by, for errors
            try:
                if op.touches is not None:
                    w.wgmma_touch(op, eff)
                if kind == NORMAL:
                    op.run(w, eff)
                    if pcs is None:
                        pc = cur + 1
                        continue
                    pcs[act] = cur + 1
                elif kind == BRANCH:
                    if op.guard < 0:
                        taken = 1
                    elif not eff.any():
                        taken = 0
                    else:
                        taken = 1 if (eff.all() if act is None else not (act & ~eff).any()) else -1
                    if taken >= 0:
                        nxt = op.target if taken else cur + 1
                        if pcs is None:
                            pc = nxt
                            continue
                        pcs[act] = nxt
                    else:
                        if pcs is None:
                            pcs = apart()
                            act = pcs == cur
                        pcs[act] = cur + 1
                        pcs[eff] = op.target
                elif kind == WAIT:
                    parked = op.run(w, eff)
                    if pcs is None:
                        if not len(parked):
                            pc = cur + 1
                            continue
                        pcs = apart()
                        act = pcs == cur
                    pcs[act] = cur + 1
                    pcs[parked] = _IDLE
                    suspended[parked] = True
                    resume[parked] = cur
                    runnable -= len(parked)
                elif kind == EXIT:
                    leaving = w.lanes(eff)
                    busy = w.pending_copies(leaving)
                    if len(busy):
                        raise Fault("the thread exits with cp.async copies in flight that no "
                                    "cp.async.wait_group waited for", busy[:1])
                    busy = w.pending_bulk(leaving)
                    if len(busy):
                        raise Fault("the thread exits with cp.async.bulk stores in flight that no "
                                    "cp.async.bulk.wait_group waited for", busy[:1])
                    busy = w.pending_wgmma(leaving)
                    if len(busy):
                        raise Fault("the thread exits with a wgmma.mma_async in flight that no wgmma.wait_group "
                                    "retired", busy[:1])
                    if pcs is None:
                        pcs = apart()
                    w.alive[leaving] = False
                    w.live_count -= len(leaving)
                    runnable -= len(leaving)
                    pcs[leaving] = _IDLE
                    pcs[pcs == cur] = cur + 1
                    if waiting.any():
                        runnable += _release(w, waiting, resume, pcs)
                else:  # BARRIER
                    if op.run is not None:
                        op.run(w, eff)
                    w.warp_check(eff, op.ins.opcode)
                    arriving = w.lanes(eff)
                    if pcs is None and len(arriving) == runnable and not waiting.any() and not suspended.any():
                        # Every live thread of every block is here.
                        if w.shared is not None:
                            w.shared.sync()
                        pc = cur + 1
                        continue
                    if pcs is None:
                        pcs = apart()
                    pcs[pcs == cur] = cur + 1  # lanes the guard spared go on
                    waiting[arriving] = True
                    resume[arriving] = cur + 1
                    pcs[arriving] = _IDLE
                    runnable -= len(arriving)
                    runnable += _release(w, waiting, resume, pcs)
            except Fault as fault:
                raise _error(w, op.ins, fault.lanes, fault.message, fault.other) from None
            # Apart: together again once every runnable lane has the lowest counter.
            low = int(pcs.min())
            if low != _IDLE and np.count_nonzero(pcs == low) == runnable:
                pc, pcs = low, None
                live = w.alive & ~waiting & ~suspended
                mask = None if live.all() else live
        if waiting.any():
            lane = np.flatnonzero(waiting)[:1]
            raise _error(w, ops[int(resume[lane[0]]) - 1].ins, lane,
                         "bar.sync can never complete: other threads of the block wait at another barrier")
    left = w.pending_copies(np.arange(n))
    if len(left):
        raise _error(w, ops[-1].ins, left[:1], "the kernel ends with cp.async copies in flight that no "
                     "cp.async.wait_group waited for")
    return w.steps


def _release(w: Wave, waiting: np.ndarray, resume: np.ndarray, pcs: np.ndarray) -> int:
    """Lets blocks whose live threads all wait at a barrier go on; returns how many lanes resumed."""
    blocks = w.block_index
    count = len(w.blocks)
    arrived = np.bincount(blocks[waiting], minlength=count)
    live = np.bincount(blocks[w.alive], minlength=count)
    done = (arrived == live) & (arrived > 0)
    if not done.any():
        return 0
    lanes = waiting & done[blocks]
    waiting[lanes] = False
    pcs[lanes] = resume[lanes]
    if w.shared is not None:
        w.shared.sync(done)
    return int(lanes.sum())


def _deadlock(w: Wave, ins: Instruction, lane: int) -> EmulationError:
    position = int(w.waits_on[lane])
    barrier = w.shared.mbarriers[position]
    return _error(w, ins, np.array([lane]), "every thread waits on an mbarrier phase nothing can complete (this one "
                  f"for phase {barrier.phase} of the mbarrier at shared offset {position % w.shared.stride}, with "
                  f"{barrier.pending} arrivals and {barrier.tx} transaction bytes pending)")


def _error(w: Wave, ins: Instruction, lanes: np.ndarray, message: str, other: int | None = None) -> EmulationError:
    block, thread = w.describe(int(lanes[0])) if len(lanes) else (None, None)
    if "{other}" in message:
        if other is not None:
            ob, ot = w.describe(other)
            message = message.replace("{other}", f"thread {ot}" + (f" of block {ob}" if ob != block else ""))
        else:
            message = message.replace("{other}", "another thread")
    return EmulationError(message, kernel=w.kernel.name, block=block, thread=thread, line=ins.line,
                          source=ins.source, text=ins.opcode)


def params_bytes(function: Function, args: Sequence) -> bytes:
    """The parameter buffer of an entry for Python values: buffers' device
    addresses (ints), None for null pointers, numbers for scalars."""
    out = bytearray(function.param_bytes)
    if len(args) != len(function.params):
        raise EmulationError(f"kernel {function.name} takes {len(function.params)} parameters, got {len(args)}")
    for param, value in zip(function.params, args):
        bits, kind = TYPES[param.type]
        if value is None:
            value = 0
        if param.size != max(bits // 8, 1):
            if not isinstance(value, (bytes, bytearray)) or len(value) != param.size:
                raise EmulationError(f"parameter {param.name} is {param.size} bytes; pass bytes of that length")
            out[param.offset:param.offset + param.size] = value
            continue
        if kind == "f":
            dtype = {16: np.float16, 32: np.float32, 64: np.float64}[bits]
            raw = np.array(value, dtype).tobytes()
        elif kind == "pred":
            raw = bytes([1 if value else 0])
        else:
            try:
                number = int(value)
            except (TypeError, ValueError):
                raise EmulationError(f"parameter {param.name} ({param.type}) takes a number or a buffer, "
                                     f"got {type(value).__name__}") from None
            low = 0 if kind == "u" else -(1 << (bits - 1))
            high = 1 << (bits - 1) if kind == "s" else 1 << bits
            if not low <= number < high:
                raise EmulationError(f"parameter {param.name} ({param.type}) cannot hold {number}")
            raw = (number & ((1 << bits) - 1)).to_bytes(bits // 8, "little")
        out[param.offset:param.offset + len(raw)] = raw
    return bytes(out)

