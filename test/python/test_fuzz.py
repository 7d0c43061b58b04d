"""Differential fuzzing: random valid graphs compiled for the CPU against a float64 numpy reference.

Each test is one graph, ``tessel.testing.fuzz.random_graph(seed)``. Graphs
are compiled five at a time (consecutive seeds, one module), in worker
processes on every core, so that a compiler crash fails only its graphs. A
failure prints the seed, the ops with their shapes, the graph's module and
the command that reruns it. ``TESSEL_FUZZ_GRAPHS`` (default 300) and
``TESSEL_FUZZ_SEED`` (the first seed, default 0) choose the graphs, e.g.
``TESSEL_FUZZ_GRAPHS=2000 pytest test/python/test_fuzz.py`` locally.

Symbolic graphs (``random_graph(seed, symbolic=True)``: inputs with size
symbols, compiled once and run at four sizes each, 1 included) are chosen
alike by ``TESSEL_FUZZ_SYMBOLIC_GRAPHS`` (default 20) and
``TESSEL_FUZZ_SYMBOLIC_SEED``.
"""

import collections
import os

import pytest

from tessel.testing import fuzz

GRAPHS = int(os.environ.get("TESSEL_FUZZ_GRAPHS", "300"))
FIRST_SEED = int(os.environ.get("TESSEL_FUZZ_SEED", "0"))
BATCH = 5  # graphs per module: JIT time grows faster than linearly with a module's kernels
SYMBOLIC_GRAPHS = int(os.environ.get("TESSEL_FUZZ_SYMBOLIC_GRAPHS", "20"))
FIRST_SYMBOLIC_SEED = int(os.environ.get("TESSEL_FUZZ_SYMBOLIC_SEED", "0"))
SYMBOLIC_SEEDS = range(FIRST_SYMBOLIC_SEED, FIRST_SYMBOLIC_SEED + SYMBOLIC_GRAPHS)


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


@pytest.fixture(scope="module")
def symbolic_outcomes(request) -> dict[int, fuzz.Outcome]:
    """The outcome of every selected symbolic graph, BATCH to a module, in parallel."""
    seeds = sorted(item.callspec.params["seed"] for item in request.session.items
                   if getattr(item, "originalname", None) == "test_random_symbolic_graph_matches_numpy_at_every_size")
    batches = [seeds[i:i + BATCH] for i in range(0, len(seeds), BATCH)]
    return fuzz.run_isolated(batches, workers=os.cpu_count() or 1, per_process=2, symbolic=True)


@pytest.mark.parametrize("seed", SYMBOLIC_SEEDS, ids=lambda seed: f"symbolic{seed:06d}")
def test_random_symbolic_graph_matches_numpy_at_every_size(seed, symbolic_outcomes):
    graph, outcome = fuzz.random_graph(seed, symbolic=True), symbolic_outcomes[seed]
    problems = [outcome] if isinstance(outcome, str) else fuzz.check(graph, outcome)
    if problems:
        rerun = (f"TESSEL_FUZZ_SYMBOLIC_SEED={seed} TESSEL_FUZZ_SYMBOLIC_GRAPHS=1 "
                 f"pytest {__file__} -k symbolic{seed:06d}")
        pytest.fail(fuzz.report(graph, "\n".join(problems) + f"\nrerun: {rerun}"), pytrace=False)


def test_symbolic_generator_draws_symbols_where_tessel_takes_them():
    graphs = [fuzz.random_graph(seed, symbolic=True) for seed in range(300)]
    assert str(graphs[7]) == str(fuzz.random_graph(7, symbolic=True))
    assert set(op for graph in graphs for op in graph.ops()) == fuzz.SYMBOLIC_OPS
    symbolic = collections.Counter()  # ops whose result has a symbolic dim
    for graph in graphs:
        assert any(isinstance(d, fuzz.Size) for d in graph.nodes[graph.inputs[0]].shape)
        # tessel reads each symbol from an argument: only symbols some input has may appear.
        assert _symbols(n for n in graph.nodes) <= _symbols(graph.nodes[i] for i in graph.inputs)
        # Every symbol at its maximum, then at its minimum, then at sizes between.
        assert graph.bindings[:2] == [{s: r[1] for s, r in graph.ranges.items()},
                                      {s: r[0] for s, r in graph.ranges.items()}]
        assert len(graph.bindings) == 4
        assert all(r[0] <= b[s] <= r[1] and b[s] % (r[2] if len(r) > 2 else 1) == 0
                   for b in graph.bindings for s, r in graph.ranges.items())
        for b, binding in enumerate(graph.bindings):
            # Each binding's reference, and input, has the shape the symbolic shape gives there.
            for node in graph.nodes:
                shape = tuple(d.evaluate(binding) if isinstance(d, fuzz.Size) else d for d in node.shape)
                assert node.values[b].shape == shape
            assert [a.shape for a in graph.arrays(b)] == [graph.nodes[i].values[b].shape for i in graph.inputs]
        symbolic.update(n.op for n in graph.nodes if n.dims is not None and n.op not in ("input", "const"))
    # Symbols reach every op, not only the inputs; size 1 is run often.
    assert set(symbolic) == fuzz.SYMBOLIC_OPS, f"never on symbols: {fuzz.SYMBOLIC_OPS - set(symbolic)}"
    assert sum(1 in b.values() for g in graphs for b in g.bindings) > 250


def test_sizes_compare_as_tessel_simplifies_them():
    n, m = fuzz.Size.symbol("n"), fuzz.Size.symbol("m")
    assert n + n == 2 * n and (n * 2).text() == "n * 2" and n * m == m * n and (m * n).text() == "m * n"
    assert (n + 3).text() == "n + 3" and (n + m + n).text() == "m + n * 2" and (n + 3).text("g0_") == "g0_n + 3"
    assert (n * 0 + 4) == 4 and isinstance(n * 0 + 4, int)
    assert (n * m + 1).evaluate({"n": 3, "m": 5}) == 16
    assert fuzz._broadcast((n, 1, 4), (1, m, 1)) == (n, m, 4)
    assert fuzz._broadcast((n, 4), (5, 4)) is None and fuzz._broadcast((n,), (m,)) is None


def _symbols(nodes) -> set[str]:
    return {s for node in nodes for d in node.shape if isinstance(d, fuzz.Size) for s in d.symbols}
