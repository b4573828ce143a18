"""Timelines of synchronous SGD, FedAvg and DGA: drawing, animation and an explorer widget.

Used by notebook 08 (``notebooks/08_delayed_gradient_averaging.ipynb``). The drawing
functions take either a recorded timeline (what :func:`companion.dga.runs.train` returns
with ``timeline=True``) or the closed-form schedule of
:func:`companion.dga.model.modeled_step_times`, so theory and measurement look alike.
"""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt

from ..dga.model import modeled_step_times
from ..plotting import OKABE_ITO
from ._base import guarded, showing
from ..backends import validate_launch
from ..validation import positive_int, positive_number
from ..i18n import gettext as tr

__all__ = ["dga_explorer"]

COMPUTE, WAIT, MESSAGE = OKABE_ITO[0], OKABE_ITO[3], OKABE_ITO[2]


def draw_recorded(ax, ranks: list[dict], until: float | None = None, title: str = "") -> None:
    """Gantt chart of recorded per-rank timelines (times in ms), clipped at ``until`` (s).

    Each rank's lane shows compute (blue) and waiting (vermillion); above it, every
    message in flight is a green line from its send to its arrival, ending in a dot
    where the rank consumed it.
    """
    from matplotlib.collections import LineCollection

    until = max(r["end"] for r in ranks) if until is None else until
    n = len(ranks)
    for lane, res in enumerate(ranks):
        y = n - 1 - lane
        for key, color in (("compute", COMPUTE), ("wait", WAIT)):
            spans = [(1e3 * s[key][0], 1e3 * (min(s[key][1], until) - s[key][0]))
                     for s in res["steps"] if min(s[key][1], until) > s[key][0]]
            ax.broken_barh(spans, (y - 0.225, 0.45), color=color)
        msgs = res["messages"]
        slots = max(1, max_in_flight(msgs))
        segments, dots = [], []
        for k, m in enumerate(msgs):
            a, b = m["submitted_at"], min(m["ready_at"], until)
            if b <= a:
                continue
            yy = y + 0.28 + 0.42 * (k % slots) / slots
            segments.append([(1e3 * a, yy), (1e3 * b, yy)])
            if m["consumed_at"] <= until:
                dots.append((1e3 * m["consumed_at"], yy))
        ax.add_collection(LineCollection(segments, colors=MESSAGE, linewidths=1.6))
        if dots:
            ax.plot(*zip(*dots), "o", color=MESSAGE, ms=3)
    ax.set_yticks(range(n), [f"rank {n - 1 - i}" for i in range(n)])
    ax.set_xlim(0, 1e3 * max(r["end"] for r in ranks))
    ax.set_ylim(-0.5, n - 0.2)
    ax.set_xlabel(tr("time since start (ms)"))
    ax.grid(axis="y", visible=False)
    if title:
        ax.set_title(title)


def max_in_flight(msgs) -> int:
    """The most messages in flight at once (submitted, not yet delivered) in one rank's
    recorded ``messages``."""
    events = sorted([(m["submitted_at"], 1) for m in msgs] + [(m["ready_at"], -1) for m in msgs])
    depth = best = 0
    for _, change in events:
        depth += change
        best = max(best, depth)
    return best


def legend_handles():
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    return [Patch(color=COMPUTE, label=tr("compute")), Patch(color=WAIT, label=tr("waiting")),
            Line2D([], [], color=MESSAGE, marker="o", ms=3, label=tr("message in flight"))]


def animate_recorded(ranks: list[dict], frames: int = 30, title: str = ""):
    """A ``FuncAnimation`` that replays a recorded timeline; show it with ``.to_jshtml()``."""
    from matplotlib.animation import FuncAnimation

    end = max(r["end"] for r in ranks)
    fig, ax = plt.subplots(figsize=(11, 3.6), dpi=72)

    def frame(k):
        ax.clear()
        now = end * (k + 1) / frames
        draw_recorded(ax, ranks, until=now, title=title)
        ax.axvline(1e3 * now, color="k", lw=1)
        ax.legend(handles=legend_handles(), loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=10)

    anim = FuncAnimation(fig, frame, frames=frames, interval=150)
    plt.close(fig)
    return anim


