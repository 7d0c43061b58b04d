"""A learned cost model: predicts a schedule's relative time from its features.

Gradient-boosted trees (LightGBM) regress the log of a candidate's time
over its kernel's default schedule's on the candidate's features
(:mod:`tessel.tuning.features`: the kernel's loop extents from its IR, the
knob values, and what the knobs make of the loops they cut). Times relative
to each kernel's default put every kernel on one scale, so one model, refit
on every round, learns from all the kernels of a tuning run; a feature a
kernel lacks (a knob it has not) is missing, which the trees handle. The
search uses it only to rank candidates of one kernel, so only the order
matters.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from ..errors import require_extra

__all__ = ["CostModel"]

# Fewer successes than this train nothing useful: the search samples blindly.
MIN_SAMPLES = 8


class CostModel:
    """Ranks candidates by their features (named numbers)."""

    def __init__(self, seed: int = 0) -> None:
        self._lightgbm = require_extra("lightgbm", "tune", "the cost model (search=\"model\")")
        self.seed = seed
        self._model = None
        self._columns: list[str] = []

    def _matrix(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        return np.array([[row.get(c, math.nan) for c in self._columns] for row in rows], dtype=np.float64)

    def fit(self, rows: Sequence[Mapping[str, float]], relative: Sequence[float]) -> bool:
        """Refits on successes with features ``rows`` and times ``relative``
        to their kernel's default; False (and no model) while there are
        too few of them."""
        if len(rows) < MIN_SAMPLES:
            self._model = None
            return False
        self._columns = sorted({name for row in rows for name in row})
        params = {"objective": "regression", "learning_rate": 0.1, "num_leaves": 8,
                  "min_data_in_leaf": 2, "min_data_in_bin": 1, "bagging_fraction": 0.9,
                  "bagging_freq": 1, "seed": self.seed, "verbose": -1}
        data = self._lightgbm.Dataset(self._matrix(rows), np.log(np.array(relative)), params={"verbose": -1})
        self._model = self._lightgbm.train(params, data, num_boost_round=64)
        return True

    @property
    def trained(self) -> bool:
        return self._model is not None

    def predict(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        """Predicted log relative time of each candidate (lower is faster)."""
        if self._model is None:
            raise ValueError("the cost model has not been fitted")
        return self._model.predict(self._matrix(rows))
