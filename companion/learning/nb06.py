"""Notebook 06's exercises (``notebooks/06_sequence_parallelism.ipynb``): attention over a
sequence split across ranks, and expert parallelism.

* ``06.ulysses-a2a`` (warm-up): DeepSpeed-Ulysses' all-to-all from sequence shards to
  head shards, with exactly one ``all_to_all``.
* ``06.ring-attention`` (core): ring attention's forward with the online softmax, K/V
  blocks passed to the next rank, P-1 hops.
* ``06.moe-dispatch`` (stretch): expert parallelism's token dispatch: pack tokens into
  per-expert capacity buffers and send each to the expert's owner with one all-to-all.

Every rank-side function the exercises use is defined here; shapes are small and fixed
so that a check costs about a second.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

from .exercise import Exercise, register
from .patterns import all_of, counts, only, per_rank, summary
from .watch import P2P

_A2A = ("all_to_all", "all_to_all_single")
_ULYSSES = "companion.sequence_parallel.ulysses."
_PACKAGE_A2A = {
    "companion.collectives.log.all_to_all": "it is the package's all-to-all wrapper; call "
                                     "torch.distributed yourself",
    "companion.collectives.primitives.all_to_all": "it is notebook 01's point-to-point "
                                                   "all-to-all; here use the collective",
    _ULYSSES + "AllToAll": "it is the package's Ulysses all-to-all",
}


# ---- 06.ulysses-a2a (warm-up) --------------------------------------------------------
ULYSSES_SHAPE = (2, 8, 8, 2)   # batch, heads, sequence, head_dim: 8 heads, so 2 per rank


def _probe_shard(rank: int, world_size: int) -> tuple:
    """This rank's sequence shard of a tensor whose entries encode (batch, head,
    position, feature): every number says where it came from."""
    full = torch.arange(torch.Size(ULYSSES_SHAPE).numel(), dtype=torch.float32)
    return (full.view(ULYSSES_SHAPE).chunk(world_size, dim=2)[rank].clone(),)


def seq_to_heads_reference(x):
    from ..sequence_parallel.ulysses import seq_to_heads
    return seq_to_heads(x)


ULYSSES_A2A = register(Exercise(
    id="06.ulysses-a2a", level="warm-up", title="Ulysses: sequence shards to head shards",
    student_name="my_seq_to_heads",
    task="`x` is this rank's sequence shard `[b, H, s/P, d]` (all heads, tokens "
         "`r*s/P ...`). Return `[b, H/P, s, d]`: **all tokens** of this rank's heads, rank r "
         "holding heads `r*H/P ... (r+1)*H/P - 1`, with exactly one `dist.all_to_all`. The "
         "checker feeds a tensor whose entries encode batch, head, position and feature, "
         "on 4 real ranks with 8 heads.",
    hints=("After the exchange rank j must hold heads j*H/P ... (j+1)*H/P - 1 of every token. "
           "Which part of your shard does rank j need, and where in the result does what "
           "arrives from rank i belong?",
           "Cut x into P pieces along the head dimension (1): piece j goes to rank j. What "
           "arrives from rank i are tokens i*s/P ...: put the pieces side by side along the "
           "sequence dimension (2), in rank order.",
           "`dist.all_to_all(outputs, inputs)` sends `inputs[j]` to rank j and fills "
           "`outputs[i]` with what rank i sent; allocate `outputs` with `torch.empty_like`."),
    inputs=_probe_shard, reference=seq_to_heads_reference,
    forbidden={_ULYSSES + "seq_to_heads": "it is the package's solution to this exercise",
               _ULYSSES + "heads_to_seq": "it is the package's Ulysses all-to-all",
               _ULYSSES + "ulysses_attention": "it is the package's Ulysses attention",
               "companion.sequence_parallel.hybrid.hybrid_attention":
               "it is the package's 2D attention",
               "companion.learning.nb06.seq_to_heads_reference":
               "it is the package's solution to this exercise",
               **_PACKAGE_A2A},
    pattern=all_of(only(*_A2A, why="Ulysses re-partitions with an all-to-all"),
                   counts({_A2A: 1}, why="one exchange re-partitions the whole tensor")),
    pure=True, world_size=4,
    context="import torch\nimport torch.distributed as dist\nimport companion",
))


# ---- 06.ring-attention (core) --------------------------------------------------------
RING_SHAPE = (1, 2, 16, 4)   # batch, heads, sequence (4 tokens per rank on 4 ranks), head_dim


def _ring_full():
    gen = torch.Generator().manual_seed(7)   # the same full q, k, v on every rank
    return [torch.randn(RING_SHAPE, generator=gen, dtype=torch.float64) for _ in range(3)]


def _ring_inputs(rank: int, world_size: int) -> tuple:
    return tuple(t.chunk(world_size, dim=2)[rank].clone() for t in _ring_full())


def ring_expected(q, k, v):
    """Full (non-causal) attention over the whole sequence, this rank's query rows."""
    from ..models import attention

    rank, n = dist.get_rank(), dist.get_world_size()
    return attention(*_ring_full(), causal=False).chunk(n, dim=2)[rank]


