"""DeepSpeed Ulysses (Jacobs et al., 2023): all-to-all from sequence shards to head shards,
local attention, and back. Taught in notebook 06 (``notebooks/06_sequence_parallelism.ipynb``).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from ..collectives import log as comm_log
from ..models import attention

__all__ = ["AllToAll", "seq_to_heads", "heads_to_seq", "ulysses_attention", "p2p_all_to_all"]


def _rank_size(group):
    if not dist.is_initialized():
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


class AllToAll(torch.autograd.Function):
    """Split ``x`` along ``scatter_dim`` into one chunk per rank, exchange, concatenate
    what arrives along ``gather_dim``. Its gradient is the inverse all-to-all."""

    @staticmethod
    def forward(ctx, x, scatter_dim, gather_dim, group, impl):
        ctx.args = (scatter_dim, gather_dim, group, impl)
        n = _rank_size(group)[1]
        outs = comm_log.all_to_all(list(x.chunk(n, dim=scatter_dim)), group,
                                   label="ulysses", impl=impl)
        return torch.cat(outs, dim=gather_dim)

    @staticmethod
    def backward(ctx, grad):
        scatter_dim, gather_dim, group, impl = ctx.args
        n = _rank_size(group)[1]
        outs = comm_log.all_to_all(list(grad.chunk(n, dim=gather_dim)), group,
                                   label="ulysses", impl=impl)
        return torch.cat(outs, dim=scatter_dim), None, None, None, None


def seq_to_heads(x, group=None, impl=None):
    """``[b, H, s/P, d]`` (all heads, my tokens) -> ``[b, H/P, s, d]`` (my heads, all tokens)."""
    return AllToAll.apply(x, 1, 2, group, impl)


def heads_to_seq(x, group=None, impl=None):
    """The inverse of :func:`seq_to_heads`."""
    return AllToAll.apply(x, 2, 1, group, impl)


def p2p_all_to_all():
    """The collectives notebook's point-to-point all-to-all (``companion.collectives``,
    default group only), or None when that module does not provide it."""
    try:
        from ..collectives import all_to_all
    except ImportError:
        return None

    def impl(inputs):
        # Ulysses' chunks all have one shape, so the receivers know it: no shape round.
        return all_to_all(inputs, output_shapes=[t.shape for t in inputs])

    return impl


def ulysses_attention(q, k, v, causal: bool = True, group=None, impl=None):
    """Attention of this rank's query tokens against the whole sequence, Ulysses-style.

    ``impl``: an all-to-all with ``dist.all_to_all``'s contract (``None`` = torch's)."""
    n = _rank_size(group)[1]
    if q.shape[1] % n:
        raise ValueError(f"Ulysses needs heads divisible by the group size: {q.shape[1]} heads "
                         f"on {n} ranks; use a head count that is a multiple of {n} "
                         "(or ring attention, which has no such limit).")
    q, k, v = (seq_to_heads(t, group, impl) for t in (q, k, v))
    return heads_to_seq(attention(q, k, v, causal=causal), group, impl)
