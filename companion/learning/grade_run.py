"""Run one submitted notebook in a fresh kernel, in a folder of its own, and take out the
functions it defined: the first half of grading one (student, notebook).

Part of the instructor's grader (:mod:`companion.learning.grade`, the README's "Grading";
the exercises are taught from notebook 00 on). The notebook is copied into a new
temporary folder, which is the kernel's working directory, ``HOME`` and ``TMPDIR``, so
whatever the notebook writes lands there and is deleted with it. Every cell runs, errors
included (as nbgrader's autograder runs them), within one time limit for the whole
notebook. Then one more cell, the grader's, writes each exercise's function as bytes
(:func:`companion.learning.grade_submitted.dump`). Nothing the notebook printed is read:
its check cells may say anything.

The kernel is started in a session of its own; when it is done (or died, or ran out of
time) every process left in its process group is killed (its ranks, their forkserver,
whatever else it started), so a submission's processes do not outlive its turn.
"""
from __future__ import annotations

import dataclasses
import glob
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from ..i18n import _

__all__: list[str] = []

DUMP_SECONDS = 60   # the grader's own cell, after the notebook's time limit
_STRIPPED = ("JPY_", "JUPYTER_", "XDG_", "COMPANION_", "IPYTHONDIR", "MPLCONFIGDIR")


@dataclasses.dataclass
class Ran:
    """What running one notebook gave: each function's bytes, or why there are none."""

    blobs: dict = dataclasses.field(default_factory=dict)      # name -> cloudpickle bytes
    problems: dict = dataclasses.field(default_factory=dict)   # name -> why not pickled
    sources: dict = dataclasses.field(default_factory=dict)    # "Cell In[7]" -> its code
    failure: str | None = None   # why every exercise gets 0 (None: the notebook ran)
    note: str | None = None      # the first cell that raised (the notebook still ran on)
    seconds: float = 0.0


