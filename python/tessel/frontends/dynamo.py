"""``torch.compile(model, backend="tessel")``: Dynamo's graphs, partitioned, their supported parts compiled.

torch finds this backend through the ``torch_dynamo_backends`` entry point,
so no ``import tessel`` is needed first. Each FX graph Dynamo captures is
exported and decomposed to core ATen as :func:`tessel.from_torch` does;
torch's ``CapabilityBasedPartitioner`` then groups the nodes tessel
translates (an op with a converter, tensors of dtypes tessel runs) into
maximal partitions, each compiled by tessel, while everything else runs in
eager PyTorch between them. A partition tessel cannot compile after all (a
converter refusing an argument) stays in eager, so a model with an
unsupported op still runs, and still gains from the rest.

Parameters reach the compiled parts as arguments, not constants, as Dynamo
passes them: a model whose weights are updated in place stays right. Tensors
cross without copies (DLPack). Inference only: a graph that needs gradients
(grad mode on and a tensor that requires grad) runs in eager, with a
warning, as does one whose shapes Dynamo made symbolic (a second shape:
``torch.compile(..., dynamic=False)`` compiles one graph per shape instead).

Options (``torch.compile(model, backend="tessel", options={...})``):
``target`` (``"cpu"``, the default; a CUDA target such as ``"cuda:sm_90"``,
whose partitions run through :mod:`tessel.runtime` on the GPU the CUDA
tensors are on, results left there; or ``"auto"``: the GPU's target for CUDA
tensors, its arch-specific one where tessel has it (``"cuda:sm_90a"`` on an
H100/H200), the CPU for CPU tensors), ``emulate`` (a CUDA target's kernels on the
PTX emulator, CPU tensors in and out: no GPU needed, slow, for tests),
``cache`` (the compile cache, as
``tessel.compile`` takes it), ``tuning_db`` (a tuning database, as
``tessel.compile`` takes it: each partition's kernels run the best
schedules measured for them on this CPU) and ``report`` (print what ran
where: ops compiled / total, and why each op stayed in eager).
"""

from __future__ import annotations

import collections
import operator
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from ..errors import TesselError, UnsupportedError
from .torch import _ARGUMENT_DTYPES, _IGNORED, CONVERTERS, _export, _op_name, from_torch

__all__ = ["Report", "backend"]

_OPTIONS = ("target", "emulate", "cache", "tuning_db", "report")


@dataclass
class Report:
    """What ran where in one compiled graph: ops compiled by tessel, ops
    left to eager PyTorch (counted by op and why), the partitions compiled
    and why any failed. The compiled graph keeps it as ``tessel_report``."""

    compiled_ops: int = 0
    eager_ops: collections.Counter = field(default_factory=collections.Counter)
    partitions: int = 0
    failed_partitions: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        total = self.compiled_ops + sum(self.eager_ops.values())
        lines = [f"tessel: {self.compiled_ops} of {total} ops compiled, in {self.partitions} partitions"]
        lines += [f"  eager: {op} x{count} ({why})" for (op, why), count in sorted(self.eager_ops.items())]
        lines += [f"  eager partition: {why}" for why in self.failed_partitions]
        return "\n".join(lines)


def _tensor_dtypes(value: Any) -> list[Any]:
    """The dtypes of the tensors in a node's recorded value (one, or a tuple of them)."""
    values = value if isinstance(value, (tuple, list)) else (value,)
    return [v.dtype for v in values if isinstance(v, torch.Tensor)]


def _known_nodes(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """The nodes whose values follow from literals alone (``arange``, its
    ``sin``): from_torch evaluates those in torch while importing, converter
    or not."""
    known: set[torch.fx.Node] = set()
    for node in graph.nodes:
        if (node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)
                and torch.Tag.nondeterministic_seeded not in node.target.tags
                and all(a in known for a in node.all_input_nodes)):
            known.add(node)
    return known


def _why_not(node: torch.fx.Node, known: set[torch.fx.Node]) -> str | None:
    """Why tessel cannot take ``node``; None when it can."""
    if node.op != "call_function":
        return "not an op"
    name = _op_name(node.target)
    if (node.target is not operator.getitem and name not in CONVERTERS and name not in _IGNORED
            and node not in known):
        return "no converter"
    dtypes = _tensor_dtypes(node.meta.get("val"))
    for arg in node.all_input_nodes:
        dtypes += _tensor_dtypes(arg.meta.get("val"))
    bad = sorted({str(d).removeprefix("torch.") for d in dtypes if d not in _ARGUMENT_DTYPES})
    return f"dtype {', '.join(bad)}" if bad else None


class _Supported(OperatorSupportBase):
    def __init__(self, known: set[torch.fx.Node]) -> None:
        super().__init__()
        self.known = known

    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        return _why_not(node, self.known) is None


class _Compiled(torch.nn.Module):
    """A partition compiled by tessel, called as the partition was."""

    def __init__(self, executable: Any, tuple_output: bool, **call: Any) -> None:
        super().__init__()
        self.executable = executable
        self.tuple_output = tuple_output
        self.call = call  # device_outputs=True for a GPU's results, left on it

    def forward(self, *args: Any) -> Any:
        # Parameters require grad even under no_grad, and DLPack refuses those: a detached view shares the data.
        results = self.executable(*(a.detach() if isinstance(a, torch.Tensor) else a for a in args), **self.call)
        tensors = tuple(torch.from_dlpack(r) for r in (results if isinstance(results, tuple) else (results,)))
        return tensors if self.tuple_output else tensors[0]


def _example(node: Any) -> Any:
    """A tensor of the shape and dtype ``node`` has (its values do not matter to export)."""
    value = node.meta["val"] if isinstance(node, torch.fx.Node) else node
    return torch.zeros(value.shape, dtype=value.dtype) if isinstance(value, torch.Tensor) else value


