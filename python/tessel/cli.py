"""The ``tessel`` command.

``tessel run ARTIFACT --inputs in.npz --out out.npz`` runs a saved CUDA
artifact: inputs are the arrays of ``in.npz`` in the artifact's argument
order (``arg0``, ``arg1``, ... or numpy's ``arr_0``, ...), results go to
``out.npz`` as ``out0``, ``out1``, ... ``--dry`` checks everything without a
GPU. Needs only numpy and cuda-bindings.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import numpy as np

from .errors import TesselError

__all__ = ["main"]


def _inputs(path: str, count: int) -> list[np.ndarray]:
    with np.load(path) as data:
        for prefix in ("arg", "arr_"):
            names = [f"{prefix}{i}" for i in range(count)]
            if all(n in data for n in names):
                return [data[n] for n in names]
        raise TesselError(f"{path} must hold arg0..arg{count - 1} (or arr_0..), it has {sorted(data)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tessel", description="tessel's command line")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a saved CUDA artifact")
    run.add_argument("artifact", help="directory written by CudaArtifact.save()")
    run.add_argument("--inputs", required=True, help=".npz with one array per argument")
    run.add_argument("--out", required=True, help=".npz to write the results to")
    run.add_argument("--device", type=int, default=0, help="CUDA device ordinal")
    run.add_argument("--dry", action="store_true", help="check everything, launch nothing (no GPU needed)")
    args = parser.parse_args(argv)

    from . import runtime

    try:
        executable = runtime.load(args.artifact, device=args.device, dry=args.dry)
        results = executable(*_inputs(args.inputs, len(executable.artifact.inputs)))
    except TesselError as e:
        print(f"tessel run: {e}", file=sys.stderr)
        return 1
    results = results if isinstance(results, tuple) else (results,)
    np.savez(args.out, **{f"out{i}": r for i, r in enumerate(results)})
    print(f"ran {executable.artifact.entry} ({len(executable.artifact.kernels)} kernels) on "
          f"{executable.driver.device_name}; wrote {len(results)} results to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
