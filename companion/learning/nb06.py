"""Notebook 06's exercises (``notebooks/06_sequence_parallelism.ipynb``): attention over a
sequence split across ranks, and expert parallelism.

* ``06.ulysses-a2a`` (warm-up, implement): DeepSpeed-Ulysses' all-to-all from sequence
  shards to head shards, with exactly one ``all_to_all``.
* ``06.ring-attention`` (core, diagnose): a colleague's causal ring attention hangs; the
  fix must equal causal attention, make P-1 hops, and skip the blocks the mask hides
  (its matrix products are counted, :mod:`companion.learning.nb06_checks`).
* ``06.moe-dispatch`` (stretch, implement): dropless expert-parallel dispatch: the counts
  first, then every token to its expert's owner, with no padding on the wire.

Every rank-side function the exercises use is defined here; shapes are small and fixed
so that a check costs about a second.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .exercise import Exercise, register
from .nb06_checks import MatmulFlops
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
    id="06.ulysses-a2a", level="warm-up", kind="implement",
    title="Ulysses: sequence shards to head shards",
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
           "torch.distributed's all-to-all works on lists: the j-th tensor you hand it goes "
           "to rank j, and the i-th tensor it fills is what rank i sent. The receiving list "
           "must exist before the call, with the shapes that will arrive: here the shapes "
           "of your own pieces."),
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


_BLOCKS = "K/V blocks computed"


def ring_expected(q, k, v):
    """Causal attention over the whole sequence, this rank's query rows; rank r computes
    r + 1 K/V blocks (its own, masked, and every earlier rank's)."""
    from ..models import attention

    rank, n = dist.get_rank(), dist.get_world_size()
    return {"output": attention(*_ring_full(), causal=True).chunk(n, dim=2)[rank],
            _BLOCKS: rank + 1}


def ring_adapter(candidate, q, k, v):
    """Run the candidate and count its matrix products in K/V blocks: a block's scores
    and its weighted sum of values are two products of 2 b H (s/P)^2 d flops each."""
    with MatmulFlops() as counter:
        out = candidate(q, k, v)
    per_block = 4 * q.numel() * q.shape[-2]
    return {"output": out, _BLOCKS: round(counter.flops / per_block, 2)}


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
    id="06.ring-attention", level="core", kind="diagnose",
    title="fix a causal ring attention that hangs", student_name="my_ring_attention",
    task="A colleague's `broken_causal_ring(q, k, v)` (in the notebook) is meant to be "
         "**causal** ring attention: rank r holds the query, key and value blocks of its "
         "tokens, `[b, H, s/P, d]` (float64), passes the K/V block it holds to rank r+1 "
         "while receiving the next from rank r-1, P-1 hops in all, and merges each block "
         "with the online softmax; a block the causal mask hides entirely is skipped, no "
         "scores computed for it. On 4 real ranks it hangs. Find out why, and write the "
         "fixed `my_ring_attention(q, k, v)`. The checker compares it with causal "
         "attention over the whole sequence, checks that only point-to-point messages to "
         "the next rank and from the previous one carried P-1 K/V blocks, and counts your "
         "matrix products: rank r must compute r+1 blocks, its own and every earlier "
         "rank's.",
    hints=("Follow one rank through the loop. At step t, which K/V block does it hold, that "
           "is, on which rank did that block start? Write it down for rank 1 at every step, "
           "then compare with the colleague's j.",
           "A ring only moves if every rank passes on every block it receives, except at the "
           "last step, whether or not it uses the block itself. What does a rank that skips "
           "a block do to its neighbour?",
           "Count, per rank, the blocks it should compute: its own (with the triangular "
           "mask) and those that started on earlier ranks, r+1 on rank r. If your fix "
           "computes every block and masks the later ones away, the values are right but "
           "the count is not."),
    inputs=_ring_inputs, expected=ring_expected, adapter=ring_adapter,
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
    timeout=20.0,   # a ring that stops turning hangs until then
    context="import math\nimport torch\nimport torch.distributed as dist\nimport companion",
))


# ---- 06.moe-dispatch (stretch) -------------------------------------------------------
N_TOKENS, N_EXPERTS, D_TOKEN = 8, 8, 4


def _moe_inputs(rank: int, world_size: int) -> tuple:
    gen = torch.Generator().manual_seed(100 + rank)   # each rank routes its own tokens
    tokens = torch.randn(N_TOKENS, D_TOKEN, generator=gen)
    expert = torch.randint(0, N_EXPERTS, (N_TOKENS,), generator=gen)
    return tokens, expert, N_EXPERTS


