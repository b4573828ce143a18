"""The real DP x TP training step that notebook 11's ``11.placement`` exercise runs.

Used by :mod:`companion.learning.nb11` (``notebooks/11_networks_and_topology.ipynb``):
once a student's placement passes the shape checks, every rank of the emulated cluster
takes its (dp, tp) slot and runs one step of notebook 09's MLP, swapping TP partial sums
and DP gradients through the emulated links. The checker then compares the weights with
one process and the bytes with the link classes the placement should use.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .. import collectives as C
from .. import topology
from ..collectives.traffic import exchange
from . import nb09


def dp_tp_step(coords: tuple[int, int], cluster, tp: int) -> dict:
    """One DP x TP step of notebook 09's MLP on the emulated ``cluster`` (tp = dp = 2),
    this rank at ``coords``: TP partial sums and DP gradients swapped with the partner
    through the emulated links. Returns the updated shards and the bytes per link class."""
    table = [None] * dist.get_world_size()
    dist.all_gather_object(table, tuple(coords))
    where = {tuple(c): q for q, c in enumerate(table)}
    d, t = coords
    tp_peer, dp_peer = where[(d, 1 - t)], where[(1 - d, t)]
    x, y, w1, w2 = nb09._full_problem()
    half = nb09.BATCH // 2
    cols = slice(t * nb09.FFN // tp, (t + 1) * nb09.FFN // tp)
    x, y = x[d * half:(d + 1) * half], y[d * half:(d + 1) * half]
    w1, w2 = w1[cols].clone().requires_grad_(), w2[:, cols].clone().requires_grad_()
    with topology.emulate(cluster), C.traffic() as log:
        partial = torch.relu(x @ w1.T) @ w2.T
        other = torch.empty_like(partial)
        exchange([(tp_peer, partial.detach(), 0, "reduce")], [(tp_peer, other, 0, "reduce")], "tp")
        parts = [partial, other] if t == 0 else [other, partial]  # one order on both ranks
        out = parts[0] + parts[1]  # the row-parallel g: the gradient passes through
        ((out - y) ** 2).mean().backward()
        grads = torch.cat([w1.grad.view(-1), w2.grad.view(-1)])
        theirs = torch.empty_like(grads)
        exchange([(dp_peer, grads, 0, "reduce")], [(dp_peer, theirs, 0, "reduce")], "dp")
    mean = ((grads + theirs) if d == 0 else (theirs + grads)) / 2
    g1, g2 = mean[:w1.numel()].view_as(w1), mean[w1.numel():].view_as(w2)
    with torch.no_grad():
        new = (w1 - nb09.LR * g1, w2 - nb09.LR * g2)
    # The same step in one process on the full batch, cut to this rank's TP slot. Summed
    # in another order, so equal to float32 rounding (1e-5 relative; the values are O(1)).
    X, Y, W1, W2 = nb09._full_problem()
    W1.requires_grad_(), W2.requires_grad_()
    ((torch.relu(X @ W1.T) @ W2.T - Y) ** 2).mean().backward()
    with torch.no_grad():
        ref = ((W1 - nb09.LR * W1.grad)[cols], (W2 - nb09.LR * W2.grad)[:, cols])
    same = all(torch.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(new, ref))
    links = log.bytes_per_link()
    return {"trains like one process": same, "bytes per link class":
            {k: links.get(k, 0) for k in ("intra", "inter")}}
