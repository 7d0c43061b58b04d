"""The name of the machine a CPU executable is compiled for: its own.

The tuning database's device key names this CPU's model; its facts (cores,
vector registers, caches) are the ``cpu`` entry of :mod:`tessel.targets`.
"""

from __future__ import annotations

import functools
import platform

__all__ = ["cpu_model"]


@functools.cache
def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo; empty off Linux."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if not line.strip():
                    break
                name, _, value = line.partition(":")
                fields[name.strip()] = " ".join(value.split())
    except OSError:
        pass
    return fields


def cpu_model() -> str:
    """The CPU's model name, ``"unknown"`` when the system does not say."""
    return _cpuinfo().get("model name") or platform.processor() or "unknown"
