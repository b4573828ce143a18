"""2D attention (LongVILA): Ulysses inside groups of ranks, ring attention across them.
Taught in notebook 06 (``notebooks/06_sequence_parallelism.ipynb``).
"""
from __future__ import annotations

import torch.distributed as dist

from ..validation import positive_int
from .ring import ring_attention
from .ulysses import heads_to_seq, seq_to_heads

__all__ = ["hybrid_groups", "hybrid_attention"]


def hybrid_groups(ulysses_size: int):
    """(ulysses group, ring group) of this rank for ``ulysses_size`` ranks per Ulysses
    group: ranks ``[g*U, (g+1)*U)`` form Ulysses group g; ranks with the same position
    u in their Ulysses group form ring u. Every rank must call this (collectively)."""
    positive_int("ulysses_size", ulysses_size, "pass the ranks per Ulysses group, e.g. 2.")
    n = dist.get_world_size()
    if n % ulysses_size:
        raise ValueError(f"ulysses_size={ulysses_size} must divide the world size {n}.")
    rings = n // ulysses_size
    me = dist.get_rank()
    mine = [None, None]
    for gi in range(rings):  # new_group must be called by every rank, in the same order
        grp = dist.new_group(list(range(gi * ulysses_size, (gi + 1) * ulysses_size)))
        if me // ulysses_size == gi:
            mine[0] = grp
    for u in range(ulysses_size):
        grp = dist.new_group(list(range(u, n, ulysses_size)))
        if me % ulysses_size == u:
            mine[1] = grp
    return tuple(mine)


def hybrid_attention(q, k, v, causal: bool = True, groups=None, trace=None):
    """2D attention: Ulysses all-to-all inside the Ulysses group, so the group's
    contiguous stretch of tokens becomes one ring block of H/U heads; ring attention
    across groups; the inverse all-to-all."""
    ulysses_group, ring_group = groups
    q, k, v = (seq_to_heads(t, ulysses_group) for t in (q, k, v))
    y = ring_attention(q, k, v, causal, ring_group, trace)
    return heads_to_seq(y, ulysses_group)