def clean_env(home: Path, language: str) -> dict:
    """The environment of a process that runs student code or grades it: the instructor's
    own configuration folders left out, ``HOME`` and ``TMPDIR`` in ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_STRIPPED)}
    env.update(HOME=str(home), TMPDIR=str(home), PWD=str(home), COMPANION_LANG=language)
    return env


def group_alive(pgid: int) -> bool:
    """True while some process is in process group ``pgid`` (read from /proc on Linux).
    While one is, the group's number cannot be given to anyone else, so killing the
    group hits only what is left of ours."""
    if not os.path.isdir("/proc/self"):
        return True   # no /proc to ask: kill anyway (a killpg of an empty group is harmless)
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat, encoding="utf-8", errors="replace") as f:
                if int(f.read().rsplit(")", 1)[1].split()[2]) == pgid:
                    return True
        except (OSError, IndexError, ValueError):
            continue
    return False


def kill_group(pgid: int | None) -> None:
    """SIGKILL every process left in group ``pgid`` (a kernel's, or a grading process's),
    and wait a little for them to be gone: one still dying could write into the folder
    about to be removed."""
    if pgid and hasattr(os, "killpg") and pgid != os.getpgid(0) and group_alive(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + 5.0
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)


def scratch(kind: str) -> Path:
    """A new temporary folder for one submission's ``kind`` ("run" or "check"), named
    after this process, as ``companion-launch-*`` folders are."""
    return Path(tempfile.mkdtemp(prefix=f"companion-grade-{kind}-{os.getpid()}-"))


def run_notebook(path: Path, names: list[str], timeout: float, language: str) -> Ran:
    """Run the notebook at ``path`` (within ``timeout`` seconds) and take ``names`` out."""
    import nbformat   # here: the grading process imports this module, and so its ranks

    work = scratch("run")
    started = time.monotonic()
    try:
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception as exc:   # not JSON, not a notebook: the file is what it is
            return Ran(failure=_("the notebook cannot be read ({error}); every exercise "
                                 "in it gets 0.").format(error=f"{type(exc).__name__}: {exc}"))
        shutil.copy(path, work / path.name)
        outbox = work / ".grader"
        outbox.mkdir()
        ran = _execute(nb, work, outbox, names, timeout, language)
        if ran.failure is None:
            _collect(ran, outbox, names)
        ran.seconds = time.monotonic() - started
        return ran
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _execute(nb, work: Path, outbox: Path, names, timeout: float, language: str) -> Ran:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    client = NotebookClient(nb, kernel_name="python3", allow_errors=True,
                            shutdown_kernel="immediate", record_timing=False,
                            resources={"metadata": {"path": str(work)}})
    ran, pgid, index = Ran(), None, 0
    try:
        # The kernel's own stderr is the kernel's chatter, not the grade: off the terminal.
        with client.setup_kernel(env=clean_env(work, language), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL):
            pgid = getattr(client.km.provisioner, "pgid", None)
            deadline = time.monotonic() + timeout
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CellTimeoutError(f"{timeout:g} s")
                client.timeout = max(1, int(left + 0.999))
                client.execute_cell(cell, index)
                ran.note = ran.note or _first_error(nb, index)
            client.timeout = DUMP_SECONDS
            dump = nbformat.v4.new_code_cell(
                "__import__('companion.learning.grade_submitted', fromlist=['dump']).dump("
                f"{list(names)!r}, {str(outbox)!r})")
            nb.cells.append(dump)   # nbclient writes a cell's outputs into the notebook
            index = len(nb.cells) - 1
            client.execute_cell(dump, index, store_history=False)
            if dump.outputs and dump.outputs[-1].get("output_type") == "error":
                ran.failure = _("the grader could not take the functions out of the "
                                "kernel ({error}); every exercise gets 0.").format(
                    error=dump.outputs[-1].get("ename", "?"))
    except CellTimeoutError:
        ran.failure = _("the notebook did not finish within the grader's time limit of "
                        "{seconds} s: it was still running {cell} (`{line}`); every "
                        "exercise in it gets 0.").format(seconds=f"{timeout:g}",
                                                         cell=_cell(nb, index),
                                                         line=_line(nb, index))
    except DeadKernelError:
        ran.failure = _("the notebook's kernel died in {cell} (`{line}`): a crash, "
                        "os._exit or a kill; every exercise in it gets 0.").format(
            cell=_cell(nb, index), line=_line(nb, index))
    except Exception as exc:   # the kernel did not start, or its channels broke
        ran.failure = _("the notebook could not be run ({error}); every exercise in it "
                        "gets 0.").format(error=f"{type(exc).__name__}: {exc}")
    finally:
        kill_group(pgid)
    return ran


def _cell(nb, index: int) -> str:
    """Cell ``index`` named as IPython names it in a kernel that ran every code cell in
    order, as the grader's did: ``Cell In[7]`` for the seventh code cell."""
    number = sum(c.cell_type == "code" for c in nb.cells[:index + 1])
    return f"Cell In[{number}]"


def _line(nb, index: int) -> str:
    """The first line of cell ``index`` that is not blank, to name the cell by."""
    source = nb.cells[index].source if index < len(nb.cells) else ""
    first = next((s.strip() for s in source.splitlines() if s.strip()), "")
    return first if len(first) <= 60 else first[:57] + "..."


def _first_error(nb, index: int) -> str | None:
    for output in nb.cells[index].get("outputs", []):
        if output.get("output_type") == "error":
            error = f"{output.get('ename', '?')}: {output.get('evalue', '')}"
            return _("{cell} (`{line}`) raised {error}").format(
                cell=_cell(nb, index), line=_line(nb, index), error=error[:200])
    return None


def _collect(ran: Ran, outbox: Path, names) -> None:
    for name in names:
        blob, problem = outbox / f"{name}.pkl", outbox / f"{name}.err"
        if blob.is_file():
            ran.blobs[name] = blob.read_bytes()
        elif problem.is_file():
            ran.problems[name] = problem.read_text(encoding="utf-8", errors="replace")[:500]
    try:
        sources = json.loads((outbox / "sources.json").read_text(encoding="utf-8"))
        ran.sources = {str(k): str(v) for k, v in sources.items()} \
            if isinstance(sources, dict) else {}
    except (OSError, ValueError):
        ran.sources = {}
