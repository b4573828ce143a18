"""The 5D planner as a widget: pick a model, a cluster, a batch and a sequence length,
allow context and expert parallelism, and watch the best plan change.

Shown in notebook 12 (``notebooks/12_auto_parallelism.ipynb``, section 6). Built on
``companion.planner.plan`` with its CP and EP axes; the search is narrowed (ZeRO-1,
micro-batches of 1 or 2 sequences, 1 or 4 interleaved chunks, Llama 3's balanced first
and last stages) so that one change redraws within a few seconds on a laptop. Each
redraw says which axes moved since the previous best, so an instructor can ask "and
with 128K tokens?" and point at the CP column.
"""
from __future__ import annotations

import dataclasses
import html

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display

from ..planner import CLUSTERS, MODELS, ModelSpec, plan, powers_of_two_dividing
from ..planner.feasibility import shown_reason
from ._base import guarded, showing
from .planner import counts_line, part_label, plans_title
from ..i18n import gettext as tr
from ..validation import one_of, positive_int

__all__ = ["autoparallel_planner", "search_5d"]

SEQUENCES = (4096, 8192, 32768, 131072)
CP_DEGREES = (1, 2, 4, 8, 16, 32)
TP_DEGREES = (1, 2, 4, 8, 16)
# Parts of the step a plan spends, in plot order (exposed communication only).
TIME_PARTS = [("compute", "compute"), ("tp_comm", "TP comm"), ("pp_comm", "PP comm"),
              ("bubble", "pipeline bubble"), ("cp_comm_exposed", "CP comm (exposed)"),
              ("ep_comm_exposed", "EP all-to-all (exposed)"),
              ("dp_comm_exposed", "DP comm (exposed)")]
AXES = ("dp", "tp", "cp", "ep", "pp")


def search_5d(model, cluster, global_batch: int, allow_cp: bool = True,
              dualpipe: bool = True):
    """The widget's search: ``planner.plan`` over DP, PP, TP up to two nodes (16) and,
    when allowed, CP (degrees 1-32); for a MoE model EP up to 64 (DeepSeek-V3's 8 nodes)
    with the experts unsplit (ETP 1), 1F1B and, when allowed, DualPipeV. Narrower than
    ``planner.plan``'s defaults so that a MoE search with CP takes seconds, not tens."""
    if not isinstance(model, ModelSpec):
        raise TypeError(f"model must be a planner.ModelSpec (e.g. planner.MODELS['Llama-3 405B']), "
                        f"got {type(model).__name__}.")
    for name, flag in (("allow_cp", allow_cp), ("dualpipe", dualpipe)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False, got {flag!r}.")
    moe = model.is_moe
    eps = [e for e in powers_of_two_dividing(model.experts) if e <= 64] if moe else None
    return plan(model, cluster, global_batch, zero_stages=(1,), micro_batches=(1, 2),
                recomputes=("selective", "full"), chunk_options=(1, 4),
                cp_options=CP_DEGREES if allow_cp else (1,), tp_options=TP_DEGREES,
                ep_options=eps, etp_options=(1,) if moe else None,
                schedules=("1f1b", "dualpipev") if moe and dualpipe else ("1f1b",),
                stage_split="llama3")


def _plan_axes(p) -> dict:
    """``{"dp", "tp", "cp", "ep", "pp"}`` degrees of a plan."""
    return {a: getattr(p, a) for a in AXES}


def _axes_changed(before, after) -> str:
    """``"CP 1 -> 16, DP 128 -> 8"``: the axes whose degree differs (empty if none)."""
    if before is None or after is None:
        return ""
    a, b = _plan_axes(before), _plan_axes(after)
    return ", ".join(f"{k.upper()} {a[k]} -> {b[k]}" for k in AXES if a[k] != b[k])


def _table(feasible, infeasible, top: int = 6) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("#", "DP", "TP", "CP", "EP (ETP)", "PP",
                                             tr("plan"), tr("step (s)"), "MFU", "tokens/GPU/s",
                                             "GB/GPU"))
    rows = "".join(
        f"<tr><td>{i + 1}</td><td>{p.dp}</td><td>{p.tp}</td><td>{p.cp}</td>"
        f"<td>{p.ep}{f' ({p.etp})' if p.ep > 1 else ''}</td><td>{p.pp}</td>"
        f"<td>{html.escape(p.label())}</td><td>{p.step_time:.2f}</td><td>{100 * p.mfu:.1f}%</td>"
        f"<td>{p.tokens_per_gpu_s:,.0f}</td><td>{p.memory['total'] / 1e9:.1f}</td></tr>"
        for i, p in enumerate(feasible[:top]))
    return f"{counts_line(feasible, infeasible)}<table><tr>{head}</tr>{rows}</table>"


