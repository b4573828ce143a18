"""Drawing pipeline timelines: stages x time, coloured by micro-batch, idle time shaded.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``); the widgets in
``companion.widgets.pipeline`` animate these drawings by moving ``until``.
Simulated and measured timelines are the same :class:`Timeline` type, so one function
draws both.
"""
from __future__ import annotations

from matplotlib.patches import Patch

from ..i18n import gettext as tr
from ..plotting import OKABE_ITO
from .ops import Schedule
from .simulate import Timeline

__all__ = ["draw_timeline", "draw_placement", "legend_handles", "KIND_STYLE", "microbatch_color"]

# F solid, B hatched, W dotted: distinguishable without colour, as in the papers' figures
KIND_STYLE = {"F": {"hatch": None, "alpha": 1.0},
              "B": {"hatch": "///", "alpha": 0.75},
              "W": {"hatch": "...", "alpha": 0.45}}
IDLE_COLOR = "#d9d9d9"


def microbatch_color(mb: int) -> str:
    """The colour of micro-batch ``mb`` (cycles through the colour-blind-safe palette,
    skipping black, which would hide the labels)."""
    palette = OKABE_ITO[:7]
    return palette[mb % len(palette)]


def draw_timeline(ax, timeline: Timeline, until: float | None = None, title: str | None = None,
                  label_ops: bool = True, xmax: float | None = None) -> None:
    """Draw ``timeline`` on ``ax`` up to time ``until`` (all of it when None).

    Rows are stages (stage 0 at the top); grey is idle time so far; each op is a box in
    its micro-batch's colour, F solid, B hatched, W dotted, labelled ``F3`` etc. (with
    ``.c`` for model chunk c under interleaving).
    """
    t0, span = timeline.start, timeline.makespan
    end = t0 + span if until is None else min(t0 + span, t0 + max(until, 0.0))
    for s in range(timeline.stages):
        if end > t0:
            ax.barh(s, end - t0, left=0, height=0.8, color=IDLE_COLOR, edgecolor="none")
    for e in timeline.events:
        if e.start >= end:
            continue
        right = min(e.end, end)
        style = KIND_STYLE[e.op.kind]
        ax.barh(e.stage, right - e.start, left=e.start - t0, height=0.8,
                color=microbatch_color(e.op.microbatch), alpha=style["alpha"],
                hatch=style["hatch"], edgecolor="black", linewidth=0.6)
        if label_ops and (right - e.start) > 0.5 * (e.end - e.start) and span > 0:
            width_share = (e.end - e.start) / span
            text = f"{e.op.kind}{e.op.microbatch}" + (f".{e.op.chunk}" if timeline.chunks > 1 else "")
            # A label wider than its box would run into the next one's: leave it out.
            if width_share > max(0.018, 0.0065 * len(text)):
                ax.text((e.start + right) / 2 - t0, e.stage, text, ha="center", va="center",
                        fontsize=8 if width_share < 0.03 else 10, color="black")
    ax.set_ylim(timeline.stages - 0.5, -0.5)
    ax.set_xlim(0, xmax if xmax is not None else span * 1.01)
    ax.set_yticks(range(timeline.stages))
    ax.set_yticklabels([tr("stage {s}").format(s=s) for s in range(timeline.stages)])
    ax.set_xlabel(tr("time ({unit})").format(unit=timeline.unit))
    ax.grid(False)
    if title is None:
        title = tr("{name}: utilisation {utilisation}, bubble {bubble}").format(
            name=timeline.name, utilisation=f"{timeline.utilization:.1%}",
            bubble=f"{timeline.bubble_fraction:.1%}")
    ax.set_title(title)


def legend_handles(split_backward: bool = True) -> list:
    """Legend entries for the op kinds and idle time."""
    names = {"F": tr("F: forward"), "B": tr("B: backward") + (
        tr(" (input grad when W is split off)") if split_backward else ""),
             "W": tr("W: weight grad")}
    kinds = "FBW" if split_backward else "FB"
    handles = [Patch(facecolor="white", edgecolor="black", hatch=KIND_STYLE[k]["hatch"],
                     label=names[k]) for k in kinds]
    return handles + [Patch(facecolor=IDLE_COLOR, label=tr("idle (bubble)"))]


def draw_placement(ax, schedule: Schedule, title: str | None = None) -> None:
    """Where ``schedule``'s model chunks sit: one row per rank, the model's virtual stages
    from the input (left) to the loss (right), and the path one micro-batch's forward
    takes through them. Notebook 04 section 8 draws Megatron's loop beside the V."""
    if not isinstance(schedule, Schedule):
        raise ValueError(f"schedule: pass a pipeline Schedule, e.g. companion.pipeline.make_schedule('zb-v', 4, 8),"
                         f" not {type(schedule).__name__}")
    path = [schedule.placement(vs) for vs in range(schedule.virtual_stages)]
    ax.plot(range(len(path)), [stage for stage, _ in path], color="black", lw=1, zorder=1)
    for vs, (stage, chunk) in enumerate(path):
        ax.scatter(vs, stage, s=500, marker="s", color=microbatch_color(chunk), edgecolor="black",
                   zorder=2)
        ax.text(vs, stage, f"{vs}", ha="center", va="center", fontsize=10, zorder=3)
    ax.set_ylim(schedule.stages - 0.5, -0.5)
    ax.set_xlim(-0.6, len(path) - 0.4)
    ax.set_yticks(range(schedule.stages))
    ax.set_yticklabels([tr("rank {s}").format(s=s) for s in range(schedule.stages)])
    ax.set_xticks([0, len(path) - 1])
    ax.set_xticklabels([tr("input"), tr("loss")])
    ax.grid(False)
    ax.set_title(title if title is not None else tr("{name}: layout {layout}, colour = chunk").format(
        name=schedule.name, layout=schedule.layout))
