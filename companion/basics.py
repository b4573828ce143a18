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


def _whoami_table(results) -> str:
    rows = [f"{'rank':>4}  {'pid':>7}  {'host':<16} {'backend':<7} {'device':<7} threads"]
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
    verdict = "OK" if got == [expected] else "MISMATCH"
    return (f"each rank r contributed r+1; after all_reduce(SUM) every rank holds {got} "
            f"(expected 1+2+...+{n} = {expected:g}): {verdict}")


@experiment("all_reduce", summarize=_all_reduce_summary)
def first_all_reduce() -> dict:
    """Each rank contributes ``rank + 1``; after ``all_reduce`` every rank holds the sum."""
    x = torch.tensor([runtime.rank() + 1.0], device=runtime.device())
    before = x.item()
    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    return {"rank": runtime.rank(), "before": before, "after": x.item()}
