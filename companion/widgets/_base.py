"""Plumbing shared by every widget: visible errors in callbacks, and drawing into an
Output widget (or an Image widget's PNG) in a way that cannot hang Voila."""
from __future__ import annotations

import base64
import contextlib
import contextvars
import functools
import sys
import threading
import traceback

from ..i18n import _

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
    """sys.stdout/sys.stderr stand-in for a showing() block where the kernel's own streams
    cannot be routed: records into a _Recorder and, outside a kernel, echoes to the
    original stream, where a script or test would otherwise lose the text."""

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


# The recorder of the showing() block open in this thread or asyncio task, if any.
_ACTIVE: contextvars.ContextVar[_Recorder | None] = contextvars.ContextVar(
    "companion_showing", default=None)
_ROUTE_LOCK = threading.Lock()


def _route(obj, method: str, record) -> bool:
    """Make ``obj.<method>(...)`` call ``record(recorder, ...)`` while a showing() block is
    open in the calling thread or task, and the object's own method otherwise.

    The kernel's own objects stay where they are, with every other method: ipykernel
    calls ``display_pub.set_parent`` and ``sys.stdout.set_parent`` for each message it
    dispatches, and since ipykernel 7 it may do so on a subshell's thread while a widget
    callback is still drawing (a swapped-in publisher without ``set_parent`` made the
    kernel report an AttributeError). Routing by context variable also keeps
    two callbacks running at once from capturing each other's output.

    Outside a block the patch only forwards. It is checked on every call rather than
    installed once: IPython patches ``sys.stdout.write`` the same way for the length of
    each cell and puts back what it found, dropping a patch made while the cell ran.
    Returns False where the object takes no attributes (a built-in stream).
    """
    with _ROUTE_LOCK:
        own = getattr(obj, method)
        if getattr(own, "_companion_routed", False):
            return True

        def routed(*args, **kwargs):
            recorder = _ACTIVE.get()
            if recorder is None:
                return own(*args, **kwargs)
            return record(recorder, *args, **kwargs)

        routed._companion_routed = True
        try:
            setattr(obj, method, routed)
        except (AttributeError, TypeError):
            return False
    return True


def _record_stream(name):
    def write(recorder, text):
        recorder.stream(name, text)
        return len(text)
    return write


def _route_kernel_streams() -> bool:
    routed = True
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        routed &= _route(stream, "write", _record_stream(name))
        routed &= _route(stream, "flush", lambda recorder: None)
    return routed


@contextlib.contextmanager
def showing(output):
    """Replace what ``output`` shows with what the block prints and displays.

    Use this instead of ``with output: output.clear_output(wait=True)``. That idiom asks
    the frontend to capture the cell's messages (the Output widget's ``msg_id``), and
    Voila's executor, nbclient, answers every captured message with a ``comm_msg`` sent
    synchronously on its asyncio shell socket. That raw send drains the socket's
    edge-triggered wake-up, so an ``execute_reply`` that arrived just before is never
    read: the page stops at "Executing N of M" with an idle kernel. Here the
    kernel records the outputs itself and sets ``output.outputs``, a plain state update
    that nobody answers.

    Only what this thread or task prints and displays is recorded (see :func:`_route`):
    the kernel's streams and display publisher are never swapped out, so the kernel can
    keep calling them, and callbacks running at once do not mix their outputs.
    """
    from IPython import get_ipython

    recorder, shell = _Recorder(), get_ipython()
    in_kernel, swapped = getattr(shell, "kernel", None) is not None, None
    if shell is not None:
        _route(shell.display_pub, "publish",
               lambda rec, data, metadata=None, *args, **kwargs: rec.display(data, metadata))
        _route(shell.display_pub, "clear_output", lambda rec, wait=False: rec.outputs.clear())
    if not (in_kernel and _route_kernel_streams()):
        # No kernel (a script, a test: nothing runs callbacks concurrently, and the text
        # should still reach the terminal), or streams replaced by built-in ones: swap
        # the streams for the block.
        swapped = sys.stdout, sys.stderr
        sys.stdout = _Stream(recorder, "stdout", swapped[0], echo=not in_kernel)
        sys.stderr = _Stream(recorder, "stderr", swapped[1], echo=not in_kernel)
    token = _ACTIVE.set(recorder)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
        if swapped is not None:
            sys.stdout, sys.stderr = swapped
        output.outputs = tuple(recorder.outputs)


def png_into(image, output, draw) -> None:
    """Show the figure ``draw()`` returns as the PNG of ``image``: an Image widget updates
    in place (no flicker) and works the same in a kernel, in Voila and in a test."""
    import io

    import matplotlib.pyplot as plt

    output.outputs = ()  # drops an old error message; clear_output() can hang Voila: see showing
    fig = draw()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
    plt.close(fig)
    image.value = buffer.getvalue()


def pre_html(lines) -> str:
    """``lines`` as one preformatted HTML block (numbers in columns stay aligned)."""
    import html

    return "<pre style='font-size: 13px'>" + html.escape("\n".join(lines)) + "</pre>"


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
                    print(_("Invalid input: {error}").format(error=exc))
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
    play = W.Play(value=0, min=0, max=n_frames - 1, interval=interval_ms, description=_("play"))
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
