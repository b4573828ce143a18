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
from __future__ import annotations

import math

import torch
import torch.distributed as dist

from . import comm_log
from .experiments import experiment
from .models import attention
from .validation import one_of, positive_int, preflight

__all__ = ["SequenceParallelBlock", "benchmark_layer", "AllToAll", "seq_to_heads", "heads_to_seq", "ulysses_attention", "RingAttention",
           "ring_attention", "hybrid_groups", "hybrid_attention", "p2p_all_to_all"]


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
        from .collectives import all_to_all
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


def _neighbours(group):
    i, n = _rank_size(group)
    to_global = (lambda r: dist.get_global_rank(group, r)) if group is not None else (lambda r: r)
    return i, n, to_global((i + 1) % n), to_global((i - 1) % n)


def _block_scores(q, k, scale, causal, i, j):
    """Scores of query block i against key block j, or None when causal masks it all."""
    if causal and j > i:
        return None
    s = q @ k.transpose(-2, -1) * scale
    if causal and j == i:  # the diagonal block: the usual lower-triangular mask
        mask = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~mask, float("-inf"))
    return s


class RingAttention(torch.autograd.Function):
    """Ring attention with a hand-written backward (torch has no autograd for send/recv)."""

    @staticmethod
    def forward(ctx, q, k, v, causal, group, trace):
        i, n, nxt, prv = _neighbours(group)
        scale = 1.0 / math.sqrt(q.shape[-1])
        m = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)
        o = torch.zeros_like(q)
        kb, vb = k, v
        for t in range(n):
            j = (i - t) % n  # the K/V block this rank holds at step t
            # Start passing this block on before computing with it: the hop overlaps
            # the block's attention (the point of ring attention on real hardware).
            pending = (comm_log.exchange([kb, vb], nxt, prv, label="ring_kv", async_op=True)
                       if t < n - 1 else None)
            s = _block_scores(q, kb, scale, causal, i, j)
            if s is not None:  # online softmax: rescale what we had to the new running max
                m_new = torch.maximum(m, s.amax(dim=-1))
                p = torch.exp(s - m_new.unsqueeze(-1))
                alpha = torch.exp(m - m_new)
                l = l * alpha + p.sum(dim=-1)
                o = o * alpha.unsqueeze(-1) + p @ vb
                m = m_new
            if trace is not None:
                trace.append({"phase": "forward", "step": t, "rank": i, "kv_block": j,
                              "computed": s is not None})
            if pending is not None:
                kb, vb = pending()
        out = o / l.unsqueeze(-1)
        lse = m + torch.log(l)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.args = (causal, group, scale)
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        causal, group, scale = ctx.args
        i, n, nxt, prv = _neighbours(group)
        dout = dout.contiguous()
        delta = (dout * out).sum(dim=-1, keepdim=True)  # rowsum(dO * O), as in FlashAttention
        dq = torch.zeros_like(q)
        kb, vb, dkb, dvb = k, v, torch.zeros_like(k), torch.zeros_like(v)
        for t in range(n):
            j = (i - t) % n
            # K/V can travel on while we compute; dK/dV must wait for this block's update.
            pending = (comm_log.exchange([kb, vb], nxt, prv, label="ring_kv", async_op=True)
                       if t < n - 1 else None)
            s = _block_scores(q, kb, scale, causal, i, j)
            if s is not None:
                p = torch.exp(s - lse.unsqueeze(-1))  # the softmax, rebuilt from the saved lse
                dvb = dvb + p.transpose(-2, -1) @ dout
                ds = p * (dout @ vb.transpose(-2, -1) - delta)
                dq = dq + ds @ kb * scale
                dkb = dkb + ds.transpose(-2, -1) @ q * scale
            if n == 1:
                break
            # The gradient accumulators follow their K/V block; after n hops they are
            # back on the rank that owns the block.
            dkb, dvb = comm_log.exchange([dkb, dvb], nxt, prv, label="ring_dkv")
            if pending is not None:
                kb, vb = pending()
        return dq, dkb, dvb, None, None, None


def ring_attention(q, k, v, causal: bool = True, group=None, trace: list | None = None):
    """Attention of this rank's query block against all K/V blocks passed around a ring.

    ``trace``: a list that receives one dict per forward step (which K/V block was
    here, whether it was computed or skipped by the causal mask) for the animation."""
    return RingAttention.apply(q, k, v, causal, group, trace)


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


def _max_diff(a, b) -> float:
    return (a.detach().double() - b.detach().double()).abs().max().item()


def _attention_summary(results: list) -> str:
    r = results[0]
    return (f"max |diff| vs full attention: output {max(x['out'] for x in results):.1e}, "
            f"grads {max(x['grads'] for x in results):.1e}; collectives per rank: "
            f"forward {r['forward']}, backward {r['backward']}")


