"""Rank functions of notebook 06's attention experiments: each method against full
attention, its wire volume, and the layout probe of the exercise. Taught in notebook 06 (``notebooks/06_sequence_parallelism.ipynb``).
"""
from __future__ import annotations

import torch

from .. import runtime
from ..collectives import log as comm_log
from ..experiments import experiment
from ..models import attention
from ..validation import callable_arg, one_of, positive_int, preflight
from .hybrid import hybrid_attention, hybrid_groups
from .ring import ring_attention
from .ulysses import _rank_size, p2p_all_to_all, seq_to_heads, ulysses_attention

__all__ = ["compare_attention", "volume_sweep", "layout_probe"]


def _max_diff(a, b) -> float:
    return (a.detach().double() - b.detach().double()).abs().max().item()


def _attention_summary(results: list) -> str:
    r = results[0]
    from ..i18n import gettext as tr
    return tr("max |diff| vs full attention: output {out}, grads {grads}; collectives per "
              "rank: forward {forward}, backward {backward}").format(
        out=f"{max(x['out'] for x in results):.1e}",
        grads=f"{max(x['grads'] for x in results):.1e}", forward=r["forward"],
        backward=r["backward"])


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
    shard), the collectives issued per phase, the ring trace, for Ulysses the token
    positions and heads this rank holds between the two all-to-alls, the full shape
    ``(batch, heads, seq, head_dim)`` and ``qkv_bytes``, the bytes of one of q, k, v over
    the whole sequence."""
    dev = runtime.device()
    rank, size = _rank_size(None)
    _check_attention(method, batch, heads, seq, head_dim, dtype, ulysses_size, size)
    dt = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(seed)
    # Drawn on the CPU from the CPU generator, then moved: the same numbers on every device.
    q, k, v, dout = (torch.randn(batch, heads, seq, head_dim, generator=gen, dtype=dt,
                                 device="cpu").to(dev) for _ in range(4))
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
        pos = torch.arange(seq, dtype=dt, device=dev).view(1, 1, seq, 1)
        head = torch.arange(heads, dtype=dt, device=dev).view(1, heads, 1, 1)
        pos, head = pos.expand(1, heads, seq, 1), head.expand(1, heads, seq, 1)
        with torch.no_grad():
            layout = {"tokens": seq_to_heads(local(pos), impl=all_to_all)[0, 0, :, 0].long(),
                      "heads": seq_to_heads(local(head), impl=all_to_all)[0, :, 0, 0].long()}
    return {"out": _max_diff(out, local(ref_out)),
            "grads": max(_max_diff(m.grad, local(f.grad)) for m, f in zip(mine, full)),
            "forward": log.counts("forward"), "backward": log.counts("backward"),
            "forward_bytes": log.bytes("forward"), "backward_bytes": log.bytes("backward"),
            "trace": trace, "layout": layout, "shape": (batch, heads, seq, head_dim),
            # N of the volume formulas: one of q, k, v over the whole sequence, in bytes
            "qkv_bytes": q.numel() * q.element_size()}


def _check_sweep(seqs, methods, heads, head_dim, batch, world_size=1) -> None:
    for method in methods:
        for seq in seqs:
            _check_attention(method, batch, heads, seq, head_dim, "float32", 1, world_size)


def _check_probe(fn, batch, heads, seq, head_dim, world_size=1) -> None:
    callable_arg("fn", fn, "pass the function to apply to the shard, e.g. sp.seq_to_heads.")
    _check_attention("ring", batch, heads, seq, head_dim, "float32", 1, world_size)


@preflight(_check_sweep)
def volume_sweep(seqs=(16, 32, 64, 128), methods=("ulysses", "ring"), heads: int = 4,
                 head_dim: int = 8, batch: int = 1) -> dict:
    """Rank function: forward wire bytes this rank sent, per (method, seq) (notebook 06),
    and under ("qkv", seq) the bytes of one of q, k, v over the whole sequence (the N
    of the volume formulas)."""
    _check_sweep(seqs, methods, heads, head_dim, batch, _rank_size(None)[1])
    out = {}
    for s in seqs:
        for m in methods:
            r = compare_attention(method=m, seq=s, heads=heads, head_dim=head_dim,
                                  batch=batch, dtype="float32")
            out[(m, s)], out[("qkv", s)] = r["forward_bytes"], r["qkv_bytes"]
    return out


@preflight(_check_probe)
def layout_probe(fn, batch: int = 1, heads: int = 4, seq: int = 8, head_dim: int = 2):
    """Rank function for the exercise: apply ``fn`` to this rank's sequence shard of a
    tensor whose entries encode (head, position, feature), and return the result."""
    dev = runtime.device()
    rank, size = _rank_size(None)
    _check_probe(fn, batch, heads, seq, head_dim, size)
    full = torch.arange(batch * heads * seq * head_dim, dtype=torch.float32, device=dev)
    full = full.view(batch, heads, seq, head_dim)
    return fn(full.chunk(size, dim=2)[rank].clone())
