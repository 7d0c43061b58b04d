"""Malformed MLIR (issue 34): mutations of valid graph modules go through
``tessel.parse``, then (those that parse) ``tessel.compile`` for the CPU
and (those whose tensors are small) a call on random inputs. Every
outcome must be a success, a tessel.TesselError or a ValueError: never
another exception, a crash or a hang.

The cases run in one long-lived subprocess (restarted after a crash or a
timeout, with a cap on its memory), so a crash fails a test instead of
ending pytest. Each mutation class is one test, seeded by its name, so a
case is reproducible alone. Classes with known compiler defects are
xfail (not strict) until those are fixed; every distinct failure (its
stage, kind, first line of the message or crash report, and the shortest
case that shows it) is printed and, with TESSEL_HOSTILE_MLIR_FINDINGS set
to a file name, written there as Markdown.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pytest

import tessel
from tessel import ops
from tessel.testing.workers import CaseWorker, serve

Case = tuple[str, str]  # (what was mutated, the module's text)
Mutation = Callable[[dict[str, str], random.Random], Iterator[Case]]

# --- the valid modules that every mutation starts from

# Their names, also their entry functions' (a failure's signature leaves them out).
SEED_NAMES = ("relu", "linear", "softmax", "conv", "pool", "gather", "reshape")


def _seeds() -> dict[str, str]:
    """Name -> text of a few valid graph modules, covering elementwise ops
    and constants, matmul, reductions, conv and pooling attributes,
    gather's indices and shape ops."""
    spec, f32 = tessel.TensorSpec, np.float32
    rng = np.random.default_rng(34)
    w, b = rng.standard_normal((8, 4)).astype(f32), rng.standard_normal(4).astype(f32)
    k = rng.standard_normal((4, 3, 3, 3)).astype(f32)
    modules = {
        "relu": tessel.trace(lambda x: ops.relu(ops.relu(x) * 2.0 - 1.0), spec((4, 8), f32), name="relu"),
        "linear": tessel.trace(lambda x: x @ w + b, spec((2, 8), f32), name="linear"),
        "softmax": tessel.trace(lambda x: ops.softmax(x, axis=-1), spec((4, 8), f32), name="softmax"),
        "conv": tessel.trace(lambda x: ops.conv2d(x, k, stride=2, padding=1), spec((1, 3, 8, 8), f32),
                             name="conv"),
        "pool": tessel.trace(lambda x: ops.max_pool2d(x, 3, stride=2, padding=1), spec((1, 2, 8, 8), f32),
                             name="pool"),
        "gather": tessel.trace(lambda t, i: ops.take(t, i, axis=0), spec((10, 4), f32), spec((3,), np.int32),
                               name="gather"),
        "reshape": tessel.trace(lambda x, y: ops.concatenate([ops.reshape(x, (4, 2)), ops.transpose(y)]).sum(axis=1),
                                spec((2, 4), f32), spec((2, 3), f32), name="reshape"),
    }
    assert tuple(modules) == SEED_NAMES
    return {name: str(module) for name, module in modules.items()}


# --- text surgery

TOKEN = re.compile(r'"[^"\n]*"|%[\w#]+|@[\w$.]+|\^\w+|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|[A-Za-z_][\w.$]*|\S')
TENSOR = re.compile(r"tensor<([^<>]*)>")
DENSE = re.compile(r'dense<(?:"[^"]*"|[^<>]*)>')
RETURN = re.compile(r"^(\s*)return (.*) : (.*)$", re.M)
HEADER = re.compile(r"func\.func @(\w+)\((.*)\) -> (.*) \{")


