"""Enumerate DP x TP x PP x ZeRO x micro-batch configurations and rank them.

Taught in notebook 09. The search is exhaustive over powers of two (tens to a few
hundred configurations), which is how a student should think about it before reaching
for Alpa's dynamic programming and integer programming.
"""
from __future__ import annotations

from .cost import Plan, evaluate
from .specs import ClusterSpec, ModelSpec
from ..validation import positive_int, positive_number

__all__ = ["plan", "grade", "powers_of_two_dividing"]


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


def grade(model: ModelSpec, cluster: ClusterSpec, global_batch: int, *, dp: int, tp: int,
          pp: int, zero: int = 1, micro_batch: int = 1, recompute: str = "selective",
          chunks: int = 1, tolerance: float = 0.10) -> bool:
    """Notebook 09's exercise: is a student's configuration feasible and within
    ``tolerance`` of the best step time? Prints why, returns a bool."""
    positive_number("tolerance", tolerance, "pass a slack such as 0.10 (10 %).", zero=True)
    mine = evaluate(model, cluster, global_batch, dp, tp, pp, zero, micro_batch, recompute, chunks)
    if not mine.feasible:
        print(f"✗ {mine.label()} cannot run: {mine.reason}.")
        return False
    best = plan(model, cluster, global_batch)[0][0]
    ratio = mine.step_time / best.step_time
    parts = ", ".join(f"{k} {v:.2f} s" for k, v in mine.times.items() if v and k != "dp_comm_total")
    verdict = ratio <= 1 + tolerance
    print(f"{'✓' if verdict else '✗'} {mine.label()}: {mine.step_time:.2f} s per step "
          f"({parts}), {mine.memory['total'] / 1e9:.1f} GB per GPU, MFU {100 * mine.mfu:.1f}%.\n"
          f"  The planner's best, {best.label()}, takes {best.step_time:.2f} s: yours is "
          f"{ratio:.2f}x that" + ("." if verdict else
                                  f", more than {1 + tolerance:.2f}x. Compare the breakdowns."))
    return verdict
