"""Plumbing shared by every widget: visible errors in callbacks."""
from __future__ import annotations

import functools
import traceback

__all__ = ["guarded", "frame_player"]


def guarded(output):
    """Decorator for a widget callback: exceptions are printed into ``output``.

    ipywidgets otherwise sends callback exceptions to the browser console (or the
    kernel log), so a broken slider looks like a slider that does nothing. A
    ``ValueError`` (bad input, e.g. a negative size) is shown as a one-line message;
    anything else with its traceback.
    """

    def wrap(callback):
        @functools.wraps(callback)
        def run(*args, **kwargs):
            try:
                return callback(*args, **kwargs)
            except ValueError as exc:
                with output:
                    output.clear_output(wait=True)
                    print(f"Invalid input: {exc}")
            except Exception:  # noqa: BLE001 - anything else must be visible too
                with output:
                    output.clear_output(wait=True)
                    print(traceback.format_exc())

        return run

    return wrap


def frame_player(n_frames: int, draw, figsize=(8, 4), description: str = "step",
                 interval_ms: int = 1200):
    """A Play button and a slider stepping through ``n_frames`` recorded frames.

    ``draw(index, ax)`` renders one frame on a fresh axes. The returned box exposes
    ``.slider``, ``.play``, ``.output`` and ``.last_title`` (the shown frame's title), so
    tests and browser tests can move it and see what changed.
    """
    import ipywidgets as W
    import matplotlib.pyplot as plt
    from IPython.display import display

    if n_frames < 1:
        raise ValueError("a player needs at least one frame; record a run first.")
    out = W.Output()
    slider = W.IntSlider(value=0, min=0, max=n_frames - 1, description=description)
    play = W.Play(value=0, min=0, max=n_frames - 1, interval=interval_ms, description="play")
    W.jslink((play, "value"), (slider, "value"))
    box = W.VBox([W.HBox([play, slider]), out])

    @guarded(out)
    def redraw(change=None):
        with out:
            out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=figsize)
            draw(slider.value, ax)
            box.last_title = ax.get_title()
            display(fig)
            plt.close(fig)

    slider.observe(redraw, names="value")
    box.slider, box.play, box.output, box.last_title = slider, play, out, ""
    redraw()
    return box
