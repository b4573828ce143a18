"""Messages between pipeline stages: tagged sends, or hand-overs in memory on one rank.

Used by :mod:`companion.pipeline.executor` (notebook 04). Every message carries a tag
naming (kind, micro-batch, virtual stage). NCCL ignores tags, so under NCCL a rank
receives each peer's messages in the order that peer sent them
(:meth:`~companion.pipeline.ops.Schedule.sends`) and keeps each until its op asks for it.
Buffers are made on the rank's device (:func:`companion.runtime.device`).
"""
from __future__ import annotations

import collections
import time

import torch
import torch.distributed as dist

from .. import runtime
from .ops import Schedule

_STAMP = 1 << 24  # tag offset of a message's send-time stamp (emulated latency only)


def _tag(kind: str, microbatch: int, virtual_stage: int, virtual_stages: int) -> int:
    return (0 if kind == "F" else 1) + 2 * (virtual_stage + virtual_stages * microbatch)




class Links:
    """Tagged messages between virtual stages: sent, or handed over in memory on one rank."""

    def __init__(self, sched: Schedule, stage: int, ranks, latency: float, shapes, device):
        self.sched, self.stage, self.ranks, self.latency = sched, stage, list(ranks), latency
        self.shapes, self.device = shapes, device
        self.local, self.sends, self.sent_bytes = {}, [], 0
        # NCCL ignores tags, and V layouts consume in another order than their peers
        # send: there each peer's messages are received in the order sent, then kept.
        self.early, self.arrivals = {}, None
        if _in_send_order():
            self.arrivals = {src: collections.deque(sched.sends(src, stage))
                             for src in range(sched.stages)}

    def _recv(self, shape, src, tag):
        """One message and, with a latency, the time it was sent."""
        buf = torch.empty(shape, device=self.device)
        dist.recv(buf, src=self.ranks[src], tag=tag)
        if not self.latency:
            return buf, None
        # On the activation's device: one backend carries both, in the order sent.
        sent = torch.empty(1, dtype=torch.float64, device=self.device)
        dist.recv(sent, src=self.ranks[src], tag=tag + _STAMP)
        return buf, sent.item()

    def receive(self, kind, shape, src_vs, mb):
        """The tensor virtual stage ``src_vs`` produced for ``mb``."""
        vstages = self.sched.virtual_stages
        tag = _tag(kind, mb, src_vs, vstages)
        src = self.sched.placement(src_vs)[0]
        if tag in self.local:
            return self.local.pop(tag)
        if self.arrivals is None:
            buf, sent = self._recv(shape, src, tag)
        else:
            while tag not in self.early:
                k, m, vs = self.arrivals[src].popleft()
                self.early[_tag(k, m, vs, vstages)] = self._recv(
                    self.shapes[vs if k == "F" else vs - 1], src, _tag(k, m, vs, vstages))
            buf, sent = self.early.pop(tag)
        if sent is not None:
            wait = sent + self.latency - time.perf_counter()
            if wait > 0:
                time.sleep(wait)  # still on the wire: the rank sits idle, as on a real link
        return buf

    def send(self, tensor, kind, mb, src_vs, dst_vs):
        tag = _tag(kind, mb, src_vs, self.sched.virtual_stages)
        dst = self.sched.placement(dst_vs)[0]
        if dst == self.stage:
            self.local[tag] = tensor
            return
        self.sends.append(dist.isend(tensor, dst=self.ranks[dst], tag=tag))
        self.sent_bytes += tensor.numel() * tensor.element_size()
        if self.latency:  # perf_counter is one clock for every process on this machine
            stamp = torch.tensor([time.perf_counter()], dtype=torch.float64,
                                 device=self.device)
            self.sends.append(dist.isend(stamp, dst=self.ranks[dst], tag=tag + _STAMP))

    def wait(self):
        for handle in self.sends:
            handle.wait()


def _in_send_order() -> bool:
    return runtime.backend() == "nccl"
