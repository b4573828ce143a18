"""Ring attention (Liu et al., 2023): K/V blocks travel around a ring of ranks while each
rank's queries accumulate their output with the online softmax. Taught in notebook 06 (``notebooks/06_sequence_parallelism.ipynb``).

:func:`attention_bytes` is notebook 06's volume per attention layer of ring attention,
against Ulysses and Megatron TP (section 4); the 5D planner charges context
parallelism with it (``planner.axes``, notebook 12).
"""
from __future__ import annotations

import math

import torch
import torch.distributed as dist

from ..collectives import log as comm_log
from ..validation import one_of, positive_int
from .ulysses import _rank_size

__all__ = ["RingAttention", "ring_attention", "attention_bytes", "ring_hops"]


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


def ring_hops(p: int, phase: str = "forward") -> int:
    """K/V-sized blocks one rank sends per attention layer in ring attention over ``p``
    ranks: forward ``p - 1`` hops of its K and V block (the last block it receives is
    never passed on); backward those ``p - 1`` again plus ``p`` hops of the dK and dV
    accumulators, whose last hop brings each block's gradient home (``RingAttention``)."""
    positive_int("p", p, "pass the number of ranks in the ring, at least 1.")
    one_of("phase", phase, ("forward", "backward"))
    return p - 1 if phase == "forward" else 2 * p - 1


def attention_bytes(method: str, b: int, s: int, h: int, p: int, e: int = 2,
                    phase: str = "forward") -> float:
    """Bytes one rank sends per attention layer; ``N = b s h e`` is one of q, k, v over
    the whole sequence. Forward: Ulysses 4 (N/P)(P-1)/P (four all-to-alls), ring
    2 N (P-1)/P (P-1 hops of a K and a V block), Megatron TP 2 N (P-1)/P (one
    all-reduce). Backward: Ulysses the same, ring 2 N (2P-1)/P (K/V and dK/dV,
    :func:`ring_hops`)."""
    one_of("method", method, ("ulysses", "ring", "tp"))
    one_of("phase", phase, ("forward", "backward"))
    for name, value in (("b", b), ("s", s), ("h", h), ("p", p), ("e", e)):
        positive_int(name, value, "sizes are whole numbers >= 1")
    n = b * s * h * e
    if method == "ring":
        return ring_hops(p, phase) * 2 * n / p
    if method == "tp":
        return 2 * n * (p - 1) / p
    return 4 * n / p * (p - 1) / p
