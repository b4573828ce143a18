"""Megatron-LM's hand-written sharding, and the ILP's plan set against it.

Taught in notebook 12 (``notebooks/12_auto_parallelism.ipynb``, sections 2 and 5): the
baseline the solver of :mod:`.ilp` is compared with, on one mesh axis and on two.
"""
from __future__ import annotations

from .graph import Graph
from .ilp import _check, _solution, solve
from .sharding import Hardware

__all__ = ["megatron_plan", "compare_with_megatron", "sweep"]


def megatron_plan(graph: Graph, mesh=(4,)) -> dict:
    """Megatron-LM's hand-written plan: column-parallel qkv and fc1, row-parallel o
    and fc2 (one all-reduce each), heads and GeLU split; on a 2-D mesh data parallel
    over axis 0 and that tensor parallelism over axis 1."""
    mesh = _check(graph, mesh, Hardware(peak_flops=1.0))
    dp = len(mesh) == 2
    per = {"linear_in": "col", "linear_out": "row", "split": "S1", "whole": "R"}
    plan = {}
    for n in graph.nodes:
        if n.kind == "linear":
            role = per["linear_out"] if n.name.split(".")[-1] in ("o", "fc2") else per["linear_in"]
            plan[n.name] = f"dp,{role}" if dp else role
        elif n.kind in ("gelu", "attention"):
            plan[n.name] = "S0,S1" if dp else "S1"
        elif n.kind in ("input", "output") and n.placement == "R":
            plan[n.name] = "R,R" if dp else "R"
        else:
            plan[n.name] = "S0,R" if dp else "R"
    return plan


def compare_with_megatron(graph: Graph, mesh, hw: Hardware, formulation: str = "alpa") -> dict:
    """The solver's plan against Megatron's: both plans, their costs, the speed-up."""
    best = solve(graph, mesh, hw, formulation=formulation)
    megatron = _solution(best.problem, megatron_plan(graph, best.problem.mesh))
    return {"solver_plan": best.plan, "solver": dict(best.breakdown, total=best.seconds),
            "megatron_plan": megatron.plan,
            "megatron": dict(megatron.breakdown, total=megatron.seconds),
            "speedup": megatron.seconds / best.seconds,
            "same_as_megatron": best.plan == megatron.plan}


def sweep(builder, values, mesh, hw: Hardware, vary: str = "batch", formulation: str = "alpa",
          **shape) -> list:
    """:func:`compare_with_megatron` on ``builder(**shape, vary=value)`` for each value:
    ``[{vary, "tokens", "solver", "megatron", "speedup", "plan"}]`` (seconds). With the
    MLP and a replicated input and output, data parallelism (``dp``) replaces Megatron
    once tokens > 2 * ffn: it all-reduces the two weights' gradients, 2 * hidden * ffn
    elements, instead of two ``[tokens, hidden]`` activations, and all-gathers the
    output (and the input's gradient), half an all-reduce each."""
    if not callable(builder):
        raise TypeError(f"builder must be mlp, attention_block or transformer, got {builder!r}.")
    if not values:
        raise ValueError("values must list at least one size to try, e.g. (8, 64, 512).")
    rows = []
    for value in values:
        graph = builder(**dict(shape, **{vary: value}))
        r = compare_with_megatron(graph, mesh, hw, formulation)
        rows.append({vary: value, "tokens": graph.batch * graph.seq, "solver": r["solver"]["total"],
                     "megatron": r["megatron"]["total"], "speedup": r["speedup"],
                     "plan": r["solver_plan"]})
    return rows
