"""Which DP x TP x PP x ZeRO configurations can run at all, before anything is costed.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``; the CP, EP and
schedule conditions in notebook 12). ``check_config`` rejects values that are no
configuration (a ValueError naming the argument); ``structural_reason`` explains why a
well-formed configuration still cannot run on this model and cluster (the planner
reports it in ``Plan.reason`` instead of raising).
"""
from __future__ import annotations

from ..validation import fraction, nonnegative_int, one_of, positive_int, positive_number

# Pieces of planner.evaluate, which runs both before it costs anything (its bad-input
# cases run check_config), so nothing here is public API.
__all__: list[str] = []


def structural_reason(model, cluster, global_batch, plan) -> str:
    """Why ``plan`` cannot run on ``model`` and ``cluster``; empty when it can."""
    dp, tp, pp, cp, ep = plan.dp, plan.tp, plan.pp, plan.cp, plan.ep
    if dp * tp * pp * cp != cluster.gpus:
        what = "DP x TP x PP" + (" x CP" if cp > 1 else "")
        return f"{what} = {dp * tp * pp * cp} but the cluster has {cluster.gpus} GPUs"
    if model.heads % tp:
        return f"TP={tp} does not divide the {model.heads} attention heads"
    if pp > model.layers:
        return f"PP={pp} stages for only {model.layers} layers"
    if model.seq_len % (2 * cp):
        return (f"CP={cp} needs the sequence ({model.seq_len}) in 2 x CP equal chunks "
                "(each rank takes one early and one late chunk, to balance causal attention)")
    if ep > 1 and not model.is_moe:
        return f"EP={ep} but {model.name} has no experts"
    if model.is_moe and (model.experts % ep or (tp * cp * dp) % (ep * plan.etp)):
        return (f"EP={ep} x ETP={plan.etp} must divide the {model.experts} experts and the "
                f"TP x CP x DP = {tp * cp * dp} ranks of a stage")
    if model.is_moe and model.expert_ffn % plan.etp:
        return f"ETP={plan.etp} does not divide the expert FFN ({model.expert_ffn})"
    if min(model.stage_layers(pp, plan.stage_split)) < 1:
        return f"the {plan.stage_split} split leaves a stage of PP={pp} without a layer"
    if global_batch % (dp * plan.micro_batch):
        return (f"global batch {global_batch} is not a multiple of DP x micro-batch = "
                f"{dp * plan.micro_batch}")
    m = global_batch // (dp * plan.micro_batch)
    if pp > 1 and m < pp:
        return (f"{m} micro-batch(es) per replica for {pp} pipeline stages: the pipeline never "
                "fills; raise the global batch or lower DP or the micro-batch size")
    if plan.chunks > 1 and (pp == 1 or m % pp or plan.chunks * pp > model.layers):
        return (f"interleaving {plan.chunks} chunks needs PP > 1, micro-batches ({m}) a multiple "
                f"of PP ({pp}) and at least {plan.chunks * pp} layers")
    if plan.schedule == "dualpipev" and (pp == 1 or plan.chunks > 1 or m < 2 * pp
                                         or 2 * pp > model.layers):
        return (f"DualPipeV needs PP > 1, no interleaving, at least 2 x PP = {2 * pp} "
                f"micro-batches (has {m}) and 2 x PP layers")
    if pp > 1 and plan.zero >= 2:
        return ("ZeRO-2/3 with pipeline parallelism would re-communicate gradients or weights "
                "for every micro-batch (DeepSpeed forbids the combination)")
    return ""


def _(message: str) -> str:
    """Marks a message for the catalog (so the translation tests see it) and returns it
    unchanged: these reasons are translated later, by :func:`shown_reason`."""
    return message


