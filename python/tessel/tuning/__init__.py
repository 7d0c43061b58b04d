"""Tuning: measured schedules kept in a database and reused by compiles.

* :class:`TuningDatabase`, :class:`Record` - measured schedules in an SQLite file
* :func:`kernel_keys`, :func:`device_key` - what records are keyed by
* :func:`apply_records` - a scheduled module with the best known schedules
* :func:`tune` - the search (:mod:`.search`), measuring through a runner (:mod:`.runners`)
  and ranking candidates with a learned cost model (:mod:`.cost_model`) on features of
  their knobs and kernel IR (:mod:`.features`)
* :func:`export_batch`, :func:`import_batch` - the same for a remote GPU machine, in batches
  (:mod:`.batch`; measured there by ``python3 -m tessel.runtime.batch``)
"""

from ..errors import TuningDatabaseError
from .database import Record, TuningDatabase
from .batch import export_batch, import_batch
from .keys import apply_records, device_key, kernel_keys
from .runners import LocalCpuRunner, LocalCudaRunner, Measurement, Runner
from .search import KernelSummary, Task, ProgressBar, plot_curves, tasks, tune

__all__ = [
    "KernelSummary",
    "LocalCpuRunner",
    "LocalCudaRunner",
    "Measurement",
    "Record",
    "Runner",
    "Task",
    "TuningDatabase",
    "TuningDatabaseError",
    "apply_records",
    "device_key",
    "export_batch",
    "import_batch",
    "kernel_keys",
    "plot_curves",
    "ProgressBar",
    "tasks",
    "tune",
]
