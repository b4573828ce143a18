"""showing() in a real ipykernel: the kernel keeps calling its own streams and display
publisher while a widget draws, and callbacks running at once keep their outputs apart
(pressing a slider's arrow key three times made the kernel report
``'Publisher' object has no attribute 'set_parent'``).

No browser: a kernel is started with jupyter_client, cells are executed and widget
controls are moved by sending the same ``comm_msg`` updates a browser sends, back to back.
"""
from __future__ import annotations

import queue
import time

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
from jupyter_client.manager import start_new_kernel  # noqa: E402


class Kernel:
    def __init__(self):
        self.manager, self.client = start_new_kernel(kernel_name="python3")

    def close(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)

    def run(self, code: str, timeout: float = 120) -> dict:
        """Execute ``code``; return its stdout, its error (if any) and every message seen."""
        msg_id = self.client.execute(code)
        return self.collect(until_idle_of=msg_id, timeout=timeout)

    def collect(self, until_idle_of=None, quiet_s=None, timeout: float = 60) -> dict:
        """iopub messages until ``until_idle_of`` is done, or until none came for ``quiet_s``."""
        out = {"stdout": "", "errors": [], "messages": []}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = self.client.get_iopub_msg(timeout=quiet_s or 1)
            except queue.Empty:
                if quiet_s:
                    return out
                continue
            out["messages"].append(msg)
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and content["name"] == "stdout":
                out["stdout"] += content["text"]
            elif kind == "stream" and "Traceback" in content["text"] or kind == "error":
                out["errors"].append(content.get("text") or f"{content['ename']}: {content['evalue']}")
            if (until_idle_of and kind == "status" and content["execution_state"] == "idle"
                    and msg["parent_header"].get("msg_id") == until_idle_of):
                return out
        raise AssertionError(f"kernel still busy after {timeout} s: {out}")

    def move(self, comm_id: str, values, key: str = "value") -> None:
        """Send a widget's state updates as fast as a browser sends key presses."""
        for value in values:
            self.client.shell_channel.send(self.client.session.msg("comm_msg", {
                "comm_id": comm_id,
                "data": {"method": "update", "state": {key: value}, "buffer_paths": []}}))


@pytest.fixture(scope="module")
def kernel():
    k = Kernel()
    try:
        setup = k.run("%matplotlib inline\nimport threading, ipywidgets as W\n"
                      "from IPython import get_ipython\nfrom IPython.display import display\n"
                      "import companion.widgets as w\nfrom companion.widgets import showing\n"
                      "shell = get_ipython()\n"
                      "kernel_types = type(shell.display_pub), type(shell.kernel), "
                      "type(__import__('sys').stdout)")
        assert not setup["errors"], setup["errors"]
        yield k
    finally:
        k.close()


def test_the_kernel_can_set_the_parent_while_a_widget_draws(kernel):
    # What ipykernel does for every message it dispatches, here from inside the block as
    # a subshell thread would; a publisher swapped in for the block had no set_parent.
    result = kernel.run(
        "out = W.Output()\n"
        "with showing(out):\n"
        "    shell.set_parent(shell.kernel.get_parent('shell'))\n"
        "    print('drawn')\n"
        "print(out.outputs[0]['text'].strip(), type(shell.display_pub) is kernel_types[0])")
    assert result["errors"] == []
    assert result["stdout"].strip() == "drawn True"


def test_callbacks_drawing_at_once_keep_their_outputs_apart(kernel):
    result = kernel.run(
        "outs, failures = [W.Output() for _ in range(4)], []\n"
        "start = threading.Barrier(4)\n"
        "def draw(i):\n"
        "    try:\n"
        "        start.wait()\n"
        "        for frame in range(200):\n"
        "            with showing(outs[i]):\n"
        "                print(f'widget {i} frame {frame}')\n"
        "                display({'text/plain': f'widget {i}'}, raw=True)\n"
        "                shell.set_parent(shell.kernel.get_parent('shell'))\n"
        "    except Exception as exc:\n"
        "        failures.append(repr(exc))\n"
        "threads = [threading.Thread(target=draw, args=(i,)) for i in range(4)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
        "mixed = [i for i, o in enumerate(outs) if o.outputs[0]['text'] != f'widget {i} frame 199\\n'\n"
        "         or o.outputs[1]['data']['text/plain'] != f'widget {i}' or len(o.outputs) != 2]\n"
        "print(failures, mixed, (type(shell.display_pub), type(shell.kernel), "
        "type(__import__('sys').stdout)) == kernel_types)\n"
        "print('after the blocks the cell prints as usual')")
    assert result["errors"] == []
    assert result["stdout"].splitlines() == [
        "[] [] True", "after the blocks the cell prints as usual"]


@pytest.mark.parametrize("factory, control, values, key", [
    # the report: the time slider of notebook 04's timeline player, arrow key pressed
    ("w.timeline_player([__import__('companion.pipeline', fromlist=['simulate'])"
     ".simulate('1f1b', 4, 8)])", "frame", [59, 58, 57, 56, 57, 58, 59, 60] * 3, "value"),
    # a dropdown syncs its index
    ("w.schedule_explorer()", "schedule", [2, 1, 2, 3], "index"),
    # a widget that draws into an Image, as notebook 05 shows it
    ("w.activation_memory(controls=('seq_len', 'tp'), tp_degrees=(1, 2, 4, 8))", "tp",
     [0, 3, 1, 2, 0, 3], "index"),
    ("w._base.frame_player(5, lambda i, ax: ax.set_title(f'frame {i}'))", "slider",
     [1, 2, 3, 4, 3, 2, 1, 0] * 3, "value"),
])
def test_rapid_updates_raise_nothing_in_the_kernel(kernel, factory, control, values, key):
    made = kernel.run(f"box = {factory}\nprint(box.{control}.comm.comm_id)")
    assert made["errors"] == [], made["errors"]
    kernel.move(made["stdout"].split()[-1], values, key)
    seen = kernel.collect(quiet_s=2.0, timeout=120)
    # The shell channel is first in, first out: this cell runs after every update, so a
    # redraw still running when the kernel went quiet reports its error here.
    final = kernel.run(f"print(box.{control}.{key})")
    assert seen["errors"] + final["errors"] == []
    assert final["stdout"].strip() == str(values[-1])  # the widget followed to the last value
