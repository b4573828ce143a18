"""Attention over a sequence split across ranks: Ulysses, ring attention, and both (2D).

Taught in notebook 06 (``notebooks/06_sequence_parallelism.ipynb``).

Every rank holds a contiguous shard of the sequence (rank r: tokens
``[r*s/P, (r+1)*s/P)``) as ``q, k, v`` of shape ``[batch, heads, s/P, head_dim]``.
Pointwise layers need nothing more, but every query needs every key, so attention must
communicate:

* **DeepSpeed Ulysses** (Jacobs et al., 2023): an all-to-all turns sequence shards into
  head shards (each rank: all tokens, H/P heads), attention runs locally, a second
  all-to-all turns the result back. Needs H divisible by P.
* **Ring attention** (Liu et al., 2023): queries stay put; K/V blocks travel around a
  ring of ranks by point-to-point sends while each rank accumulates its output with
  the online softmax (running max ``m``, normaliser ``l``), as FlashAttention does
  within a GPU. The backward pass sends K/V around again together with their
  gradient accumulators, which arrive home after P hops.
* **2D / hybrid** (LongVILA's 2D attention): Ulysses inside groups of ranks (fast
  links), ring attention across groups.

All three equal ``companion.models.attention`` on the gathered sequence (tests).
"""
from .block import SequenceParallelBlock, benchmark_layer
from .hybrid import hybrid_attention, hybrid_groups
from .ring import RingAttention, ring_attention
from .runs import compare_attention, layout_probe, volume_sweep
from .ulysses import AllToAll, heads_to_seq, p2p_all_to_all, seq_to_heads, ulysses_attention

__all__ = ["AllToAll", "seq_to_heads", "heads_to_seq", "ulysses_attention", "p2p_all_to_all",
           "RingAttention", "ring_attention", "hybrid_groups", "hybrid_attention",
           "compare_attention", "volume_sweep", "layout_probe", "SequenceParallelBlock",
           "benchmark_layer"]
