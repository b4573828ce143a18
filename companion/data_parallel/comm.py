"""How DDP and FSDP issue their collectives: asynchronously, straight through
``torch.distributed`` or through an emulated link, each one optionally timed.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``); the emulated link
is :class:`companion.network.delayed.DelayedComm` from notebook 08.

``Collectives(group)`` is what :class:`companion.DDP` and :class:`companion.FSDP` call; it
returns a handle at once and the caller computes until it needs the result
(``handle.wait()``). With ``link=DelayedComm(alpha, beta)`` every collective is really
performed on the link's thread and delivered ``bytes / beta`` later, where ``bytes`` is
what one rank sends in a ring algorithm (CS336 L8 section 2.2;
:func:`companion.collectives.accounting.ring_bytes`):

    all-reduce of S bytes      2 (N - 1) / N * S
    all-gather into S bytes        (N - 1) / N * S
    reduce-scatter of S bytes      (N - 1) / N * S

so ``beta`` is the bandwidth of one rank's link, per direction.

Setting ``records = []`` makes every collective append a dict (times from
``time.perf_counter``, shared by all processes on the machine):

    kind, tag, bytes        "all_reduce" | "all_gather" | "reduce_scatter", a label, ring bytes
    issued                  when the rank handed it over
    start, end              when it occupied the emulated link (nan without a link)
    real_end                when the real loopback collective had finished (nan without)
    wait_start, wait_end    when the rank blocked in ``wait()`` for it (nan if never waited)
"""
from __future__ import annotations

import math
import time

import torch
import torch.distributed as dist

from ..collectives.accounting import ring_bytes

__all__ = ["Collectives"]


class _Handle:
    """One collective in flight; ``wait()`` blocks until its result may be read."""

    def __init__(self, work, record, device=None):
        self.work, self.record, self.done, self.device = work, record, False, device

    def wait(self):
        if self.done:
            return
        t0 = time.perf_counter()
        self.work.wait()
        self.done = True
        if self.record is not None and self.device is not None and self.device.type == "cuda":
            # NCCL's wait() only orders the current stream and returns at once; a timed
            # record must end when the GPU has the result, not when the host asked.
            torch.cuda.synchronize(self.device)
        if self.record is not None:
            self.record["wait_start"], self.record["wait_end"] = t0, time.perf_counter()
            for key, attr in (("start", "link_start_at"), ("end", "ready_at"),
                              ("real_end", "real_done_at")):
                self.record[key] = getattr(self.work, attr, math.nan)


class Collectives:
    """Asynchronous all-reduce, all-gather and reduce-scatter on ``group`` (default: the
    world), or on ``link.group`` through the emulated ``link``."""

    def __init__(self, group=None, link=None):
        if link is not None and not hasattr(link, "submit"):
            raise TypeError(f"link must be a companion.network.delayed.DelayedComm or None, got "
                            f"{type(link).__name__}; build one with DelayedComm(0.0, beta).")
        self.link = link
        self.group = link.group if link is not None else group
        self.world_size = dist.get_world_size(self.group)
        self.records = None  # a list to record into (notebook 10), or None

    def _issue(self, kind, tensor, run, tag):
        nbytes = ring_bytes(kind, tensor.numel() * tensor.element_size(), self.world_size)
        record = None
        if self.records is not None:
            record = {"kind": kind, "tag": tag, "bytes": nbytes, "issued": time.perf_counter(),
                      "start": math.nan, "end": math.nan, "real_end": math.nan,
                      "wait_start": math.nan, "wait_end": math.nan}
            self.records.append(record)
        if self.link is None:
            work = run(True)
        else:  # performed for real on the link's thread, delivered bytes / beta later
            work = self.link.submit(lambda _: run(False), tensor, tag, nbytes)
        return _Handle(work, record, tensor.device)

    def all_reduce(self, tensor: torch.Tensor, tag=None) -> _Handle:
        """Sum ``tensor`` over the ranks, in place."""
        group = self.group
        return self._issue("all_reduce", tensor, lambda a: dist.all_reduce(
            tensor, group=group, async_op=a), tag)

    def all_gather(self, out: torch.Tensor, local: torch.Tensor, tag=None) -> _Handle:
        """``out`` = every rank's ``local``, side by side in rank order."""
        group = self.group
        return self._issue("all_gather", out, lambda a: dist.all_gather_single(
            out, local, group=group, async_op=a), tag)

    def reduce_scatter(self, out: torch.Tensor, packed: torch.Tensor, tag=None) -> _Handle:
        """``out`` = the sum over ranks of this rank's slice of ``packed``."""
        group = self.group
        return self._issue("reduce_scatter", packed, lambda a: dist.reduce_scatter_single(
            out, packed, group=group, async_op=a), tag)
