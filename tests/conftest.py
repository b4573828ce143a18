"""Shared fixtures: every test must leave no rank process and no launch directory behind."""
from __future__ import annotations

import glob
import os
import tempfile
import time

import pytest


def _children(pid: int) -> dict[int, str]:
    """All descendants of ``pid`` as {pid: command line}, read from /proc."""
    parents = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parents[int(stat.split("/")[2])] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = {}, [pid]
    while frontier:
        current = frontier.pop()
        for child, parent in parents.items():
            if parent == current and child not in found:
                try:
                    with open(f"/proc/{child}/cmdline", "rb") as f:
                        found[child] = f.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    found[child] = "?"
                frontier.append(child)
    return found


def rank_processes() -> dict[int, str]:
    """Descendants except the long-lived forkserver, the resource tracker and a kernel a
    module's fixture keeps open across its tests (their own children are still counted)."""
    return {pid: cmd for pid, cmd in _children(os.getpid()).items()
            if "multiprocessing.forkserver" not in cmd and "resource_tracker" not in cmd
            and "ipykernel_launcher" not in cmd}


def launch_dirs() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), f"companion-launch-{os.getpid()}-*")))


@pytest.fixture(autouse=True)
def no_leftovers(request):
    if "tests/browser" in request.node.nodeid:  # servers live across those tests on purpose
        yield
        return
    before_dirs = launch_dirs()
    yield
    deadline = time.monotonic() + 3.0
    while rank_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    leftover = rank_processes()
    assert not leftover, f"processes left behind: {leftover}"
    assert launch_dirs() - before_dirs == set(), "launch directories left behind"
