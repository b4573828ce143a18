"""Pipeline-schedule widgets for notebook 04: pick a schedule, watch its timeline fill in.

* :func:`schedule_explorer`: stages, micro-batches, schedule (every one in
  ``SCHEDULES``, those after 1F1B included), chunks and op costs as controls; the
  simulated timeline is redrawn and a Play button animates it.
* :func:`timeline_player`: several timelines (e.g. simulated and measured on real
  ranks) animated side by side by one Play button.

Both return an ``ipywidgets.VBox`` whose controls are attributes, so a test can move a
control and check that the drawing followed.
"""
from __future__ import annotations

import ipywidgets as widgets
from IPython.display import display
import matplotlib.pyplot as plt

from ..pipeline import SCHEDULES, OpCosts, bubble_fraction, simulate
from ..pipeline.plot import draw_timeline, legend_handles
from ._base import guarded, showing
from ..pipeline.ops import check_sizes
from ..validation import one_of, positive_number
from ..i18n import gettext as tr

__all__ = ["schedule_explorer", "timeline_player"]

FRAMES = 60  # animation steps from empty to complete timeline
# Schedules whose chunks per rank the slider sets; zb-v and dualpipev always hold 2 (a V).
CHUNKED = ("interleaved", "looped-bfs", "interleaved-zb")


def _play_controls(frames: int, interval_ms: int):
    play = widgets.Play(value=frames, min=0, max=frames, step=1, interval=interval_ms,
                        description=tr("play"))
    frame = widgets.IntSlider(value=frames, min=0, max=frames, description=tr("time"),
                              readout=False, continuous_update=True)
    widgets.jslink((play, "value"), (frame, "value"))
    return play, frame


def _show(box, fig):
    """Display ``fig`` in the box's output; ``box.title``/``box.draws`` record what was drawn
    (an Output widget captures nothing outside a kernel, so tests read these)."""
    box.title = " | ".join(ax.get_title() for ax in fig.axes if ax.get_title())
    fig.tight_layout()
    box.draws = getattr(box, "draws", 0) + 1
    output = box.output
    with showing(output):
        display(fig)
    plt.close(fig)  # drawn once into the output; keep pyplot from showing it again


