"""A registry of experiments that run the same way from a notebook, a shell or torchrun.

Taught in notebook 00. A module marks a rank function with ``@experiment("name")``;
then all three of these run it:

* ``companion.launch(fn, world_size=N)`` inside a notebook;
* ``python -m companion run NAME --world-size N`` on one machine;
* ``torchrun --nnodes M --nproc-per-node K ... -m companion run NAME`` on a cluster,
  where rank and world size come from torchrun's environment.

Each rank function returns picklable data; the optional ``summarize`` turns the list of
per-rank results into text that rank 0 (or the parent) prints. Ranks never plot.

A new experiment also needs its row in :data:`MODULES` (name -> module), so that a rank
imports that one module only; ``tests/test_layout.py`` fails until the row is there.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Callable

from .validation import accepts, callable_arg, preflight, run_preflight

__all__ = ["experiment", "get", "names", "Experiment", "call_many"]


@dataclasses.dataclass(frozen=True)
class Experiment:
    name: str
    fn: Callable
    summarize: Callable[[list], str] | None
    description: str


_REGISTRY: dict[str, Experiment] = {}
load_errors: dict[str, str] = {}  # module -> error, for modules that failed to import


def experiment(name: str, summarize: Callable[[list], str] | None = None):
    """Decorator: register ``fn`` (a rank function) under ``name``."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"experiment name must be a non-empty string, got {name!r} "
                        f"({type(name).__name__}); `python -m companion run NAME` takes it.")
    if summarize is not None and not callable(summarize):
        raise TypeError(f"summarize must be a function of the per-rank results list, got "
                        f"{summarize!r} ({type(summarize).__name__}).")

    def register(fn):
        if name in _REGISTRY and _REGISTRY[name].fn.__qualname__ != fn.__qualname__:
            raise ValueError(f"experiment name {name!r} is registered twice; pick another name.")
        doc = (fn.__doc__ or "").strip().splitlines()
        _REGISTRY[name] = Experiment(name, fn, summarize, doc[0] if doc else "")
        return fn

    return register


# Where each experiment is registered. A rank that runs one (``python -m companion run
# NAME``, under torchrun too) imports only that module and what it imports, never the
# widgets, matplotlib or the authoring tools; tests/test_layout.py checks this table
# against every ``@experiment`` in the package.
MODULES: dict[str, str] = {
    "all_reduce": "companion.basics",
    "whoami": "companion.basics",
    "collectives_all_reduce": "companion.collectives.demos",
    "collectives_primitives": "companion.collectives.demos",
    "collectives_traffic_sweep": "companion.collectives.demos",
    "collectives_ping_pong": "companion.collectives.costmodel",
    "collectives_timing": "companion.collectives.costmodel",
    "hierarchical_all_reduce": "companion.collectives.hierarchical",
    "collectives_all_reduce_training": "companion.data_parallel.param_server",
    "collectives_parameter_server": "companion.data_parallel.param_server",
    "zero_train": "companion.data_parallel.runs",
    "pipeline_run": "companion.pipeline.tinymlp",
    "tp_activation_memory": "companion.tensor_parallel.checks",
    "tp_compare": "companion.tensor_parallel.checks",
    "tp_dtensor_compare": "companion.tensor_parallel.checks",
    "sp_attention": "companion.sequence_parallel.runs",
    "sp_benchmark_layer": "companion.sequence_parallel.block",
    "moe_expert_parallel": "companion.sequence_parallel.moe",
    "moe_load_balance": "companion.sequence_parallel.moe_balance",
    "moe_node_traffic": "companion.sequence_parallel.moe_nodes",
    "compression_ablation": "companion.compression.ablation",
    "compression_densification": "companion.compression.train",
    "compression_torch_powersgd": "companion.compression.train",
    "compression_train": "companion.compression.train",
    "dga_toy": "companion.dga.runs",
    "dga_train": "companion.dga.runs",
    "latency_link": "companion.network.delayed",
    "hybrid_dp_tp": "companion.hybrid.mesh2d",
    "hybrid_pp_dp": "companion.hybrid.mesh2d",
    "hybrid_dp_tp_pp": "companion.hybrid.mesh3d",
    "hybrid_ep_dp": "companion.hybrid.expert",
    "overlap_crossover": "companion.overlap.crossover",
    "overlap_steps": "companion.overlap.runs",
    "topology_timing": "companion.topology.timing",
}


def _load(name: str) -> None:
    module = MODULES.get(name)
    if module is None or module in load_errors:
        return
    try:
        importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - one broken module must not hide the others
        load_errors[module] = f"{type(exc).__name__}: {exc}"


def names() -> list[str]:
    """Every registered experiment (this imports every experiment module once)."""
    for name in MODULES:
        _load(name)
    return sorted(_REGISTRY)


def get(name: str) -> Experiment:
    _load(name)
    if name not in _REGISTRY:
        broken = "".join(f"\n  {mod} failed to import: {err}" for mod, err in load_errors.items())
        raise ValueError(f"no experiment named {name!r}; known: {', '.join(sorted(MODULES))}. "
                         f"List them with `python -m companion list`.{broken}")
    return _REGISTRY[name]


def _check_calls(calls, world_size=None) -> None:
    fix = ("pass a list of (function, kwargs) pairs, e.g. "
           "[(compare_with_reference, {'kind': 'mlp'})].")
    for i, call in enumerate(calls):
        if not (isinstance(call, (tuple, list)) and len(call) == 2):
            raise TypeError(f"calls[{i}] must be a (function, kwargs) pair, got {call!r}; {fix}")
        fn, kwargs = call
        callable_arg("calls", fn, fix)
        if not isinstance(kwargs, dict):
            raise TypeError(f"calls[{i}]'s kwargs must be a dict, got {kwargs!r}; {fix}")
        accepts(f"calls[{i}]", fn, (), kwargs)
        run_preflight(fn, (), kwargs, world_size)  # each row's own checks, before any rank


@preflight(_check_calls)
def call_many(calls) -> list:
    """Rank function: ``[fn(**kwargs) for fn, kwargs in calls]``. One launch for a whole
    table of experiments (notebooks 05 and 06), instead of one launch per row: a launch
    costs a process group's start-up, a row costs only its own work."""
    import torch.distributed as dist

    _check_calls(calls, dist.get_world_size() if dist.is_initialized() else 1)
    return [fn(**kwargs) for fn, kwargs in calls]
