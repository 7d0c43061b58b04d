"""Parsing PTX text into modules, functions and instructions.

Written from NVIDIA's PTX ISA (chapters 4-11: syntax, state spaces, types,
directives). The parser is complete for the syntax, not for the
instruction set: it keeps every instruction as an opcode, its ``.``
modifiers and operands, and :mod:`.instructions` decides what it means.
A construct it does not know is an :class:`EmulationError` naming it and
its line, never skipped. Register names are resolved through the
function's nested ``{ }`` scopes here, so later stages see unique slots.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace, field
from ...errors import RuntimeError

__all__ = ["Address", "EmulationError", "Function", "Immediate", "Instruction", "Module", "Param",
           "PredicatePair", "Register", "Symbol", "TensorAddress", "Variable", "Vector", "parse"]


class EmulationError(RuntimeError):
    """The emulator cannot load or run a kernel, or the kernel did something
    a GPU would not allow (an out-of-bounds access, a race, a missing wait).
    ``kernel``, ``block``, ``thread``, ``line`` (of the PTX) and ``source``
    (the ``.loc`` location, ``file:line:col``) are set where known."""

    def __init__(self, message: str, *, kernel: str | None = None, block: tuple[int, ...] | None = None,
                 thread: tuple[int, ...] | None = None, line: int | None = None, source: str | None = None,
                 text: str | None = None) -> None:
        self.message, self.kernel, self.block, self.thread = message, kernel, block, thread
        self.line, self.source, self.text = line, source, text
        where = []
        if kernel is not None:
            where.append(f"kernel {kernel}")
        if block is not None:
            where.append(f"block {block}")
        if thread is not None:
            where.append(f"thread {thread}")
        if line is not None:
            where.append(f"PTX line {line}" + (f" ({text})" if text else ""))
        if source is not None:
            where.append(f"source {source}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


# Storage of each register and scalar type: (bits, kind) with kind one of
# "b" (untyped bits), "u", "s", "f", "pred".
TYPES: dict[str, tuple[int, str]] = {
    "pred": (1, "pred"),
    "b8": (8, "b"), "u8": (8, "u"), "s8": (8, "s"),
    "b16": (16, "b"), "u16": (16, "u"), "s16": (16, "s"), "f16": (16, "f"), "bf16": (16, "f"),
    "b32": (32, "b"), "u32": (32, "u"), "s32": (32, "s"), "f32": (32, "f"), "f16x2": (32, "f"),
    "bf16x2": (32, "f"), "tf32": (32, "f"),
    "b64": (64, "b"), "u64": (64, "u"), "s64": (64, "s"), "f64": (64, "f"),
    "b128": (128, "b"),
}


@dataclass(frozen=True)
class Register:
    """A register operand: ``slot`` indexes the function's register file."""

    name: str
    slot: int
    type: str
    negated: bool = False  # !%p, in predicate operands


@dataclass(frozen=True)
class Immediate:
    """An integer (``value`` an int) or floating-point literal. Float
    literals keep their exact bits: ``bits`` of width ``width`` (32 for
    ``0f...``, 64 for ``0d...`` and decimal literals)."""

    value: int | float
    is_float: bool = False
    bits: int = 0
    width: int = 64


@dataclass(frozen=True)
class Symbol:
    """A name: a variable (its address), a label, a function or a special register."""

    name: str


@dataclass(frozen=True)
class Vector:
    """``{a, b, ...}``: elements are Register, Immediate or None (``_``, a sink)."""

    elements: tuple


@dataclass(frozen=True)
class Address:
    """``[base+offset]``: ``base`` a Register, a Symbol (a variable) or None (an absolute address)."""

    base: Register | Symbol | None
    offset: int


@dataclass(frozen=True)
class TensorAddress:
    """``[map, {c0, c1, ...}]``: a tensor map's address and the box's coordinates (cp.async.bulk.tensor)."""

    map: Address
    coords: Vector


@dataclass(frozen=True)
class PredicatePair:
    """``d|p``: the two destinations of setp and shfl (either may be ``_``, None)."""

    first: Register | None
    second: Register | None


Operand = Register | Immediate | Symbol | Vector | Address | TensorAddress | PredicatePair | None


