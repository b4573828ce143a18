"""First experiments on real ranks: who am I, and a first all-reduce.

Taught in notebook 00 (``notebooks/00_launching_ranks.ipynb``). Both run under
``companion.launch``, ``python -m companion run NAME`` and ``torchrun -m companion run NAME``.
"""
from __future__ import annotations

import os
import socket

import torch
import torch.distributed as dist

from . import runtime
from .experiments import experiment
from .i18n import _
from .validation import positive_int, preflight


def _pad(text: str, width: int) -> str:
    """``text`` left-aligned in ``width`` terminal columns (a hanzi takes two)."""
    import unicodedata
    wide = sum(unicodedata.east_asian_width(c) in "WF" for c in text)
    return text + " " * max(0, width - len(text) - wide)


def _whoami_table(results) -> str:
    rows = [f"{'rank':>4}  {'pid':>7}  {_pad(_('host'), 16)} {_pad(_('backend'), 7)} "
            f"{_pad(_('device'), 7)} {_('threads')}"]
    rows += [f"{r['rank']:>4}  {r['pid']:>7}  {r['host'][:16]:<16} {r['backend']:<7} "
             f"{r['device']:<7} {r['threads']}" for r in results]
    return "\n".join(rows)


@experiment("whoami", summarize=_whoami_table)
def whoami() -> dict:
    """Report this rank's identity: rank, world size, process id, host, backend, device."""
    return {
        "rank": runtime.rank(),
        "world_size": runtime.world_size(),
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "backend": runtime.backend(),
        "device": str(runtime.device()),
        "threads": torch.get_num_threads(),
    }


def _all_reduce_summary(results) -> str:
    n = len(results)
    expected = n * (n + 1) / 2
    got = sorted({r["after"] for r in results})
    message = (_("each rank r contributed r+1; after all_reduce(SUM) every rank holds {got} "
                 "(expected 1+2+...+{n} = {expected}): OK") if got == [expected] else
               _("each rank r contributed r+1; after all_reduce(SUM) every rank holds {got} "
                 "(expected 1+2+...+{n} = {expected}): MISMATCH"))
    return message.format(got=got, n=n, expected=f"{expected:g}")


@experiment("all_reduce", summarize=_all_reduce_summary)
def first_all_reduce() -> dict:
    """Each rank contributes ``rank + 1``; after ``all_reduce`` every rank holds the sum."""
    x = torch.tensor([runtime.rank() + 1.0], device=runtime.device())
    before = x.item()
    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    return {"rank": runtime.rank(), "before": before, "after": x.item()}


def _check_n(n) -> None:
    positive_int("n", n, "pass the number of elements, e.g. n=4.")


@preflight(_check_n)
def local_values(n: int = 4) -> torch.Tensor:
    """The tensor rank r holds in notebook 00's exercise: ``(r + 1) * [0, 1, ..., n-1]``."""
    _check_n(n)
    return (runtime.rank() + 1.0) * torch.arange(float(n), device=runtime.device())


@preflight(_check_n)
def average_across_ranks_reference(n: int = 4) -> torch.Tensor:
    """Notebook 00 exercise, reference: every rank ends with the mean of all ranks' values.

    Sum with one all-reduce, then divide by the world size (gloo also offers
    ``ReduceOp.AVG``, but NCCL only gained it in 2.10 and the division is the lesson).
    """
    x = local_values(n)
    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    return x / runtime.world_size()


def launch_overhead(world_sizes=(1, 2, 4, 8), repeats: int = 5) -> dict[int, list[float]]:
    """Seconds from ``launch()`` to results for a trivial all-reduce, per world size.

    Runs in the notebook's process (it launches ranks itself); notebook 00 plots it and
    ``benchmarks/launcher.py`` prints it next to ``torch.multiprocessing.spawn``.
    """
    import time

    from .backends import validate_launch
    from .launcher import launch

    for n in world_sizes:  # all of them before the first launch, not after a minute of runs
        validate_launch(n, 60.0, "auto")
    positive_int("repeats", repeats, "pass how many launches to time per world size, e.g. 5.")
    timings = {}
    for n in world_sizes:
        timings[n] = []
        for _repeat in range(repeats):
            start = time.perf_counter()
            launch(first_all_reduce, world_size=n)
            timings[n].append(time.perf_counter() - start)
    return timings
