"""Servers, a headless Chromium and a kernel watcher for the browser tests.

JupyterLab and Voila are started on 127.0.0.1, on a free port, with a random token, in a
throw-away copy of ``notebooks/`` (JupyterLab saves outputs into the files it runs).
Chromium is Debian's (``/usr/bin/chromium``), driven by Playwright: no browser is
downloaded. Screenshots go to ``artifacts/browser/``.

The page re-renders while it is read: an Output widget replaces its children on every
redraw, so an output area found by position can be gone (or be another one) a moment
later. Everything that reads the page therefore reads it in one ``evaluate`` (one
snapshot, nothing to wait for), and the widgets to operate are tagged once, by a data
attribute on their cell's top-level output area, which no redraw replaces.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"
BIN = Path(sys.executable).parent
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic"]
TRACEBACK = "Traceback (most recent call last)"
WIDGET_TAG = "data-companion-widget"


def chromium_path() -> str | None:
    for candidate in (os.environ.get("CHROMIUM"), shutil.which("chromium"),
                      shutil.which("chromium-browser"), "/usr/bin/chromium"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def _free_port() -> int:
    # The server binds it a moment later; port_retries covers the rare race.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class Server:
    url: str
    token: str
    runtime_dir: Path  # where its kernels' connection files are written

    def api(self, path: str, method: str = "GET"):
        import urllib.request

        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None


def _write_lab_settings(settings: Path) -> None:
    def put(plugin: str, name: str, value: dict):
        (settings / "@jupyterlab" / plugin).mkdir(parents=True, exist_ok=True)
        (settings / "@jupyterlab" / plugin / f"{name}.jupyterlab-settings").write_text(
            json.dumps(value))

    # No "fetch Jupyter news?" pop-up over the screenshots.
    put("apputils-extension", "notification", {"fetchNews": "false", "checkForUpdates": False})
    # Render every cell: with windowing, cells scrolled out of view leave the DOM and
    # neither their prompts nor their outputs could be checked.
    put("notebook-extension", "tracker", {"windowingMode": "none"})


@contextlib.contextmanager
def server(kind: str, workdir: Path, target: str = "", extra_args=()):
    """Start ``jupyter lab`` or ``voila``; yield a :class:`Server`; stop it."""
    port, token = _free_port(), secrets.token_hex(16)
    settings = workdir / ".lab-settings"
    _write_lab_settings(settings)
    runtime_dir = workdir / f".runtime-{kind}-{port}"
    runtime_dir.mkdir()
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTER_CONFIG_DIR=str(workdir / ".jupyter-config"),
               JUPYTER_RUNTIME_DIR=str(runtime_dir))
    if kind == "lab":
        cmd = [str(BIN / "jupyter"), "lab", "--no-browser", f"--port={port}",
               "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={workdir}"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
    else:
        cmd = [str(BIN / "voila"), target, "--no-browser", f"--port={port}",
               "--Voila.ip=127.0.0.1", f"--token={token}", "--show_tracebacks=True",
               f"--Voila.connection_dir_root={runtime_dir}"]
    cmd += list(extra_args)
    log_path = workdir / f"{kind}-{port}.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{kind} exited early: {log_path.read_text()[-2000:]}")
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            time.sleep(0.2)
        yield Server(f"http://127.0.0.1:{port}", token, runtime_dir)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


# ---------------------------------------------------------------- reading the page

_OUTPUT_TEXTS_JS = """() => Array.from(document.querySelectorAll('.jp-OutputArea-output'),
                                       e => e.innerText)"""


def output_texts(page) -> list[str]:
    """The text of every output area, read in one snapshot."""
    return page.evaluate(_OUTPUT_TEXTS_JS)


REFUSAL = "Invalid input:"  # what companion.widgets.guarded shows for a ValueError


def shows_traceback(text: str) -> bool:
    """True when ``text`` shows a traceback that is not a rank's forwarded output."""
    return any(TRACEBACK in line and not line.lstrip().startswith("[rank")
               for line in text.splitlines())


