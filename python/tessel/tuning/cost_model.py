"""A learned cost model: predicts a schedule's time from its knobs.

Gradient-boosted trees (LightGBM) regress the log of the measured time on
features of the knob values: each value and its log2 (tile sizes act
multiplicatively), and for knobs that tile the same thing together, their
products. One model per kernel, refit on every measurement as it arrives;
the search uses it only to rank candidates, so only the order matters.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import UnsupportedError

__all__ = ["CostModel"]

# Fewer successes than this train nothing useful: the search samples blindly.
MIN_SAMPLES = 8


class CostModel:
    """Ranks candidate knob values of one kernel; knobs in ``names`` order."""

    def __init__(self, names: Sequence[str], seed: int = 0) -> None:
        try:
            import lightgbm
        except ImportError:
            raise UnsupportedError("the cost model needs LightGBM: pip install 'tessel[tune]' "
                                   "(or search without the model)") from None
        self._lightgbm = lightgbm
        self.names = tuple(names)
        self.seed = seed
        self._model = None

    def features(self, values: Sequence[int]) -> list[float]:
        """Values, their log2, and the products of pairs (tile areas)."""
        logs = [math.log2(v) if v > 0 else -1.0 for v in values]
        pairs = [logs[i] + logs[j] for i in range(len(values)) for j in range(i + 1, len(values))]
        return [float(v) for v in values] + logs + pairs

    def fit(self, points: Sequence[Sequence[int]], seconds: Sequence[float]) -> bool:
        """Refits on the successes ``points`` with their median ``seconds``;
        False (and no model) while there are too few of them."""
        if len(points) < MIN_SAMPLES:
            self._model = None
            return False
        params = {"objective": "regression", "learning_rate": 0.1, "num_leaves": 8,
                  "min_data_in_leaf": 2, "min_data_in_bin": 1, "bagging_fraction": 0.9,
                  "bagging_freq": 1, "seed": self.seed, "verbose": -1}
        data = self._lightgbm.Dataset(np.array([self.features(p) for p in points]),
                                      np.log(np.array(seconds)), params={"verbose": -1})
        model = self._lightgbm.train(params, data, num_boost_round=64)
        self._model = model
        return True

    @property
    def trained(self) -> bool:
        return self._model is not None

    def predict(self, points: Sequence[Sequence[int]]) -> np.ndarray:
        """Predicted log-seconds of each point (lower is faster)."""
        if self._model is None:
            raise ValueError("the cost model has not been fitted")
        return self._model.predict(np.array([self.features(p) for p in points]))
