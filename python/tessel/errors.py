"""Exceptions raised by tessel, carrying MLIR's diagnostics."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Sequence

__all__ = ["Diagnostic", "TesselError", "CompileError", "UnsupportedError", "RuntimeError",
           "TuningDatabaseError", "MissingExtraError", "require_extra"]


@dataclass(frozen=True)
class Diagnostic:
    """One MLIR diagnostic: where, how severe, what, and its attached notes."""

    severity: str
    location: str
    message: str
    notes: tuple["Diagnostic", ...] = field(default_factory=tuple)

    def __str__(self) -> str:
        text = f"{self.location}: {self.severity}: {self.message}"
        for note in self.notes:
            text += "\n  " + str(note).replace("\n", "\n  ")
        return text


class TesselError(Exception):
    """Base class of every error tessel raises on purpose."""


class CompileError(TesselError):
    """Parsing, verifying or transforming IR failed.

    ``diagnostics`` holds MLIR's diagnostics in order; the message lists them
    as ``file:line:col: error: message`` lines.
    """

    def __init__(self, summary: str, diagnostics: Sequence[Diagnostic] = ()) -> None:
        self.summary = summary
        self.diagnostics = tuple(diagnostics)
        lines = [summary] + [str(d) for d in self.diagnostics]
        super().__init__("\n".join(lines))


class UnsupportedError(CompileError):
    """The input uses an op, attribute or feature tessel does not support."""


class RuntimeError(TesselError):  # noqa: A001 - tessel.RuntimeError, as the issue names it
    """Loading or running an artifact failed: a CUDA error (named, with the
    kernel it concerns), a missing driver or GPU, or arguments that do not
    match the artifact's signature."""


class TuningDatabaseError(TesselError):
    """A tuning database cannot be used: the file is missing, not SQLite,
    corrupted, another program's database or of a newer schema version.
    The message names the file and what is wrong with it."""


class MissingExtraError(TesselError, ImportError):
    """An optional dependency is not installed; the message names the
    feature that needs it and the ``tessel[extra]`` that installs it. Also
    an ImportError, as a missing import is."""


def require_extra(module: str, extra: str, feature: str) -> Any:
    """Imports ``module`` for ``feature`` (before it does any work), or
    raises MissingExtraError naming ``pip install 'tessel[extra]'``."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        missing = e.name or module
        raise MissingExtraError(f"{feature} needs {missing}, which is not installed: "
                                f"pip install 'tessel[{extra}]'", name=missing) from None
