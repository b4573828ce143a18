"""Data parallelism (ZeRO stage 0): every rank holds the whole model and all-reduces
gradients, overlapping the all-reduce with the rest of backward.

Taught in notebook 03 (``notebooks/03_zero_memory.ipynb``); MIT 6.5940 L19 pages 33-66
and CS336 L8 section 3. Compared in tests with ``torch.nn.parallel.DistributedDataParallel``.

Contract (as in torch's DDP and CS336 assignment 2):

* ``DDP(module)`` broadcasts rank 0's parameters and buffers, so every rank starts equal;
* ``ddp(x)`` is ``ddp.module(x)``;
* during backward, as soon as autograd has accumulated a parameter's gradient a hook
  starts an asynchronous all-reduce of it (or, with ``bucket_size_mb``, of the bucket
  it completes), so communication overlaps the rest of backward. The bucket size is in
  MiB (2^20 bytes), like torch's ``bucket_cap_mb`` (the course's MB is 10^6 bytes:
  ``companion.units``);
* ``finish_gradient_synchronization()`` waits for those all-reduces and averages, so the
  gradients equal single-process gradients of the mean loss over the global batch. It is
  also queued automatically at the end of backward; calling it again is harmless.

``process_group`` restricts all of this to a sub-group (the DP dimension of a device
mesh, notebook 09); ``link=DelayedComm(alpha, beta)`` (:mod:`companion.network.delayed`) sends the
all-reduces through an emulated link of bandwidth ``beta`` instead, and
``ddp.comm.records = []`` times each of them (notebook 10 measures how much of the
communication backward hides, :mod:`companion.overlap`); and ``with ddp.no_sync():`` lets gradients accumulate locally over
several backward passes (micro-batches) and communicates only on the next one outside
it, as torch's DDP does.

Frozen parameters (``requires_grad=False``) are broadcast but never communicated. A tied
parameter is one tensor, so ``module.parameters()`` yields it once and its hook fires
once, after both uses have accumulated into its gradient. Every trainable parameter must
receive a gradient in each backward (torch's ``find_unused_parameters=False``).
"""
from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn

from ..collectives.log import CommLog
from .comm import Collectives
from ..validation import positive_number

__all__ = ["DDP"]


class DDP(nn.Module):
    """Minimal DistributedDataParallel: per-parameter or bucketed async all-reduce."""

    def __init__(self, module: nn.Module, bucket_size_mb: float | None = None,
                 process_group=None, link=None):
        super().__init__()
        if not isinstance(module, nn.Module):
            raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}; "
                            "wrap the model itself, e.g. DDP(model).")
        if bucket_size_mb is not None:
            positive_number("bucket_size_mb", bucket_size_mb,
                            "use e.g. 25, or None for one all-reduce per parameter.")
        self.module = module
        self.group = process_group
        self.comm = Collectives(process_group, link)
        self.world_size = self.comm.world_size
        self.ledger = CommLog(self.world_size)
        self._sync = True
        source = 0 if process_group is None else dist.get_global_rank(process_group, 0)
        with torch.no_grad():
            for tensor in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(tensor, src=source, group=process_group)
                self.ledger.record("broadcast", tensor.numel() * tensor.element_size())
        trainable = [p for p in module.parameters() if p.requires_grad]
        # Backward produces gradients roughly in reverse order of definition, so buckets
        # are filled from the last parameter: the first bucket is ready first.
        self.buckets = self._make_buckets(trainable[::-1], bucket_size_mb)
        self._bucket_of = {id(p): i for i, bucket in enumerate(self.buckets) for p in bucket}
        self._ready = [0] * len(self.buckets)
        self._pending = []  # (work handle, bucket index, flat buffer or None)
        self._callback_queued = False
        for p in trainable:
            p.register_post_accumulate_grad_hook(self._on_grad_ready)

    @staticmethod
    def _make_buckets(params, bucket_size_mb):
        if bucket_size_mb is None:
            return [[p] for p in params]
        limit = bucket_size_mb * 2**20
        buckets, current, size = [], [], 0
        for p in params:
            nbytes = p.numel() * p.element_size()
            if current and size + nbytes > limit:
                buckets.append(current)
                current, size = [], 0
            current.append(p)
            size += nbytes
        if current:
            buckets.append(current)
        return buckets

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally without communicating."""
        previous, self._sync = self._sync, False
        try:
            yield
        finally:
            self._sync = previous

    def _on_grad_ready(self, param: torch.Tensor) -> None:
        if not self._sync:
            return
        if not self._callback_queued:
            # Runs once backward has finished, like torch DDP's final callback.
            torch.autograd.Variable._execution_engine.queue_callback(
                self.finish_gradient_synchronization)
            self._callback_queued = True
        index = self._bucket_of[id(param)]
        self._ready[index] += 1
        if self._ready[index] < len(self.buckets[index]):
            return
        bucket = self.buckets[index]
        if len(bucket) == 1:
            flat = None
            work = self.comm.all_reduce(param.grad, tag=f"bucket {index}")
            nbytes = param.grad.numel() * param.grad.element_size()
        else:
            flat = torch.cat([p.grad.reshape(-1) for p in bucket])
            work = self.comm.all_reduce(flat, tag=f"bucket {index}")
            nbytes = flat.numel() * flat.element_size()
        self.ledger.record("all_reduce", nbytes)
        self._pending.append((work, index, flat))

    def finish_gradient_synchronization(self) -> None:
        """Wait for the gradient all-reduces and divide by the world size (the mean)."""
        for work, index, flat in self._pending:
            work.wait()
            bucket = self.buckets[index]
            if flat is None:
                bucket[0].grad.div_(self.world_size)
                continue
            flat.div_(self.world_size)
            offset = 0
            for p in bucket:
                p.grad.copy_(flat[offset:offset + p.numel()].view_as(p.grad))
                offset += p.numel()
        self._pending.clear()
        self._ready = [0] * len(self.buckets)
        self._callback_queued = False
