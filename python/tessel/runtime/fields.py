"""Checked reads of JSON that comes from outside the process.

Artifact manifests and tuning batches (and their results) arrive from other
machines, so they are input, not tessel's own state: each field read through
these functions is present, of its type and in range, else a
:class:`FieldError` whose message names the field's path
(``kernels[2].grid[0] must be >= 0, not -1``). Each reader turns it into its
own error naming the file. numpy-free and MLIR-free, like the rest of
``tessel.runtime``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class FieldError(Exception):
    """A field missing, of the wrong type or out of range; the message says which."""


def shown(value: Any) -> str:
    """``value``'s repr, cut short: a malformed field may be megabytes."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def load_object(path: Path, what: str) -> dict[str, Any]:
    """The JSON object in file ``path``, which should be ``what`` (a file
    that cannot be read is the caller's OSError)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise FieldError(f"not {what} ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict):
        raise FieldError(f"not {what} (a JSON {type(data).__name__}, not an object)")
    return data


def typed(value: Any, kinds: type | tuple[type, ...], where: str, what: str) -> Any:
    """``value``, the field at ``where``, if it is one of ``kinds`` (described as ``what``)."""
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    # bool is an int to isinstance; a field takes a bool only where it says so.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise FieldError(f"{where} must be {what}, not {shown(value)}")
    return value


def field(record: Any, key: str, where: str = "", kinds: type | tuple[type, ...] | None = None, what: str = "",
          *, whole: str = "the file") -> Any:
    """``record[key]``, of one of ``kinds`` when given; ``record`` is the
    field at ``where`` ("" for the top-level object, called ``whole``)."""
    if not isinstance(record, dict):
        raise FieldError(f"{where or whole} must be an object, not {shown(record)}")
    if key not in record:
        raise FieldError(f"{where or whole} has no {key!r}")
    value = record[key]
    return value if kinds is None else typed(value, kinds, f"{where}.{key}" if where else key, what)


def integer(value: Any, where: str, low: int = 0, high: int | None = None) -> int:
    """``value``, an integer in ``low..high``, the field at ``where``."""
    typed(value, int, where, "an integer")
    if value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise FieldError(f"{where} must be {bound}, not {shown(value)}")
    return value


def integers(value: Any, where: str, *, length: int | None = None, max_length: int | None = None, low: int = 0,
             high: int | None = None) -> tuple[int, ...]:
    """``value``, a list of integers in ``low..high`` (``length`` of them,
    or at most ``max_length``), the field at ``where``."""
    items = typed(value, list, where, "a list of integers")
    if (length is not None and len(items) != length) or (max_length is not None and len(items) > max_length):
        raise FieldError(f"{where} must be {length if length is not None else f'at most {max_length}'} "
                         f"integers, not {shown(value)}")
    return tuple(integer(v, f"{where}[{i}]", low, high) for i, v in enumerate(items))


def numbers(value: Any, where: str) -> tuple[float, ...]:
    """``value``, a list of numbers, the field at ``where``."""
    if not isinstance(value, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise FieldError(f"{where} must be a list of numbers, not {shown(value)}")
    return tuple(float(v) for v in value)
