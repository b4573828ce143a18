"""Enumerate DP x TP x PP x ZeRO x micro-batch configurations and rank them.

Taught in notebook 09. The search is exhaustive over powers of two (tens to a few
hundred configurations), which is how a student should think about it before reaching
for Alpa's dynamic programming and integer programming.
"""
from __future__ import annotations

from .cost import Plan, evaluate
from .specs import ClusterSpec, ModelSpec
from ..validation import positive_int

__all__ = ["plan", "powers_of_two_dividing"]


def powers_of_two_dividing(n: int) -> list[int]:
    """1, 2, 4, ... up to the largest power of two dividing ``n`` (notebook 09's planner)."""
    positive_int("n", n, "pass a GPU count such as 8.")
    out, k = [], 1
    while n % k == 0 and k <= n:
        out.append(k)
        k *= 2
    return out


def plan(model: ModelSpec, cluster: ClusterSpec, global_batch: int,
         zero_stages=(0, 1, 2, 3), micro_batches=(1, 2, 4), recomputes=("selective", "full"),
         chunk_options=(1, 2, 4), **cost_options) -> tuple[list[Plan], list[Plan]]:
    """All configurations as ``(feasible ranked fastest first, infeasible with reasons)``.

    Ties in step time go to the configuration whose TP group stays inside a node, then
    to fewer pipeline stages (fewer things to go wrong).
    """
    if not isinstance(global_batch, int) or global_batch < 1:
        raise ValueError(f"global_batch must be a positive number of sequences, got {global_batch!r}.")
    if cluster.gpus & (cluster.gpus - 1):
        raise ValueError(f"the planner enumerates powers of two; {cluster.gpus} GPUs is not one. "
                         "Use a node count that is a power of two.")
    feasible, infeasible = [], []
    for tp in powers_of_two_dividing(cluster.gpus):
        for pp in powers_of_two_dividing(cluster.gpus // tp):
            dp = cluster.gpus // (tp * pp)
            for zero in zero_stages:
                for mb in micro_batches:
                    for recompute in recomputes:
                        for chunks in chunk_options if pp > 1 else (1,):
                            p = evaluate(model, cluster, global_batch, dp, tp, pp, zero, mb,
                                         recompute, chunks, **cost_options)
                            (feasible if p.feasible else infeasible).append(p)
    feasible.sort(key=lambda p: (round(p.step_time, 9), p.tp_inter_node, p.pp))
    return feasible, infeasible