def _replace(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _pick(rng: random.Random, seeds: dict[str, str]) -> tuple[str, str]:
    name = rng.choice(sorted(seeds))
    return name, seeds[name]


def _first_argument(text: str) -> tuple[str, str]:
    """The name and type of the entry function's first argument."""
    match = re.search(r"\((%arg0): (tensor<[^>]*>)", text)
    assert match, text
    return match.group(1), match.group(2)


def _insert_before_return(text: str, code: str, *, returned: str | None = None) -> str:
    """``text`` with the lines of ``code`` before the entry's return; with ``returned``,
    the return's first operand replaced by it (so that the new op is live)."""
    match = RETURN.search(text)
    assert match, text
    indent, operands, types = match.groups()
    if returned is not None:
        operands = ", ".join([returned] + operands.split(", ")[1:])
    body = "".join(f"{indent}{line}\n" for line in code.splitlines())
    return text[:match.start()] + body + f"{indent}return {operands} : {types}" + text[match.end():]


def _with_return_type(text: str, value: str, type_: str) -> str:
    """``text`` whose entry returns only ``value`` of ``type_``."""
    match = RETURN.search(text)
    text = text[:match.start()] + f"{match.group(1)}return {value} : {type_}" + text[match.end():]
    header = HEADER.search(text)
    return text[:header.start(3)] + type_ + text[header.end(3):]


def _masked(text: str, *patterns: re.Pattern) -> list[tuple[int, int]]:
    """Spans of ``text`` matched by ``patterns``, which mutations of
    attributes leave alone (types and constants have their own)."""
    return [m.span() for p in patterns for m in p.finditer(text)]


def _outside(spans: list[tuple[int, int]], start: int) -> bool:
    return not any(a <= start < b for a, b in spans)


# --- mutation classes

def tokens(seeds: dict[str, str], rng: random.Random) -> Iterator[Case]:
    """A random token deleted, duplicated, replaced by another, or two swapped."""
    for _ in range(120):
        seed, text = _pick(rng, seeds)
        found = list(TOKEN.finditer(text))
        a, b = rng.sample(found, 2)
        how = rng.choice(("delete", "duplicate", "replace", "swap"))
        if how == "delete":
            yield f"{seed}: delete {a.group()!r}", _replace(text, *a.span(), "")
        elif how == "duplicate":
            yield f"{seed}: duplicate {a.group()!r}", _replace(text, a.end(), a.end(), " " + a.group())
        elif how == "replace":
            yield f"{seed}: {a.group()!r} -> {b.group()!r}", _replace(text, *a.span(), b.group())
        else:
            first, second = sorted((a, b), key=lambda m: m.start())
            swapped = (text[:first.start()] + second.group() + text[first.end():second.start()] + first.group()
                       + text[second.end():])
            yield f"{seed}: swap {first.group()!r} {second.group()!r}", swapped


def lines(seeds: dict[str, str], rng: random.Random) -> Iterator[Case]:
    """A line deleted, duplicated or two swapped; the text cut anywhere."""
    for _ in range(40):
        seed, text = _pick(rng, seeds)
        rows = text.splitlines()
        i, j = rng.sample(range(len(rows)), 2)
        how = rng.choice(("delete", "duplicate", "swap"))
        if how == "delete":
            yield f"{seed}: delete line {i}", "\n".join(rows[:i] + rows[i + 1:])
        elif how == "duplicate":
            yield f"{seed}: duplicate line {i}", "\n".join(rows[:i + 1] + rows[i:])
        else:
            rows[i], rows[j] = rows[j], rows[i]
            yield f"{seed}: swap lines {i} {j}", "\n".join(rows)
    for seed, text in sorted(seeds.items()):
        for cut in sorted(rng.sample(range(1, len(text)), 4)):
            yield f"{seed}: cut at {cut}", text[:cut]


DIMS = ["0", "-1", "?", "2147483648", str(2**62), str(2**63), str(2**64), "1" * 40]


def dims(seeds: dict[str, str], rng: random.Random) -> Iterator[Case]:
    """A tensor dimension made 0, negative, dynamic or huge, in one type or
    in every occurrence of that type (which may still verify); a huge rank."""
    for seed, text in sorted(seeds.items()):
        shaped = [m for m in TENSOR.finditer(text) if "x" in m.group(1)]
        for value in DIMS:
            m = rng.choice(shaped)
            *shape, element = m.group(1).split("x")
            axis = rng.randrange(len(shape))
            new = "tensor<" + "x".join(shape[:axis] + [value] + shape[axis + 1:] + [element]) + ">"
            yield f"{seed}: {m.group()} -> {new} once", _replace(text, *m.span(), new)
            yield f"{seed}: {m.group()} -> {new} everywhere", text.replace(m.group(), new)
        # Huge ranks for one seed only: they are slow to compile (tens of
        # seconds at rank 1000) and parse (quadratic in the rank).
        for rank in (7, 64) + ((1000, 10_000) if seed == "relu" else ()):
            m = rng.choice(shaped)
            new = "tensor<" + "1x" * rank + m.group(1).split("x")[-1] + ">"
            yield f"{seed}: {m.group()} -> rank {rank}", text.replace(m.group(), new)


ELEMENTS = ["f64", "f16", "bf16", "i1", "i8", "i32", "i64", "ui8", "si32", "i7", "i128", "index", "complex<f32>",
            "f8E4M3FN", "tf32", "none", "vector<4xf32>", "tensor<2xf32>", "memref<2xf32>", "!llvm.ptr",
            "!graph.nothing", "i0"]


def elements(seeds: dict[str, str], rng: random.Random) -> Iterator[Case]:
    """The element type of one tensor type, or of every f32 tensor, changed."""
    for seed, text in sorted(seeds.items()):
        for element in ELEMENTS:
            m = rng.choice(list(TENSOR.finditer(text)))
            *shape, _ = m.group(1).split("x")
            new = "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"
            yield f"{seed}: {m.group()} -> {new} once", _replace(text, *m.span(), new)
            if element in ("f64", "f16", "bf16", "i32", "i64", "i1", "index"):
                everywhere = re.sub(r"(tensor<(?:\d+x)*)f32>", rf"\g<1>{element}>", text)
                yield f"{seed}: every f32 -> {element}", everywhere


ATTRIBUTE_INTS = ["-1", "-2", "-9", "0", "2", "5", "2147483647", "2147483648", "-2147483649", str(2**63),
                  str(-2**63), str(2**64), "1" + "0" * 30]
INT_LIST = re.compile(r"\[(?:-?\d+(?:, -?\d+)*)?\]")


def attributes(seeds: dict[str, str], rng: random.Random) -> Iterator[Case]:
    """An op's integer attribute (axis, stride, padding, dilation, groups,
    permutation entry) made out of range or huge; a list of them emptied,
    lengthened, negated or made huge; an enum keyword changed."""
    for seed, text in sorted(seeds.items()):
        masked = _masked(text, TENSOR, DENSE)
        ints = [m for m in re.finditer(r"(?<![\w%#.-])-?\d+(?![\w.])", text) if _outside(masked, m.start())]
        for m in rng.sample(ints, min(len(ints), 4)):
            for value in rng.sample(ATTRIBUTE_INTS, 4):
                line = text.count("\n", 0, m.start())
                yield f"{seed}: line {line} {m.group()} -> {value}", _replace(text, *m.span(), value)
        for m in [m for m in INT_LIST.finditer(text) if _outside(masked, m.start())]:
            values = [v for v in m.group()[1:-1].split(", ") if v]
            for new in ([], values * 2, values[:1], [f"-{v}" for v in values], [str(2**40)] * len(values),
                        values[::-1], ["0"] * len(values)):
                yield f"{seed}: {m.group()} -> [{', '.join(new)}]", _replace(text, *m.span(), f"[{', '.join(new)}]")
    swaps = [("nchw", "nhwc"), ("nchw", "ncdhw"), ("sum", "max"), ("sum", "prod"), ("max", "avg"), ("max", "min"),
             ("axis", "axes"), ("axes", "axis"), ("strides", "dilations"), ("groups 1", "groups 2"),
             ("groups 1", "groups 0"), ("groups 1", "groups -3"), ("padding", "strides")]
    for old, new in swaps:
        for seed, text in sorted(seeds.items()):
            if re.search(rf"\b{old}\b", text.split("{", 1)[1]):
                yield f"{seed}: {old!r} -> {new!r}", re.sub(rf"\b{old}\b", new, text, count=1)


def constants(seeds: dict[str, str], rng: random.Random) -> Iterator[Case]:
    """A constant's value of the wrong size, type or encoding."""
    values = ["dense<[1.0, 2.0]>", 'dense<"0x0000">', 'dense<"0xZZ">', "dense<nan>", "dense<0x7FC00000>",
              "dense<1.0e39>", "dense<1>", "dense<true>", "dense<>", "dense<[]>", "dense<[[1.0], [2.0, 3.0]]>",
              'dense<"">', "unit", '"text"', "array<i32: 1, 2>", "1.0 : f32", "#graph.nothing<1>",
              "dense<1.0> : tensor<*xf32>", "dense<1.0> : tensor<?xf32>"]
    for seed, text in sorted(seeds.items()):
        found = list(re.finditer(r"graph\.constant (.*) : (tensor<[^>]*>)", text))
        for m in found:
            for value in rng.sample(values, 6):
                new = value if " : " in value else f"{value} : {m.group(2)}"
                yield f"{seed}: constant {new[:40]}", _replace(text, *m.span(), f"graph.constant {new}")


def _resource_blob(data: bytes, alignment: int = 4) -> str:
    return "0x" + alignment.to_bytes(4, "little").hex() + data.hex()


def resources(seeds: dict[str, str], rng: random.Random) -> Iterator[Case]:
    """``dense_resource`` constants: a blob of the right size, too short,
    too long, unaligned, elided, missing, or its section malformed; and
    ``sparse`` constants, their indices in and out of range."""
    for seed, text in sorted(seeds.items()):
        for m in re.finditer(r"graph\.constant (.*) : tensor<([^>]*)>", text):
            *shape, _ = m.group(2).split("x")
            count = int(np.prod([int(d) for d in shape])) if shape else 1
            constant = f"graph.constant dense_resource<blob> : tensor<{m.group(2)}>"
            mutated = _replace(text, *m.span(), constant)
            data = np.arange(count, dtype=np.float32).tobytes()
            for what, section in (
                    ("right size", f'blob: "{_resource_blob(data)}"'),
                    ("too short", f'blob: "{_resource_blob(data[:-4])}"'),
                    ("too long", f'blob: "{_resource_blob(data + data)}"'),
                    ("empty", f'blob: "{_resource_blob(b"")}"'),
                    ("alignment 3", f'blob: "{_resource_blob(data, 3)}"'),
                    ("alignment 2^31", f'blob: "{_resource_blob(data, 2**31)}"'),
                    ("no alignment word", f'blob: "0x{data.hex()}"'),  # the data's first word taken for it
                    ("not hex", 'blob: "0xZZ"'),
                    ("other name", f'other: "{_resource_blob(data)}"'),
                    ("missing", None)):
                if section is None:
                    yield f"{seed}: dense_resource, {what}", mutated
                else:
                    block = f"{{-#\n  dialect_resources: {{\n    builtin: {{\n      {section}\n    }}\n  }}\n#-}}"
                    yield f"{seed}: dense_resource, {what}", f"{mutated}\n{block}\n"
            yield f"{seed}: dense_resource elided", _replace(text, *m.span(), constant.replace("blob", "__elided__"))
            rank = len(shape)
            for what, indices in (("in range", [[0] * rank]), ("last", [[int(d) - 1 for d in shape]]),
                                  ("out of range", [[int(d) for d in shape]]), ("negative", [[-1] * rank]),
                                  ("wrong rank", [[0] * (rank + 1)]), ("huge", [[2**62] * rank]),
                                  ("repeated", [[0] * rank] * 2)):
                if rank == 0 and what != "in range":
                    continue
                values = ", ".join(["1.5"] * len(indices))
                sparse = f"graph.constant sparse<{json.dumps(indices)}, [{values}]> : tensor<{m.group(2)}>"
                yield f"{seed}: sparse, {what}", _replace(text, *m.span(), sparse)


def _unknown_ops(t: str) -> list[tuple[str, str, bool]]:
    """(what, lines defining %u, whether %u replaces the returned value) for
    an argument %arg0 of type ``t``."""
    return [
        ("unknown graph op", f"%u = graph.frobnicate %arg0 : {t}", True),
        ("unknown graph op, generic", f'%u = "graph.frobnicate"(%arg0) : ({t}) -> {t}', True),
        ("unregistered dialect", f'%u = "foo.bar"(%arg0) : ({t}) -> {t}', True),
        ("generic graph.relu", f'%u = "graph.relu"(%arg0) : ({t}) -> {t}', True),
        ("graph.relu with junk attribute", f'%u = "graph.relu"(%arg0) {{junk = 1}} : ({t}) -> {t}', True),
        ("graph.relu without operands", f'%u = "graph.relu"() : () -> {t}', True),
        ("graph.relu of two", f'%u = "graph.relu"(%arg0, %arg0) : ({t}, {t}) -> {t}', True),
        ("graph.relu with two results", f'%u, %v = "graph.relu"(%arg0) : ({t}) -> ({t}, {t})', True),
        ("graph.relu with a region", f'%u = "graph.relu"(%arg0) ({{\n}}) : ({t}) -> {t}', True),
        ("graph.softmax without axis", f'%u = "graph.softmax"(%arg0) : ({t}) -> {t}', True),
        ("graph.conv2d without attributes", f'%u = "graph.conv2d"(%arg0, %arg0) : ({t}, {t}) -> {t}', True),
        ("graph.reduce without kind", f'%u = "graph.reduce"(%arg0) : ({t}) -> {t}', True),
        ("graph.gather without axis", f'%u = "graph.gather"(%arg0, %arg0) : ({t}, {t}) -> {t}', True),
        ("arith on tensors", f"%u = arith.addf %arg0, %arg0 : {t}", True),
        ("math on tensors", f"%u = math.exp %arg0 : {t}", True),
        ("tensor.empty", f"%u = tensor.empty() : {t}", True),
        ("bufferization.alloc_tensor", f"%u = bufferization.alloc_tensor() : {t}", True),
        ("linalg.fill", f"%c = arith.constant 1.0 : f32\n%e = tensor.empty() : {t}\n"
                        f"%u = linalg.fill ins(%c : f32) outs(%e : {t}) -> {t}", True),
        ("scf.execute_region", f"%u = scf.execute_region -> {t} {{\n  scf.yield %arg0 : {t}\n}}", True),
        ("tensor.cast to unranked", "%u = tensor.cast %arg0 : " + t + " to tensor<*xf32>", False),
        ("tensor.extract out of bounds", "%i = arith.constant 1000000 : index\n"
                                         "%u = tensor.extract %arg0[" + ", ".join(["%i"] * t.count("x"))
                                         + "] : " + t, False),
        ("memref.alloc", "%u = memref.alloc() : memref<4xf32>", False),
        ("llvm load of null", "%p = llvm.mlir.zero : !llvm.ptr\n%u = llvm.load %p : !llvm.ptr -> f32", False),
        ("llvm store to null", "%p = llvm.mlir.zero : !llvm.ptr\n%c = arith.constant 1.0 : f32\n"
                                 "llvm.store %c, %p : f32, !llvm.ptr", False),
        ("a second block", "cf.br ^bb1\n^bb1:", False),
        ("a terminator in the middle", "func.return %arg0 : " + t, False),
        ("unreachable", "llvm.unreachable", False),
        ("gpu.barrier on the host", "gpu.barrier", False),
        ("loop.schedule in the graph", '"loop.schedule"() : () -> ()', False),
        ("vector.print", "%c = arith.constant 1.0 : f32\nvector.print %c : f32", False),
    ]


def _with_code(text: str, t: str, code: str, *, live: bool, functions: str = "") -> str:
    """``text`` with the lines of ``code`` (defining ``%u`` of type ``t``
    where ``live``) before the entry's return, which then returns ``%u``;
    and ``functions`` added to its module."""
    if live and RETURN.search(text).group(3) != t:
        mutated = _with_return_type(_insert_before_return(text, code), "%u", t)
    else:
        mutated = _insert_before_return(text, code, returned="%u" if live else None)
    if not functions:
        return mutated
    end = mutated.rstrip().rfind("}")
    return mutated[:end] + textwrap.indent(functions, "  ") + "\n" + mutated[end:]


def unknown_ops(seeds: dict[str, str], rng: random.Random) -> Iterator[Case]:
    """Ops tessel does not know, or knows in a form it does not take: unknown
    graph ops, graph ops with missing or extra pieces, other dialects' ops
    in the graph, control flow, raw memory accesses."""
    for seed, text in sorted(seeds.items()):
        _, t = _first_argument(text)
        for what, code, live in _unknown_ops(t):
            yield f"{seed}: {what}", _with_code(text, t, code, live=live)


def calls(seeds: dict[str, str], rng: random.Random) -> Iterator[Case]:
    """Functions that are not one graph: external declarations called from
    the graph, a private helper with a body, calls that recurse (the entry
    itself, mutually, in dead code), calls of the wrong type or to nothing."""
    for seed, text in sorted(seeds.items()):
        entry, arguments, results = HEADER.search(text).groups()
        _, t = _first_argument(text)
        call = f"%u = func.call @g(%arg0) : ({t}) -> {t}"
        relu = f"func.func private @g(%a: {t}) -> {t} {{\n  %r = graph.relu %a : {t}\n  return %r : {t}\n}}"
        recursive = (f"func.func private @g(%a: {t}) -> {t} {{\n  %r = func.call @g(%a) : ({t}) -> {t}\n"
                     f"  return %r : {t}\n}}")
        mutual = (f"func.func private @g(%a: {t}) -> {t} {{\n  %r = func.call @h(%a) : ({t}) -> {t}\n"
                  f"  return %r : {t}\n}}\nfunc.func private @h(%a: {t}) -> {t} {{\n"
                  f"  %r = func.call @g(%a) : ({t}) -> {t}\n  return %r : {t}\n}}")
        wrong = (f"func.func private @g(%a: tensor<3xi64>) -> {t} {{\n  %r = tensor.empty() : {t}\n"
                 f"  return %r : {t}\n}}")
        external = f"func.func private @g({t}) -> {t}"
        yield f"{seed}: external @g called", _with_code(text, t, call, live=True, functions=external)
        yield f"{seed}: external @g declared only", _with_code(text, t, "", live=False, functions=external)
        yield (f"{seed}: external @g with a C interface",
               _with_code(text, t, call, live=True,
                          functions=external + " attributes {llvm.emit_c_interface}"))
        yield (f"{seed}: external libc rand() called", _with_code(
            text, t, "%r = func.call @rand() : () -> i32", live=False, functions="func.func private @rand() -> i32"))
        yield f"{seed}: a private helper", _with_code(text, t, call, live=True, functions=relu)
        yield f"{seed}: a public helper", _with_code(text, t, call, live=True, functions=relu.replace(" private", ""))
        yield f"{seed}: a helper calling itself", _with_code(text, t, call, live=True, functions=recursive)
        yield f"{seed}: a dead helper calling itself", _with_code(text, t, "", live=False, functions=recursive)
        yield f"{seed}: mutually recursive helpers", _with_code(text, t, call, live=True, functions=mutual)
        yield f"{seed}: call of the wrong type", _with_code(text, t, call, live=True, functions=wrong)
        yield f"{seed}: call of nothing", _insert_before_return(text, call, returned="%u")
        indirect = f"%f = func.constant @g : ({t}) -> {t}\n%u = func.call_indirect %f(%arg0) : ({t}) -> {t}"
        yield f"{seed}: call_indirect", _with_code(text, t, indirect, live=True, functions=external)
        operands = ", ".join(re.findall(r"%arg\d+", arguments))
        types = ", ".join(re.findall(r"tensor<[^>]*>", arguments))
        yield (f"{seed}: the entry calls itself", _insert_before_return(
            text, f"%u = func.call @{entry}({operands}) : ({types}) -> {results}", returned="%u"))


def signatures(seeds: dict[str, str], rng: random.Random) -> Iterator[Case]:
    """Modules whose entry is not one function on static tensors: none,
    several, nested; unranked, dynamic, scalar, memref arguments; no
    results, a returned argument; odd names; odd texts."""
    relu = seeds["relu"]
    t = "tensor<4x8xf32>"

    def entry(arguments: str, results: str, body: str, name: str = "f") -> str:
        return f"module {{\n  func.func @{name}({arguments}) -> {results} {{\n{textwrap.indent(body, '    ')}\n  }}\n}}"

    yield "empty module", "module {\n}"
    yield "no module", "func.func private @f()"
    yield "empty text", ""
    yield "whitespace", " \n\t "
    yield "a NUL byte", relu.replace("graph.relu", "graph.relu\0", 1)
    yield "a lone surrogate", relu.replace("@relu", "@re\udcfflu", 1)
    yield "non-ASCII name", relu.replace("@relu", '@"réLU ∑"')
    yield "a 10000-character name", relu.replace("@relu", "@" + "r" * 10000)
    yield "a quoted name with a quote", relu.replace("@relu", '@"a\\"b"')
    yield "a name with a NUL", relu.replace("@relu", '@"a\\00b"')
    yield "a name PTX and C cannot spell", relu.replace("@relu", '@"linear+relu"')
    yield "two public functions", relu.rstrip()[:-1] + relu.split("{", 1)[1].replace("@relu", "@relu2")
    yield "two functions of one name", relu.rstrip()[:-1] + relu.split("{", 1)[1]
    yield "a nested module", relu.replace("module {", "module {\n  module {", 1) + "}"
    yield "a named module", relu.replace("module {", "module @m {", 1)
    yield "a private entry", relu.replace("func.func @relu", "func.func private @relu")
    yield "a nested-visibility entry", relu.replace("func.func @relu", 'func.func nested @relu')
    yield "an external entry", f"module {{\n  func.func @f({t}) -> {t}\n}}"
    yield "no results", entry(f"%a: {t}", "()", "return")
    yield "no arguments", entry("", t, f"%c = graph.constant dense<1.0> : {t}\nreturn %c : {t}")
    yield "no arguments, no results", entry("", "()", "return")
    yield "an argument returned", entry(f"%a: {t}", t, f"return %a : {t}")
    yield "one value returned twice", entry(f"%a: {t}", f"({t}, {t})",
                                            f"%r = graph.relu %a : {t}\nreturn %r, %r : {t}, {t}")
    yield "an argument returned twice", entry(f"%a: {t}", f"({t}, {t})", f"return %a, %a : {t}, {t}")
    yield "an unused argument", entry(f"%a: {t}, %b: {t}", t, f"%r = graph.relu %a : {t}\nreturn %r : {t}")
    yield "zero-size tensors", entry("%a: tensor<0x8xf32>", "tensor<0x8xf32>",
                                     "%r = graph.relu %a : tensor<0x8xf32>\nreturn %r : tensor<0x8xf32>")
    yield "a 0-d tensor", entry("%a: tensor<f32>", "tensor<f32>",
                                "%r = graph.relu %a : tensor<f32>\nreturn %r : tensor<f32>")
    for kind in ("tensor<*xf32>", "tensor<?x8xf32>", "tensor<4x?xf32>", "f32", "index", "i32", "memref<4x8xf32>",
                 "vector<4x8xf32>", "tuple<tensor<4x8xf32>>", "none", "!llvm.ptr", "tensor<4x8xf32, #enc>",
                 'tensor<4x8xf32, "layout">', "tensor<4x8xcomplex<f32>>", "tensor<4x8xf8E4M3FN>", "tensor<4x8xi4>",
                 "tensor<4x8xui32>", "tensor<4x8xf64>"):
        yield f"an argument of {kind}", entry(f"%a: {kind}", t,
                                              f"%c = graph.constant dense<1.0> : {t}\nreturn %c : {t}")
        yield f"a result of {kind}", entry(f"%a: {t}", kind, f"return %a : {kind}")
    yield "many arguments", entry(", ".join(f"%a{i}: tensor<2xf32>" for i in range(300)), "tensor<2xf32>",
                                  "return %a0 : tensor<2xf32>")
    yield "many results", entry("%a: tensor<2xf32>", "(" + ", ".join(["tensor<2xf32>"] * 300) + ")",
                                "return " + ", ".join(["%a"] * 300) + " : " + ", ".join(["tensor<2xf32>"] * 300))
    yield "a top-level memref.global", relu.replace("module {",
                                                    'module {\n  memref.global "private" @x : memref<4xf32>')
    yield "a top-level llvm.func", relu.replace("module {", "module {\n  llvm.func @x()")
    yield "a top-level gpu.module", relu.replace("module {", "module {\n  gpu.module @x {\n  }")
    yield "a module attribute", relu.replace("module {", 'module attributes {gpu.container_module} {')
    yield "an argument attribute", relu.replace("%arg0: tensor<4x8xf32>", "%arg0: tensor<4x8xf32> {llvm.noalias}")
    yield "the entry's C interface pre-set", relu.replace(
        ") -> tensor<4x8xf32> {", ") -> tensor<4x8xf32> attributes {llvm.emit_c_interface} {")


DEPTHS = (100, 3000, 100_000)


def nesting(seeds: dict[str, str], rng: random.Random) -> Iterator[Case]:
    """Brackets nested deep: in a type, a dense literal, an attribute, a
    location, a region."""
    relu = seeds["relu"]
    t = "tensor<4x8xf32>"
    for depth in DEPTHS:
        yield f"tensor of tensor x{depth}", relu.replace(t, "tensor<" * depth + "f32" + ">" * depth, 1)
        yield f"dense [ x{depth}", relu.replace("dense<2.000000e+00>", "dense<" + "[" * depth + "2.0" + "]" * depth
                                                + ">", 1)
        yield f"dense [ unclosed x{depth}", relu.replace("dense<2.000000e+00>", "dense<" + "[" * depth + ">", 1)
        yield f"attribute [ x{depth}", relu.replace("module {", "module attributes {x = " + "[" * depth
                                                    + "]" * depth + "} {", 1)
        yield f"attribute {{ x{depth}", relu.replace("module {", "module attributes {x = " + "{a = " * depth
                                                     + "1" + "}" * depth + "} {", 1)
        yield f"tuple type x{depth}", relu.replace("module {", "module attributes {x = 1 : " + "tuple<" * depth
                                                   + "i32" + ">" * depth + "} {", 1)
        yield f"function type ( x{depth}", relu.replace("module {", "module attributes {x = " + "(" * depth
                                                        + "() -> ()" + ") -> ()" * depth + "} {", 1)
        yield f"callsite location x{depth}", relu.replace("return %5 : " + t, "return %5 : " + t + " loc("
                                                          + 'callsite("a" at ' * depth + '"b"' + ")" * depth + ")")
        yield f"fused location x{depth}", relu.replace("return %5 : " + t, "return %5 : " + t + " loc("
                                                       + "fused[" * depth + '"b"' + "]" * depth + ")")
        regions = min(depth, 10_000)  # each level is a line
        body = "".join(f"%r{i} = scf.execute_region -> {t} {{\n" for i in range(regions))
        body += f"scf.yield %5 : {t}\n" + "".join(f"}}\nscf.yield %r{i} : {t}\n" for i in reversed(range(1, regions)))
        body += "}"
        yield f"nested regions x{regions}", _insert_before_return(relu, body, returned="%r0")


# Every case that parses is compiled: most mutations fail to parse or
# verify, so the ~300 that compile (0.1-0.5 s each) take ~40 s in all.
MUTATIONS: dict[str, Mutation] = {m.__name__: m for m in (
    tokens, lines, dims, elements, attributes, constants, resources, unknown_ops, calls, signatures, nesting)}

# Classes where known compiler defects remain (the findings report has
# their reproducers); un-xfail a class once its defects are fixed.
KNOWN_DEFECTS: dict[str, str] = {}


# --- the worker: parses, compiles and runs cases in a subprocess

MEMORY_CAP = 6 << 30  # bytes of address space: a huge constant ends in an error, not in exhausting the machine
CASE_SECONDS = 20.0
MAX_RUN_ELEMENTS = 1 << 16  # of each argument and result, for a case to be called


def _inputs(specs) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    # Integer arguments (gather's indices) are zeros: always in range.
    return [rng.standard_normal(s.shape).astype(s.dtype) if s.dtype.kind == "f" else np.zeros(s.shape, s.dtype)
            for s in specs]


def _compile_case(text: str, progress) -> None:
    """In the worker (this file run as a script): parses ``text``, compiles
    it and, when its tensors are small, calls it; each stage is reported
    before it begins, so that a crash or a hang names it."""
    progress(stage="parse")
    module = tessel.parse(text)
    progress(stage="compile")
    executable = tessel.compile(module)
    if all(math.prod(s.shape) <= MAX_RUN_ELEMENTS for s in executable.inputs + executable.outputs):
        progress(stage="run")
        executable(*_inputs(executable.inputs))


class Worker(CaseWorker):
    """This file's worker: :meth:`run` gives a case's ``outcome`` (ok,
    tessel, value, an exception's name, crash or timeout), ``stage`` (parse,
    compile or run) and ``message`` (a crash's standard error)."""

    def __init__(self) -> None:
        super().__init__(Path(__file__), timeout=CASE_SECONDS, memory_cap=MEMORY_CAP, keep_stderr=True)

    def run(self, text: str, timeout: float | None = None) -> dict:
        return {"stage": "parse", **super().run(text, timeout)}  # a crash before its first progress line


@pytest.fixture(scope="module")
def worker():
    with Worker() as w:
        yield w


@pytest.fixture(scope="module")
def seeds() -> dict[str, str]:
    return _seeds()


# --- failures: their signatures, the shortest case of each

CRASH_LINE = re.compile(r"Assertion .* failed|LLVM ERROR: .*|terminate called .*|what\(\): .*|"
                        r"UNREACHABLE executed.*|Fatal Python error: .*|error: .*")


def signature(result: dict) -> str:
    """What tells one failure from another: the stage, the kind, and the
    first telling line of the message (numbers and addresses dropped)."""
    message = result["message"]
    if result["outcome"] in ("crash", "timeout"):
        telling = [m.group() for m in CRASH_LINE.finditer(message)]
        frames = re.findall(r'File "[^"]*/(tessel/[\w/]+\.py)", line \d+ in (\w+)', message)
        line = (telling[0] if telling else message.splitlines()[0]) + (
            f" [in {frames[0][0]} {frames[0][1]}]" if frames else "")
    else:
        lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
        line = lines[-1] if lines else ""
    line = re.sub(r"0x[0-9a-fA-F]+|\d+", "N", line)
    line = re.sub(rf"\b(?:{'|'.join(SEED_NAMES)})\b", "SEED", line)[:200]
    return f"{result['stage']} {result['outcome']}: {line}"


class Findings:
    """Distinct failures, each with the classes it showed up in, how often
    and its shortest case."""

    def __init__(self) -> None:
        self.failures: dict[str, dict] = {}

    def add(self, mutation: str, name: str, text: str, result: dict) -> None:
        entry = self.failures.setdefault(signature(result), {"classes": Counter(), "cases": 0})
        entry["classes"][mutation] += 1
        entry["cases"] += 1
        if "text" not in entry or len(text) < len(entry["text"]):
            entry.update(name=f"{mutation}: {name}", text=text, message=result["message"])

    def markdown(self) -> str:
        parts = ["# Malformed MLIR: failures that are not a tessel error\n",
                 "Found by test/python/test_hostile_mlir.py (each mutation class is seeded by its name, "
                 "so a case reproduces alone). Each entry: its signature, the classes it showed up in, "
                 "the shortest case and the message or crash report.\n"]
        for n, (sig, entry) in enumerate(sorted(self.failures.items()), 1):
            text = entry["text"] if len(entry["text"]) <= 3000 else (
                entry["text"][:1500] + f"\n... ({len(entry['text'])} characters in all)")
            classes = ", ".join(f"{c} ({k})" for c, k in sorted(entry["classes"].items()))
            parts.append(f"## {n}. `{sig}`\n\n{entry['cases']} cases, in {classes}. Shortest: {entry['name']}\n\n"
                         f"```mlir\n{text}\n```\n\n```\n{entry['message'][-3000:].strip()}\n```\n")
        return "\n".join(parts)


@pytest.fixture(scope="module")
def findings():
    f = Findings()
    yield f
    if f.failures:
        print(f"\n{len(f.failures)} distinct failures:\n" + "\n".join(f"  {s}" for s in sorted(f.failures)))
    report = os.environ.get("TESSEL_HOSTILE_MLIR_FINDINGS")
    if report:
        Path(report).write_text(f.markdown(), errors="backslashreplace")  # cases may hold lone surrogates


# --- the tests

def test_the_seeds_parse_compile_and_run(worker, seeds):
    outcomes = {name: worker.run(text) for name, text in seeds.items()}
    assert all(o["outcome"] == "ok" and o["stage"] == "run" for o in outcomes.values()), outcomes


@pytest.mark.parametrize("mutation", [
    pytest.param(name, marks=pytest.mark.xfail(strict=False, reason=KNOWN_DEFECTS[name]))
    if name in KNOWN_DEFECTS else name for name in MUTATIONS])
def test_mutated_modules_fail_only_with_a_tessel_error(mutation, worker, seeds, findings):
    start = time.perf_counter()
    cases = list(MUTATIONS[mutation](seeds, random.Random(f"issue 34: {mutation}")))
    counts: Counter = Counter()
    bad = []
    for name, text in cases:
        result = worker.run(text)
        counts[f"{result['stage']} {result['outcome']}"] += 1
        if result["outcome"] not in ("ok", "tessel", "value"):
            findings.add(mutation, name, text, result)
            bad.append(f"{name}: {signature(result)}")
    print(f"{mutation}: {len(cases)} cases in {time.perf_counter() - start:.1f} s: "
          + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    assert len(cases) >= 20
    assert not bad, f"{len(bad)} of {len(cases)} cases:\n" + "\n".join(sorted(set(bad))[:40])


if __name__ == "__main__":
    serve(_compile_case)
