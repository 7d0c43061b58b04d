"""Device-function calls, inlined before an entry is decoded.

A ``call`` (PTX ISA 9.7.13.4) passes its arguments and results through
``.param`` variables that the caller declares in the call's ``{ }`` scope
(the parser makes them per-thread ``.local`` variables of their own names).
Inlining replaces each call by a copy of the callee's body: its registers
take slots after the caller's, its labels and ``.local`` variables get names
of their own, its formal parameters and results are the caller's variables
of that call, and its ``ret`` branches to the end of the copy. Loads and
stores of those variables then address ``.local`` memory. Calls within the
callee are inlined first; a recursive call, an indirect call (through a
register and a prototype) and a call to a function declared without a body
are EmulationErrors naming them.
"""

from __future__ import annotations

from dataclasses import replace

from .ptx import Address, EmulationError, Function, Instruction, Module, PredicatePair, Register, Symbol, Vector

__all__ = ["inlined"]


def inlined(module: Module, function: Function, callers: tuple[str, ...] = ()) -> Function:
    """``function`` with every call replaced by the callee's body."""
    if not any(ins.opcode.split(".")[0] == "call" for ins in function.body):
        return function
    labels_at: dict[int, list[str]] = {}
    for label, index in function.labels.items():
        labels_at.setdefault(index, []).append(label)
    registers, variables = list(function.registers), list(function.variables)
    body: list[Instruction] = []
    labels: dict[str, int] = {}
    for index, ins in enumerate(function.body + [None]):
        for label in labels_at.get(index, ()):
            labels[label] = len(body)
        if ins is None:
            break
        if ins.opcode.split(".")[0] != "call":
            body.append(ins)
            continue
        results, callee, arguments = _call_operands(module, function, ins)
        if callee.name in callers or callee.name == function.name:
            raise _error(function, ins, f"call to {callee.name} is recursive; the emulator inlines calls")
        flat = inlined(module, callee, callers + (function.name,))
        if len(arguments) != len(flat.params) or len(results) != len(flat.returns):
            raise _error(function, ins, f"call to {callee.name} passes {len(arguments)} arguments and "
                         f"{len(results)} results; it takes {len(flat.params)} and {len(flat.returns)}")
        copy = f"@{callee.name}#{len(body)}"
        names = {p.name: a.name for p, a in zip(flat.params + flat.returns, arguments + results)}
        for variable in flat.variables:
            names[variable.name] = variable.name + copy
            variables.append(replace(variable, name=variable.name + copy))
        names.update((label, label + copy) for label in flat.labels)
        end = "$return" + copy
        offset, start = len(registers), len(body)
        registers += flat.registers
        labels.update((label + copy, start + at) for label, at in flat.labels.items())
        for inner in flat.body:
            if inner.opcode.split(".")[0] == "ret":
                inner = replace(inner, opcode="bra", operands=[Symbol(end)])
            body.append(replace(inner, operands=[_renamed(op, offset, names) for op in inner.operands],
                                guard=_renamed(inner.guard, offset, names)))
        labels[end] = len(body)
    local = {v.name for v in variables if v.space == "local"}
    body = [_local_params(ins, local) for ins in body]
    return replace(function, registers=registers, variables=variables, body=body, labels=labels)


def _call_operands(module: Module, function: Function,
                   ins: Instruction) -> tuple[list[Symbol], Function, list[Symbol]]:
    """A call's result variables, callee and argument variables."""
    if ins.guard is not None:
        raise _error(function, ins, "a predicated call is not supported by the emulator")
    operands = list(ins.operands)
    results = list(operands.pop(0).elements) if operands and isinstance(operands[0], Vector) else []
    target = operands.pop(0) if operands else None
    arguments = list(operands.pop(0).elements) if operands and isinstance(operands[0], Vector) else []
    if operands or not isinstance(target, Symbol):
        raise _error(function, ins, "an indirect call (through a register and a prototype) is not supported by "
                                    "the emulator")
    for value in results + arguments:
        if not isinstance(value, Symbol):
            raise _error(function, ins, "call arguments and results must be .param variables")
    callee = module.functions.get(target.name)
    if callee is None:
        raise _error(function, ins, f"call to {target.name}, which the module declares without a body")
    return results, callee, arguments


def _renamed(operand, offset: int, names: dict[str, str]):
    """``operand`` of the callee as the inlined copy reads it."""
    if isinstance(operand, Register):
        return replace(operand, slot=operand.slot + offset)
    if isinstance(operand, Symbol):
        return Symbol(names.get(operand.name, operand.name))
    if isinstance(operand, Address):
        return Address(_renamed(operand.base, offset, names), operand.offset)
    if isinstance(operand, Vector):
        return Vector(tuple(_renamed(e, offset, names) for e in operand.elements))
    if isinstance(operand, PredicatePair):
        return PredicatePair(_renamed(operand.first, offset, names), _renamed(operand.second, offset, names))
    return operand


def _local_params(ins: Instruction, local: set[str]) -> Instruction:
    """ld.param/st.param of a call's variable, as the .local access it is."""
    parts = ins.opcode.split(".")
    if parts[0] in ("ld", "st") and "param" in parts and ins.operands:
        address = ins.operands[1] if parts[0] == "ld" else ins.operands[0]
        if isinstance(address, Address) and isinstance(address.base, Symbol) and address.base.name in local:
            return replace(ins, opcode=".".join("local" if p == "param" else p for p in parts))
    return ins


def _error(function: Function, ins: Instruction, message: str) -> EmulationError:
    return EmulationError(f"{ins.opcode}: {message}", kernel=function.name, line=ins.line, source=ins.source)
