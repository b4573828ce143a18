"""Judge a student's configuration with the planner's cost model, without giving the answer.

Taught in notebook 09 (exercise ``09.configuration`` and :func:`grade`). A configuration
passes when it is feasible and its estimated step time is within ``tolerance`` of the
fastest one the search finds. When it fails, :func:`critique` says what is wrong and
why, from the configuration's own breakdown (memory by part, step time by part, each
part compared with the fastest configuration's), and never names the fastest
configuration: finding it is the exercise.
"""
from __future__ import annotations

from .cluster_spec import ClusterSpec
from .cost import Plan, evaluate
from .search import plan
from .specs import ModelSpec
from ..units import fmt_bytes
from ..validation import positive_number

__all__ = ["grade", "critique"]

_TIME_NAMES = {"compute": "compute", "tp_comm": "TP comm", "pp_comm": "PP comm",
               "bubble": "pipeline bubble", "dp_comm_exposed": "DP comm not hidden"}


def _breakdown(p: Plan) -> str:
    return ", ".join(f"{name} {p.times[k]:.2f} s" for k, name in _TIME_NAMES.items()
                     if p.times.get(k))


def _memory_why(p: Plan, cluster: ClusterSpec) -> str:
    mem = p.memory
    states = mem["params"] + mem["grads"] + mem["optimizer"]
    parts = (f"weights {fmt_bytes(mem['params'])}, gradients {fmt_bytes(mem['grads'])}, "
             f"optimizer {fmt_bytes(mem['optimizer'])}, activations "
             f"{fmt_bytes(mem['activations'])}, reserve {fmt_bytes(mem['reserve'])}")
    if states >= mem["activations"]:
        why = (f"the model states ({fmt_bytes(states)}) are the largest part: they shrink with "
               f"the ZeRO stage (yours is {p.zero}) over the DP replicas, and with TP and PP, "
               "which split the layers")
    else:
        why = (f"the activations ({fmt_bytes(mem['activations'])}) are the largest part: ZeRO "
               "does not shard them; TP (with sequence parallelism) and PP divide them, and a "
               "smaller micro-batch or full recomputation keeps fewer of them")
    return f"Per GPU: {parts}. {why[0].upper()}{why[1:]}."


def _time_why(key: str, p: Plan, cluster: ClusterSpec) -> str:
    if key == "tp_comm":
        where = (f"your TP group of {p.tp} spans {p.tp // cluster.gpus_per_node} nodes: every "
                 f"all-reduce also crosses the nodes' NICs ({cluster.gpus_per_node} x "
                 f"{cluster.inter_bw_gbps:g} GB/s per node), and with only {p.dp} replicas each "
                 f"one's {p.microbatches * p.micro_batch} sequences per step each need "
                 f"{4 + (2 if p.recompute == 'full' else 0)} full activation all-reduces per "
                 "layer, on the critical path" if p.tp_inter_node else
                 f"TP={p.tp} all-reduces every layer's activations "
                 f"{4 + (2 if p.recompute == 'full' else 0)} times per micro-batch, on the "
                 "critical path, and a ring all-reduce sends 2(p-1)/p of them per GPU")
        return where
    if key == "bubble":
        return (f"PP={p.pp} with {p.microbatches} micro-batches per replica leaves the "
                f"pipeline idle {100 * p.bubble:.0f}% of the step"
                + (" even interleaved" if p.chunks > 1 else " (1F1B: (p-1)/(m+p-1))"))
    if key == "compute":
        return ("full recomputation runs every forward twice (compute x 4/3)"
                if p.recompute == "full" else "more arithmetic than needed")
    if key == "dp_comm_exposed":
        return (f"ZeRO-{p.zero} over DP={p.dp} moves {fmt_bytes(p.comm_bytes['dp'])} per GPU "
                f"per step and {p.times['dp_comm_exposed']:.2f} s of it does not hide behind "
                "the backward pass")
    return (f"stage boundaries carry {fmt_bytes(p.comm_bytes['pp_boundary'])} per step "
            "(each micro-batch's activation forward and its gradient back)")


def critique(mine: Plan, fastest: Plan, cluster: ClusterSpec,
             tolerance: float = 0.10) -> tuple[bool, str]:
    """(passed, explanation) for ``mine`` against the fastest feasible plan. The
    explanation of a failure says what is wrong and why; it does not name ``fastest``."""
    positive_number("tolerance", tolerance, "pass a slack such as 0.10 (10 %).", zero=True)
    for name, value in (("mine", mine), ("fastest", fastest)):
        if not isinstance(value, Plan):
            raise TypeError(f"{name} must be a Plan from planner.evaluate or planner.plan, "
                            f"got {type(value).__name__}.")
    if not fastest.feasible and mine.feasible:
        raise ValueError("fastest must be a feasible plan (planner.plan(...)[0][0]).")
    if not mine.feasible:
        text = f"{mine.label()} cannot run: {mine.reason}."
        if mine.reason.startswith("out of memory"):
            text += " " + _memory_why(mine, cluster)
        return False, text
    ratio = mine.step_time / fastest.step_time
    summary = (f"{mine.label()}: {mine.step_time:.2f} s per step ({_breakdown(mine)}), "
               f"{fmt_bytes(mine.memory['total'])} per GPU, MFU {100 * mine.mfu:.1f}%")
    if ratio <= 1 + tolerance:
        return True, (f"{summary}. The fastest configuration the planner found, "
                      f"{fastest.label()}, takes {fastest.step_time:.2f} s: yours is "
                      f"{ratio:.2f}x that (allowed: {1 + tolerance:.2f}x).")
    excess = sorted(((mine.times.get(k, 0.0) - fastest.times.get(k, 0.0), k)
                     for k in _TIME_NAMES), reverse=True)
    worse = [(d, k) for d, k in excess if d > 0.01 * fastest.step_time]
    lines = [f"{summary}.",
             f"  That is {ratio:.2f}x the fastest step the planner found "
             f"({fastest.step_time:.2f} s; allowed: {1 + tolerance:.2f}x). Where yours loses "
             "time against it:"]
    lines += [f"  - {_TIME_NAMES[k]} +{d:.2f} s: {_time_why(k, mine, cluster)}."
              for d, k in worse[:3]]
    return False, "\n".join(lines)


def grade(model: ModelSpec, cluster: ClusterSpec, global_batch: int, *, dp: int, tp: int,
          pp: int, zero: int = 1, micro_batch: int = 1, recompute: str = "selective",
          chunks: int = 1, tolerance: float = 0.10) -> bool:
    """Is a configuration feasible and within ``tolerance`` of the fastest step time?
    Prints why (see :func:`critique`: a failure is explained from its own breakdown and
    the fastest configuration is named only once yours passes); returns a bool."""
    positive_number("tolerance", tolerance, "pass a slack such as 0.10 (10 %).", zero=True)
    mine = evaluate(model, cluster, global_batch, dp, tp, pp, zero, micro_batch, recompute,
                    chunks)
    found = plan(model, cluster, global_batch)[0] if mine.feasible else []
    fastest = found[0] if found else mine
    passed, text = critique(mine, fastest, cluster, tolerance)
    print(("✓ " if passed else "✗ ") + text)
    return passed
