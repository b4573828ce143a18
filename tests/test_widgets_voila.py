"""Widgets that draw while their cell runs must not hang Voila.

Voila executes a notebook with nbclient. While a cell runs, nbclient mimics the browser's
Output widget: for every message the kernel asks an Output widget to capture (``with
output:``), nbclient sends a ``comm_msg`` back on its asyncio shell socket, synchronously.
That send drains the socket's edge-triggered wake-up, and an ``execute_reply`` that
arrived just before is then never read: the page stays at "Executing N of M" with an
idle kernel. Widgets therefore draw with :func:`companion.widgets._base.showing`, which
sets ``output.outputs`` in the kernel and leaves nbclient nothing to answer.

These tests run the widgets in a real kernel under nbclient (no browser needed) and
check that nbclient never had to answer a captured output, and that the drawings still
reach the Output widgets.
"""
from __future__ import annotations

import datetime

import nbformat
import pytest

# Executes a notebook as Voila does (~30 s); CI runs it, with the real-browser tests.
pytestmark = pytest.mark.ci

nbclient = pytest.importorskip("nbclient")
from nbclient.output_widget import OutputWidget  # noqa: E402

SETUP = "%matplotlib inline\nimport ipywidgets\nimport companion.widgets as w"
WIDGETS = [
    "w._base.frame_player(3, lambda i, ax: ax.set_title(f'frame {i}'))",
    "w.tp_split_explorer()",
    "w.activation_memory(controls=('seq_len', 'tp'))",
    "w.schedule_explorer()",
    "w.planner()",
    "w.zero_memory()",
    "w.dga_explorer()",
    # the widget of the original report: it trains on real ranks, then draws
    "w.compression_explorer(world_size=2, steps=5)",
    # an error shown by a guarded callback while the cell runs
    "out = ipywidgets.Output()\nw.guarded(out)(lambda: 1 / 0)()\nout",
]
# The idiom the widgets no longer use: proves the spy below sees what it looks for.
# It also provokes the race itself (about 1 cell in 150 loses its execute_reply, measured
# on 300 such cells), and a lost reply is only read when the cell's timeout runs out, so
# this cell gets a short timeout of its own.
OLD_IDIOM = "old = ipywidgets.Output()\nwith old:\n    print('captured')\nold"
TIMEOUT_S, OLD_IDIOM_TIMEOUT_S = 240, 20
# A reply nbclient reads this long after the kernel sent it was lost, not slow: under load
# the lag measured is milliseconds, since nbclient is idle waiting for exactly this reply.
LOST_REPLY_LAG_S = 10


def _run(sources, path):
    """Execute ``sources`` as Voila does; return the notebook and, per cell, how many
    seconds passed between the kernel sending ``execute_reply`` and nbclient reading it."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    lags = {}

    def read(cell, cell_index, execute_reply):
        now = datetime.datetime.now(datetime.timezone.utc)
        lags[cell_index] = (now - execute_reply["header"]["date"]).total_seconds()

    client = nbclient.NotebookClient(
        nb, kernel_name="python3", on_cell_executed=read,
        timeout_func=lambda c: OLD_IDIOM_TIMEOUT_S if c.source == OLD_IDIOM else TIMEOUT_S,
        resources={"metadata": {"path": str(path)}})
    client.execute()
    return nb, lags


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The widgets run once under nbclient, recording for which cells nbclient answered a
    captured output on the shell socket (a race in Voila's executor)."""
    answered, originals = [], {}
    for name in ("output", "clear_output"):
        originals[name] = original = getattr(OutputWidget, name)

        def spy(self, outs, msg, *args, _original=original):
            answered.append(args[-1])  # both methods take the cell index last
            return _original(self, outs, msg, *args)

        setattr(OutputWidget, name, spy)
    try:
        nb, lags = _run([SETUP, *WIDGETS, OLD_IDIOM], tmp_path_factory.mktemp("voila"))
    finally:
        for name, original in originals.items():
            setattr(OutputWidget, name, original)
    return nb, set(answered), lags


def test_widgets_drawing_while_their_cell_runs_leave_nbclient_nothing_to_answer(executed):
    nb, answered, lags = executed
    old_cell = len(WIDGETS) + 1
    assert answered == {old_cell}, (
        f"nbclient answered captured outputs of cells {sorted(answered)}; "
        f"{[nb.cells[i].source.splitlines()[0] for i in answered - {old_cell}]} "
        "draw with `with output:`: use companion.widgets._base.showing")
    errors = [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    assert not errors, errors[0]
    assert len(lags) == len(nb.cells), f"only cells {sorted(lags)} reported a reply"
    lost = {i: round(lag, 1) for i, lag in lags.items()
            if i != old_cell and lag > LOST_REPLY_LAG_S}
    assert not lost, (f"execute_reply read this many seconds after it was sent, per cell: "
                      f"{lost}; a lost reply waits for the cell's timeout")


def test_the_drawings_reach_the_output_widgets(executed):
    nb = executed[0]
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    outputs = [m["state"].get("outputs", []) for m in state.values()
               if m["model_name"] == "OutputModel"]
    pngs = sum(isinstance(o.get("data", {}).get("image/png"), str) for out in outputs
               for o in out)
    texts = "".join(o.get("text", "") for out in outputs for o in out)
    assert pngs >= 6, f"only {pngs} base64 figures in Output widgets: {outputs}"
    assert "ZeroDivisionError" in texts, "the guarded callback's traceback is not shown"