def shows_refusal(text: str) -> bool:
    return any(line.startswith(REFUSAL) for line in text.splitlines())


def errors_on_page(page, refusals: bool = True) -> list[str]:
    """Texts of output areas that show a traceback or, with ``refusals``, a widget's
    "Invalid input" message. A notebook as it runs should show neither; while controls
    are moved, a refusal is the widget answering a value it was designed to refuse (t=3
    for 4 heads), not an error."""
    return [text[-1500:] for text in output_texts(page)
            if shows_traceback(text) or (refusals and shows_refusal(text))]


PROMPTS_JS = """() => Array.from(document.querySelectorAll('.jp-CodeCell .jp-InputPrompt'),
                                 e => e.innerText.trim())"""


def start_run_all(page) -> None:
    """Open the notebook's Run menu and run all cells, once the kernel is idle."""
    page.locator(".jp-Notebook").first.wait_for(timeout=60_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
    for _ in range(3):  # a click that lands while the kernel is still connecting is lost
        page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and page.evaluate(PROMPTS_JS)[0] == "[ ]:":
            time.sleep(0.3)
        if page.evaluate(PROMPTS_JS)[0] != "[ ]:":
            return


# ---------------------------------------------------------------- the kernel's side

class KernelWatcher:
    """Collects every error the kernel publishes on iopub while it is open: ``error``
    messages, tracebacks on stderr (ipykernel forwards its own log there), and Output
    widgets whose new state shows a traceback or an "Invalid input" message. A callback
    that fails inside the kernel shows up here even when the page never renders it.
    """

    def __init__(self, connection_file: Path):
        from jupyter_client import BlockingKernelClient

        self.client = BlockingKernelClient(connection_file=str(connection_file))
        self.client.load_connection_file()
        self.errors: list[str] = []
        self.refusals: list[str] = []  # "Invalid input" answers: recorded, not errors
        self.messages = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, daemon=True)

    def __enter__(self):
        self.client.start_channels(shell=False, iopub=True, stdin=False, hb=False,
                                   control=False)
        self._thread.start()
        time.sleep(0.5)  # a SUB socket misses what is sent before its subscription lands
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)
        self.client.stop_channels()

    def _listen(self):
        while not self._stop.is_set():
            try:
                msg = self.client.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                continue
            except Exception as exc:  # noqa: BLE001 - a closed socket at shutdown
                if not self._stop.is_set():
                    self.errors.append(f"iopub watcher stopped: {exc!r}")
                return
            self.messages += 1
            error, refusal = self.error_in(msg)
            if error:
                self.errors.append(error[-1500:])
            if refusal and refusal not in self.refusals:
                self.refusals.append(refusal)

    @staticmethod
    def error_in(msg: dict) -> tuple[str | None, str | None]:
        """(an error, a refusal) that ``msg`` carries, each None if none."""
        kind, content = msg["msg_type"], msg["content"]
        if kind == "error":
            return f"{content['ename']}: {content['evalue']}", None
        if kind == "stream" and content.get("name") == "stderr" and shows_traceback(content["text"]):
            return content["text"], None
        if kind == "comm_msg":
            state = content.get("data", {}).get("state", {})
            texts = []
            for output in state.get("outputs", []) or []:
                if output.get("output_type") == "error":
                    return f"{output.get('ename')}: {output.get('evalue')}", None
                texts.append(output.get("text", ""))
            text = "".join(texts)
            if shows_traceback(text):
                return text, None
            if shows_refusal(text):
                return None, text.strip()
        return None, None

    def wait_until_quiet(self, quiet_s: float = 1.5, limit_s: float = 30.0) -> None:
        """Wait until the kernel has published nothing for ``quiet_s`` (its queue of
        widget messages is drained), at most ``limit_s``."""
        deadline = time.monotonic() + limit_s
        last, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            if self.messages != last:
                last, since = self.messages, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return
            time.sleep(0.1)


