"""The planner as a widget: pick a model, a cluster and a batch; see the ranking.

Shown in notebook 09. Everything is recomputed on every change (a search takes well
under a second), so an instructor can ask "and with twice the batch?" live.
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display

from ..planner import CLUSTERS, MODELS, plan
from ..planner.feasibility import shown_reason
from ._base import guarded, showing
from ..validation import one_of, positive_int
from ..i18n import gettext as tr

__all__ = ["planner", "plan_breakdown_figure", "ranking_html"]

TIME_PARTS = [("compute", "compute"), ("tp_comm", "TP comm"), ("pp_comm", "PP comm"),
              ("bubble", "pipeline bubble"), ("dp_comm_exposed", "DP comm (exposed)")]
MEMORY_PARTS = [("params", "weights"), ("grads", "gradients"), ("optimizer", "optimizer"),
                ("activations", "activations"), ("reserve", "runtime reserve")]


def part_label(name: str) -> str:
    """A bar's legend entry in the reader's language (the tables above stay English keys)."""
    return {"compute": tr("compute"), "TP comm": tr("TP comm"), "PP comm": tr("PP comm"),
            "pipeline bubble": tr("pipeline bubble"), "DP comm (exposed)": tr("DP comm (exposed)"),
            "CP comm (exposed)": tr("CP comm (exposed)"),
            "EP all-to-all (exposed)": tr("EP all-to-all (exposed)"), "weights": tr("weights"),
            "gradients": tr("gradients"), "optimizer": tr("optimizer"),
            "activations": tr("activations"), "runtime reserve": tr("runtime reserve")}.get(name, name)


def counts_line(feasible, infeasible) -> str:
    return tr("<b>{feasible} feasible</b>, {rejected} rejected.").format(
        feasible=len(feasible), rejected=len(infeasible))


def plans_title(model, cluster, batch: int, seq_len) -> str:
    return tr("{model} on {cluster}, batch {batch} x {seq} tokens").format(
        model=model.name, cluster=cluster.name, batch=batch, seq=seq_len)


def ranking_html(feasible, infeasible, top: int = 8) -> str:
    """A ranked table of the best configurations and a count of rejections by reason."""
    rows = "".join(
        f"<tr><td>{i + 1}</td><td>{html.escape(p.label())}</td><td>{p.step_time:.2f}</td>"
        f"<td>{100 * p.mfu:.1f}%</td><td>{p.memory['total'] / 1e9:.1f}</td>"
        f"<td>{100 * p.bubble:.0f}%</td></tr>" for i, p in enumerate(feasible[:top]))
    reasons: dict[str, int] = {}
    for p in infeasible:
        key = p.reason.split(":")[0] if p.reason.startswith("out of memory") else p.reason
        key = shown_reason(key)
        key = key if len(key) < 90 else key[:87] + "..."
        reasons[key] = reasons.get(key, 0) + 1
    rejected = "".join(f"<li>{n} &times; {html.escape(r)}</li>"
                       for r, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:6])
    head = "".join(f"<th>{h}</th>" for h in ("#", tr("configuration"), tr("step (s)"), "MFU",
                                             "GB/GPU", tr("bubble")))
    return (f"{counts_line(feasible, infeasible)}<table><tr>{head}</tr>{rows}</table>"
            f"<details><summary>{tr('why configurations were rejected')}</summary>"
            f"<ul>{rejected}</ul></details>")


def plan_breakdown_figure(plans, gpu_memory_gb: float, title: str = ""):
    """Stacked bars: step time by part, and memory per GPU by part, for each plan."""
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(12, 2.2 + 0.8 * len(plans)))
    labels = [p.label().replace(" ZeRO", "\nZeRO") for p in plans]
    for ax, parts, scale, unit in ((ax_t, TIME_PARTS, 1.0, "s"), (ax_m, MEMORY_PARTS, 1e9, "GB")):
        bottom = [0.0] * len(plans)
        source = "times" if unit == "s" else "memory"
        for key, name in parts:
            values = [getattr(p, source).get(key, 0.0) / scale for p in plans]
            ax.barh(labels, values, left=bottom, label=part_label(name))
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.invert_yaxis()
        ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3,
                  frameon=False)
    ax_m.axvline(gpu_memory_gb, color="black", ls="--", label=tr("{gb} GB GPU").format(gb=f"{gpu_memory_gb:g}"))
    ax_m.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3,
                frameon=False)
    ax_t.set(title=tr("Step time by part"), xlabel=tr("seconds per step"))
    ax_m.set(title=tr("Memory per GPU by part"), xlabel=tr("GB (1e9 bytes)"))
    ax_m.set_yticklabels([])
    if title:
        fig.suptitle(title)
    return fig


def planner(model: str = "Llama-3 70B", cluster: str = "16 nodes, 128x H100",
            global_batch: int = 512) -> widgets.VBox:
    """Widget: model, cluster and global batch in; ranked plans and breakdowns out."""
    one_of("model", model, MODELS)
    one_of("cluster", cluster, CLUSTERS)
    positive_int("global_batch", global_batch, "pass the global batch in sequences, e.g. 512.")
    model_w = widgets.Dropdown(options=list(MODELS), value=model, description=tr("model"))
    cluster_w = widgets.Dropdown(options=list(CLUSTERS), value=cluster, description=tr("cluster"),
                                 layout=widgets.Layout(width="360px"))
    batch_w = widgets.IntText(value=global_batch, description=tr("batch (seqs)"))
    table = widgets.HTML()
    out = widgets.Output()

    @guarded(out)
    def update(_=None):
        m, c = MODELS[model_w.value], CLUSTERS[cluster_w.value]
        feasible, infeasible = plan(m, c, batch_w.value)
        table.value = ranking_html(feasible, infeasible)
        with showing(out):
            if feasible:
                fig = plan_breakdown_figure(feasible[:5], c.gpu_memory_gb,
                                            plans_title(m, c, batch_w.value, m.seq_len))
                display(fig)
                plt.close(fig)
            else:
                print(tr("No configuration fits: more GPUs, a smaller batch or more GPU memory."))
        box.last_plans = feasible

    for w in (model_w, cluster_w, batch_w):
        w.observe(update, names="value")
    box = widgets.VBox([widgets.HBox([model_w, cluster_w, batch_w]), table, out])
    box.controls = {"model": model_w, "cluster": cluster_w, "global_batch": batch_w}
    box.table, box.output = table, out
    update()
    return box