def schedule_explorer(stages: int = 4, microbatches: int = 4, schedule: str = "gpipe",
                      chunks: int = 1, F: float = 1.0, B: float = 1.0, W: float = 1.0,
                      send: float = 0.0, interval_ms: int = 150) -> widgets.VBox:
    """Interactive simulated timeline. Attributes: ``stages``, ``microbatches``,
    ``schedule``, ``chunks``, ``F``, ``B``, ``W``, ``send``, ``play``, ``frame``,
    ``output``, ``timeline`` (the last simulation drawn), ``title`` and ``draws``."""
    one_of("schedule", schedule, SCHEDULES)
    check_sizes(stages, microbatches, chunks)
    for name, value in (("F", F), ("B", B), ("W", W), ("send", send)):
        positive_number(name, value, f"{name} is a time; pass e.g. {name}=1.0.", zero=True)
    output = widgets.Output()
    c = dict(style={"description_width": "initial"}, continuous_update=False)
    box = widgets.VBox()
    box.stages = widgets.IntSlider(value=stages, min=1, max=8, description=tr("stages p"), **c)
    box.microbatches = widgets.IntSlider(value=microbatches, min=1, max=16,
                                         description=tr("micro-batches m"), **c)
    box.schedule = widgets.Dropdown(options=list(SCHEDULES), value=schedule, description=tr("schedule"))
    box.chunks = widgets.IntSlider(value=chunks, min=1, max=4,
                                   description=tr("chunks v (interleaved, looped-bfs, -zb)"), **c)
    box.F = widgets.FloatSlider(value=F, min=0.0, max=3.0, step=0.25, description=tr("F time"), **c)
    box.B = widgets.FloatSlider(value=B, min=0.0, max=3.0, step=0.25, description=tr("B time"), **c)
    box.W = widgets.FloatSlider(value=W, min=0.0, max=3.0, step=0.25, description=tr("W time"), **c)
    box.send = widgets.FloatSlider(value=send, min=0.0, max=1.0, step=0.05,
                                   description=tr("send latency"), **c)
    box.play, box.frame = _play_controls(FRAMES, interval_ms)
    box.output = output
    box.timeline = None

    @guarded(output)
    def resimulate(_=None):
        name = box.schedule.value
        v = box.chunks.value if name in CHUNKED else None
        costs = OpCosts(box.F.value, box.B.value, box.W.value, box.send.value)
        box.timeline = simulate(name, box.stages.value, box.microbatches.value, chunks=v,
                                costs=costs)
        redraw()

    @guarded(output)
    def redraw(_=None):
        tl = box.timeline
        if tl is None:
            return
        p, m = box.stages.value, box.microbatches.value
        until = tl.makespan * box.frame.value / FRAMES
        fig, ax = plt.subplots(figsize=(12, 1.0 + 0.55 * p))
        try:
            formula = bubble_fraction(p, m, tl.name, tl.chunks,
                                      costs=OpCosts(box.F.value, box.B.value, box.W.value))
            # one whole sentence per case, so that each reads as one in Chinese
            template = (tr("{name}, p={p}, m={m}{v}: utilisation {utilisation}, bubble {bubble} "
                           "(closed form {formula} (ignores latency)); peak activations/stage "
                           "{peaks}") if box.send.value else
                        tr("{name}, p={p}, m={m}{v}: utilisation {utilisation}, bubble {bubble} "
                           "(closed form {formula}); peak activations/stage {peaks}"))
        except ValueError:
            formula, template = None, tr("{name}, p={p}, m={m}{v}: utilisation {utilisation}, "
                                         "bubble {bubble} (no closed form here); peak "
                                         "activations/stage {peaks}")
        draw_timeline(ax, tl, until=until, title=template.format(
            name=tl.name, p=p, m=m, v=f", v={tl.chunks}" if tl.chunks > 1 else "",
            utilisation=f"{tl.utilization:.1%}", bubble=f"{tl.bubble_fraction:.1%}",
            formula=f"{formula:.1%}" if formula is not None else "",
            peaks=[round(a, 2) for a in tl.peak_activations()]))
        ax.title.set_fontsize(11)
        ax.legend(handles=legend_handles(tl.split_backward), loc="upper left",
                  bbox_to_anchor=(1.0, 1.0), fontsize=9)
        _show(box, fig)

    for control in (box.stages, box.microbatches, box.schedule, box.chunks, box.F, box.B,
                    box.W, box.send):
        control.observe(resimulate, names="value")
    box.frame.observe(redraw, names="value")
    sizes = widgets.HBox([box.stages, box.microbatches, box.schedule, box.chunks])
    costs = widgets.HBox([box.F, box.B, box.W, box.send])
    box.children = [sizes, costs, widgets.HBox([box.play, box.frame]), output]
    resimulate()
    return box


def timeline_player(timelines, titles=None, interval_ms: int = 150) -> widgets.VBox:
    """Animate several timelines together; frame k shows each up to k/FRAMES of its own
    makespan, so a simulated (time units) and a measured (ms) run line up.
    Attributes: ``play``, ``frame``, ``output``, ``timelines``, ``title``, ``draws``."""
    timelines = list(timelines)
    if not timelines:
        raise ValueError("timeline_player needs at least one timeline.")
    titles = list(titles) if titles is not None else [None] * len(timelines)
    if len(titles) != len(timelines):
        raise ValueError(f"got {len(titles)} titles for {len(timelines)} timelines; give one each.")
    output = widgets.Output()
    box = widgets.VBox()
    box.play, box.frame = _play_controls(FRAMES, interval_ms)
    box.output, box.timelines = output, timelines

    @guarded(output)
    def redraw(_=None):
        share = box.frame.value / FRAMES
        heights = [1.0 + 0.5 * tl.stages for tl in timelines]
        fig, axes = plt.subplots(len(timelines), 1, figsize=(12, sum(heights)),
                                 gridspec_kw={"height_ratios": heights}, squeeze=False)
        for ax, tl, title in zip(axes[:, 0], timelines, titles):
            draw_timeline(ax, tl, until=tl.makespan * share, title=title)
            ax.title.set_fontsize(12)
        axes[0, 0].legend(handles=legend_handles(any(t.split_backward for t in timelines)),
                          loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9)
        _show(box, fig)

    box.frame.observe(redraw, names="value")
    box.children = [widgets.HBox([box.play, box.frame]), output]
    redraw()
    return box