def draw_modeled(ax, rows: dict[str, list]) -> None:
    """Gantt chart of closed-form schedules, one row per algorithm (times in ms)."""
    names = list(rows)
    for lane, name in enumerate(names):
        y = len(names) - 1 - lane
        for c0, c1, u in rows[name]:  # white edges mark the step boundaries
            ax.barh(y, c1 - c0, left=c0, height=0.5, color=COMPUTE, edgecolor="white", lw=0.8)
            if u > c1:
                ax.barh(y, u - c1, left=c1, height=0.5, color=WAIT, edgecolor="white", lw=0.8)
    ax.set_yticks(range(len(names)), names[::-1])
    ax.set_xlabel(tr("time (ms)"))
    ax.legend(handles=legend_handles()[:2], loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(axis="y", visible=False)


def dga_explorer(compute_ms: float = 10.0, steps: int = 30, world_size: int = 4):
    """Sliders for latency, D and K over the modeled schedules of sync SGD, FedAvg and
    DGA; a button measures sync SGD and DGA at those settings on real ranks.

    Controls are attributes: ``latency``, ``delay``, ``local_steps``, ``measure``;
    ``text`` and ``measured_text`` hold the last summaries shown.
    """
    positive_number("compute_ms", compute_ms, "pass the compute time per step, e.g. 10.")
    positive_int("steps", steps, "pass the steps to draw, e.g. 30.")
    validate_launch(world_size, 120.0, "auto")  # the measure button launches ranks
    latency = widgets.FloatSlider(value=50, min=0, max=200, step=5, description=tr("latency (ms)"),
                                  style={"description_width": "initial"}, continuous_update=False)
    delay = widgets.IntSlider(value=5, min=0, max=20, description=tr("DGA delay D"),
                              style={"description_width": "initial"}, continuous_update=False)
    local = widgets.IntSlider(value=10, min=1, max=20, description=tr("FedAvg K"),
                              style={"description_width": "initial"}, continuous_update=False)
    measure = widgets.Button(description=tr("measure on {n} real ranks").format(n=world_size))
    output, measured = widgets.Output(), widgets.Output()
    box = widgets.VBox([widgets.HBox([latency, delay, local]), output, measure, measured])
    box.latency, box.delay, box.local_steps, box.measure = latency, delay, local, measure
    box.output, box.measured, box.text, box.measured_text = output, measured, "", ""

    def modeled():
        lat, d, k = latency.value, delay.value, local.value
        if lat < 0 or d < 0 or k < 1:
            raise ValueError("latency must be >= 0 ms, D >= 0 and K >= 1.")
        return {tr("sync SGD"): modeled_step_times("sync", steps, compute_ms, lat),
                f"FedAvg K={k}": modeled_step_times("fedavg", steps, compute_ms, lat,
                                                    local_steps=k),
                f"DGA D={d}": modeled_step_times("dga", steps, compute_ms, lat, delay=d)}

    @guarded(output)
    def redraw(_=None):
        rows = modeled()
        per_step = {name: r[-1][2] / steps for name, r in rows.items()}
        base = per_step[tr("sync SGD")]
        box.text = "   ".join(f"{name}: {t:.1f} ms/step ({base / t:.1f}x)"
                               for name, t in per_step.items())
        with showing(output):
            fig, ax = plt.subplots(figsize=(10, 2.8))
            draw_modeled(ax, rows)
            ax.set_title(tr("modeled, {compute} ms compute per step, {latency} ms latency").format(
                compute=f"{compute_ms:g}", latency=f"{latency.value:g}"))
            ax.set_xlim(0, min(max(r[-1][2] for r in rows.values()), 60 * compute_ms))
            plt.show()
            print(box.text)

    @guarded(measured)
    def run_real(_=None):
        from ..data import load_digits
        from ..dga.runs import sweep
        from ..launcher import launch
        with showing(measured):
            print(tr("running ..."))
        runs = [dict(algorithm=a, delay=delay.value, alpha_ms=latency.value, steps=steps,
                     compute_ms=compute_ms) for a in ("sync", "dga")]
        res = launch(sweep, runs=runs, data=load_digits(), world_size=world_size, timeout=120)
        model = modeled()
        sync_t, dga_t = (1e3 * res[0][i]["seconds_per_step"] for i in range(2))
        box.measured_text = tr(
            "measured: sync SGD {sync:.1f} ms/step (model {sync_model:.1f}), DGA D={d} "
            "{dga:.1f} ms/step (model {dga_model:.1f}): {speedup:.1f}x faster").format(
            sync=sync_t, sync_model=model[tr("sync SGD")][-1][2] / steps, d=delay.value, dga=dga_t,
            dga_model=model[f"DGA D={delay.value}"][-1][2] / steps, speedup=sync_t / dga_t)
        with showing(measured):
            print(box.measured_text)

    for control in (latency, delay, local):
        control.observe(redraw, names="value")
    measure.on_click(run_real)
    redraw()
    return box
