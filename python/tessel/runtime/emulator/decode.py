"""Decoding: each PTX instruction once into an :class:`~.machine.Op` whose
``run(wave, mask)`` works on all lanes at once.

:class:`Decoder` holds what decoding one kernel needs (register slots and
their widths, labels, variable addresses) and the operand access rules of
the PTX ISA (section 6.4: instruction types against register types, the
relaxed rules for bit-size types, ld/st/cvt extension and truncation).
The semantics of each opcode live in :mod:`.instructions` (scalar and
memory) and :mod:`.warp` (warp-collective), registered by base opcode in
``OPCODES``; an opcode or modifier that no decoder consumes is an
EmulationError naming it and its line.
"""

from __future__ import annotations

import re
from math import gcd
from typing import Callable

import numpy as np

from .machine import EXIT, NORMAL, SPECIAL_REGISTERS, WIDE_SPECIAL_REGISTERS, Kernel, Op, Wave
from .inline import inlined
from .numerics import DTYPES, STORAGE
from .ptx import (TYPES, Address, EmulationError, Function, Immediate, Instruction, Module, PredicatePair,
                  Register, Symbol, TensorAddress, Vector)

__all__ = ["OPCODES", "Decoder", "Mods", "decode_kernel"]

Reader = Callable[[Wave], np.ndarray]
Writer = Callable[[Wave, np.ndarray, "np.ndarray | None"], None]
# base opcode -> decoder(decoder, instruction, modifiers) -> Op
OPCODES: dict[str, Callable[["Decoder", Instruction, "Mods"], Op]] = {}



def opcode(*names: str):
    def register(decoder):
        for name in names:
            OPCODES[name] = decoder
        return decoder
    return register


class Mods:
    """The ``.`` modifiers of an instruction, consumed by its decoder."""

    def __init__(self, ins: Instruction, parts: list[str], kernel: str | None = None) -> None:
        self.ins, self.parts, self.kernel = ins, list(parts), kernel

    def take(self, *options: str) -> str | None:
        """Removes and returns the first modifier among ``options``."""
        for i, part in enumerate(self.parts):
            if part in options:
                return self.parts.pop(i)
        return None

    def types(self) -> list[str]:
        """Removes and returns the type modifiers, in order."""
        found = [p for p in self.parts if p in TYPES]
        self.parts = [p for p in self.parts if p not in TYPES]
        return found

    def type(self, allowed: set[str] | None = None) -> str:
        found = self.types()
        if len(found) != 1 or allowed is not None and found[0] not in allowed:
            raise self.error(f"expects one type{' of ' + ', '.join(sorted(allowed)) if allowed else ''}")
        return found[0]

    def error(self, message: str) -> EmulationError:
        return EmulationError(f"{self.ins.opcode}: {message}", kernel=self.kernel, line=self.ins.line,
                              source=self.ins.source, text=self.ins.opcode)

    def done(self) -> None:
        if self.parts:
            raise self.error(f"modifier .{self.parts[0]} is not supported by the emulator")