def _figure(plans, title: str):
    fig, ax = plt.subplots(figsize=(12, 1.8 + 0.6 * len(plans)))
    labels = [p.label().replace(" ZeRO", "\nZeRO") for p in plans]
    left = [0.0] * len(plans)
    for key, name in TIME_PARTS:
        values = [p.times.get(key, 0.0) for p in plans]
        ax.barh(labels, values, left=left, label=part_label(name))
        left = [a + v for a, v in zip(left, values)]
    ax.invert_yaxis()
    ax.set(title=title, xlabel=tr("seconds per step"))
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=4, frameon=False)
    return fig


def autoparallel_planner(model: str = "Llama-3 405B", cluster: str = "Llama-3 scale: 16,384x H100",
                         global_batch: int = 2048, seq_len: int | None = None,
                         allow_cp: bool = False) -> widgets.VBox:
    """Widget: model, cluster, batch (sequences), sequence length and the CP/EP switches
    in; the ranked 5D plans, their step-time breakdown and what changed out."""
    one_of("model", model, MODELS)
    one_of("cluster", cluster, CLUSTERS)
    positive_int("global_batch", global_batch, "pass the global batch in sequences, e.g. 2048.")
    seq_len = MODELS[model].seq_len if seq_len is None else seq_len
    one_of("seq_len", seq_len, SEQUENCES, "the widget offers these sequence lengths.")
    if not isinstance(allow_cp, bool):
        raise TypeError(f"allow_cp must be True or False, got {allow_cp!r}.")
    model_w = widgets.Dropdown(options=list(MODELS), value=model, description=tr("model"))
    cluster_w = widgets.Dropdown(options=list(CLUSTERS), value=cluster, description=tr("cluster"),
                                 layout=widgets.Layout(width="360px"))
    batch_w = widgets.IntText(value=global_batch, description=tr("batch (seqs)"))
    seq_w = widgets.Dropdown(options=[(f"{s:,}", s) for s in SEQUENCES], value=seq_len,
                             description=tr("seq (tokens)"))
    cp_w = widgets.Checkbox(value=allow_cp, description=tr("search CP (context parallel)"))
    dual_w = widgets.Checkbox(value=True, description=tr("DualPipeV for MoE (hides EP)"))
    status = widgets.HTML()
    table = widgets.HTML()
    out = widgets.Output()
    box = widgets.VBox()
    box.best, box.previous = None, None

    @guarded(out)
    def update(_=None):
        m = dataclasses.replace(MODELS[model_w.value], seq_len=seq_w.value)
        c = CLUSTERS[cluster_w.value]
        feasible, infeasible = search_5d(m, c, batch_w.value, cp_w.value, dual_w.value)
        # compare with the last plan that fitted: "nothing fits" is not a plan to move from
        box.previous = box.best or box.previous
        box.best = feasible[0] if feasible else None
        box.last_plans = feasible
        table.value = _table(feasible, infeasible)
        moved = _axes_changed(box.previous, box.best)
        if box.best is None:
            # memory is the informative refusal; a batch that does not divide is bookkeeping
            reasons = [p.reason for p in infeasible]
            reason = next((r for r in reasons if r.startswith("out of memory")),
                          reasons[0] if reasons else tr("no configuration to try"))
            status.value = tr("<b>Nothing fits.</b> For example: {reason}").format(
                reason=html.escape(shown_reason(reason)))
        else:
            best = (tr("<b>Best:</b> {plan} (MoE, {seq:,}-token sequences). ") if m.is_moe else
                    tr("<b>Best:</b> {plan} (dense, {seq:,}-token sequences). ")).format(
                plan=html.escape(box.best.label()), seq=m.seq_len)
            status.value = best + (tr("<b>Changed:</b> {moved}.").format(moved=moved) if moved else
                                   (tr("Same axes as the last plan that fitted.")
                                    if box.previous else ""))
        with showing(out):
            if feasible:
                fig = _figure(feasible[:4], plans_title(m, c, batch_w.value, f"{m.seq_len:,}"))
                display(fig)
                plt.close(fig)
            else:
                print(tr("No configuration fits: more GPUs, a smaller batch or CP for long "
                         "sequences."))

    for w in (model_w, cluster_w, batch_w, seq_w, cp_w, dual_w):
        w.observe(update, names="value")
    box.children = [widgets.HBox([model_w, cluster_w, batch_w]), widgets.HBox([seq_w, cp_w, dual_w]),
                    status, table, out]
    box.controls = {"model": model_w, "cluster": cluster_w, "global_batch": batch_w,
                    "seq_len": seq_w, "allow_cp": cp_w, "dualpipe": dual_w}
    box.status, box.table, box.output = status, table, out
    update()
    return box