def dispatch_reference(tokens, expert, n_experts):
    """Counts first (one all-to-all of E integers), then the tokens sorted by expert, each
    rank's piece exactly as long as the counts say (a second all-to-all)."""
    n = dist.get_world_size()
    per = n_experts // n
    counts = torch.bincount(expert, minlength=n_experts)
    arriving = torch.empty_like(counts)
    dist.all_to_all_single(arriving, counts)          # E/P counts from and to every rank
    send = tokens[torch.argsort(expert, stable=True)]
    out_sizes = arriving.view(n, per).sum(dim=1).tolist()
    received = tokens.new_empty(sum(out_sizes), tokens.shape[1])
    dist.all_to_all_single(received, send, out_sizes, counts.view(n, per).sum(dim=1).tolist())
    return received, arriving.view(n, per)


def _dropless_bytes(rank: int, world_size: int, calls) -> str | None:
    tokens = N_TOKENS * D_TOKEN * 4
    sizes = [c.bytes for c in calls]
    if len(calls) != 2:
        return (f"made {summary(calls)}; dropless dispatch is two all-to-alls: the counts, "
                "then the tokens")
    if tokens not in sizes:
        return (f"its all-to-alls carried {sizes} bytes; the tokens' exchange hands over "
                f"this rank's {N_TOKENS} tokens of {D_TOKEN} floats, {tokens} bytes, no more "
                "(no padding: every token is sent once, and only once)")
    counts = sizes[1 - sizes.index(tokens)]
    if counts > 8 * N_EXPERTS:
        return (f"the counts' exchange carried {counts} bytes; one integer per expert is at "
                f"most {8 * N_EXPERTS}")
    return None


MOE_DISPATCH = register(Exercise(
    id="06.moe-dispatch", level="stretch", kind="implement",
    title="expert parallelism: dropless dispatch", student_name="my_dispatch",
    task="Each rank routed its own `tokens` `[T, d]`: token t goes to expert `expert[t]` "
         "(top-1), and rank j owns experts `j*E/P ... (j+1)*E/P - 1`. With a capacity, "
         "dispatch is one all-to-all of padded buffers and drops what does not fit; here "
         "no token is dropped and none is padded. Write `my_dispatch(tokens, expert, "
         "n_experts)` that sends every token to its expert's owner and returns "
         "`(received, counts)`: `counts` `[P, E/P]` (integers) says how many tokens rank i "
         "sent to this rank's e-th expert, and `received` `[counts.sum(), d]` holds those "
         "tokens ordered by source rank, then expert, then the source's token order. "
         "Checked on 4 real ranks with 8 experts and 8 tokens per rank, routed unevenly: "
         "the values on every rank, and exactly two all-to-alls, one of at most one integer "
         "per expert and one carrying this rank's tokens, each exactly once.",
    hints=("A receiver must allocate its buffer before the exchange, and with no capacity "
           "it cannot know how many tokens each source will send it. What could every rank "
           "learn first, and how cheaply?",
           "Two exchanges: first every rank tells every owner how many of its tokens go to "
           "each of that owner's experts (a small integer tensor, the same size from every "
           "rank); then the tokens themselves, this rank's send buffer ordered by "
           "destination expert, which also orders it by destination rank.",
           "torch.distributed's all_to_all_single takes one flat send buffer cut into "
           "consecutive pieces of given sizes, one per destination rank, and the sizes of "
           "the pieces to receive; both lists follow from the counts, summed over each "
           "rank's experts. A stable sort keeps each expert's tokens in their order."),
    inputs=_moe_inputs, reference=dispatch_reference,
    forbidden={"companion.learning.nb06.dispatch_reference":
               "it is the package's solution to this exercise",
               "companion.sequence_parallel.moe.route": "it is the package's router bookkeeping",
               "companion.sequence_parallel.moe.dispatch": "it is the package's dispatch",
               "companion.sequence_parallel.moe.MoE.dispatch": "it is the package's dispatch",
               "companion.sequence_parallel.moe.ExpertParallelMoE": "it is the package's expert-parallel layer",
               "companion.sequence_parallel.moe_balance.dropless_forward": "it is the package's dispatch",
               "companion.sequence_parallel.moe_nodes.two_hop_dispatch": "it is the package's dispatch",
               "companion.collectives.log.all_to_all_rows": "it is the package's all-to-all wrapper; call "
                                                    "torch.distributed yourself",
               **_PACKAGE_A2A},
    pattern=all_of(only(*_A2A, why="expert parallelism dispatches with all-to-alls"),
                   per_rank(_dropless_bytes)),
    pure=True, world_size=4,
    context="import torch\nimport torch.distributed as dist\nimport companion",
))
