"""Start real ``torch.distributed`` ranks from a notebook cell and get their results back.

Taught in notebook 00 (``notebooks/00_launching_ranks.ipynb``); every later notebook
uses it.

Design, and the failure each choice avoids (measured in the field notes):

* **forkserver, preloaded with torch**: ``fork`` hangs once the kernel has run an
  OpenMP op and dies after CUDA was initialised; plain ``spawn`` costs seconds per
  launch because every child imports torch. A forkserver that imported torch once
  forks clean children in ~0.1 s.
* **cloudpickle**: ``mp.spawn`` cannot find functions defined in a notebook cell
  ("Can't get attribute ... on <module '__main__'>"); cloudpickle ships them by value.
* **file rendezvous in a fresh temporary directory**: no fixed port (two notebooks
  never collide), no TCP store in the parent (which timed out under fork), and gloo's
  own sockets pinned to loopback.
* **one pipe per rank for results and two for its output**: results come back as
  Python objects in rank order; every line a rank prints shows up in the cell with a
  ``[rank r]`` prefix, C-level output (a segfault's dump) included.
* **a deadline in the parent**: a rank that raises, dies or hangs turns into a
  :class:`LaunchError` / :class:`LaunchTimeout` within a fraction of a second of being
  noticed, and every other rank is stopped; a ``finally`` block reaps all children
  and removes the temporary directory whatever happened (Ctrl-C included).
"""
from __future__ import annotations

import dataclasses
import faulthandler
import linecache
import multiprocessing as mp
import os
import pickle
import shutil
import signal
import sys
import tempfile
import time
import traceback
from multiprocessing.connection import wait

import cloudpickle
import torch
import torch.distributed as dist
from torch.utils._pytree import tree_map

from . import runtime

__all__ = ["launch", "LaunchError", "LaunchTimeout", "LaunchInfo", "choose_backend",
           "cpu_cores", "max_world_size"]

MAX_RANKS_PER_CORE = 4  # beyond this, gloo ranks spend their time context-switching
_GRACE_S = 5.0  # how long finished ranks get to tear down before they are killed
_PG_TIMEOUT_SLACK_S = 5.0  # ranks' own collective timeout fires after the parent's deadline


class LaunchError(RuntimeError):
    """A rank raised, or died without reporting (segfault, ``os._exit``)."""

    def __init__(self, message: str, rank: int | None = None, traceback_text: str = "",
                 exitcode: int | None = None):
        super().__init__(message)
        self.rank = rank
        self.traceback = traceback_text
        self.exitcode = exitcode


class LaunchTimeout(TimeoutError):
    """The job ran past ``timeout`` seconds; every rank was stopped."""


@dataclasses.dataclass
class LaunchInfo:
    """What the last :func:`launch` in this process did (for notebooks to display)."""

    world_size: int
    backend: str
    reason: str
    threads_per_rank: int
    seconds: float = float("nan")


last_launch: LaunchInfo | None = None
_last_announced: tuple | None = None


