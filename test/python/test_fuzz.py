"""Differential fuzzing: random valid graphs compiled for the CPU against a float64 numpy reference.

Each test is one graph, ``tessel.testing.fuzz.random_graph(seed)``. Graphs
are compiled five at a time (consecutive seeds, one module), in worker
processes on every core, so that a compiler crash fails only its graphs. A
failure prints the seed, the ops with their shapes, the graph's module and
the command that reruns it. ``TESSEL_FUZZ_GRAPHS`` (default 300) and
``TESSEL_FUZZ_SEED`` (the first seed, default 0) choose the graphs, e.g.
``TESSEL_FUZZ_GRAPHS=2000 pytest test/python/test_fuzz.py`` locally.
"""

import collections
import os

import pytest

from tessel.testing import fuzz

GRAPHS = int(os.environ.get("TESSEL_FUZZ_GRAPHS", "300"))
FIRST_SEED = int(os.environ.get("TESSEL_FUZZ_SEED", "0"))
BATCH = 5  # graphs per module: JIT time grows faster than linearly with a module's kernels


def _id(seed: int) -> str:
    return f"seed{seed:06d}"


@pytest.fixture(scope="module")
def outcomes(request) -> dict[int, fuzz.Outcome]:
    """The outcome of every selected graph, computed up front in parallel."""
    seeds = {item.callspec.params["seed"] for item in request.session.items
             if getattr(item, "originalname", None) == "test_random_graph_matches_numpy"}
    starts = sorted({seed - seed % BATCH for seed in seeds})
    return fuzz.run_isolated([range(start, start + BATCH) for start in starts], workers=os.cpu_count() or 1)


@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + GRAPHS), ids=_id)
def test_random_graph_matches_numpy(seed, outcomes):
    graph, outcome = fuzz.random_graph(seed), outcomes[seed]
    problems = [outcome] if isinstance(outcome, str) else fuzz.check(graph, outcome)
    if problems:
        start = seed - seed % BATCH
        rerun = f"TESSEL_FUZZ_SEED={start} TESSEL_FUZZ_GRAPHS={BATCH} pytest {__file__} -k {_id(seed)}"
        pytest.fail(fuzz.report(graph, "\n".join(problems) + f"\nrerun: {rerun}"), pytrace=False)


def test_generator_is_deterministic_and_draws_every_op():
    assert str(fuzz.random_graph(7)) == str(fuzz.random_graph(7))
    seen = collections.Counter(op for seed in range(300) for op in fuzz.random_graph(seed).ops())
    assert set(seen) == set(fuzz.OPS), f"never drawn: {set(fuzz.OPS) - set(seen)}"