class Decoder:
    """Decodes the instructions of one entry function."""

    def __init__(self, module: Module, function: Function, globals_: dict[str, int], target: int) -> None:
        self.module, self.function, self.target = module, function, target
        self.globals = globals_  # module .global/.const variable -> device address
        self.storage = [STORAGE[TYPES[t][0]] if TYPES[t][0] <= 64 else None for _, t in function.registers]
        self.shared_sizes: set[int] = set()
        # Static shared memory: every module-scope variable the kernel names, then its own.
        named = {op.name for ins in function.body for op in _symbols(ins.operands)}
        variables = [v for v in module.variables if v.space == "shared" and v.name in named] + \
            [v for v in function.variables if v.space == "shared"]
        self.shared: dict[str, int] = {}
        self.shared_vars: list[tuple[int, int]] = []
        offset, align = 0, 16
        dynamic = []
        for v in variables:
            if v.extern:
                dynamic.append(v.name)
                align = max(align, v.align)
                continue
            offset = -(-offset // max(v.align, 1)) * max(v.align, 1)
            self.shared[v.name] = offset
            self.shared_vars.append((offset, v.size))
            offset += v.size
        self.static_shared = offset
        # The dynamic region (every .extern .shared name) starts after, at its alignment.
        self.dynamic_offset = -(-offset // align) * align
        for name in dynamic:
            self.shared[name] = self.dynamic_offset
        self.declares_shared = bool(variables)
        offset = 0
        self.local: dict[str, int] = {}
        for v in function.variables:
            if v.space == "local":
                offset = -(-offset // max(v.align, 1)) * max(v.align, 1)
                self.local[v.name] = offset
                offset += v.size
        self.local_bytes = offset
        self.params = {p.name: p for p in function.params}
        self.wgmma_registers: set[int] = set()  # accumulator and A-fragment registers of wgmma.mma_async

    # -- operands
    def error(self, ins: Instruction, message: str) -> EmulationError:
        return EmulationError(f"{ins.opcode}: {message}", kernel=self.function.name, line=ins.line,
                              source=ins.source, text=ins.opcode)

    def needs(self, ins: Instruction, sm: int, arch_specific: bool = False) -> None:
        """Refuses an instruction that the chip of the PTX's .target (else
        the device's) lacks, as ptxas does; ``arch_specific``: an sm_XXa feature."""
        target = (self.module.target or f"sm_{self.target}").split(",")[0].strip()
        match = re.fullmatch(r"sm_(\d+)(a?)", target)
        if match is None or int(match.group(1)) < sm or arch_specific and not match.group(2):
            raise self.error(ins, f"needs sm_{sm}{'a' if arch_specific else ''} or newer; the PTX targets {target}")

    def reader(self, ins: Instruction, operand, type_: str) -> Reader:
        """A function giving the operand's value as PTX type ``type_`` for every lane."""
        dtype = DTYPES[type_]
        if isinstance(operand, Register):
            return self._register_reader(ins, operand, type_)
        if isinstance(operand, Immediate):
            value = immediate(operand, type_)
            return lambda w: value
        if isinstance(operand, Symbol):
            name = operand.name
            if name in SPECIAL_REGISTERS:
                wide = name in WIDE_SPECIAL_REGISTERS
                if type_ == "pred":
                    raise self.error(ins, f"{name} is not a predicate")
                bits = TYPES[type_][0]
                if bits == (64 if wide else 32):
                    return lambda w: w.special_register(name).view(dtype)
                unsigned = STORAGE[bits]
                return lambda w: w.special_register(name).astype(unsigned).view(dtype)
            if name.startswith("%"):
                raise self.error(ins, f"unknown register or special register {name}")
            address = self.symbol_address(ins, name)
            value = immediate(Immediate(address), type_)
            return lambda w: value
        if isinstance(operand, Address) and isinstance(operand.base, Symbol) and \
                not operand.base.name.startswith("%"):
            value = immediate(Immediate(self.symbol_address(ins, operand.base.name) + operand.offset), type_)
            return lambda w: value
        raise self.error(ins, f"operand {_describe(operand)} cannot be read as .{type_}")

    def _register_reader(self, ins: Instruction, reg: Register, type_: str) -> Reader:
        slot, reg_type = reg.slot, reg.type
        if (reg_type == "pred") != (type_ == "pred"):
            raise self.error(ins, f"register {reg.name} is .{reg_type}, the instruction reads .{type_}")
        if type_ == "pred":
            return (lambda w: ~w.R[slot]) if reg.negated else (lambda w: w.R[slot])
        if reg.negated:
            raise self.error(ins, f"!{reg.name}: only predicates can be negated")
        have, want = TYPES[reg_type][0], TYPES[type_][0]
        dtype = DTYPES[type_]
        if have == want:
            if self.storage[slot] == dtype:
                return lambda w: w.R[slot]
            return lambda w: w.R[slot].view(dtype)
        unsigned = STORAGE[want]
        if have > want:  # the low bits (st.u8 of a .b32 register, cvt's relaxed source)
            return lambda w: w.R[slot].astype(unsigned).view(dtype)
        signed = TYPES[type_][1] == "s"
        source = DTYPES[f"s{have}"] if signed and have >= 8 else None
        if source is not None:
            return lambda w: w.R[slot].view(source).astype(dtype)
        return lambda w: w.R[slot].astype(unsigned).view(dtype)

    def writer(self, ins: Instruction, operand, type_: str) -> Writer:
        """A function storing a value of PTX type ``type_`` into the
        destination register for the lanes of a mask; extended or truncated
        to the register's width (ld, cvt's relaxed destinations)."""
        if operand is None:
            return lambda w, value, m: None
        if not isinstance(operand, Register):
            raise self.error(ins, f"destination {_describe(operand)} is not a register")
        slot, reg_type = operand.slot, operand.type
        if (reg_type == "pred") != (type_ == "pred"):
            raise self.error(ins, f"register {operand.name} is .{reg_type}, the instruction writes .{type_}")
        storage = self.storage[slot]
        n_have, n_want = TYPES[reg_type][0], TYPES[type_][0]
        if type_ == "pred" or n_have == n_want:
            convert = None
        elif n_have > n_want:
            if TYPES[type_][1] == "s":
                convert = lambda v: np.asarray(v).astype(np.int64).astype(storage)  # noqa: E731
            else:
                unsigned = STORAGE[n_want]
                convert = lambda v: np.asarray(v).view(unsigned).astype(storage)  # noqa: E731
        else:
            unsigned = STORAGE[n_want]
            convert = lambda v: np.asarray(v).view(unsigned).astype(storage)  # noqa: E731

        def write(w: Wave, value, m) -> None:
            value = np.asarray(value)
            bits = value.view(storage) if convert is None else convert(value)
            if m is None:
                w.R[slot] = bits if bits.shape == (w.n,) else np.full(w.n, bits, storage)
            else:
                w.R[slot] = np.where(m, bits, w.R[slot])
        return write

    def symbol_address(self, ins: Instruction, name: str) -> int:
        """A variable's address in its own state space (mov of a variable name)."""
        if name in self.shared:
            return self.shared[name]
        if name in self.globals:
            return self.globals[name]
        if name in self.local:
            return self.local[name]
        if name in self.params:
            return self.params[name].offset
        raise self.error(ins, f"unknown variable {name}")

    def space_of(self, name: str) -> str | None:
        if name in self.shared:
            return "shared"
        if name in self.globals:
            return "global"
        if name in self.local:
            return "local"
        if name in self.params:
            return "param"
        return None

    def address(self, ins: Instruction, operand) -> tuple[Callable[[Wave, np.ndarray], np.ndarray], str | None]:
        """For ``[reg+offset]`` / ``[var+offset]``: a function of (wave, lanes)
        giving each lane's address as uint64, and the state space a variable
        base implies (None for a register)."""
        if not isinstance(operand, Address):
            raise self.error(ins, f"expects an address, got {_describe(operand)}")
        offset = np.uint64(operand.offset & (2**64 - 1))
        base = operand.base
        if base is None:
            return (lambda w, lanes: np.full(len(lanes), offset, np.uint64)), None
        if isinstance(base, Symbol):
            if base.name.startswith("%"):
                raise self.error(ins, f"{base.name} is not an address")
            value = np.uint64(self.symbol_address(ins, base.name) + operand.offset & (2**64 - 1))
            return (lambda w, lanes: np.full(len(lanes), value, np.uint64)), self.space_of(base.name)
        if base.type == "pred" or TYPES[base.type][0] not in (32, 64):
            raise self.error(ins, f"address register {base.name} must be 32 or 64 bits")
        slot = base.slot
        if TYPES[base.type][0] == 32:
            return (lambda w, lanes: w.R[slot][lanes].astype(np.uint64) + offset), None
        if operand.offset == 0:
            return (lambda w, lanes: w.R[slot][lanes]), None
        return (lambda w, lanes: w.R[slot][lanes] + offset), None

    def shared_access(self, space: str, size: int) -> None:
        """Notes a shared (or generic) access of ``size`` bytes, for the race detector's granule."""
        if space in ("shared", "generic"):
            self.shared_sizes.add(size)

    def operands(self, ins: Instruction, count: int | tuple[int, ...]) -> list:
        counts = (count,) if isinstance(count, int) else count
        if len(ins.operands) not in counts:
            raise self.error(ins, f"expects {' or '.join(map(str, counts))} operands, got {len(ins.operands)}")
        return ins.operands

    @staticmethod
    def normal(ins: Instruction, run: Callable[[Wave, "np.ndarray | None"], None]) -> Op:
        return Op(NORMAL, run, ins)


def immediate(operand: Immediate, type_: str):
    """A literal as a numpy scalar of ``type_`` (integers wrap; float literals keep their bits)."""
    dtype = DTYPES[type_]
    bits, kind = TYPES[type_]
    if kind == "pred":
        return np.bool_(bool(operand.value))
    if operand.is_float:
        if kind == "f" and type_ in ("f32", "f64", "f16", "bf16"):
            if operand.width == bits:
                return np.array(operand.bits, STORAGE[bits]).view(dtype)[()]
            return np.array(operand.value, np.float64).astype(dtype)[()]
        if operand.width != bits:
            raise ValueError(f"a {operand.width}-bit float literal as .{type_}")
        return np.array(operand.bits, STORAGE[bits]).view(dtype)[()]
    if kind == "f" and type_ in ("f32", "f64", "f16", "bf16"):
        return np.array(operand.value, np.float64).astype(dtype)[()]
    return np.array(operand.value & ((1 << bits) - 1), STORAGE[bits]).view(dtype)[()]


def _describe(operand) -> str:
    if isinstance(operand, Register):
        return operand.name
    if isinstance(operand, Immediate):
        return str(operand.value)
    if isinstance(operand, Symbol):
        return operand.name
    if isinstance(operand, Vector):
        return "{" + ", ".join(_describe(e) if e is not None else "_" for e in operand.elements) + "}"
    if isinstance(operand, Address):
        return f"[{_describe(operand.base) if operand.base is not None else ''}+{operand.offset}]"
    if isinstance(operand, PredicatePair):
        return f"{_describe(operand.first)}|{_describe(operand.second)}"
    return "_"


def _symbols(operands) -> list[Symbol]:
    out = []
    for op in operands:
        if isinstance(op, Symbol):
            out.append(op)
        elif isinstance(op, Address) and isinstance(op.base, Symbol):
            out.append(op.base)
        elif isinstance(op, Vector):
            out.extend(e for e in op.elements if isinstance(e, Symbol))
    return out


def _registers(operands) -> set[int]:
    """The register slots an instruction's operands name."""
    out = set()
    for op in operands:
        if isinstance(op, Register):
            out.add(op.slot)
        elif isinstance(op, Address) and isinstance(op.base, Register):
            out.add(op.base.slot)
        elif isinstance(op, TensorAddress):
            out |= _registers([op.map, op.coords])
        elif isinstance(op, Vector):
            out |= _registers(op.elements)
        elif isinstance(op, PredicatePair):
            out |= _registers([op.first, op.second])
    return out


def decode_kernel(module: Module, function: Function, globals_: dict[str, int], target: int) -> Kernel:
    """Decodes every instruction of an entry; EmulationError on the first it cannot run."""
    from . import instructions, warp, warpgroup  # noqa: F401 - they register their opcodes

    function = inlined(module, function)
    decoder = Decoder(module, function, globals_, target)
    ops = []
    for ins in function.body:
        base, *parts = ins.opcode.split(".")
        handler = OPCODES.get(base)
        if handler is None:
            raise decoder.error(ins, f"instruction {base} is not supported by the emulator")
        mods = Mods(ins, parts, function.name)
        try:
            op = handler(decoder, ins, mods)
        except (KeyError, ValueError, TypeError) as e:
            raise decoder.error(ins, f"cannot decode ({e})") from None
        mods.done()
        ops.append(op)
    # Falling off the end of an entry (or branching to a label there) is a ret.
    ops.append(Op(EXIT, None, Instruction("ret", [], None, function.body[-1].line if function.body else
                                          function.line, None)))
    # Other instructions' accesses to the registers of wgmma operands are checked as they run (Wave.wgmma_touch).
    if decoder.wgmma_registers:
        for op in ops:
            touches = _registers(op.ins.operands + [op.ins.guard]) & decoder.wgmma_registers
            if touches and not op.ins.opcode.startswith("wgmma."):
                op.touches = frozenset(touches)
    granule = 16
    for size in decoder.shared_sizes:
        granule = gcd(granule, size)
    return Kernel(function, ops, [s if s is not None else np.dtype(np.uint64) for s in decoder.storage],
                  decoder.static_shared, decoder.shared_vars, decoder.dynamic_offset, decoder.local_bytes,
                  max(granule, 1), decoder.declares_shared or bool(decoder.shared_sizes),
                  tuple(sorted(decoder.wgmma_registers)))