def connection_file(srv: Server, kernel_id: str | None = None, wait_s: float = 30.0) -> Path:
    """The connection file of ``kernel_id``, or of the newest kernel the server started."""
    deadline = time.monotonic() + wait_s
    while True:
        if kernel_id is not None:
            path = srv.runtime_dir / f"kernel-{kernel_id}.json"
            if path.exists():
                return path
        else:
            # Voila writes them one folder down (voila_*/)
            files = sorted(srv.runtime_dir.glob("**/kernel-*.json"),
                           key=lambda p: p.stat().st_mtime)
            if files:
                return files[-1]
        if time.monotonic() > deadline:
            raise AssertionError(f"no connection file for kernel {kernel_id} in {srv.runtime_dir}: "
                                 f"{sorted(p.name for p in srv.runtime_dir.iterdir())}")
        time.sleep(0.2)


# ---------------------------------------------------------------- operating widgets

# Top-level output areas (not the nested ones inside Output widgets) that hold a control;
# a tqdm progress bar is a widget too but has none.
_TAG_WIDGETS_JS = """([tag, controls]) => {
    const areas = Array.from(document.querySelectorAll('.jp-OutputArea-output'))
        .filter(a => !a.parentElement.closest('.jp-OutputArea-output'))
        .filter(a => a.querySelector(controls));
    areas.forEach((a, i) => a.setAttribute(tag, String(i)));
    return areas.length;
}"""
_CONTROLS = (".jupyter-widgets select, .jupyter-widgets .noUi-handle, "
             ".jupyter-widgets .widget-text input, .jupyter-widgets input[type=number], "
             ".widget-toggle-buttons, .widget-checkbox")
_HTML_JS = """([tag, i]) => {
    const a = document.querySelector(`[${tag}="${i}"]`);
    return a ? a.innerHTML : null;
}"""


def tag_widgets(page) -> int:
    """Tag every top-level output area that holds a control; return how many."""
    return page.evaluate(_TAG_WIDGETS_JS, [WIDGET_TAG, _CONTROLS])


def widget_area(page, index: int):
    return page.locator(f"[{WIDGET_TAG}='{index}']")


def widget_html(page, index: int) -> str | None:
    return page.evaluate(_HTML_JS, [WIDGET_TAG, index])


def _slider_value(handle) -> str | None:
    return handle.get_attribute("aria-valuenow")


def answer_prediction(page, area, value: str = "1") -> bool:
    """Answer a prediction box as a student: choose or type, then press Lock in.
    False when ``area`` holds no prediction box (or it is already locked)."""
    box = area.locator(".companion-prediction")
    if not box.count():
        return False
    button = box.locator("button", has_text="Lock in")
    if button.is_disabled():
        return False
    select = box.locator("select")
    if select.count():
        select.select_option(index=1)
    else:
        box.locator("input").fill(value)
    button.click()
    return True


def _try_controls(page, area):
    """Yield ``(what, moved)`` after each attempt to change one control inside ``area``;
    ``moved`` is False when the control itself did not change (a slider at its end), so
    there is no redraw to wait for."""
    if answer_prediction(page, area):
        yield "prediction locked in", True
        return
    selects = area.locator("select")
    for i in range(min(selects.count(), 3)):
        select = selects.nth(i)
        options = select.evaluate("s => s.options.length")
        if options > 1:
            current = select.evaluate("s => s.selectedIndex")
            select.select_option(index=(current + 1) % options)
            yield f"dropdown {i}", True
    handles = area.locator(".noUi-handle")
    for i in range(min(handles.count(), 3)):
        for key in ("ArrowRight", "ArrowLeft"):  # a slider already at its end moves back
            handle = handles.nth(i)
            before = _slider_value(handle)
            handle.focus()
            for _ in range(3):
                page.keyboard.press(key)
            yield f"slider {i} ({key})", _slider_value(handle) != before
    numbers = area.locator(".widget-text input, input[type=number]")
    for i in range(min(numbers.count(), 3)):
        box = numbers.nth(i)
        value = box.input_value()
        try:
            new = str(int(float(value)) * 2 or 1)
        except ValueError:
            continue
        box.fill(new)
        box.press("Enter")
        yield f"number box {i}", True
    toggles = area.locator(".widget-toggle-button:not(.mod-active), .widget-checkbox input")
    for i in range(min(toggles.count(), 3)):
        toggles.nth(i).click()
        yield f"toggle {i}", True


