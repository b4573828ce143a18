"""Enumerate DP x TP x PP x ZeRO x micro-batch configurations and rank them.

Taught in notebook 09. The search is exhaustive over powers of two for TP and PP, DP
taking the rest of the GPUs (tens to a few hundred configurations), which is how a
student should think about it before reaching for Alpa's dynamic programming and
integer programming.
"""
from __future__ import annotations

import itertools

from .cluster_spec import ClusterSpec
from .cost import Plan, evaluate
from .specs import ModelSpec
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
         chunk_options=(1, 2, 4), *, cp_options=(1,), ep_options=None, etp_options=None,
         schedules=("1f1b",), stage_split=None, tp_options=None,
         **cost_options) -> tuple[list[Plan], list[Plan]]:
    """All configurations as ``(feasible ranked fastest first, infeasible with reasons)``.

    Ties in step time go to the configuration whose TP group stays inside a node, then
    to fewer pipeline stages (fewer things to go wrong).

    The 5D axes (notebook 12): ``cp_options`` context-parallel degrees (default: none,
    notebook 09's search; pass e.g. ``(1, 2, 4, 8, 16)``); for a MoE model
    ``ep_options`` (default: every power of two dividing the experts) and ``etp_options``
    (default: ``(1, tp)``: experts unsplit or split like attention); ``schedules``
    (add ``"dualpipev"``); ``stage_split`` (``"llama3"``); ``tp_options`` limits TP.
    """
    if not isinstance(global_batch, int) or global_batch < 1:
        raise ValueError(f"global_batch must be a positive number of sequences, got {global_batch!r}.")
    # TP and PP are powers of two and DP takes the rest. Across nodes a power-of-two GPU
    # count keeps every group filling nodes evenly; one domain of any size (a TPU slice:
    # Gemma 2's 6,144 chips, DP 768 = 6,144 / 8) has no node boundary to fill.
    if cluster.nodes > 1 and cluster.gpus & (cluster.gpus - 1):
        raise ValueError(f"the planner enumerates powers of two; {cluster.gpus} GPUs is not one. "
                         "Use a node count that is a power of two, or a single node.")
    for name, options in (("cp_options", cp_options), ("ep_options", ep_options),
                          ("etp_options", etp_options), ("tp_options", tp_options)):
        if options is not None and (not options or not all(
                isinstance(o, int) and o >= 1 for o in options)):
            raise ValueError(f"{name} must be a non-empty sequence of whole numbers >= 1, "
                             f"got {options!r}.")
    if etp_options is not None and not model.is_moe:
        raise ValueError(f"etp_options={etp_options!r}: the experts' TP degree applies to MoE "
                         f"models only; {model.name} is dense (omit etp_options).")
    if ep_options is None:
        ep_options = powers_of_two_dividing(model.experts) if model.is_moe else (1,)
    feasible, infeasible = [], []
    for tp in tp_options or powers_of_two_dividing(cluster.gpus):
        for cp in cp_options:
            if cluster.gpus % (tp * cp):
                continue
            for pp in powers_of_two_dividing(cluster.gpus // (tp * cp)):
                dp = cluster.gpus // (tp * pp * cp)
                etps = (etp_options or sorted({1, tp})) if model.is_moe else (tp,)
                experts = [(ep, etp) for ep in ep_options for etp in etps
                           if (tp * cp * dp) % (ep * etp) == 0]
                for (ep, etp), zero, mb, recompute, schedule in itertools.product(
                        experts, zero_stages, micro_batches, recomputes, schedules):
                    if pp > 1 and zero >= 2 and (tp, cp, ep) != (tp, 1, 1):
                        continue  # ZeRO-2/3 with PP is rejected anyway; skip its 5D copies
                    for chunks in chunk_options if pp > 1 and schedule == "1f1b" else (1,):
                        p = evaluate(model, cluster, global_batch, dp, tp, pp, zero, mb,
                                     recompute, chunks, **cost_options, cp=cp, ep=ep,
                                     etp=etp if model.is_moe else None, schedule=schedule,
                                     stage_split=stage_split)
                        (feasible if p.feasible else infeasible).append(p)
    feasible.sort(key=lambda p: (round(p.step_time, 9), p.tp_inter_node, p.pp))
    return feasible, infeasible
