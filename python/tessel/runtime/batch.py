"""Times a batch of tuning candidates on a GPU machine that has no compiler.

    python3 -m tessel.runtime.batch BATCH_DIR [--out results.json] [--device 0] [--dry]

``BATCH_DIR`` is what :func:`tessel.tuning.export_batch` wrote on a machine
with the compiler: ``batch.json`` listing the candidates and one CUDA
artifact directory per candidate. Each candidate runs on the same inputs
as the other candidates of its kernel (normal values for floats, zeros for
integers, so that indices are valid); its outputs are sampled (so that the
importer can compare them with the default schedule's) and its calls timed
after a warm-up, inputs and outputs on the device. A failing candidate is
recorded with its error and the batch goes on. Results go to
``BATCH_DIR/results.json`` (or ``--out``), which
:func:`tessel.tuning.import_batch` reads back into a tuning database.
Needs numpy and cuda-bindings only; ``--dry`` checks everything on the
runtime's dry driver, without a GPU (the times are then meaningless).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .. import shapes
from ..errors import RuntimeError, TesselError
from ..shapes import DimRange, Size
from . import load
from .fields import FieldError, field, load_object, shown

__all__ = ["BATCH_FORMAT", "candidate_inputs", "measure", "measured_sizes", "output_sample", "run_batch", "timed_calls"]

BATCH_FORMAT = "tessel-tuning-batch"
# Output values a measurement reports: enough to tell a wrong schedule from
# a reordered floating-point sum.
SAMPLE_POINTS = 64


def measured_sizes(ranges: Mapping[str, DimRange]) -> dict[str, int]:
    """The size of each symbol that a kernel over size symbols is measured
    at: the largest of its range, the sizes its one schedule is chosen for
    (docs/dynamic-shapes.md, section 6)."""
    return {name: r.max - r.max % r.multiple_of for name, r in ranges.items()}


def candidate_inputs(specs: Sequence[tuple[Sequence[Size], np.dtype]],
                     ranges: Mapping[str, DimRange] | None = None) -> list[np.ndarray]:
    """The inputs every candidate of a kernel runs on, each dim over size
    symbols (of ``ranges``) at :func:`measured_sizes`: normal values for
    floats, zeros for integers and booleans (always valid indices)."""
    sizes = measured_sizes(ranges or {})
    rng = np.random.default_rng(0)
    arrays = []
    for shape, dtype in specs:
        shape = tuple(shapes.evaluate(d, sizes) for d in shape)
        arrays.append(rng.standard_normal(shape).astype(dtype) if np.issubdtype(dtype, np.floating)
                      else np.zeros(shape, dtype))
    return arrays


def output_sample(results: Any) -> list[list[float]]:
    """``SAMPLE_POINTS`` evenly spaced values of each output, as floats."""
    sample = []
    for r in results if isinstance(results, tuple) else (results,):
        flat = np.asarray(r, dtype=np.float64).reshape(-1)
        sample.append(flat[np.linspace(0, flat.size - 1, min(SAMPLE_POINTS, flat.size)).astype(int)].tolist())
    return sample


def measure(executable: Any, *, dry: bool, min_seconds: float, min_runs: int,
            max_runs: int) -> tuple[list[float], list[list[float]]]:
    """Times of calls of a loaded ``executable`` (after a warm-up whose
    outputs are sampled, :func:`output_sample`) and the sample, on the
    kernel's :func:`candidate_inputs`; inputs and outputs stay on the
    device, so calls time the kernels and their launches, not copies."""
    arrays = candidate_inputs(executable.artifact.inputs, executable.artifact.dims)
    sample = output_sample(executable(*arrays))
    args = arrays if dry else [_on_device(executable, a) for a in arrays]
    executable(*args, device_outputs=not dry)  # a warm-up on the device inputs
    return timed_calls(lambda: executable(*args, device_outputs=not dry), min_seconds=min_seconds,
                       min_runs=min_runs, max_runs=max_runs), sample


def timed_calls(call: Callable[[], Any], *, min_seconds: float, min_runs: int, max_runs: int,
                slow_seconds: float = math.inf) -> list[float]:
    """Wall times of calls of ``call``: at least ``min_runs``, more until
    ``min_seconds`` have passed, at most ``max_runs``, and none more once
    the calls took over ``slow_seconds`` in all."""
    seconds: list[float] = []
    while (len(seconds) < max_runs and (len(seconds) < min_runs or sum(seconds) < min_seconds)
           and not (seconds and sum(seconds) > slow_seconds)):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return seconds


def _measure(path: Path, device: int, dry: bool, min_seconds: float, min_runs: int,
             max_runs: int) -> dict[str, Any]:
    executable = load(path, device=device, dry=dry)
    try:
        seconds, sample = measure(executable, dry=dry, min_seconds=min_seconds, min_runs=min_runs,
                                  max_runs=max_runs)
        return {"seconds": seconds, "sample": sample, "device_name": executable.driver.device_name}
    finally:
        executable.close()


def _on_device(executable: Any, array: np.ndarray) -> Any:
    """``array`` copied into device memory of ``executable``'s driver."""
    from .executor import DeviceArray

    driver = executable.driver
    pointer = driver.alloc(array.nbytes)
    driver.upload(pointer, np.ascontiguousarray(array))
    return DeviceArray(driver, pointer, array.shape, array.dtype)