def rapid_interaction(page, area, presses: int = 3, play_frames: int = 3,
                      max_play_s: float = 8.0) -> list[str]:
    """What an instructor does in front of a class: several key presses in a row on every
    slider, Play for a few frames, every dropdown changed twice quickly. Nothing waits
    for the kernel in between, so its callbacks overlap with new messages."""
    done = []
    handles = area.locator(".noUi-handle")
    for i in range(handles.count()):
        handles.nth(i).focus()
        for key in ("ArrowRight",) * presses + ("ArrowLeft",) * presses:
            page.keyboard.press(key)
        done.append(f"slider {i}: {presses} presses each way")
    buttons = area.locator(".widget-play button")
    if buttons.count():
        # Play steps a slider linked to it in the page; count the frames it shows, since
        # players tick at 150 ms to 1.2 s. The first button starts it, the second pauses.
        values = lambda: area.evaluate(  # noqa: E731
            "a => Array.from(a.querySelectorAll('.noUi-handle'), h => h.getAttribute('aria-valuenow')).join()")
        if handles.count():  # from the first frame, so that there are frames to play
            handles.nth(0).focus()
            page.keyboard.press("Home")
        buttons.nth(0).click()
        frames, last, deadline = 0, values(), time.monotonic() + max_play_s
        changed = time.monotonic()
        while frames < play_frames and time.monotonic() < deadline:
            time.sleep(0.05)
            now = values()
            if now != last:
                frames, last, changed = frames + 1, now, time.monotonic()
            elif frames and time.monotonic() - changed > 2.5:
                break  # a short recording played to its end (ticks are at most 1.2 s apart)
        buttons.nth(1).click()
        done.append(f"play: {frames} frames")
    selects = area.locator("select:not([disabled])")   # a locked prediction is disabled
    for i in range(selects.count()):
        select = selects.nth(i)
        options = select.evaluate("s => s.options.length")
        if options > 1:
            current = select.evaluate("s => s.selectedIndex")
            select.select_option(index=(current + 1) % options)
            select.select_option(index=current)
            done.append(f"dropdown {i}: changed twice")
    return done


def operate_widgets(page, name: str, watcher: KernelWatcher | None = None,
                    timeout_s: float = 20.0) -> list[dict]:
    """For every output that holds a widget: move controls until its rendering changes,
    then interact rapidly (:func:`rapid_interaction`).

    Returns one record per widget: which control changed it (None if none did), what the
    rapid interaction did, and the errors seen on the page and, with ``watcher``, in the
    kernel.
    """
    records = []
    for i in range(tag_widgets(page)):
        area = widget_area(page, i)
        area.scroll_into_view_if_needed()
        seen = (len(watcher.errors), len(watcher.refusals)) if watcher else (0, 0)
        before = widget_html(page, i)
        changed_by = None
        for attempt, moved in _try_controls(page, area):
            if not moved:
                continue
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and widget_html(page, i) == before:
                time.sleep(0.2)
            if widget_html(page, i) != before:
                changed_by = attempt
                break
        rapid = rapid_interaction(page, area)
        if watcher is not None:
            watcher.wait_until_quiet()
        else:
            time.sleep(1.0)
        area.screenshot(path=str(ARTIFACTS / f"{name}-widget{i}.png"))
        records.append({"index": i, "changed_by": changed_by, "rapid": rapid,
                        "errors": errors_on_page(page, refusals=False),
                        "kernel_errors": watcher.errors[seen[0]:] if watcher else [],
                        "refusals": watcher.refusals[seen[1]:] if watcher else [],
                        "kernel_messages": watcher.messages if watcher else None})
    return records
