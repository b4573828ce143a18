"""Plumbing shared by every widget: visible errors in callbacks, and drawing into an
Output widget in a way that cannot hang Voila."""
from __future__ import annotations

import base64
import contextlib
import functools
import sys
import traceback

__all__ = ["guarded", "showing", "frame_player"]


class _Recorder:
    """What a block printed and displayed, in order, as notebook-format outputs."""

    def __init__(self):
        self.outputs = []

    def stream(self, name, text):
        last = self.outputs[-1] if self.outputs else {}
        if last.get("output_type") == "stream" and last["name"] == name:
            last["text"] += text
        elif text:
            self.outputs.append({"output_type": "stream", "name": name, "text": text})

    def display(self, data, metadata=None):
        # The notebook format (and the Output widget's state) wants base64 text for
        # images; bytes would be split off as a binary buffer the frontend cannot show.
        data = {k: base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v
                for k, v in data.items()}
        self.outputs.append({"output_type": "display_data", "data": data,
                             "metadata": metadata or {}})


class _Stream:
    """sys.stdout/sys.stderr stand-in feeding a _Recorder (and, outside a kernel, the
    original stream too, where a script or test would otherwise lose the text)."""

    def __init__(self, recorder, name, original, echo):
        self._recorder, self._name, self._original, self._echo = recorder, name, original, echo

    def write(self, text):
        self._recorder.stream(self._name, text)
        if self._echo:
            self._original.write(text)
        return len(text)

    def flush(self):
        if self._echo:
            self._original.flush()

    def isatty(self):
        return False

    def __getattr__(self, name):
        return getattr(self._original, name)


@contextlib.contextmanager
def showing(output):
    """Replace what ``output`` shows with what the block prints and displays.

    Use this instead of ``with output: output.clear_output(wait=True)``. That idiom asks
    the frontend to capture the cell's messages (the Output widget's ``msg_id``), and
    Voila's executor, nbclient, answers every captured message with a ``comm_msg`` sent
    synchronously on its asyncio shell socket. That raw send drains the socket's
    edge-triggered wake-up, so an ``execute_reply`` that arrived just before is never
    read: the page stops at "Executing N of M" with an idle kernel (issue #10). Here the
    kernel records the outputs itself and sets ``output.outputs``, a plain state update
    that nobody answers.
    """
    from IPython import get_ipython
    from IPython.core.displaypub import DisplayPublisher

    recorder, shell = _Recorder(), get_ipython()
    echo = getattr(shell, "kernel", None) is None
    saved = sys.stdout, sys.stderr, getattr(shell, "display_pub", None)

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, *args, **kwargs):
            recorder.display(data, metadata)

        def clear_output(self, wait=False):
            recorder.outputs.clear()

    sys.stdout = _Stream(recorder, "stdout", saved[0], echo)
    sys.stderr = _Stream(recorder, "stderr", saved[1], echo)
    if shell is not None:
        shell.display_pub = Publisher(shell=shell)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved[:2]
        if shell is not None:
            shell.display_pub = saved[2]
        output.outputs = tuple(recorder.outputs)


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
                with showing(output):
                    print(f"Invalid input: {exc}")
            except Exception:  # noqa: BLE001 - anything else must be visible too
                with showing(output):
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
        with showing(out):
            fig, ax = plt.subplots(figsize=figsize)
            draw(slider.value, ax)
            box.last_title = ax.get_title()
            display(fig)
            plt.close(fig)

    slider.observe(redraw, names="value")
    box.slider, box.play, box.output, box.last_title = slider, play, out, ""
    redraw()
    return box