def cpu_cores() -> int:
    """Cores this process may run on (respects taskset/cgroup affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS
        return os.cpu_count() or 1


def max_world_size() -> int:
    """Largest CPU world size allowed: ``MAX_RANKS_PER_CORE`` per core, at least 8.

    ``COMPANION_MAX_WORLD_SIZE`` overrides it for machines where you know better.
    """
    override = os.environ.get("COMPANION_MAX_WORLD_SIZE")
    if override:
        return int(override)
    return max(8, MAX_RANKS_PER_CORE * cpu_cores())


def _visible_gpus() -> int:
    # The CPU wheel has no CUDA at all; asking NVML first keeps the CUDA runtime out of
    # the notebook's process (its children must be the only ones to own GPUs).
    if torch.version.cuda is None:
        return 0
    count_nvml = getattr(torch.cuda, "_device_count_nvml", None)
    if count_nvml is not None:
        n = count_nvml()
        if n >= 0:
            return n
    return torch.cuda.device_count()


def choose_backend(backend: str, world_size: int) -> tuple[str, str]:
    """Resolve ``backend`` ("auto", "gloo" or "nccl") and say why, as (backend, reason)."""
    if backend not in ("auto", "gloo", "nccl"):
        raise ValueError(f"backend={backend!r} is not one of 'auto', 'gloo', 'nccl'.")
    gpus = _visible_gpus()
    nccl = dist.is_nccl_available()
    if backend == "nccl":
        if not nccl:
            raise ValueError("backend='nccl' asked for, but this torch build has no NCCL "
                             "(a CPU wheel?); use backend='gloo' or 'auto'.")
        if gpus < world_size:
            raise ValueError(f"backend='nccl' needs one GPU per rank: {world_size} ranks but "
                             f"{gpus} GPU(s) visible; use world_size<={gpus} or backend='gloo'.")
        return "nccl", f"asked for; {gpus} GPU(s), rank r on cuda:r"
    if backend == "gloo":
        return "gloo", "asked for; ranks compute on CPU"
    if gpus >= world_size and nccl:
        return "nccl", f"{gpus} GPU(s) visible, one per rank (rank r on cuda:r)"
    if torch.version.cuda is None:
        return "gloo", "this torch build has no CUDA, so ranks compute on CPU"
    if gpus == 0:
        return "gloo", "no GPU visible, so ranks compute on CPU"
    return "gloo", (f"only {gpus} GPU(s) for {world_size} ranks and NCCL needs one per rank, "
                    "so ranks compute on CPU")


def _validate(world_size, timeout, backend) -> None:
    if not isinstance(world_size, int) or isinstance(world_size, bool) or world_size < 1:
        raise ValueError(f"world_size must be an integer >= 1, got {world_size!r}.")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}.")
    if backend != "nccl" and world_size > max_world_size():
        raise ValueError(
            f"world_size={world_size} is more ranks than this machine can run usefully: "
            f"{cpu_cores()} CPU core(s) allow at most {max_world_size()} CPU ranks "
            f"({MAX_RANKS_PER_CORE} per core). Use a smaller world_size, run under torchrun "
            "on more machines, or set COMPANION_MAX_WORLD_SIZE if you know better.")


_context = None


def _get_context():
    """The forkserver context, preloaded with torch and this package (started once)."""
    global _context
    if _context is None:
        _context = mp.get_context("forkserver")
        _context.set_forkserver_preload(["companion.launcher"])
    return _context


def _die_with_parent() -> None:
    # The forkserver is our parent; it exits with the notebook kernel. Without this a
    # rank stuck in a collective would outlive a killed kernel until its own timeout.
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _interactive_sources() -> dict:
    """Source lines of notebook cells, so a rank's traceback can quote the failing line.

    IPython keeps cell code only in ``linecache`` (entries without an mtime); without
    copying them, a traceback from a rank shows file and line number but no code.
    """
    return {name: entry for name, entry in list(linecache.cache.items())
            if len(entry) == 4 and entry[1] is None}


def _detach_to_cpu(x):
    return x.detach().cpu() if isinstance(x, torch.Tensor) else x


def _rank_main(rank, world_size, backend, init_method, pg_timeout, threads, payload,
               result_w, out_w, err_w):
    """Entry point of one rank (runs in the child process)."""
    _die_with_parent()
    os.dup2(out_w.fileno(), 1)
    os.dup2(err_w.fileno(), 2)
    out_w.close()
    err_w.close()
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(line_buffering=True)
    faulthandler.enable(file=sys.stderr)
    torch.set_num_threads(threads)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank),
                      LOCAL_WORLD_SIZE=str(world_size), OMP_NUM_THREADS=str(threads))
    try:
        fn, args, kwargs, sources = cloudpickle.loads(payload)
        linecache.cache.update(sources)
        runtime.setup_process_group(rank, world_size, backend, init_method, pg_timeout)
        result = tree_map(_detach_to_cpu, fn(*args, **kwargs))
        try:
            message = pickle.dumps(("ok", result), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001
            raise TypeError(f"rank {rank} returned a value that cannot be pickled "
                            f"({exc}); return tensors, numbers, lists or dicts.") from exc
    except BaseException as exc:  # noqa: BLE001 - report everything, KeyboardInterrupt too
        text = traceback.format_exc()
        summary = f"{type(exc).__name__}: {exc}"
        sys.stdout.flush()
        sys.stderr.flush()
        result_w.send_bytes(pickle.dumps(("error", summary, text)))
        os._exit(1)  # peers may be blocked in a collective: skip the tear-down
    result_w.send_bytes(message)
    runtime.teardown_process_group()
    sys.stdout.flush()
    sys.stderr.flush()


class _Forwarder:
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
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def launch(fn, *args, world_size: int = 2, backend: str = "auto", timeout: float = 60.0,
           **kwargs):
    """Run ``fn(*args, **kwargs)`` on ``world_size`` real ranks; return results in rank order.

    Each rank is a separate process with the default process group initialised
    (gloo on CPU, or NCCL with rank r on ``cuda:r`` when there is one GPU per rank), so
    ``fn`` can call ``torch.distributed`` collectives directly. ``fn`` may be defined in
    a notebook cell. Returned tensors come back detached and on the CPU.

    Raises :class:`LaunchError` if a rank raises or dies, :class:`LaunchTimeout` after
    ``timeout`` seconds, and ``ValueError`` for bad arguments. In every case all ranks
    are stopped and nothing (process, file, socket) is left behind.

    ``world_size``, ``backend`` and ``timeout`` are the launcher's own keywords, so
    ``fn`` cannot receive keyword arguments with those names.
    """
    global last_launch, _last_announced
    _validate(world_size, timeout, backend)
    chosen, reason = choose_backend(backend, world_size)
    threads = 1 if chosen == "nccl" else max(1, cpu_cores() // world_size)
    info = LaunchInfo(world_size, chosen, reason, threads)
    if (chosen, reason) != _last_announced:
        print(f"[launch] {chosen} backend: {reason}")
        _last_announced = (chosen, reason)

    payload = cloudpickle.dumps((fn, args, kwargs, _interactive_sources()))
    ctx = _get_context()
    start = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="companion-launch-")
    init_method = "file://" + os.path.join(workdir, "rendezvous")
    procs, result_conns, forwarders = [], [], []
    try:
        for rank in range(world_size):
            result_r, result_w = ctx.Pipe(duplex=False)
            out_r, out_w = ctx.Pipe(duplex=False)
            err_r, err_w = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                target=_rank_main, name=f"companion-rank-{rank}", daemon=True,
                args=(rank, world_size, chosen, init_method, timeout + _PG_TIMEOUT_SLACK_S,
                      threads, payload, result_w, out_w, err_w))
            proc.start()
            for conn in (result_w, out_w, err_w):
                conn.close()  # the child has its own copy; ours would hide EOF
            procs.append(proc)
            result_conns.append(result_r)
            forwarders += [_Forwarder(rank, out_r, "stdout"), _Forwarder(rank, err_r, "stderr")]
        results = _collect(procs, result_conns, forwarders, start + timeout, timeout)
        # Finished ranks are tearing down; give them a moment, then show their last words.
        grace = time.monotonic() + _GRACE_S
        for proc in procs:
            proc.join(max(0.0, grace - time.monotonic()))
        _drain(forwarders, until=time.monotonic() + 0.5)
        info.seconds = time.perf_counter() - start
        last_launch = info
        return results
    finally:
        _stop(procs)
        _drain(forwarders, until=time.monotonic() + 0.5)
        for conn in result_conns + [f.conn for f in forwarders]:
            conn.close()
        shutil.rmtree(workdir, ignore_errors=True)


def _collect(procs, result_conns, forwarders, deadline, timeout):
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
        _drain(forwarders, until=time.monotonic() + 0.2)
        raise LaunchError(f"rank {rank} raised {summary}\n\n--- traceback from rank {rank} ---\n"
                          f"{text}", rank=rank, traceback_text=text, exitcode=1)

    def died(rank):
        procs[rank].join(1.0)
        code = procs[rank].exitcode
        _drain(forwarders, until=time.monotonic() + 0.2)
        raise LaunchError(
            f"rank {rank} died without reporting a result ({_exit_description(code)}); "
            "its output above may say why.", rank=rank, exitcode=code)

    while pending:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            _drain(forwarders, until=time.monotonic() + 0.2)
            late = sorted(pending)
            raise LaunchTimeout(
                f"ranks {late} had not finished after {timeout:g} s (a rank waiting in a "
                "collective its peers never joined?); all ranks were stopped. Pass a larger "
                "timeout= if the job is just slow.")
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


def _drain(forwarders, until):
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


def _stop(procs) -> None:
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