# The reasons above stay English where they are made: code compares them
# (``reason.startswith("out of memory")``), so a widget translates one only when it shows
# it. Each template reproduces one reason above byte for byte from the parts it captures.
REASON_TEMPLATES = (
    _("{what} = {n} but the cluster has {gpus} GPUs"),
    _("TP={tp} does not divide the {heads} attention heads"),
    _("PP={pp} stages for only {layers} layers"),
    _("CP={cp} needs the sequence ({seq}) in 2 x CP equal chunks (each rank takes one early and "
     "one late chunk, to balance causal attention)"),
    _("EP={ep} but {model} has no experts"),
    _("EP={ep} x ETP={etp} must divide the {experts} experts and the TP x CP x DP = {ranks} ranks "
     "of a stage"),
    _("ETP={etp} does not divide the expert FFN ({ffn})"),
    _("the {split} split leaves a stage of PP={pp} without a layer"),
    _("global batch {batch} is not a multiple of DP x micro-batch = {n}"),
    _("{m} micro-batch(es) per replica for {pp} pipeline stages: the pipeline never fills; raise "
     "the global batch or lower DP or the micro-batch size"),
    _("interleaving {chunks} chunks needs PP > 1, micro-batches ({m}) a multiple of PP ({pp}) and "
     "at least {layers} layers"),
    _("DualPipeV needs PP > 1, no interleaving, at least 2 x PP = {n} micro-batches (has {m}) and "
     "2 x PP layers"),
    _("ZeRO-2/3 with pipeline parallelism would re-communicate gradients or weights for every "
     "micro-batch (DeepSpeed forbids the combination)"),
    _("out of memory: needs {need} GB per GPU, the GPU has {has} GB"),
    _("out of memory"),
)


def _pattern(template: str):
    import re
    parts = re.split(r"\{(\w+)\}", template)
    return re.compile("".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)"
                              for i, p in enumerate(parts)) + r"\Z")


_PATTERNS = None


def shown_reason(reason: str) -> str:
    """``reason`` (a ``Plan.reason``) in the reader's language; unchanged in English, or
    when it is none of the templates."""
    from ..i18n import gettext as tr
    if not isinstance(reason, str):
        raise TypeError(f"reason must be a Plan's reason (a str), got {type(reason).__name__}")
    global _PATTERNS
    if _PATTERNS is None:
        _PATTERNS = [(t, _pattern(t)) for t in REASON_TEMPLATES]
    for template, pattern in _PATTERNS:
        found = pattern.match(reason)
        if found:
            return tr(template).format(**found.groupdict())
    return reason


def check_config(global_batch, dp, tp, pp, zero, micro_batch, recompute, chunks,
                 kernel_efficiency, reserve_gb, cp=1, ep=1, etp=1, schedule="1f1b",
                 stage_split=None, attention="fused") -> None:
    """Raise a ValueError naming the argument for a value that is no configuration."""
    # A configuration that merely cannot run (DP x TP x PP != GPUs, TP not dividing the
    # heads) is a Plan with a reason instead: the planner ranks those, it does not stop.
    for name, value in (("global_batch", global_batch), ("dp", dp), ("tp", tp), ("pp", pp),
                        ("micro_batch", micro_batch), ("chunks", chunks), ("cp", cp),
                        ("ep", ep), ("etp", etp)):
        positive_int(name, value, f"pass a whole number >= 1 for {name}.")
    nonnegative_int("zero", zero, "pass a ZeRO stage: 0, 1, 2 or 3.")
    one_of("zero", zero, (0, 1, 2, 3), "pass a ZeRO stage: 0, 1, 2 or 3.")
    one_of("recompute", recompute, ("none", "selective", "full"))
    one_of("schedule", schedule, ("1f1b", "dualpipev"))
    one_of("stage_split", stage_split, (None, "llama3"))
    one_of("attention", attention, ("fused", "materialized"))
    fraction("kernel_efficiency", kernel_efficiency, "pass the share of peak FLOP/s, e.g. 0.6.")
    positive_number("reserve_gb", reserve_gb, "pass the GB kept free per GPU, e.g. 2.0.",
                    zero=True)
