"""The ``tessel`` command.

``tessel run ARTIFACT --inputs in.npz --out out.npz`` runs a saved CUDA
artifact: inputs are the arrays of ``in.npz`` in the artifact's argument
order (``arg0``, ``arg1``, ... or numpy's ``arr_0``, ...), results go to
``out.npz`` as ``out0``, ``out1``, ... ``--dry`` checks everything without a
GPU; ``--emulate`` runs every kernel on the PTX emulator, without a GPU.
Needs only numpy and cuda-bindings (numpy alone with --dry or --emulate).

``tessel cache info`` shows the compile cache (:mod:`tessel.cache`): its
folder, entries and size; ``tessel cache clear`` empties it.

``tessel tune MODEL --target cpu --trials N --db tune.db [--plot curve.png]``
tunes the schedule of every kernel of MODEL (graph-dialect ``.mlir`` or
``.onnx``) and records the measurements in the tuning database, which
``tessel.compile(..., tuning_db=...)`` then uses. For a GPU on another
machine, ``tessel tune MODEL --target cuda:sm_90 --export DIR --trials N``
writes a batch of candidates that ``python3 -m tessel.runtime.batch DIR``
measures there, and ``tessel tune-import DIR --db tune.db`` records.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from typing import Sequence

import numpy as np

from .errors import TesselError

__all__ = ["main"]


def _inputs(path: str, count: int) -> list[np.ndarray]:
    """The ``count`` arguments in .npz file ``path`` (``arg0``... or
    ``arr_0``...; no pickles); TesselError naming what is wrong."""
    try:
        with open(path, "rb") as f:
            # np.load takes anything else for a pickle, which it refuses with a misleading message.
            if not zipfile.is_zipfile(f):
                raise TesselError(f"{path} is not an .npz file (np.savez writes one)")
            f.seek(0)
            with np.load(f, allow_pickle=False) as data:
                for prefix in ("arg", "arr_"):
                    names = [f"{prefix}{i}" for i in range(count)]
                    if all(n in data for n in names):
                        return [data[n] for n in names]
                raise TesselError(f"{path} must hold arg0..arg{count - 1} (or arr_0..), it has {sorted(data)}")
    except TesselError:
        raise
    except Exception as e:  # noqa: BLE001 - a damaged .npz raises zipfile's, zlib's, tokenize's, numpy's errors
        raise TesselError(f"cannot read the arguments in {path}: {e}") from None


def _failed(command: str, error: BaseException) -> int:
    """Reports ``error`` as the one line of a failed ``tessel COMMAND``; the exit status."""
    print(f"tessel {command}: {error}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tessel", description="tessel's command line")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a saved CUDA artifact")
    run.add_argument("artifact", help="directory written by CudaArtifact.save()")
    run.add_argument("--inputs", required=True, help=".npz with one array per argument")
    run.add_argument("--out", required=True, help=".npz to write the results to")
    run.add_argument("--device", type=int, default=0, help="CUDA device ordinal")
    mode = run.add_mutually_exclusive_group()
    mode.add_argument("--dry", action="store_true", help="check everything, launch nothing (no GPU needed)")
    mode.add_argument("--emulate", action="store_true", help="run the kernels on the PTX emulator (no GPU needed)")
    tune = commands.add_parser("tune", help="tune the kernels' schedules of a model")
    tune.add_argument("model", help="a graph-dialect .mlir file or an .onnx model")
    tune.add_argument("--target", default="cpu", help="what to tune for (cpu)")
    tune.add_argument("--trials", type=int, default=64, help="measurements per kernel schedule")
    tune.add_argument("--db", help="the tuning database (SQLite; created if missing)")
    tune.add_argument("--plot", help="write best-so-far curves to this PNG")
    tune.add_argument("--search", default="model", choices=("model", "evolution", "random"),
                      help="cost-model-guided (default), evolutionary only, or random search")
    tune.add_argument("--seed", type=int, default=0, help="seed of the search")
    tune.add_argument("--export", metavar="DIR",
                      help="GPU targets: write a batch of candidates to DIR for `python3 -m "
                           "tessel.runtime.batch DIR` on the GPU machine (--db only guides the proposals)")
    imported = commands.add_parser("tune-import", help="record a measured GPU batch in a tuning database")
    imported.add_argument("batch", help="the directory `tessel tune --export` wrote")
    imported.add_argument("--db", required=True, help="the tuning database (SQLite; created if missing)")
    imported.add_argument("--results", help="the results file (default: BATCH/results.json)")
    cached = commands.add_parser("cache", help="show or empty the compile cache")
    cached.add_argument("action", choices=("info", "clear"),
                        help="info: its folder, entries and size; clear: remove every entry")
    args = parser.parse_args(argv)
    if args.command == "cache":
        return _cache(args.action)
    if args.command == "tune":
        return _tune(args)
    if args.command == "tune-import":
        return _tune_import(args)

    from . import runtime

    try:
        executable = runtime.load(args.artifact, device=args.device, dry=args.dry, emulate=args.emulate)
        results = executable(*_inputs(args.inputs, len(executable.artifact.inputs)))
    except TesselError as e:
        return _failed("run", e)
    results = results if isinstance(results, tuple) else (results,)
    try:
        with open(args.out, "wb") as f:  # a file object: np.savez would add .npz to a name without it
            np.savez(f, **{f"out{i}": r for i, r in enumerate(results)})
    except OSError as e:
        return _failed("run", f"cannot write the results to {args.out}: {e.strerror or e}")
    print(f"ran {executable.artifact.entry} ({len(executable.artifact.kernels)} kernels) on "
          f"{executable.driver.device_name}; wrote {len(results)} results to {args.out}")
    return 0


def _cache(action: str) -> int:
    """``tessel cache info`` / ``tessel cache clear`` on the default compile cache."""
    from .cache import default_cache

    cache = default_cache()
    if action == "info":
        print(cache.info())
    else:
        print(f"removed {cache.clear()} entries from {cache.folder}")
    return 0


def _tune(args: argparse.Namespace) -> int:
    from . import from_onnx, parse
    from .tuning import ProgressBar, export_batch, tune

    target = args.target.removeprefix("cuda:")
    try:
        if args.model.endswith(".onnx"):
            module = from_onnx(args.model)
        else:
            with open(args.model, encoding="utf-8") as f:
                module = parse(f.read(), source_name=args.model)
        if args.export:
            count = export_batch(module, args.export, target=target, trials=args.trials, db=args.db,
                                 seed=args.seed)
            print(f"wrote {count} candidates to {args.export}; on the GPU machine run "
                  f"`python3 -m tessel.runtime.batch {args.export}`, then "
                  f"`tessel tune-import {args.export} --db tune.db`")
            return 0
        if args.db is None:
            raise ValueError("--db is required unless --export writes a batch")
        summaries = tune(module, target=target, trials=args.trials, db=args.db, plot=args.plot,
                         search=args.search, seed=args.seed, progress=ProgressBar())
    except (TesselError, OSError, ValueError) as e:
        return _failed("tune", e)
    _print_summaries(summaries)
    print(f"recorded in {args.db}; tessel.compile(module, target={args.target!r}, tuning_db={args.db!r}) "
          "uses the best schedules" + (f"; curves in {args.plot}" if args.plot else ""))
    return 0


def _tune_import(args: argparse.Namespace) -> int:
    from .tuning import import_batch

    try:
        summaries = import_batch(args.batch, args.db, results=args.results)
    except (TesselError, OSError, ValueError) as e:
        return _failed("tune-import", e)
    except (KeyError, TypeError, AttributeError, IndexError, RecursionError) as e:
        # import_batch reads the JSON files unchecked: these are fields missing or of the wrong type.
        return _failed("tune-import", f"{args.batch}: a malformed batch or results file "
                                      f"({type(e).__name__}: {e})")
    _print_summaries(summaries)
    print(f"recorded in {args.db}")
    return 0


def _print_summaries(summaries: Sequence) -> None:
    print(f"{'kernel':<28} {'default ms':>11} {'best ms':>9} {'speed-up':>9} {'trials':>7} {'failed':>7}")
    for s in summaries:
        if s.error is not None:
            print(f"{s.name:<28} {s.error}")
            continue
        print(f"{s.name:<28} {s.default_seconds * 1e3:>11.3f} {s.best_seconds * 1e3:>9.3f} "
              f"{s.speedup:>8.2f}x {s.trials:>7} {s.failures:>7}")
    for s in summaries:
        if s.exhausted:
            print(f"{s.name}: stopped after {s.trials} trials: every legal point of its space was measured")
        if s.sizes and s.error is None:
            print(f"{s.name}: over size symbols, measured at the largest of their ranges "
                  f"({', '.join(f'{k}={v}' for k, v in s.sizes.items())}); its schedule serves every size")


if __name__ == "__main__":
    sys.exit(main())
