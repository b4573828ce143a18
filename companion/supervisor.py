"""Watching running ranks: their output, their results, their failures.

Taught in notebook 00, section 4. The parent process waits on every rank's result
pipe, exit sentinel and output pipes at once, so that a rank that raises, dies or
hangs is noticed within a second and all its peers are stopped.
"""
from __future__ import annotations

import os
import pickle
import signal
import sys
import time
from multiprocessing.connection import wait

from .i18n import _

__all__ = ["LaunchError", "LaunchTimeout", "Forwarder", "collect", "drain", "stop"]


class LaunchError(RuntimeError):
    """A rank raised, or died without reporting (segfault, ``os._exit``)."""

    def __init__(self, message: str, rank: int | None = None, traceback_text: str = "",
                 exitcode: int | None = None, summary: str | None = None):
        super().__init__(message)
        self.rank = rank
        self.summary = summary   # "Type: message" of the rank's exception, untranslated
        self.traceback = traceback_text
        self.exitcode = exitcode


class LaunchTimeout(TimeoutError):
    """The job ran past ``timeout`` seconds; every rank was stopped."""


class Forwarder:
    """Copies a rank's stdout/stderr to the notebook line by line, with a rank prefix."""

    def __init__(self, rank, conn, stream_name):
        self.conn, self.fd = conn, conn.fileno()
        self.prefix = f"[rank {rank}] "
        self.stream_name = stream_name
        self.buffer = b""
        self.open = True

    def _write(self, text):
        stream = getattr(sys, self.stream_name)
        stream.write(text)
        stream.flush()

    def pump(self) -> None:
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            self.flush()
            self.open = False
            return
        *lines, self.buffer = (self.buffer + chunk).split(b"\n")
        if lines:
            self._write("".join(self.prefix + line.decode("utf-8", "replace") + "\n"
                                for line in lines))

    def flush(self) -> None:
        if self.buffer:
            self._write(self.prefix + self.buffer.decode("utf-8", "replace") + "\n")
            self.buffer = b""


def _exit_description(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return _("killed by signal {signal}").format(signal=signal.Signals(-code).name)
        except ValueError:
            return _("killed by signal {signal}").format(signal=-code)
    return _("exit code {code}").format(code=code)


def collect(procs, result_conns, forwarders, deadline, timeout):
    world_size = len(procs)
    results = [None] * world_size
    pending = set(range(world_size))
    owner = {}
    for rank in range(world_size):
        owner[result_conns[rank]] = ("result", rank)
        owner[procs[rank].sentinel] = ("exit", rank)
    for fwd in forwarders:
        owner[fwd.conn] = ("output", fwd)

    def receive(rank):
        try:
            status, *rest = pickle.loads(result_conns[rank].recv_bytes())
        except EOFError:  # the pipe closed without a message: the rank died
            died(rank)
        if status == "ok":
            results[rank] = rest[0]
            pending.discard(rank)
            return
        summary, text = rest
        drain(forwarders, until=time.monotonic() + 0.2)
        raise LaunchError(_("rank {rank} raised {summary}\n\n--- traceback from rank {rank} "
                            "---\n").format(rank=rank, summary=summary) + text, rank=rank,
                          traceback_text=text, exitcode=1, summary=summary)

    def died(rank):
        procs[rank].join(1.0)
        code = procs[rank].exitcode
        drain(forwarders, until=time.monotonic() + 0.2)
        raise LaunchError(
            _("rank {rank} died without reporting a result ({how}); its output above may "
              "say why.").format(rank=rank, how=_exit_description(code)),
            rank=rank, exitcode=code)

    while pending:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            drain(forwarders, until=time.monotonic() + 0.2)
            late = sorted(pending)
            raise LaunchTimeout(
                _("ranks {late} had not finished after {seconds} s (a rank waiting in a "
                  "collective its peers never joined?); all ranks were stopped. Pass a larger "
                  "timeout= if the job is just slow.").format(late=late,
                                                              seconds=f"{timeout:g}"))
        watched = [result_conns[r] for r in pending] + [procs[r].sentinel for r in pending]
        watched += [f.conn for f in forwarders if f.open]
        for obj in wait(watched, timeout=min(remaining, 1.0)):
            kind, what = owner[obj]
            if kind == "output":
                what.pump()
            elif kind == "result" and what in pending:
                receive(what)
            elif kind == "exit" and what in pending:
                if result_conns[what].poll():
                    receive(what)  # it reported (or closed the pipe) just before exiting
                else:
                    died(what)
    return results


def drain(forwarders, until):
    while True:
        live = [f for f in forwarders if f.open]
        remaining = until - time.monotonic()
        if not live or remaining <= 0:
            break
        ready = wait([f.conn for f in live], timeout=remaining)
        if not ready:
            break
        for f in live:
            if f.conn in ready:
                f.pump()
    for f in forwarders:
        f.flush()


def stop(procs) -> None:
    """Terminate, then kill, then reap every rank: no zombies, whatever happened."""
    for proc in procs:
        if proc.exitcode is None:
            proc.terminate()
    deadline = time.monotonic() + 2.0
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.exitcode is None:
            proc.kill()
            proc.join()
