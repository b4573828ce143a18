"""``make present``: the whole course behind one landing page, served by Voila.

The landing notebook (:func:`companion.tools.present.landing_notebook`) is written at present
time into a temporary folder, next to copies of the course notebooks; Voila serves that
folder and every notebook opens from the landing page as a dashboard (code hidden,
widgets live). Teaches no notebook: the instructor's tooling.

Heavy cells (notebook 07's ablation, 08's latency sweeps) are handled with Voila's
*pre-heated kernels*: at start, Voila runs each notebook named in ``preheat`` in a kernel
of its own, before anyone asks for it. Opening it later shows the finished page at once,
with live widgets and the numbers of that run, measured on this machine minutes ago. A
notebook opened while its run is still going shows Voila's progress screen ("Executing
31 of 44") counting on from where the run has got; the page appears when its last cell
has run. After a pre-heated page is opened, Voila starts a fresh
run for the next visitor ``refill_delay_s`` later (so reloading a page is instant too).
Warm-up runs take turns, one notebook at a time, in a kernel that waits for its turn
before its first cell (``_warmup_turns.py``, installed as an IPython startup file).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import webbrowser
from pathlib import Path

import nbformat

from .course import course_entries
from .landing import landing_notebook

__all__ = ["prepare_course", "voila_command", "serve_course"]

LANDING = "index.ipynb"
DEFAULT_PORT = 8866  # Voila's own default


def _preheat_names(entries, preheat) -> list[str]:
    """Notebook file names to pre-heat: "all", or numbers ("07") / stems."""
    if preheat in ("all", None):
        return [e.path.name for e in entries]
    if isinstance(preheat, str):
        preheat = preheat.replace(",", " ").split()
    names = []
    for key in preheat:
        match = [e.path.name for e in entries if key in (e.number, e.stem, e.path.name)]
        if not match:
            known = ", ".join(e.number or e.stem for e in entries)
            raise ValueError(f"preheat={key!r} names no notebook; use numbers such as "
                             f"'07' or 'all' or '' (known: {known})")
        names += match
    return names


def prepare_course(workdir, notebooks_dir="notebooks", preheat="all",
                   refill_delay_s: float = 30.0) -> Path:
    """Write ``index.ipynb``, copies of the notebooks and Voila's ``voila.json`` (which
    notebooks to pre-heat) into ``workdir``; return the landing notebook's path."""
    workdir = Path(workdir)
    if not workdir.is_dir():
        raise ValueError(f"workdir={str(workdir)!r} is not a folder; create it first")
    if not refill_delay_s >= 0:
        raise ValueError(f"refill_delay_s={refill_delay_s!r} must be >= 0 seconds")
    entries = course_entries(notebooks_dir)
    heat = _preheat_names(entries, preheat)
    for entry in entries:
        shutil.copy2(entry.path, workdir / entry.path.name)
    kernelspec = nbformat.read(entries[0].path, as_version=4).metadata.get("kernelspec")
    note = ("*Warmed up at start (each ran once in its own kernel, so it opens on its "
            "results):* " + ", ".join(n.split("_")[0] for n in heat) + "." if heat else "")
    landing = workdir / LANDING
    nbformat.write(landing_notebook(entries, kernelspec, note=note), landing)
    # Pool size 0 by default: a notebook not named is run when it is opened.
    pools = {"default": {"pool_size": 0}, LANDING: {"pool_size": 1}}
    ipython_dir = workdir / ".ipython"
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(__file__).with_name("_warmup_turns.py"), startup / "50-warmup-turns.py")
    for name in heat:
        cells = nbformat.read(workdir / name, as_version=4).cells
        pools[name] = {"pool_size": 1, "kernel_env_variables": {
            "IPYTHONDIR": str(ipython_dir), "COMPANION_WARMUP_LOCK": str(workdir / ".warmup.lock"),
            # Voila skips empty code cells, so they are not counted.
            "COMPANION_WARMUP_CELLS": str(sum(c.cell_type == "code" and bool(c.source.strip())
                                              for c in cells))}}
    config = {"VoilaConfiguration": {"preheat_kernel": True, "show_tracebacks": True},
              "VoilaKernelManager": {"kernel_pools_config": pools,
                                     "fill_delay": float(refill_delay_s)}}
    (workdir / "voila.json").write_text(json.dumps(config, indent=1))
    return landing


def voila_command(workdir, port: int = DEFAULT_PORT, extra_args=()) -> list[str]:
    """The Voila command line serving ``workdir`` (run it with ``cwd=workdir``: Voila
    reads ``voila.json`` from its working folder)."""
    if not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"port={port!r} must be an int from 1 to 65535, e.g. 8866")
    voila = Path(sys.executable).with_name("voila")
    return [str(voila if voila.exists() else "voila"), str(Path(workdir).resolve()),
            "--no-browser", f"--port={port}", "--Voila.port_retries=0",
            "--Voila.ip=127.0.0.1", "--theme=light", *extra_args]


def _open_when_ready(url: str, port: int, proc) -> None:
    import socket

    while proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except OSError:
            time.sleep(0.3)
            continue
        webbrowser.open(url)
        return


def serve_course(notebooks_dir="notebooks", port: int = DEFAULT_PORT, preheat="all",
                 open_browser: bool = True) -> int:
    """Serve the course until Ctrl-C; return Voila's exit status."""
    voila_command(".", port)                           # refuses a bad port before any work
    _preheat_names(course_entries(notebooks_dir), preheat)
    with tempfile.TemporaryDirectory(prefix="companion-present-") as tmp:
        landing = prepare_course(tmp, notebooks_dir, preheat)
        url = f"http://127.0.0.1:{port}/voila/render/{landing.name}"
        print(f"Landing page: {url}\n(every notebook opens from there; Ctrl-C to stop)",
              flush=True)
        proc = subprocess.Popen(voila_command(tmp, port), cwd=tmp,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"))
        if open_browser:
            threading.Thread(target=_open_when_ready, args=(url, port, proc), daemon=True).start()

        def stop(*_):  # a plain `kill` stops Voila and removes the folder, as Ctrl-C does
            raise KeyboardInterrupt

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, stop)
        try:
            return proc.wait()
        except KeyboardInterrupt:
            proc.terminate()
            return proc.wait()
