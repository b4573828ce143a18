"""Drawing recorded step timelines, one row per rank: compute, waiting, and each
collective on the link split into hidden and exposed time.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``, section 6). The
timelines are those of :func:`companion.overlap.step_timeline`, as
:func:`companion.overlap.measure_overlap` returns one per rank.

**Whose exposure counts.** Each rank's ``exposed_s`` is the link time during which *it*
waited. With 4 ranks sharing 2 cores, a rank that got more CPU finishes its backward
early and then waits for the slowest rank to join the collective: that wait is load
imbalance, not communication, yet the emulated link is busy (the real collective is
running) while it lasts. The step cannot end before the slowest rank has computed, so
what communication added to the step is what it lasted beyond that:
:func:`slowest_rank_exposed`.
"""
from __future__ import annotations

from .timeline import merge_spans
from ..i18n import gettext as tr

__all__ = ["draw_overlap", "slowest_rank_exposed"]

COLORS = {"compute": "#0072B2", "wait": "#BBBBBB", "hidden": "#009E73",
          "exposed": "#D55E00"}  # Okabe-Ito, as companion.plotting


def _check(timelines):
    timelines = list(timelines) if timelines is not None else []
    if not timelines or not all(isinstance(t, dict) and {"step_s", "compute_s", "compute",
                                                         "waits", "comm"} <= set(t)
                                for t in timelines):
        raise ValueError("timelines must be step_timeline dicts, one per rank (the "
                         "'timeline' of each rank's measure_overlap row), at least one.")
    return timelines


def slowest_rank_exposed(timelines) -> float:
    """Seconds by which the step outlasted the slowest rank's compute: the communication
    no rank's compute hid (module docstring). ``timelines``: one per rank, same step."""
    timelines = _check(timelines)
    return max(0.0, max(t["step_s"] for t in timelines)
               - max(t["compute_s"] for t in timelines))


def _minus(span, others):
    """``span`` with the (sorted, disjoint) ``others`` cut out, as a list of spans."""
    a, b = span
    out = []
    for c, d in others:
        if d <= a or c >= b:
            continue
        if c > a:
            out.append((a, c))
        a = max(a, d)
    if b > a:
        out.append((a, b))
    return out


def _bars(spans):
    return [(a * 1e3, (b - a) * 1e3) for a, b in spans if b > a]


def draw_overlap(ax, timelines, title: str | None = None):
    """Draw one step per rank on ``ax`` (times in ms). Per rank, the upper bar is the
    main thread (computing, or waiting for a collective), the lower one the link: each
    collective's span, green where it ran under compute (hidden), red where the rank
    waited for it (exposed). Returns ``ax``."""
    timelines = _check(timelines)
    from matplotlib.patches import Patch

    for row, tl in enumerate(timelines):
        ax.broken_barh(_bars(tl["compute"]), (row - 0.42, 0.38), color=COLORS["compute"])
        ax.broken_barh(_bars(tl["waits"]), (row - 0.42, 0.38), color=COLORS["wait"])
        waits = merge_spans(tl["waits"])
        hidden, exposed = [], []
        for c in tl["comm"]:
            span = (c["start"], c["end"])
            exposed += [(max(span[0], a), min(span[1], b)) for a, b in waits]
            hidden += _minus(span, waits)
        # One collection per colour and rank, each collective still its own outlined bar:
        # a collection per collective made a figure of FSDP's steps take seconds to draw.
        for spans, color in ((hidden, COLORS["hidden"]), (exposed, COLORS["exposed"])):
            ax.broken_barh(_bars(spans), (row + 0.04, 0.38), color=color,
                           edgecolor="white", linewidth=0.5)
    ax.set_yticks(range(len(timelines)))
    ax.set_yticklabels([f"rank {tl.get('rank', i)}" for i, tl in enumerate(timelines)])
    ax.set_ylim(len(timelines) + 0.5, -0.5)  # a free row at the bottom for the legend
    ax.set_xlabel(tr("time in the step (ms)"))
    ax.legend(handles=[Patch(color=COLORS[k], label=label) for k, label in (
        ("compute", tr("computing")), ("wait", tr("waiting")), ("hidden", tr("link: hidden")),
        ("exposed", tr("link: exposed")))], fontsize=8, loc="lower center", ncol=4)
    if title is None:
        title = tr("exposed beyond the slowest rank's compute: {ms} ms").format(
            ms=f"{slowest_rank_exposed(timelines) * 1e3:.1f}")
    ax.set_title(title, fontsize=11)
    return ax