def _check_seq(seq, world_size) -> None:
    if seq % world_size:
        raise ValueError(f"seq={seq} is not divisible by {world_size} ranks; use a multiple of "
                         f"{world_size}.")


def _check_attention(method, batch, heads, seq, head_dim, dtype, ulysses_size,
                     world_size=1) -> None:
    one_of("method", method, ("ulysses", "ring", "hybrid"))
    one_of("dtype", dtype, ("float64", "float32", "bfloat16", "float16"))
    for name, value in (("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", head_dim),
                        ("ulysses_size", ulysses_size)):
        positive_int(name, value, f"pass a whole number such as {name}=8.")
    _check_seq(seq, world_size)
    group = {"ulysses": world_size, "hybrid": ulysses_size}.get(method)
    if method == "hybrid" and world_size % ulysses_size:
        raise ValueError(f"ulysses_size={ulysses_size} must divide the world size {world_size}.")
    if group and heads % group:
        raise ValueError(f"Ulysses needs heads divisible by the group size: {heads} heads "
                         f"over {group} ranks; use a multiple of {group} heads.")


@experiment("sp_attention", summarize=_attention_summary)
@preflight(_check_attention)
def compare_attention(method: str = "ring", causal: bool = True, batch: int = 2,
                      heads: int = 4, seq: int = 16, head_dim: int = 8,
                      dtype: str = "float64", seed: int = 0, impl: str = "torch",
                      ulysses_size: int = 2) -> dict:
    """Rank function: ``method`` ("ulysses", "ring" or "hybrid") on this rank's sequence
    shard vs full attention on the whole sequence, forward and backward.

    Returns the largest differences of the output and of dq, dk, dv (this rank's
    shard), the collectives issued per phase, the ring trace, and for Ulysses the
    token positions and heads this rank holds between the two all-to-alls."""
    rank, size = _rank_size(None)
    _check_attention(method, batch, heads, seq, head_dim, dtype, ulysses_size, size)
    dt = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(seed)
    q, k, v, dout = (torch.randn(batch, heads, seq, head_dim, generator=gen, dtype=dt)
                     for _ in range(4))
    full = [t.clone().requires_grad_() for t in (q, k, v)]
    attention(*full, causal=causal).backward(dout)
    ref_out = attention(q, k, v, causal=causal)

    def local(t):
        return t.chunk(size, dim=2)[rank]

    mine = [local(t).clone().requires_grad_() for t in (q, k, v)]
    trace, layout = [], None
    all_to_all = p2p_all_to_all() if impl == "p2p" else None
    if impl == "p2p" and all_to_all is None:
        raise ValueError("impl='p2p' needs companion.collectives.all_to_all, which this "
                         "checkout does not have; use impl='torch'.")
    with comm_log.recording() as log:
        if method == "ulysses":
            out = ulysses_attention(*mine, causal=causal, impl=all_to_all)
        elif method == "ring":
            out = ring_attention(*mine, causal=causal, trace=trace)
        elif method == "hybrid":
            groups = hybrid_groups(ulysses_size)
            out = hybrid_attention(*mine, causal=causal, groups=groups, trace=trace)
        else:
            raise ValueError(f"method must be 'ulysses', 'ring' or 'hybrid', got {method!r}.")
        out.backward(local(dout))
    if method == "ulysses":  # push position/head ids through the same all-to-all
        pos = torch.arange(seq, dtype=dt).view(1, 1, seq, 1).expand(1, heads, seq, 1)
        head = torch.arange(heads, dtype=dt).view(1, heads, 1, 1).expand(1, heads, seq, 1)
        with torch.no_grad():
            layout = {"tokens": seq_to_heads(local(pos), impl=all_to_all)[0, 0, :, 0].long(),
                      "heads": seq_to_heads(local(head), impl=all_to_all)[0, :, 0, 0].long()}
    return {"out": _max_diff(out, local(ref_out)),
            "grads": max(_max_diff(m.grad, local(f.grad)) for m, f in zip(mine, full)),
            "forward": log.counts("forward"), "backward": log.counts("backward"),
            "forward_bytes": log.bytes("forward"), "backward_bytes": log.bytes("backward"),
            "trace": trace, "layout": layout}


def volume_sweep(seqs=(16, 32, 64, 128), methods=("ulysses", "ring"), heads: int = 4,
                 head_dim: int = 8, batch: int = 1) -> dict:
    """Rank function: forward wire bytes this rank sent, per (method, seq) (notebook 06)."""
    return {(m, s): compare_attention(method=m, seq=s, heads=heads, head_dim=head_dim,
                                      batch=batch, dtype="float32")["forward_bytes"]
            for m in methods for s in seqs}


