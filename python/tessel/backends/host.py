"""Facts about the machine a CPU executable is compiled for: its own.

The CPU backend JIT-compiles for the host's CPU, so its default schedules
(register blocks sized to the vector registers) and the tuning database's
device key describe this machine.
"""

from __future__ import annotations

import functools
import platform

__all__ = ["cpu_model", "vector_bits", "vector_bits_of"]


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


def vector_bits() -> int:
    """Bits of this CPU's vector registers as LLVM uses them (see
    :func:`vector_bits_of`)."""
    return vector_bits_of(set(_cpuinfo().get("flags", "").split()), platform.machine())


def vector_bits_of(flags: set[str], machine: str) -> int:
    """Bits of the vector registers of a CPU with /proc/cpuinfo ``flags``
    and ``machine`` (``platform.machine()``): 512 with AVX-512, 256 with
    AVX, 128 otherwise (SSE, NEON). An x86 CPU whose flags are unknown (no
    /proc/cpuinfo) is taken to have AVX2."""
    if "avx512f" in flags:
        return 512
    if "avx" in flags or (not flags and machine.lower() in ("x86_64", "amd64")):
        return 256
    return 128