def _target(options: dict[str, Any], example_inputs: Sequence[Any]) -> str:
    """The target the partitions compile for: the option's, or for "auto"
    the chip of the GPU the CUDA tensors are on (the CPU for CPU tensors)."""
    from ..compiler import available_targets

    target = options.get("target", "cpu")
    known = available_targets()
    if target == "auto":
        devices = {t.device for t in example_inputs if isinstance(t, torch.Tensor)}
        cuda = [d for d in devices if d.type == "cuda"]
        if not cuda:
            return "cpu"
        major, minor = torch.cuda.get_device_capability(cuda[0])
        target = f"cuda:sm_{major}{minor}"
        # The chip's arch-specific target where tessel has one (sm_90a: wgmma).
        if f"{target}a" in known:
            target += "a"
        if target not in known:
            raise UnsupportedError(f"the tensors are on a GPU of {target}, which tessel has no target for; "
                                   f"available: {', '.join(known)}")
    if target not in known:
        raise UnsupportedError(f"unknown target {target!r} for tessel's torch.compile backend; available: "
                               f"{', '.join(known)} and 'auto'")
    if options.get("emulate") and target == "cpu":
        raise UnsupportedError("emulate runs a CUDA target's kernels on the PTX emulator; the target is the CPU")
    return target


def _executable(artifact: Any, example_inputs: Sequence[Any], emulate: bool) -> Any:
    """A CUDA artifact ready to call: on the PTX emulator, or on the GPU of the example tensors."""
    if emulate:
        return artifact.emulate()
    from .. import runtime

    device = next(t.device for t in example_inputs if isinstance(t, torch.Tensor) and t.device.type == "cuda")
    with tempfile.TemporaryDirectory() as tmp:  # the executable reads the PTX and uploads the constants now
        return runtime.load(artifact.save(Path(tmp) / "artifact"), device=device.index or 0)


def _eager_reason(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], target: str,
                  emulate: bool) -> str | None:
    """Why the whole graph runs in eager; None when tessel takes it."""
    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return ("the graph needs gradients (grad mode is on and an input requires grad); tessel compiles "
                "inference: call the model under torch.no_grad() or torch.inference_mode()")
    if len(tensors) != len(example_inputs) or any(not isinstance(d, int) for t in tensors for d in t.shape):
        return ("Dynamo made its shapes symbolic (a second shape); tessel compiles static shapes: "
                "torch.compile(..., dynamic=False) compiles one graph per shape")
    wanted = "cpu" if target == "cpu" or emulate else "cuda"
    if any(t.device.type != wanted for t in tensors) or len({t.device for t in tensors}) > 1:
        where = ", ".join(sorted({str(t.device) for t in tensors}))
        return (f"its tensors are on {where}; target {target!r}{' emulated' if emulate else ''} runs {wanted} "
                "tensors (of one device)")
    return None


def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *,
            options: dict[str, Any] | None = None) -> Callable[..., Any]:
    """The torch.compile backend: ``gm`` with its supported partitions compiled by tessel."""
    from ..compiler import compile as tessel_compile

    options = dict(options or {})
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise UnsupportedError(f"unknown tessel backend options {unknown}; known: {', '.join(_OPTIONS)}")
    target, emulate = _target(options, example_inputs), bool(options.get("emulate"))
    if options.get("tuning_db") is not None:  # a wrong path is the caller's error, not a reason for eager
        from ..tuning import TuningDatabase

        TuningDatabase(options["tuning_db"], readonly=True).close()
    why = _eager_reason(gm, example_inputs, target, emulate)
    if why:
        warnings.warn(f"tessel: this graph runs in eager PyTorch: {why}", stacklevel=2)
        return gm.forward
    try:
        module = _export(gm, tuple(example_inputs))[0].module()
    except UnsupportedError as e:
        warnings.warn(f"tessel: this graph runs in eager PyTorch: {e}", stacklevel=2)
        return gm.forward
    report = Report()
    nodes = [n for n in module.graph.nodes if n.op == "call_function"]
    known = _known_nodes(module.graph)
    partitioner = CapabilityBasedPartitioner(module, _Supported(known), allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    fused = partitioner.fuse_partitions(partitions)
    for node in nodes:
        why = _why_not(node, known)
        if why is not None and _op_name(node.target) not in _IGNORED:
            report.eager_ops[(_op_name(node.target), why)] += 1
    for call in [n for n in fused.graph.nodes if n.op == "call_module" and n.target.startswith("fused_")]:
        part = getattr(fused, call.target)
        ops = sum(1 for n in part.graph.nodes if n.op == "call_function" and _op_name(n.target) not in _IGNORED)
        output = next(n for n in part.graph.nodes if n.op == "output")
        try:
            graph_module = from_torch(part, tuple(_example(a) for a in call.args), name=call.target)
            executable = tessel_compile(graph_module, target=target, cache=options.get("cache", True),
                                        tuning_db=options.get("tuning_db"))
            if target != "cpu":
                executable = _executable(executable, example_inputs, emulate)
        except TesselError as e:
            report.failed_partitions.append(f"{ops} ops: {str(e).splitlines()[0]}")
            for n in part.graph.nodes:
                if n.op == "call_function" and _op_name(n.target) not in _IGNORED:
                    report.eager_ops[(_op_name(n.target), "its partition failed")] += 1
            continue
        on_gpu = {"device_outputs": True} if target != "cpu" and not emulate else {}
        setattr(fused, call.target, _Compiled(executable, isinstance(output.args[0], (tuple, list)), **on_gpu))
        report.compiled_ops += ops
        report.partitions += 1
    fused.recompile()
    if options.get("report"):
        print(report, file=sys.stderr)
    fused.tessel_report = report
    return fused