def layout_probe(fn, batch: int = 1, heads: int = 4, seq: int = 8, head_dim: int = 2):
    """Rank function for the exercise: apply ``fn`` to this rank's sequence shard of a
    tensor whose entries encode (head, position, feature), and return the result."""
    rank, size = _rank_size(None)
    full = torch.arange(batch * heads * seq * head_dim, dtype=torch.float32)
    full = full.view(batch, heads, seq, head_dim)
    return fn(full.chunk(size, dim=2)[rank].clone())


class SequenceParallelBlock(torch.nn.Module):
    """A whole transformer block on a sequence shard ``[b, s/P, d]`` (context
    parallelism): weights replicated, every token-wise part local, attention by Ulysses
    or ring. Weight gradients are partial (this rank's tokens): sum them over ranks with
    :meth:`allreduce_grads`, as data parallelism does."""

    def __init__(self, full, method: str = "ulysses", group=None):
        super().__init__()
        import copy

        if method not in ("ulysses", "ring"):
            raise ValueError(f"method must be 'ulysses' or 'ring', got {method!r}.")
        self.block, self.method, self.group = copy.deepcopy(full), method, group

    def forward(self, x):
        blk, attn = self.block, self.block.attn
        b, s_local, _ = x.shape
        q, k, v = (t.view(b, s_local, attn.n_heads, attn.head_dim).transpose(1, 2)
                   for t in attn.qkv(blk.ln1(x)).split(attn.n_heads * attn.head_dim, dim=-1))
        if self.method == "ulysses":
            y = ulysses_attention(q, k, v, causal=True, group=self.group)
        else:
            y = ring_attention(q, k, v, causal=True, group=self.group)
        x = x + attn.proj(y.transpose(1, 2).reshape(b, s_local, -1))
        return x + blk.mlp(blk.ln2(x))

    def allreduce_grads(self):
        for p in self.parameters():
            if p.grad is not None:
                p.grad = comm_log.all_reduce(p.grad, self.group, label="grad_sync")


def _check_benchmark(method, steps, batch, seq, d_model, heads, world_size=1) -> None:
    one_of("method", method, ("single", "tp", "tp_sp", "ulysses", "ring"))
    for name, value in (("steps", steps), ("batch", batch), ("seq", seq), ("d_model", d_model),
                        ("heads", heads)):
        positive_int(name, value, f"pass a whole number such as {name}=8.")
    _check_seq(seq, world_size)


@experiment("sp_benchmark_layer", summarize=lambda rs: (
    f"{1e3 * rs[0]['seconds']:.1f} ms/step, {rs[0]['bytes']:.0f} bytes sent per rank, "
    f"max diff {rs[0]['max_diff']:.1e}"))
@preflight(_check_benchmark)
def benchmark_layer(method: str = "tp", steps: int = 5, batch: int = 2, seq: int = 256,
                    d_model: int = 128, heads: int = 8, seed: int = 0) -> dict:
    """Rank function: median seconds per forward+backward of one transformer block and
    the activation bytes this rank sent per step (weight-gradient syncs not included),
    for ``method`` in "single", "tp", "tp_sp", "ulysses", "ring"; plus the largest
    output difference from the single-process block."""
    import time

    from .models import Block
    from .tensor_parallel import ParallelBlock

    _check_benchmark(method, steps, batch, seq, d_model, heads)
    rank, size = _rank_size(None)
    _check_seq(seq, size)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        full = Block(d_model, heads, 4 * d_model)
    x = torch.randn(batch, seq, d_model, generator=torch.Generator().manual_seed(seed))
    shard = x.chunk(size, dim=1)[rank].clone()
    layer, inp, ref = {
        "single": (full, x, lambda y: y),
        "tp": (ParallelBlock(full), x, lambda y: y),
        "tp_sp": (ParallelBlock(full, sequence_parallel=True), shard, None),
        "ulysses": (SequenceParallelBlock(full, "ulysses"), shard, None),
        "ring": (SequenceParallelBlock(full, "ring"), shard, None),
    }[method]
    times, sent = [], 0.0
    for _ in range(steps + 1):  # the first step warms up
        xi = inp.clone().requires_grad_()
        if dist.is_initialized():
            dist.barrier()
        start = time.perf_counter()
        with comm_log.recording() as log:
            out = layer(xi)
            out.pow(2).mean().backward()
        times.append(time.perf_counter() - start)
        sent = log.bytes()
        layer.zero_grad(set_to_none=True)
    with torch.no_grad():
        expect = full(x) if ref is not None else full(x).chunk(size, dim=1)[rank]
        diff = (layer(inp) - expect).abs().max().item()
    return {"seconds": sorted(times[1:])[len(times[1:]) // 2], "bytes": sent, "max_diff": diff}
