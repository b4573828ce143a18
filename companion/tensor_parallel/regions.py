"""The conjugate operators at the edges of a tensor-parallel region, as autograd functions.

Taught in notebook 05 (``notebooks/05_tensor_parallelism.ipynb``); :mod:`.layers` builds
the parallel modules from them.

* ``f`` (:class:`CopyToTensorParallelRegion`): identity forward, all-reduce backward;
* ``g`` (:class:`ReduceFromTensorParallelRegion`): all-reduce forward, identity
  backward. f and g are each other's duals.
* with Megatron sequence parallelism the region starts with an all-gather along the
  sequence (backward: reduce-scatter) and ends with a reduce-scatter (backward:
  all-gather); :class:`GatherLinearRegather` is the paper's form, which keeps only the
  input shard and gathers it again in backward.

Collectives go through ``companion.collectives.log``, so the notebook can count them.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..collectives import log as comm_log

__all__ = ["CopyToTensorParallelRegion", "ReduceFromTensorParallelRegion",
           "GatherFromSequenceParallelRegion", "ReduceScatterToSequenceParallelRegion",
           "GatherLinearRegather", "f", "g", "sp_all_gather", "sp_reduce_scatter"]


class CopyToTensorParallelRegion(torch.autograd.Function):
    """Megatron's ``f``: identity forward; backward all-reduces the partial input
    gradients that each rank's column shard produced."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return comm_log.all_reduce(grad, ctx.group, label="f"), None


class ReduceFromTensorParallelRegion(torch.autograd.Function):
    """Megatron's ``g``: forward all-reduces the row shards' partial sums; backward is
    the identity (every rank needs the same full output gradient)."""

    @staticmethod
    def forward(ctx, x, group):
        return comm_log.all_reduce(x, group, label="g")

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class GatherFromSequenceParallelRegion(torch.autograd.Function):
    """Sequence parallelism's replacement for ``f``: all-gather the sequence shards
    (dim 1) forward; reduce-scatter the gradient backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return comm_log.all_gather(x, 1, group, label="sp_gather")

    @staticmethod
    def backward(ctx, grad):
        return comm_log.reduce_scatter(grad, 1, ctx.group, label="sp_gather"), None


class ReduceScatterToSequenceParallelRegion(torch.autograd.Function):
    """Sequence parallelism's replacement for ``g``: reduce-scatter the partial sums
    along the sequence forward; all-gather the gradient backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return comm_log.reduce_scatter(x, 1, group, label="sp_scatter")

    @staticmethod
    def backward(ctx, grad):
        return comm_log.all_gather(grad, 1, ctx.group, label="sp_scatter"), None


class GatherLinearRegather(torch.autograd.Function):
    """Column-parallel linear under SP that stores only the *sequence shard* of its
    input (Korthikanti et al., Sec. 4.2.2): all-gather forward, and all-gather again in
    backward for the weight gradient. Saves (t-1)/t of the input's memory for one more
    all-gather per backward."""

    @staticmethod
    def forward(ctx, x, weight, bias, group):
        ctx.group, ctx.has_bias = group, bias is not None
        ctx.save_for_backward(x, weight)
        return F.linear(comm_log.all_gather(x, 1, group, label="sp_gather"), weight, bias)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        full = comm_log.all_gather(x, 1, ctx.group, label="sp_regather")
        grad_x = comm_log.reduce_scatter(grad @ weight, 1, ctx.group, label="sp_gather")
        grad_w = grad.reshape(-1, grad.shape[-1]).t() @ full.reshape(-1, full.shape[-1])
        grad_b = grad.reshape(-1, grad.shape[-1]).sum(0) if ctx.has_bias else None
        return grad_x, grad_w, grad_b, None


def f(x, group=None):
    return CopyToTensorParallelRegion.apply(x, group)


def g(x, group=None):
    return ReduceFromTensorParallelRegion.apply(x, group)


def sp_all_gather(x, group=None):
    return GatherFromSequenceParallelRegion.apply(x, group)


def sp_reduce_scatter(x, group=None):
    return ReduceScatterToSequenceParallelRegion.apply(x, group)


def _identity(x, group=None):
    return x