def _read_batch(directory: Path) -> dict[str, Any]:
    """``directory``'s ``batch.json``, checked as far as running it needs:
    a target, and candidates with a ``kernel`` and an ``id`` that names a
    folder directly inside ``directory`` (no ``..``, absolute path or
    symlink out: the artifact reader confines files to that folder, this
    confines the folder to the batch); tessel.RuntimeError naming the file
    and what is wrong."""
    path = directory / "batch.json"
    try:
        batch = load_object(path, "a tessel tuning batch")
        if batch.get("format") != BATCH_FORMAT:
            raise RuntimeError(f"{path} is not a tessel tuning batch")
        field(batch, "target", kinds=str, what="a string")
        for n, candidate in enumerate(field(batch, "candidates", kinds=list, what="a list")):
            where = f"candidates[{n}]"
            field(candidate, "kernel", where, str, "a string")
            folder = directory / field(candidate, "id", where, str, "a string")
            if "\0" in candidate["id"] or folder.resolve().parent != directory.resolve():
                raise RuntimeError(f"{path}: {where}.id {shown(candidate['id'])} names no folder of the batch")
    except (FieldError, OSError) as e:
        raise RuntimeError(f"{path}: {e}") from None
    return batch


def run_batch(directory: str | Path, *, device: int = 0, dry: bool = False, min_seconds: float = 0.05,
              min_runs: int = 5, max_runs: int = 100) -> dict[str, Any]:
    """Measures every candidate of the batch in ``directory``; the results
    as ``results.json`` holds them."""
    directory = Path(directory)
    batch = _read_batch(directory)
    results: dict[str, Any] = {}
    device_name = None
    for candidate in batch["candidates"]:
        if candidate.get("error") is not None:
            continue  # did not compile; the importer records that
        try:
            measured = _measure(directory / candidate["id"], device, dry, min_seconds, min_runs, max_runs)
            device_name = measured.pop("device_name")
            results[candidate["id"]] = measured
        except Exception as e:  # noqa: BLE001 - a failing candidate is a result; the batch goes on
            results[candidate["id"]] = {"error": f"{type(e).__name__}: {e}"}
        print(f"{candidate['id']} {candidate['kernel']}: "
              + (f"{np.median(results[candidate['id']]['seconds']) * 1e3:.3f} ms"
                 if "seconds" in results[candidate["id"]] else results[candidate["id"]]["error"]),
              file=sys.stderr)
    return {"format": BATCH_FORMAT + "-results", "target": batch["target"], "device": device_name or "unknown",
            "dry": dry, "results": results}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("batch", help="the directory tessel.tuning.export_batch wrote")
    parser.add_argument("--out", help="results file (default: BATCH/results.json)")
    parser.add_argument("--device", type=int, default=0, help="CUDA device ordinal")
    parser.add_argument("--dry", action="store_true", help="run on the dry driver (no GPU; times meaningless)")
    args = parser.parse_args(argv)
    out = Path(args.out or Path(args.batch) / "results.json")
    try:
        results = run_batch(args.batch, device=args.device, dry=args.dry)
        out.write_text(json.dumps(results))
    except (TesselError, OSError) as e:
        print(f"tessel.runtime.batch: {e}", file=sys.stderr)
        return 1
    failed = sum("error" in r for r in results["results"].values())
    print(f"measured {len(results['results']) - failed} candidates on {results['device']}, {failed} failed; "
          f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
