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
from .feasibility import shown_reason
from ..i18n import gettext as tr
from ..units import fmt_bytes
from ..validation import positive_number

__all__ = ["grade", "critique"]

_TIME_NAMES = {"compute": "compute", "tp_comm": "TP comm", "pp_comm": "PP comm",
               "bubble": "pipeline bubble", "dp_comm_exposed": "DP comm not hidden"}


def _time_name(key: str) -> str:
    """``_TIME_NAMES[key]`` in the reader's language (the English names stay the keys'
    labels everywhere else)."""
    return {"compute": tr("compute"), "tp_comm": tr("TP comm"), "pp_comm": tr("PP comm"),
            "bubble": tr("pipeline bubble"),
            "dp_comm_exposed": tr("DP comm not hidden")}[key]


def _breakdown(p: Plan) -> str:
    return ", ".join(f"{_time_name(k)} {p.times[k]:.2f} s" for k in _TIME_NAMES
                     if p.times.get(k))


def _memory_why(p: Plan, cluster: ClusterSpec) -> str:
    mem = p.memory
    states = mem["params"] + mem["grads"] + mem["optimizer"]
    parts = tr("weights {params}, gradients {grads}, optimizer {optimizer}, activations "
               "{activations}, reserve {reserve}").format(
        params=fmt_bytes(mem["params"]), grads=fmt_bytes(mem["grads"]),
        optimizer=fmt_bytes(mem["optimizer"]), activations=fmt_bytes(mem["activations"]),
        reserve=fmt_bytes(mem["reserve"]))
    if states >= mem["activations"]:
        why = tr("the model states ({states}) are the largest part: they shrink with the ZeRO "
                 "stage (yours is {zero}) over the DP replicas, and with TP and PP, which split "
                 "the layers").format(states=fmt_bytes(states), zero=p.zero)
    else:
        why = tr("the activations ({activations}) are the largest part: ZeRO does not shard "
                 "them; TP (with sequence parallelism) and PP divide them, and a smaller "
                 "micro-batch or full recomputation keeps fewer of them").format(
            activations=fmt_bytes(mem["activations"]))
    return tr("Per GPU: {parts}. {why}.").format(parts=parts, why=why[0].upper() + why[1:])


def _time_why(key: str, p: Plan, cluster: ClusterSpec) -> str:
    if key == "tp_comm":
        count = 4 + (2 if p.recompute == "full" else 0)
        if p.tp_inter_node:
            return tr("your TP group of {tp} spans {nodes} nodes: every all-reduce also crosses "
                      "the nodes' NICs ({gpus} x {bw} GB/s per node), and with only {dp} "
                      "replicas each one's {seqs} sequences per step each need {count} full "
                      "activation all-reduces per layer, on the critical path").format(
                tp=p.tp, nodes=p.tp // cluster.gpus_per_node, gpus=cluster.gpus_per_node,
                bw=f"{cluster.inter_bw_gbps:g}", dp=p.dp, seqs=p.microbatches * p.micro_batch,
                count=count)
        return tr("TP={tp} all-reduces every layer's activations {count} times per micro-batch, "
                  "on the critical path, and a ring all-reduce sends 2(p-1)/p of them per "
                  "GPU").format(tp=p.tp, count=count)
    if key == "bubble":
        return (tr("PP={pp} with {m} micro-batches per replica leaves the pipeline idle "
                   "{idle}% of the step even interleaved") if p.chunks > 1 else
                tr("PP={pp} with {m} micro-batches per replica leaves the pipeline idle "
                   "{idle}% of the step (1F1B: (p-1)/(m+p-1))")).format(
            pp=p.pp, m=p.microbatches, idle=f"{100 * p.bubble:.0f}")
    if key == "compute":
        return (tr("full recomputation runs every forward twice (compute x 4/3)")
                if p.recompute == "full" else tr("more arithmetic than needed"))
    if key == "dp_comm_exposed":
        return tr("ZeRO-{zero} over DP={dp} moves {moved} per GPU per step and {exposed} s of "
                  "it does not hide behind the backward pass").format(
            zero=p.zero, dp=p.dp, moved=fmt_bytes(p.comm_bytes["dp"]),
            exposed=f"{p.times['dp_comm_exposed']:.2f}")
    return tr("stage boundaries carry {carried} per step (each micro-batch's activation "
              "forward and its gradient back)").format(
        carried=fmt_bytes(p.comm_bytes["pp_boundary"]))


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
        text = tr("{plan} cannot run: {reason}.").format(plan=mine.label(),
                                                         reason=shown_reason(mine.reason))
        if mine.reason.startswith("out of memory"):
            text = tr("{text} {why}").format(text=text, why=_memory_why(mine, cluster))
        return False, text
    ratio = mine.step_time / fastest.step_time
    summary = tr("{plan}: {step} s per step ({breakdown}), {memory} per GPU, MFU {mfu}%").format(
        plan=mine.label(), step=f"{mine.step_time:.2f}", breakdown=_breakdown(mine),
        memory=fmt_bytes(mine.memory["total"]), mfu=f"{100 * mine.mfu:.1f}")
    if ratio <= 1 + tolerance:
        return True, tr("{summary}. The fastest configuration the planner found, {fastest}, "
                        "takes {step} s: yours is {ratio}x that (allowed: {allowed}x).").format(
            summary=summary, fastest=fastest.label(), step=f"{fastest.step_time:.2f}",
            ratio=f"{ratio:.2f}", allowed=f"{1 + tolerance:.2f}")
    excess = sorted(((mine.times.get(k, 0.0) - fastest.times.get(k, 0.0), k)
                     for k in _TIME_NAMES), reverse=True)
    worse = [(d, k) for d, k in excess if d > 0.01 * fastest.step_time]
    lines = [tr("{summary}.").format(summary=summary),
             "  " + tr("That is {ratio}x the fastest step the planner found ({step} s; allowed: "
                       "{allowed}x). Where yours loses time against it:").format(
                 ratio=f"{ratio:.2f}", step=f"{fastest.step_time:.2f}",
                 allowed=f"{1 + tolerance:.2f}")]
    lines += ["  - " + tr("{name} +{d} s: {why}.").format(name=_time_name(k), d=f"{d:.2f}",
                                                          why=_time_why(k, mine, cluster))
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