def _kv_block_bytes(world_size: int) -> int:
    b, h, s, d = RING_SHAPE
    return 2 * b * h * (s // world_size) * d * 8   # one K and one V block, float64


def _ring_hops(rank: int, world_size: int, calls) -> str | None:
    nxt, prv = (rank + 1) % world_size, (rank - 1) % world_size
    for c in calls:
        if c.name not in P2P:
            return (f"called {c.name}; in ring attention the K/V blocks travel between "
                    "neighbours by point-to-point messages (isend/irecv), nothing else")
        if c.peer is None:
            # batch_isend_irecv passes the peer as group_dst/group_src, which the watcher
            # does not read yet; the values and the byte count still check such a ring.
            continue
        if c.name in ("send", "isend") and c.peer != nxt:
            return f"sent to rank {c.peer}; in the ring rank {rank} sends only to rank {nxt}"
        if c.name in ("recv", "irecv") and c.peer != prv:
            return (f"received from rank {c.peer}; in the ring rank {rank} receives only from "
                    f"rank {prv}")
    sent = sum(c.bytes for c in calls if c.name in ("send", "isend"))
    need = (world_size - 1) * _kv_block_bytes(world_size)
    if sent != need:
        return (f"sent {sent} bytes ({summary(calls)}); P-1 = {world_size - 1} hops of one K "
                f"and one V block ({_kv_block_bytes(world_size)} bytes a hop) are {need}: "
                "after P-1 hops every block has visited every rank")
    return None


RING_ATTENTION = register(Exercise(
    id="06.ring-attention", level="core", title="ring attention with the online softmax",
    student_name="my_ring_attention",
    task="Rank r holds the query, key and value blocks of its tokens, `q, k, v` of shape "
         "`[b, H, s/P, d]` (float64). Write `my_ring_attention(q, k, v)`: the attention of "
         "**its queries against every token's keys** (no causal mask), returned as "
         "`[b, H, s/P, d]`. Keep the queries where they are; pass the K/V block you hold "
         "to rank r+1 while receiving the next one from rank r-1, P-1 hops in all, and "
         "merge each block into a running max, normaliser and output with the online "
         "softmax. The checker compares with full attention on the whole sequence, and "
         "checks that only point-to-point messages to the next rank and from the previous "
         "one were used, carrying P-1 K/V blocks.",
    hints=("Three running quantities per query row: the largest score so far m, the sum l "
           "of exp(score - m), and the unnormalised output o. A new block can only raise m; "
           "what must then happen to the l and o you already have?",
           "For a block with scores S: m_new = max(m, rowmax S); rescale l and o by "
           "exp(m - m_new), then add the block's exp(S - m_new) sums and its "
           "exp(S - m_new) @ V. Start from m = -inf, l = 0, o = 0; the answer is o / l.",
           "A ring hop: post `dist.isend(block, next)` and `dist.irecv(buffer, prev)` (or one "
           "`dist.batch_isend_irecv` of `dist.P2POp`s), compute with the block you hold, then "
           "`.wait()` and swap in the received block. The last block is not sent on.",
           "Scores of a block: `q @ kb.transpose(-2, -1) / sqrt(d)`; `torch.maximum`, "
           "`amax(dim=-1)` and `unsqueeze(-1)` do the bookkeeping."),
    inputs=_ring_inputs, expected=ring_expected,
    forbidden={"companion.sequence_parallel.ring.ring_attention":
               "it is the package's solution to this exercise",
               "companion.sequence_parallel.ring.RingAttention":
               "it is the package's solution to this exercise",
               "companion.sequence_parallel.hybrid.hybrid_attention":
               "it is the package's 2D attention",
               "companion.collectives.log.exchange": "it is the package's ring hop; post the isend "
                                              "and irecv yourself",
               "companion.models.attention": "it computes full attention in one call; the "
                                             "exercise is to merge block by block"},
    pattern=per_rank(_ring_hops), pure=True, rtol=0.0, atol=1e-12, world_size=4,
    context="import math\nimport torch\nimport torch.distributed as dist\nimport companion",
))


# ---- 06.moe-dispatch (stretch) -------------------------------------------------------
N_TOKENS, N_EXPERTS, CAPACITY, D_TOKEN = 8, 8, 2, 4


def _moe_inputs(rank: int, world_size: int) -> tuple:
    gen = torch.Generator().manual_seed(100 + rank)   # each rank routes its own tokens
    tokens = torch.randn(N_TOKENS, D_TOKEN, generator=gen)
    expert = torch.randint(0, N_EXPERTS, (N_TOKENS,), generator=gen)
    return tokens, expert, N_EXPERTS, CAPACITY


def dispatch_reference(tokens, expert, n_experts, capacity):
    """Pack by arrival order (drop past capacity), then one all-to-all to the owners."""
    n = dist.get_world_size()
    onehot = F.one_hot(expert, n_experts)
    slot = ((onehot.cumsum(dim=0) - 1) * onehot).sum(dim=-1)   # arrival order per expert
    keep = slot < capacity
    buf = tokens.new_zeros(n_experts, capacity, tokens.shape[-1])
    buf[expert[keep], slot[keep]] = tokens[keep]
    send = [c.contiguous() for c in buf.chunk(n, dim=0)]
    recv = [torch.empty_like(c) for c in send]
    dist.all_to_all(recv, send)
    return torch.stack(recv)


MOE_DISPATCH = register(Exercise(
    id="06.moe-dispatch", level="stretch", title="expert parallelism: dispatch tokens",
    student_name="my_dispatch",
    task="Each rank routed its own `tokens` `[T, d]`: token t goes to expert `expert[t]` "
         "(top-1). Rank j owns experts `j*E/P ... (j+1)*E/P - 1`. Write "
         "`my_dispatch(tokens, expert, n_experts, capacity)`: pack the tokens into a "
         "`[E, capacity, d]` buffer (expert e's slots filled by its tokens in token order; "
         "a token past its expert's capacity is **dropped**; empty slots are zero), send "
         "each expert's slots to the expert's owner with **one** all-to-all, and return what "
         "arrived as `[P, E/P, capacity, d]`: entry `[i, e, c]` is slot c of this rank's "
         "e-th expert, sent by rank i. Checked on 4 real ranks with 8 experts, 8 tokens per "
         "rank and capacity 2, so some tokens are dropped.",
    hints=("Static shapes make the exchange simple: every rank sends every other rank the "
           "same amount, capacity slots for each expert that rank owns, used or not.",
           "Fill the buffer with one counter per expert: walk the tokens in order, put a "
           "token in its expert's next free slot, or drop it when the expert is full.",
           "Experts are numbered so that the buffer's first E/P rows belong to rank 0, the "
           "next E/P to rank 1: `buf.chunk(P, dim=0)` is the list of what each rank gets.",
           "`dist.all_to_all(outputs, inputs)` with `outputs = [torch.empty_like(c) for c in "
           "inputs]`; `torch.stack(outputs)` is the `[P, E/P, capacity, d]` result."),
    inputs=_moe_inputs, reference=dispatch_reference,
    forbidden={"companion.learning.nb06.dispatch_reference":
               "it is the package's solution to this exercise",
               "companion.sequence_parallel.moe.route": "it is the package's router bookkeeping",
               "companion.sequence_parallel.moe.dispatch": "it is the package's dispatch",
               "companion.sequence_parallel.moe.MoE.dispatch": "it is the package's dispatch",
               "companion.sequence_parallel.moe.ExpertParallelMoE": "it is the package's expert-parallel layer",
               **_PACKAGE_A2A},
    pattern=all_of(only(*_A2A, why="expert parallelism dispatches with an all-to-all"),
                   counts({_A2A: 1}, why="static capacity buffers need a single exchange")),
    pure=True, world_size=4,
    context="import torch\nimport torch.distributed as dist\nimport companion",
))
