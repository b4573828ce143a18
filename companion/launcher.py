"""Start real ``torch.distributed`` ranks from a notebook cell and get their results back.

Taught in notebook 00 (``notebooks/00_launching_ranks.ipynb``); every later notebook
uses it.

Design, and the failure each choice avoids:

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
* **a rank function may bring its own result codec** (``fn.result_codec``): the
  exercise checker's ranks run untrusted code, so their results travel as plain data
  that the parent reads without running any code of the rank's
  (:mod:`companion.learning.attempt`).
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
import threading
import time
import traceback

import cloudpickle
import cloudpickle.cloudpickle as _cp
import collections
import io
import types
import torch
import torch.distributed as dist
from torch.utils._pytree import tree_map

from . import runtime
from .backends import backend_for, choose_backend, cpu_cores, max_world_size, validate_launch
from .i18n import _
from .supervisor import Forwarder, LaunchError, LaunchTimeout, collect, drain, stop
from .i18n.errors import message_of
from .validation import accepts, callable_arg, run_preflight

__all__ = ["launch", "LaunchError", "LaunchTimeout", "LaunchInfo", "choose_backend",
           "cpu_cores", "max_world_size", "warm_up"]

_GRACE_S = 5.0  # how long finished ranks get to tear down before they are killed
_PG_TIMEOUT_SLACK_S = 5.0  # ranks' own collective timeout fires after the parent's deadline
_ERROR_LINGER_S = 30.0  # a failed rank waits at most this long for the parent to stop it


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


_context = None
_context_lock = threading.Lock()
_warming: threading.Thread | None = None


def _get_context():
    """The forkserver context, preloaded with torch and this package (started once)."""
    global _context
    with _context_lock:  # a launch during the background warm-up waits for it, once
        if _context is None:
            context = mp.get_context("forkserver")
            # Imported once in the server instead of in every rank: the first optimizer
            # imports torch._dynamo and scikit-learn's loaders import half of SciPy, each
            # costing seconds per rank per launch otherwise.
            context.set_forkserver_preload(["companion.launcher", "torch.optim",
                                            "torch._dynamo", "sklearn.datasets"])
            # The server imports those before its first fork. Fork once here, so that its
            # start (seconds; tens on a loaded machine) never counts against a launch's
            # timeout: an exercise's 30 s must measure the student's code, not the imports.
            warm = context.Process(target=_noop)
            warm.start()
            warm.join()
            _context = context
    return _context


def warm_up(background: bool = True) -> None:
    """Start the forkserver now, so that the first :func:`launch` does not wait for it.

    ``import companion`` calls this in a Jupyter kernel (never in a rank or a script):
    the server imports torch while the student reads the first cells.
    """
    global _warming
    if not background:
        _get_context()
    elif _warming is None and _context is None:
        _warming = threading.Thread(target=_get_context, name="companion-warm-up", daemon=True)
        _warming.start()


def _noop() -> None:
    return None


def _die_with_parent() -> None:
    # The forkserver is our parent; it exits with the notebook kernel. Without this a
    # rank stuck in a collective would outlive a killed kernel until its own timeout.
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _code_keeping_filename(code):
    # cloudpickle >= 3.1 renames every shipped code object's file "<dynamic-code>" (for
    # deterministic payloads). A rank's traceback then cannot name the notebook cell, nor
    # quote its line from the linecache entries shipped below; put the real name back.
    ctor, args = _cp._code_reduce(code)
    return ctor, tuple(code.co_filename if a == "<dynamic-code>" else a for a in args)


class _Pickler(cloudpickle.Pickler):
    dispatch_table = collections.ChainMap({types.CodeType: _code_keeping_filename},
                                          cloudpickle.Pickler.dispatch_table)


def _dumps(obj) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


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
        fn, args, kwargs, sources, plugin = cloudpickle.loads(payload)
        linecache.cache.update(sources)
        runtime.register_plugin(backend, plugin)
        runtime.setup_process_group(rank, world_size, backend, init_method, pg_timeout)
        # gloo connects its pairs lazily during start-up; a rank whose function needs no
        # collective could otherwise finish and close its sockets while a slow peer is
        # still connecting to it ("connectFullMesh failed ... closed by peer"). The same
        # holds at the end, for peers still finishing their last message to it.
        dist.barrier()
        result = tree_map(_detach_to_cpu, fn(*args, **kwargs))
        dist.barrier()
        try:
            codec = getattr(fn, "result_codec", None)
            if codec is not None:
                result = codec.encode(result)
            message = pickle.dumps(("ok", result), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001
            raise TypeError(_("rank {rank} returned a value that cannot be pickled "
                              "({exc}); return tensors, numbers, lists or dicts.").format(
                                rank=rank, exc=exc)) from exc
    except BaseException as exc:  # noqa: BLE001 - report everything, KeyboardInterrupt too
        text = traceback.format_exc()
        summary = f"{type(exc).__name__}: {message_of(exc)}"   # in the student's language
        sys.stdout.flush()
        sys.stderr.flush()
        result_w.send_bytes(pickle.dumps(("error", summary, text)))
        # Stay alive until the parent stops every rank: exiting now would close our
        # sockets and make each peer print its own "connection closed by peer" error,
        # burying the real one. The sleep is bounded in case the parent is gone.
        time.sleep(_ERROR_LINGER_S)
        os._exit(1)
    result_w.send_bytes(message)
    runtime.teardown_process_group()
    sys.stdout.flush()
    sys.stderr.flush()


def launch(fn, *args, world_size: int = 2, backend: str = "auto", timeout: float = 60.0,
           **kwargs):
    """Run ``fn(*args, **kwargs)`` on ``world_size`` real ranks; return results in rank order.

    Each rank is a separate process with the default process group initialised
    (gloo on CPU, or NCCL with rank r on ``cuda:r`` when there is one GPU per rank), so
    ``fn`` can call ``torch.distributed`` collectives directly. ``fn`` may be defined in
    a notebook cell. Returned tensors come back detached and on the CPU.

    Raises :class:`LaunchError` if a rank raises or dies, :class:`LaunchTimeout` after
    ``timeout`` seconds, and ``TypeError``/``ValueError`` for bad arguments (a
    non-callable ``fn``, arguments ``fn`` does not take, a bad world size, or values
    that ``fn``'s :func:`~companion.validation.preflight` check refuses) before any
    rank starts. In every case all ranks
    are stopped and nothing (process, file, socket) is left behind.

    ``world_size``, ``backend`` and ``timeout`` are the launcher's own keywords, so
    ``fn`` cannot receive keyword arguments with those names. ``backend`` may also name
    a backend registered with ``torch.distributed.Backend.register_backend`` (ranks on
    the CPU; the exercise checker's recording group, notebook 00).
    """
    global last_launch, _last_announced
    # Every check before the first fork: a typo must not cost N tracebacks from N ranks.
    callable_arg("fn", fn, "pass the function each rank runs, e.g. launch(my_fn, world_size=2).")
    accepts("fn", fn, args, kwargs)
    plugin = runtime.plugin_backend(backend)
    validate_launch(world_size, timeout, "gloo" if plugin else backend)
    run_preflight(fn, args, kwargs, world_size)  # the rank function's own checks (@preflight)
    chosen, reason = ((backend, _("registered with torch.distributed; ranks compute on CPU"))
                      if plugin else backend_for(fn, backend, world_size))
    threads = 1 if chosen == "nccl" else max(1, cpu_cores() // world_size)
    info = LaunchInfo(world_size, chosen, reason, threads)
    if not plugin and (chosen, reason) != _last_announced:   # the checker's own: no news
        print(_("[launch] {backend} backend: {reason}").format(backend=chosen, reason=reason))
        _last_announced = (chosen, reason)

    codec = getattr(fn, "result_codec", None)
    payload = _dumps((fn, args, kwargs, _interactive_sources(), runtime.plugin_of(backend)))
    ctx = _get_context()
    start = time.perf_counter()
    # The pid in the name lets a test tell its own launches from a concurrent notebook's.
    workdir = tempfile.mkdtemp(prefix=f"companion-launch-{os.getpid()}-")
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
            result_conns.append(codec.reader(result_r) if codec else result_r)
            forwarders += [Forwarder(rank, out_r, "stdout"), Forwarder(rank, err_r, "stderr")]
        results = collect(procs, result_conns, forwarders, start + timeout, timeout)
        if codec is not None:
            results = [codec.decode(rank, data) for rank, data in enumerate(results)]
        # Finished ranks are tearing down; give them a moment, then show their last words.
        grace = time.monotonic() + _GRACE_S
        for proc in procs:
            proc.join(max(0.0, grace - time.monotonic()))
        drain(forwarders, until=time.monotonic() + 0.5)
        info.seconds = time.perf_counter() - start
        last_launch = info
        return results
    finally:
        stop(procs)
        drain(forwarders, until=time.monotonic() + 0.5)
        for conn in result_conns + [f.conn for f in forwarders]:
            conn.close()
        shutil.rmtree(workdir, ignore_errors=True)
