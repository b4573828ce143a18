"""Servers and a headless Chromium for the browser tests (issue: widgets in a real browser).

JupyterLab and Voila are started on 127.0.0.1, on a free port, with a random token, in a
throw-away copy of ``notebooks/`` (JupyterLab saves outputs into the files it runs).
Chromium is Debian's (``/usr/bin/chromium``), driven by Playwright: no browser is
downloaded. Screenshots go to ``artifacts/browser/``.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"
BIN = Path(sys.executable).parent
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic"]
TRACEBACK = "Traceback (most recent call last)"


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


@contextlib.contextmanager
def server(kind: str, workdir: Path, target: str = ""):
    """Start ``jupyter lab`` or ``voila``; yield its base URL (with token); stop it."""
    port, token = _free_port(), secrets.token_hex(16)
    settings = workdir / ".lab-settings"
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True, exist_ok=True)
    # No "fetch Jupyter news?" pop-up over the screenshots.
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
     ).write_text('{"fetchNews": "false", "checkForUpdates": false}')
    # Render every cell: with windowing, cells scrolled out of view leave the DOM and
    # neither their prompts nor their outputs could be checked.
    (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True, exist_ok=True)
    (settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
     ).write_text('{"windowingMode": "none"}')
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTER_CONFIG_DIR=str(workdir / ".jupyter-config"))
    if kind == "lab":
        cmd = [str(BIN / "jupyter"), "lab", "--no-browser", f"--port={port}",
               "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={workdir}"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
    else:
        cmd = [str(BIN / "voila"), target, "--no-browser", f"--port={port}",
               "--Voila.ip=127.0.0.1", f"--token={token}", "--show_tracebacks=True"]
    log = open(workdir / f"{kind}-{port}.log", "w")
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{kind} exited early: {(workdir / log.name).read_text()[-2000:]}")
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}", token
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def errors_on_page(page) -> list[str]:
    """Texts of output areas that show a traceback (not a rank's forwarded output) or a
    widget's "Invalid input" message."""
    found = []
    areas = page.locator(".jp-OutputArea-output")
    for i in range(areas.count()):
        text = areas.nth(i).inner_text()
        for line in text.splitlines():
            if (TRACEBACK in line and not line.lstrip().startswith("[rank")) or \
                    line.startswith("Invalid input:"):
                found.append(text[-1500:])
                break
    return found


def _try_controls(page, area):
    """Yield after each attempt to change one control inside ``area``."""
    selects = area.locator("select")
    for i in range(min(selects.count(), 3)):
        select = selects.nth(i)
        options = select.locator("option")
        if options.count() > 1:
            current = select.evaluate("s => s.selectedIndex")
            select.select_option(index=(current + 1) % options.count())
            yield f"dropdown {i}"
    handles = area.locator(".noUi-handle")
    for i in range(min(handles.count(), 3)):
        for key in ("ArrowRight", "ArrowLeft"):  # a slider already at its end moves back
            handles.nth(i).focus()
            for _ in range(3):
                page.keyboard.press(key)
            yield f"slider {i} ({key})"
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
        yield f"number box {i}"
    toggles = area.locator(".widget-toggle-button:not(.mod-active), .widget-checkbox input")
    for i in range(min(toggles.count(), 3)):
        toggles.nth(i).click()
        yield f"toggle {i}"


def operate_widgets(page, name: str, timeout_s: float = 20.0) -> list[dict]:
    """For every output that holds a widget: move controls until its rendering changes.

    Returns one record per widget: which control changed it (None if none did).
    """
    records = []
    # Outputs holding a control; a tqdm progress bar is a widget too but has none.
    areas = page.locator(".jp-OutputArea-output:has(.jupyter-widgets select, "
                         ".jupyter-widgets .noUi-handle, .jupyter-widgets .widget-text input, "
                         ".jupyter-widgets input[type=number], .widget-toggle-buttons, "
                         ".widget-checkbox)")
    for i in range(areas.count()):
        area = areas.nth(i)
        area.scroll_into_view_if_needed()
        before = area.inner_html()
        changed_by = None
        for attempt in _try_controls(page, area):
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and area.inner_html() == before:
                time.sleep(0.2)
            if area.inner_html() != before:
                changed_by = attempt
                break
        time.sleep(0.5)
        area.screenshot(path=str(ARTIFACTS / f"{name}-widget{i}.png"))
        records.append({"index": i, "changed_by": changed_by,
                        "errors": [t for t in errors_on_page(page) if t]})
    return records
