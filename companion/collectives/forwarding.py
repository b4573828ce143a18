"""All-to-all where only neighbours are wired: store and forward along rings and a torus.

Taught in notebook 11 (``notebooks/11_networks_and_topology.ipynb``); CS336 L8 §1: an
all-to-all (the token exchange of expert parallelism) is cheap behind a switch and
expensive on a torus.

Behind a switch every rank sends each peer its block directly (:func:`all_to_all`,
N - 1 rounds, each block crosses one link). On a ring of L ranks a block for a rank d
hops away crosses d links, so ranks forward other ranks' blocks: in round s every rank
sends its right neighbour the bundle of blocks still travelling clockwise (for ranks s,
s+1, ... hops away from where they started) and its left neighbour the counter-clockwise
bundle; the receiver keeps the first block and forwards the rest. ``L // 2`` rounds;
each rank sends ``cw (cw+1) / 2 + ccw (ccw+1) / 2`` blocks with ``cw = L // 2`` and
``ccw = (L-1) // 2``: about ``L^2 / 4`` against ``L - 1`` behind a switch.

On a rows x cols torus, :func:`torus_all_to_all` does it along each row (bundles for a
column travel together), then along each column (dimension-ordered, as torus networks
route): ``cols // 2 + rows // 2`` rounds.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .. import runtime
from .hierarchical import grid_shape
from .primitives import _check_tensor
from .traffic import exchange

__all__ = ["torus_all_to_all"]


def _ring_all_to_all(items, members, name):
    """``items[q]``: equal-size flat tensors for ``members[q]``; returns ``out[o]``: what
    ``members[o]`` had for this rank."""
    length, p = len(members), members.index(dist.get_rank())
    out = [None] * length
    out[p] = items[p]
    right, left = members[(p + 1) % length], members[(p - 1) % length]
    cw_max, ccw_max = length // 2, (length - 1) // 2
    cw = [items[(p + d) % length] for d in range(1, cw_max + 1)]  # nearest first
    ccw = [items[(p - d) % length] for d in range(1, ccw_max + 1)]
    like = items[p]
    for s in range(1, cw_max + 1):
        sends, recvs = [], []
        cw_in = torch.empty(like.numel() * (cw_max - s + 1), dtype=like.dtype, device=like.device)
        ccw_in = torch.empty(like.numel() * max(0, ccw_max - s + 1), dtype=like.dtype,
                             device=like.device)
        if cw:
            sends.append((right, torch.cat(cw), 0, "copy"))
            recvs.append((left, cw_in, 0, "copy"))
        if ccw:
            sends.append((left, torch.cat(ccw), 0, "copy"))
            recvs.append((right, ccw_in, 0, "copy"))
        exchange(sends, recvs, name)
        if cw:
            first, *cw = cw_in.split(like.numel())
            out[(p - s) % length] = first
        if ccw:
            first, *ccw = ccw_in.split(like.numel())
            out[(p + s) % length] = first
    return out


def torus_all_to_all(inputs: list[torch.Tensor], rows: int | None = None) -> list[torch.Tensor]:
    """``inputs[j]`` goes to rank j; ``output[j]`` is what rank j sent here, like
    ``dist.all_to_all``, moved only between torus neighbours.

    Every block (on every rank) must have the same shape and dtype. ``rows`` as in
    :func:`~companion.collectives.torus_all_reduce` (``rows=1``: one ring of all ranks).
    """
    n, r = runtime.world_size(), runtime.rank()
    for j, x in enumerate(inputs):
        _check_tensor(x, f"inputs[{j}]")
    if len(inputs) != n:
        raise ValueError(f"torus_all_to_all needs one tensor per rank: {n} ranks, got {len(inputs)}.")
    shape, dtype = inputs[0].shape, inputs[0].dtype
    if any(x.shape != shape or x.dtype != dtype for x in inputs):
        raise ValueError("torus_all_to_all forwards equal blocks: pass tensors of one shape "
                         "and dtype (use all_to_all for blocks of different sizes).")
    rows, cols = grid_shape(rows)
    row, col = divmod(r, cols)
    flat = [x.detach().contiguous().view(-1) for x in inputs]
    # Along the row: the bundle for column c holds the blocks for every rank of column c.
    bundles = [torch.cat([flat[i * cols + c] for i in range(rows)]) for c in range(cols)]
    got = _ring_all_to_all(bundles, [row * cols + c for c in range(cols)], "torus_all_to_all")
    pieces = [g.split(flat[0].numel()) for g in got]  # pieces[c'][i]: from (row, c') for (i, col)
    bundles = [torch.cat([pieces[c][i] for c in range(cols)]) for i in range(rows)]
    got = _ring_all_to_all(bundles, list(range(col, n, cols)), "torus_all_to_all")
    out = []
    for i in range(rows):
        out += [p.clone().view(shape) for p in got[i].split(flat[0].numel())]
    return out