@dataclass
class Instruction:
    opcode: str  # the whole opcode with its modifiers, "ld.global.v4.f32"
    operands: list
    guard: Register | None  # @%p / @!%p (negated set)
    line: int
    source: str | None  # the .loc in force, "file:line:col" (files are named at the end of a module)

    @property
    def parts(self) -> list[str]:
        return self.opcode.split(".")

    @property
    def text(self) -> str:
        return self.opcode


@dataclass
class Variable:
    """A ``.shared``/``.global``/``.const``/``.local`` variable."""

    name: str
    space: str
    type: str
    size: int  # bytes; 0 for .extern arrays of unknown size ([] dims)
    align: int
    extern: bool
    init: bytes | None
    line: int


@dataclass
class Param:
    name: str
    type: str  # a scalar type, or "b8" for byte arrays
    size: int
    align: int
    offset: int  # in the parameter buffer


@dataclass
class Function:
    name: str
    is_entry: bool
    params: list[Param]
    returns: list[Param]
    registers: list[tuple[str, str]]  # slot -> (name, type)
    body: list[Instruction]
    labels: dict[str, int]  # label -> index into body
    variables: list[Variable]  # function-scope .shared/.local
    directives: dict[str, tuple[int, ...]]  # .reqntid, .maxntid, .minnctapersm, ...
    line: int

    @property
    def param_bytes(self) -> int:
        return max((p.offset + p.size for p in self.params), default=0)


@dataclass
class Module:
    version: str
    target: str
    address_size: int
    variables: list[Variable]
    functions: dict[str, Function]
    files: dict[int, str] = field(default_factory=dict)


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+)
  | (?P<nl>\n)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<str>"[^"\n]*")
  | (?P<num>0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}
        |0[xX][0-9a-fA-F]+U?|0[bB][01]+U?
        |(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?U?)
  | (?P<id>[A-Za-z_$%.][\w$.]*(?:::[\w$.]+)*)
  | (?P<punct>[{}\[\](),;:|!@+\-<>=])
