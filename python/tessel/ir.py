"""MLIR contexts with tessel's dialects, parsing, verification and passes.

Every function takes an explicit context or creates a fresh one: tessel keeps
no global MLIR state beyond what MLIR itself registers once per process.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Optional

from mlir import ir, passmanager
from mlir._mlir_libs import _mlir as _mlir_cext

from . import _tessel
from .errors import CompileError, Diagnostic

__all__ = ["clone", "collecting_diagnostics", "context", "parse", "parse_schedule", "verify", "run_passes"]

# Generated op classes for graph/loop live in tessel.dialects; MLIR looks
# there when it meets those dialects. Both registrations are idempotent.
if "tessel.dialects" not in _mlir_cext.globals.dialect_search_modules:
    _mlir_cext.globals.append_dialect_search_prefix("tessel.dialects")
_tessel.register_passes()


def context() -> ir.Context:
    """A new MLIR context with every upstream dialect plus ``graph`` and ``loop``."""
    ctx = ir.Context()
    registry = ir.DialectRegistry()
    _tessel.register_dialects(registry)
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()
    return ctx


def format_location(loc: ir.Location) -> str:
    """``file:line:col`` for file locations, MLIR's own spelling otherwise."""
    if loc.is_a_file():
        return f"{loc.filename}:{loc.start_line}:{loc.start_col}"
    if loc.is_a_name():
        return f"{loc.name_str} ({format_location(loc.child_loc)})"
    if loc.is_a_callsite():
        return format_location(loc.callee)
    if loc.is_a_fused() and loc.locations:
        return format_location(loc.locations[0])
    return str(loc)


def _diagnostic(info) -> Diagnostic:
    return Diagnostic(
        severity=str(info.severity).rsplit(".", 1)[-1].lower(),
        location=format_location(info.location),
        message=info.message,
        notes=tuple(_diagnostic(n) for n in info.notes),
    )


def compile_error(summary: str, error: ir.MLIRError) -> CompileError:
    """Turns MLIR's exception into a CompileError that keeps its diagnostics."""
    return CompileError(summary, [_diagnostic(d) for d in error.error_diagnostics])


@contextlib.contextmanager
def collecting_diagnostics(ctx: ir.Context) -> Iterator[list[Diagnostic]]:
    """A list of the diagnostics MLIR emits in ``ctx`` while the block runs,
    collected for a CompileError instead of printed to stderr."""
    diagnostics: list[Diagnostic] = []

    def collect(d: ir.Diagnostic) -> bool:
        diagnostics.append(_diagnostic(d))
        return True  # handled: keep MLIR from printing it to stderr

    handler = ctx.attach_diagnostic_handler(collect)
    try:
        yield diagnostics
    finally:
        handler.detach()


def parse(text: str, *, ctx: Optional[ir.Context] = None, source_name: str = "<input>") -> ir.Module:
    """Parses and verifies MLIR text (graph dialect or upstream dialects).

    Raises CompileError with MLIR's diagnostics, located at
    ``source_name:line:col``, when the text is malformed or does not verify.
    """
    return _parse_with(_tessel.parse_module, text, ctx or context(), source_name, "")


def parse_schedule(text: str, *, ctx: ir.Context, source_name: str = "<schedule>") -> ir.Operation:
    """One ``loop.schedule`` op parsed from ``text`` and verified on its own
    (the kernel it names need not exist yet), detached; CompileError with
    MLIR's diagnostics when the text is not one."""
    holder = _parse_with(_tessel.parse_schedule, text, ctx, source_name, " as one loop.schedule op")
    # A clone: the op must outlive the module that holds it.
    return holder.body.operations[0].operation.clone(ip=False)


def _parse_with(parser: Callable[[ir.Context, str, str], Optional[ir.Module]], text: str, ctx: ir.Context,
                source_name: str, what: str) -> ir.Module:
    """``parser``'s module of ``text``; CompileError with its diagnostics."""
    with collecting_diagnostics(ctx) as diagnostics:
        try:
            module = parser(ctx, text, source_name)
        except TypeError:
            _check_unicode(text, source_name)
            raise
    if module is None:
        raise CompileError(f"failed to parse {source_name}{what}", diagnostics)
    return module


def clone(module: ir.Module) -> ir.Module:
    """A deep copy of ``module`` in its context, locations included."""
    return _tessel.clone_module(module)


def _check_unicode(text: str, source_name: str) -> None:
    """A str that is not Unicode (a lone surrogate, as os.fsdecode makes of
    undecodable bytes) cannot cross into the C++ parser, whose bindings
    refuse it with a bare TypeError: a CompileError at the character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        line, column = text.count("\n", 0, e.start) + 1, e.start - text.rfind("\n", 0, e.start)
        raise CompileError(f"failed to parse {source_name}", [Diagnostic(
            "error", f"{source_name}:{line}:{column}", f"{text[e.start]!r} is not a Unicode character")]) from None


def verify(module: ir.Module) -> None:
    """Raises CompileError if ``module`` does not verify."""
    try:
        module.operation.verify()
    except ir.MLIRError as e:
        raise compile_error("module does not verify", e) from None


def run_passes(module: ir.Module, pipeline: str, *, print_ir_after_all: bool = False,
               timing: bool = False) -> ir.Module:
    """Runs a textual pass pipeline on ``module`` in place and returns it.

    ``pipeline`` is what ``tessel-opt --pass-pipeline`` takes, e.g.
    ``"builtin.module(graph-to-linalg,canonicalize)"``. ``print_ir_after_all``
    prints the IR after every pass to stderr; ``timing`` prints pass times.
    """
    with module.context:
        try:
            pm = passmanager.PassManager.parse(pipeline)
        except ValueError as e:
            raise CompileError(f"invalid pass pipeline {pipeline!r}: {e}") from None
        if print_ir_after_all:
            pm.enable_ir_printing()
        if timing:
            pm.enable_timing()
        try:
            pm.run(module.operation)
        except ir.MLIRError as e:
            raise compile_error(f"pass pipeline {pipeline!r} failed", e) from None
    return module


def to_linalg(module: ir.Module) -> ir.Module:
    """A copy of ``module`` in upstream dialects only: composite graph ops
    decomposed, every graph op as linalg on tensors (with arith, math,
    tensor and func), as ``tessel-opt --graph-decompose --graph-to-linalg``
    prints it (``tessel-opt --tessel-to-linalg-pipeline``), for ``mlir-opt``
    or another MLIR compiler. ``module`` is not modified."""
    return run_passes(clone(module), "builtin.module(tessel-to-linalg-pipeline)")