""", re.VERBOSE | re.DOTALL)

# Directives that end at the line's end, without a semicolon.
_LINE_DIRECTIVES = {".version", ".target", ".address_size", ".file", ".loc"}
# Performance-tuning directives of an entry (section 11.4): kept as data.
_PERF_DIRECTIVES = {".maxnreg", ".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".noreturn",
                    ".maxclusterrank", ".reqnctapercluster", ".explicitcluster", ".pragma", ".blocksareclusters"}
_SPACES = {".shared", ".global", ".const", ".local"}
_LINKAGE = {".visible", ".extern", ".weak", ".common"}


@dataclass
class _Token:
    kind: str
    text: str
    line: int


def _tokens(text: str) -> list[_Token]:
    tokens, line, pos = [], 1, 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise EmulationError(f"unexpected character {text[pos]!r} in the PTX", line=line)
        kind, value = match.lastgroup, match.group()
        if kind == "nl":
            tokens.append(_Token("nl", value, line))
            line += 1
        elif kind == "comment":
            for _ in range(value.count("\n")):
                tokens.append(_Token("nl", "\n", line))
                line += 1
        elif kind != "ws":
            tokens.append(_Token(kind, value, line))
        pos = match.end()
    tokens.append(_Token("eof", "", line))
    return tokens


def parse_number(text: str) -> Immediate:
    """A PTX numeric literal (integer, ``0f``/``0d`` hex float, decimal float)."""
    import struct

    if text[:2] in ("0f", "0F"):
        bits = int(text[2:], 16)
        return Immediate(struct.unpack("<f", struct.pack("<I", bits))[0], True, bits, 32)
    if text[:2] in ("0d", "0D"):
        bits = int(text[2:], 16)
        return Immediate(struct.unpack("<d", struct.pack("<Q", bits))[0], True, bits, 64)
    body = text.rstrip("U")
    if body[:2] in ("0x", "0X"):
        return Immediate(int(body, 16))
    if body[:2] in ("0b", "0B"):
        return Immediate(int(body[2:], 2))
    if any(c in body for c in ".eE"):
        value = float(body)
        return Immediate(value, True, struct.unpack("<Q", struct.pack("<d", value))[0], 64)
    # A leading zero makes an octal literal in PTX, as in C.
    return Immediate(int(body, 8) if len(body) > 1 and body[0] == "0" else int(body))


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0
        self.module = Module("", "", 64, [], {})
        self.source: str | None = None

    # -- token helpers
    def peek(self, skip_newlines: bool = True) -> _Token:
        if skip_newlines:
            while self.tokens[self.pos].kind == "nl":
                self.pos += 1
        return self.tokens[self.pos]

    def next(self, skip_newlines: bool = True) -> _Token:
        token = self.peek(skip_newlines)
        self.pos += 1
        return token

    def expect(self, text: str) -> _Token:
        token = self.next()
        if token.text != text:
            raise EmulationError(f"expected {text!r}, found {token.text or 'the end'!r}", line=token.line)
        return token

    def accept(self, text: str) -> bool:
        if self.peek().text == text:
            self.pos += 1
            return True
        return False

    def rest_of_line(self) -> list[_Token]:
        out = []
        while self.tokens[self.pos].kind not in ("nl", "eof"):
            out.append(self.tokens[self.pos])
            self.pos += 1
        return out

    def skip_block(self) -> None:
        """Skips a balanced ``{ ... }`` (debug sections)."""
        self.expect("{")
        depth = 1
        while depth:
            token = self.next()
            if token.kind == "eof":
                raise EmulationError("unterminated { } block", line=token.line)
            depth += {"{": 1, "}": -1}.get(token.text, 0) if token.kind == "punct" else 0

    def integer(self) -> int:
        negative = self.accept("-")
        token = self.next()
        if token.kind != "num":
            raise EmulationError(f"expected a number, found {token.text!r}", line=token.line)
        value = parse_number(token.text)
        if value.is_float:
            raise EmulationError(f"expected an integer, found {token.text!r}", line=token.line)
        return -value.value if negative else value.value

    # -- module level
    def parse(self) -> Module:
        while True:
            token = self.peek()
            if token.kind == "eof":
                return self.module
            self.top_level(token)

    def line_directive(self, token: _Token) -> None:
        self.pos += 1
        args = self.rest_of_line()
        if token.text == ".version":
            self.module.version = "".join(a.text for a in args)
        elif token.text == ".target":
            self.module.target = "".join(a.text for a in args)
        elif token.text == ".address_size":
            self.module.address_size = int(args[0].text)
        elif token.text == ".file":
            strings = [a.text.strip('"') for a in args if a.kind == "str"]
            if not args or args[0].kind != "num" or not strings:
                raise EmulationError("malformed .file directive", line=token.line)
            # DWARF 5 style puts the directory first, then the file name.
            path = strings[-1] if len(strings) == 1 or strings[-1].startswith("/") else \
                strings[0].rstrip("/") + "/" + strings[-1]
            self.module.files[int(args[0].text)] = path
        else:  # .loc file line column [, function_name ..., inlined_at ...]
            numbers = [a.text for a in args if a.kind == "num"][:3]
            if len(numbers) < 2:
                raise EmulationError("malformed .loc directive", line=token.line)
            file_index, line = int(numbers[0]), int(numbers[1])
            column = int(numbers[2]) if len(numbers) > 2 else 0
            self.source = (file_index, line, column)

    def top_level(self, token: _Token) -> None:
        if token.text in _LINE_DIRECTIVES:
            self.line_directive(token)
            return
        if token.text == ".section":  # debug information: DWARF data the emulator has no use for
            self.pos += 1
            self.next()
            self.skip_block()
            return
        linkage = set()
        while self.peek().text in _LINKAGE:
            linkage.add(self.next().text)
        token = self.peek()
        if token.text in (".entry", ".func"):
            self.function(linkage)
        elif token.text in _SPACES:
            self.module.variables.append(self.variable(linkage))
        elif token.text == ".alias":
            raise EmulationError("the .alias directive is not supported by the emulator", line=token.line)
        else:
            raise EmulationError(f"unknown PTX directive or statement {token.text!r} at module scope",
                                 line=token.line)

    def variable(self, linkage: set[str]) -> Variable:
        space_token = self.next()
        space, line = space_token.text[1:], space_token.line
        align, vector = 0, 1
        type_ = None
        while True:
            token = self.next()
            if token.text == ".align":
                align = self.integer()
            elif token.text in (".v2", ".v4", ".v8"):
                vector = int(token.text[2:])
            elif token.text[1:] in TYPES:
                type_ = token.text[1:]
            elif token.text in (".ptr",):
                continue
            else:
                break
        if type_ is None:
            raise EmulationError(f"variable {token.text!r} has no type", line=line)
        name = token.text
        element = max(TYPES[type_][0] // 8, 1) * vector
        count, extern = 1, ".extern" in linkage
        while self.accept("["):
            if self.accept("]"):
                count = 0  # an array of unknown size: .extern .shared dynamic memory
                continue
            count *= self.integer()
            self.expect("]")
        init = None
        if self.accept("="):
            init = self.initializer(type_, element // vector, count * vector, line)
        self.expect(";")
        return Variable(name, space, type_, element * count, align or element // vector, extern, init, line)

    def initializer(self, type_: str, size: int, count: int, line: int) -> bytes:
        import struct

        values: list = []

        def items() -> None:
            if self.accept("{"):
                while True:
                    items()
                    if not self.accept(","):
                        break
                self.expect("}")
            else:
                negative = self.accept("-")
                token = self.next()
                if token.kind == "num":
                    value = parse_number(token.text)
                    values.append(-value.value if negative else value.value)
                elif token.kind == "id":
                    raise EmulationError(f"an initializer with the address of {token.text!r} is not "
                                         "supported by the emulator", line=token.line)
                else:
                    raise EmulationError(f"malformed initializer near {token.text!r}", line=token.line)

        items()
        kind = TYPES[type_][1]
        out = bytearray()
        for v in values:
            if kind == "f":
                out += struct.pack({4: "<f", 8: "<d", 2: "<e"}[size], v)
            else:
                out += (int(v) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        if len(values) > count:
            raise EmulationError("the initializer has more values than the variable", line=line)
        return bytes(out.ljust(size * count, b"\0"))

    def params(self, offset_start: int = 0) -> list[Param]:
        params: list[Param] = []
        offset = offset_start
        self.expect("(")
        if self.accept(")"):
            return params
        while True:
            token = self.next()
            if token.text not in (".param", ".reg"):
                raise EmulationError(f"expected .param, found {token.text!r}", line=token.line)
            align, type_ = 0, None
            while True:
                token = self.next()
                if token.text == ".align":
                    align = self.integer()
                elif token.text[1:] in TYPES:
                    type_ = token.text[1:]
                elif token.text in (".ptr", ".global", ".shared", ".const", ".local"):
                    continue
                else:
                    break
            if type_ is None:
                raise EmulationError(f"parameter {token.text!r} has no type", line=token.line)
            name, size = token.text, max(TYPES[type_][0] // 8, 1)
            if self.accept("["):
                size *= self.integer()
                self.expect("]")
            # .ptr .align N gives the alignment of what it points to, not of the parameter.
            natural = max(TYPES[type_][0] // 8, 1)
            align = natural if TYPES[type_][0] != 8 else (align or 1)
            offset = (offset + align - 1) // align * align
            params.append(Param(name, type_, size, align, offset))
            offset += size
            if self.accept(")"):
                return params
            self.expect(",")

    def function(self, linkage: set[str]) -> None:
        kind = self.next()
        returns: list[Param] = []
        if kind.text == ".func" and self.peek().text == "(":
            returns = self.params()
        name = self.next().text
        params = self.params() if self.peek().text == "(" else []
        directives: dict[str, tuple[int, ...]] = {}
        while self.peek().text in _PERF_DIRECTIVES:
            directive = self.next().text
            values = []
            if directive == ".pragma":
                while self.peek().kind == "str" or self.peek().text == ",":
                    self.next()
            else:
                while self.peek().kind == "num":
                    values.append(self.integer())
                    if not self.accept(","):
                        break
            directives[directive] = tuple(values)
        if self.accept(";"):
            return  # a declaration; calls to it are resolved (or refused) when they run
        body = _Body(self, name)
        function = Function(name, kind.text == ".entry", params, returns, [], [], {}, [], directives, kind.line)
        body.parse(function)
        self.module.functions[name] = function


class _Body:
    """A function body: nested scopes of register names, labels, instructions."""

    def __init__(self, parser: _Parser, name: str) -> None:
        self.p, self.name = parser, name
        # Names in scope: registers, and call parameters (their variable's name).
        self.scopes: list[dict[str, Register | str]] = []
        self.declared = 0
        # Labels are scoped by blocks too (an inline asm's "LAB_WAIT:" in braces may be inlined many times):
        # per open block, where its instructions start and its labels' names in the function.
        self.label_scopes: list[tuple[int, dict[str, str]]] = []

    def declare(self, function: Function, name: str, type_: str) -> None:
        slot = len(function.registers)
        function.registers.append((name, type_))
        self.scopes[-1][name] = Register(name, slot, type_)

    def register(self, name: str, line: int) -> Register:
        for scope in reversed(self.scopes):
            if isinstance(scope.get(name), Register):
                return scope[name]
        raise EmulationError(f"register {name} is not declared", line=line)

    def parse(self, function: Function) -> None:
        p = self.p
        p.expect("{")
        self.open(function)
        while True:
            token = p.peek()
            if token.kind == "eof":
                raise EmulationError(f"function {self.name} is not closed", line=token.line)
            if token.text == "}":
                p.next()
                self.close(function)
                if not self.scopes:
                    return
                continue
            if token.text == "{":
                p.next()
                self.open(function)
                continue
            if token.text in _LINE_DIRECTIVES:
                p.line_directive(token)
                continue
            self.statement(function, token)

    def open(self, function: Function) -> None:
        self.scopes.append({})
        self.label_scopes.append((len(function.body), {}))

    def close(self, function: Function) -> None:
        """Ends a block: branches in it to its labels name them as the function does."""
        self.scopes.pop()
        start, labels = self.label_scopes.pop()
        if not labels:
            return
        for i in range(start, len(function.body)):
            ins = function.body[i]
            if any(isinstance(o, Symbol) and o.name in labels for o in ins.operands):
                function.body[i] = replace(ins, operands=[Symbol(labels[o.name]) if isinstance(o, Symbol)
                                                          and o.name in labels else o for o in ins.operands])

    def statement(self, function: Function, token: _Token) -> None:
        p = self.p
        if token.text == ".reg":
            p.next()
            type_ = None
            while p.peek().text.startswith(".") and p.peek().kind == "id":
                t = p.next().text
                if t[1:] in TYPES:
                    type_ = t[1:]
                elif t in (".v2", ".v4"):
                    raise EmulationError("vector registers (.reg .v2/.v4) are not supported by the emulator",
                                         line=token.line)
            if type_ is None:
                raise EmulationError(".reg without a type", line=token.line)
            while True:
                name = p.next().text
                if p.accept("<"):
                    count = p.integer()
                    p.expect(">")
                    for i in range(count):
                        self.declare(function, f"{name}{i}", type_)
                else:
                    self.declare(function, name, type_)
                if not p.accept(","):
                    break
            p.expect(";")
            return
        if token.text in _SPACES:
            function.variables.append(p.variable(set()))
            return
        if token.text == ".pragma":
            p.next()
            while p.peek().text != ";":
                p.next()
            p.next()
            return
        if token.text == ".param":
            # A call's argument or result (section 7.2): per-thread storage
            # for the call, a .local variable under a name of its own scope.
            variable = p.variable(set())
            self.declared += 1
            name, variable.space = variable.name, "local"
            variable.name = f"{name}%{self.declared}"
            function.variables.append(variable)
            self.scopes[-1][name] = variable.name
            return
        if token.kind == "id" and p.tokens[p.pos + 1].text == ":" and p.tokens[p.pos + 2].text != ":":
            p.pos += 2
            labels = self.label_scopes[-1][1]
            if token.text in labels:
                raise EmulationError(f"label {token.text} is defined twice", line=token.line)
            # The function's own labels keep their names; a nested block's get one of their own.
            name = token.text if len(self.label_scopes) == 1 else f"{token.text}%{len(function.labels)}"
            labels[token.text] = name
            function.labels[name] = len(function.body)
            return
        if token.kind == "id" and token.text.startswith("."):
            raise EmulationError(f"unknown directive {token.text!r} in function {self.name}", line=token.line)
        function.body.append(self.instruction())

    def instruction(self) -> Instruction:
        p = self.p
        guard = None
        first = p.peek()
        if p.accept("@"):
            negated = p.accept("!")
            reg = self.register(p.next().text, first.line)
            guard = Register(reg.name, reg.slot, reg.type, negated)
        token = p.next()
        if token.kind != "id":
            raise EmulationError(f"expected an instruction, found {token.text!r}", line=token.line)
        operands = []
        if p.peek().text != ";":
            while True:
                operands.append(self.operand(token.line))
                if not p.accept(","):
                    break
        end = p.next()
        if end.text != ";":
            raise EmulationError(f"expected ';' after {token.text}, found {end.text!r}", line=end.line)
        return Instruction(token.text, operands, guard, token.line, p.source)

    def scalar(self, line: int):
        p = self.p
        token = p.peek()
        if token.text == "!":
            p.next()
            reg = self.register(p.next().text, line)
            return Register(reg.name, reg.slot, reg.type, True)
        if token.text == "-" and p.tokens[p.pos + 1].kind == "num":
            p.next()
            value = parse_number(p.next().text)
            if value.is_float:
                import struct
                negated = -value.value
                bits = struct.unpack("<I", struct.pack("<f", negated))[0] if value.width == 32 else \
                    struct.unpack("<Q", struct.pack("<d", negated))[0]
                return Immediate(negated, True, bits, value.width)
            return Immediate(-value.value)
        if token.kind == "num":
            p.next()
            return parse_number(token.text)
        if token.kind == "id":
            p.next()
            if token.text == "_":
                return None
            # Registers may be named without a % (libdevice's `.reg .b32 tmp;`).
            for scope in reversed(self.scopes):
                if token.text in scope:
                    found = scope[token.text]
                    return Symbol(found) if isinstance(found, str) else found
            return Symbol(token.text)  # a special register (%tid.x) or a variable, checked when decoded
        raise EmulationError(f"unexpected operand {token.text!r}", line=token.line)

    def operand(self, line: int):
        p = self.p
        if p.accept("("):  # a call's results or arguments
            elements = []
            while not p.accept(")"):
                elements.append(self.scalar(line))
                p.accept(",")
            return Vector(tuple(elements))
        if p.accept("{"):
            elements = []
            while True:
                elements.append(self.scalar(line))
                if not p.accept(","):
                    break
            p.expect("}")
            return Vector(tuple(elements))
        if p.accept("["):
            base, offset = None, 0
            token = p.peek()
            if token.kind == "num":
                offset = p.integer()
            else:
                base = self.scalar(line)
                while p.peek().text in ("+", "-"):
                    sign = -1 if p.next().text == "-" else 1
                    offset += sign * p.integer()
            if p.accept(","):
                coords = self.operand(line)
                if not isinstance(coords, Vector):
                    raise EmulationError("expected {coordinates} after the tensor map's address", line=line)
                p.expect("]")
                return TensorAddress(Address(base, offset), coords)
            p.expect("]")
            return Address(base, offset)
        first = self.scalar(line)
        if p.accept("|"):
            return PredicatePair(first, self.scalar(line))
        if isinstance(first, Symbol) and p.peek().text == "+" and not first.name.startswith("%"):
            # symbol+offset as an address value (mov.u64 %rd, var+8)
            p.next()
            return Address(first, p.integer())
        return first


def parse(text: str) -> Module:
    """The module that PTX ``text`` declares; EmulationError (with the PTX
    line) on what it cannot read."""
    module = _Parser(text).parse()
    for function in module.functions.values():
        for ins in function.body:
            if ins.source is not None:
                file_index, line, column = ins.source
                ins.source = f"{module.files.get(file_index, f'file {file_index}')}:{line}:{column}"
    return module
