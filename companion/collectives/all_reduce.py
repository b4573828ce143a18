"""Seven ways to all-reduce, from the parameter server to Rabenseifner's algorithm.

Taught in notebook 01 (the algorithms, message by message) and notebook 02 (their
bandwidth and latency as N grows). L19 pages 50-66; CS336 L8's identity
all-reduce = reduce-scatter + all-gather. Each function is ``(tensor, op="sum"|"avg")
-> tensor``, called by every rank like ``dist.all_reduce``, and returns a new tensor
(the input is untouched). Every rank gets bit-identical results: each element's sum is
computed once, in one fixed order, and then copied.

For a tensor of n bytes on N ranks (counted exactly by :func:`traffic`; notebook 02
plots them against N):

==========================  ==========================  ================================
algorithm                   rounds (steps)              bytes sent by the busiest rank
==========================  ==========================  ================================
parameter server            2                           (N-1) n   (the server)
naive                       1                           (N-1) n   (every rank)
binomial tree               2 ceil(log2 N)              ceil(log2 N) n   (the root)
ring                        2 (N-1)                     2 (N-1)/N n   (every rank)
recursive doubling          log2 N (+2 if N != 2^k)     log2 N n      (+n if N != 2^k)
recursive halving/doubling  2 log2 N (+2 if N != 2^k)   2 (N-1)/N n   (+n if N != 2^k)
==========================  ==========================  ================================

Recursive doubling (MPICH's short-message all-reduce) and recursive halving/doubling
(Rabenseifner's, MPICH's long-message one) pair the same ranks, ``r XOR 2^k``; the first
swaps whole vectors in log2 N rounds (latency-optimal), the second halves of halves in
2 log2 N rounds (bandwidth-optimal). Thakur, Rabenseifner & Gropp, "Optimization of
Collective Communication Operations in MPICH", IJHPCA 19(1), 2005.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .primitives import (broadcast, check_op, finish, reduce, reduce_scatter, all_gather,
                         ring_all_gather_, ring_reduce_scatter_)
from .traffic import chunk_offsets, chunk_sizes, exchange, note_initial

__all__ = ["parameter_server_all_reduce", "naive_all_reduce", "tree_all_reduce",
           "ring_all_reduce", "recursive_doubling_all_reduce",
           "recursive_halving_doubling_all_reduce",
           "reduce_scatter_all_gather_all_reduce", "ALL_REDUCE_ALGORITHMS"]


def _start(tensor, op, name):
    check_op(op, tensor)
    buf = tensor.detach().clone().contiguous().view(-1)
    note_initial(name, [(0, buf.numel())])
    return buf, dist.get_world_size(), dist.get_rank()


def parameter_server_all_reduce(tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
    """Rank 0 is the server: every worker pushes its tensor, the server sums, workers pull.

    Two rounds. The server receives N-1 tensors and sends N-1: its traffic grows O(N)
    while each worker's stays one tensor each way (L19 pages 52-53).
    """
    buf, n, r = _start(tensor, op, "parameter_server")
    if r == 0:
        pushed = [torch.empty_like(buf) for _ in range(1, n)]
        exchange([], [(w, pushed[w - 1], 0, "reduce") for w in range(1, n)], "parameter_server")
        for g in pushed:  # summed in worker order: a fixed, documented order
            buf += g
        exchange([(w, buf, 0, "copy") for w in range(1, n)], [], "parameter_server")
    elif n > 1:
        exchange([(0, buf, 0, "reduce")], [], "parameter_server")
        exchange([], [(0, buf, 0, "copy")], "parameter_server")
    return finish(buf, op, n, tensor.shape)


def naive_all_reduce(tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
    """Everyone sends everything to everyone, in one round; each rank sums in rank order."""
    buf, n, r = _start(tensor, op, "naive")
    if n == 1:
        return finish(buf, op, n, tensor.shape)
    got = {j: torch.empty_like(buf) for j in range(n) if j != r}
    exchange([(j, buf, 0, "reduce") for j in range(n) if j != r],
             [(j, got[j], 0, "reduce") for j in range(n) if j != r], "naive")
    # Summing in rank order (own tensor at its place) gives every rank the same bits.
    total = torch.zeros_like(buf)
    for j in range(n):
        total += buf if j == r else got[j]
    return finish(total, op, n, tensor.shape)


def tree_all_reduce(tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
    """Binomial-tree reduce to rank 0, then binomial-tree broadcast back out."""
    check_op(op, tensor)
    note_initial("tree", [(0, tensor.numel())])
    total = reduce(tensor, dst=0, op="sum")
    out = broadcast(total if total is not None else torch.empty_like(tensor), src=0)
    return finish(out.reshape(-1), op, dist.get_world_size(), tensor.shape)


def ring_all_reduce(tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
    """Ring reduce-scatter then ring all-gather: 2(N-1) rounds, each moving 1/N of the data."""
    check_op(op, tensor)
    n, r = dist.get_world_size(), dist.get_rank()
    src = tensor.detach().contiguous().view(-1)
    buf = torch.empty_like(src)  # out of place: no copy of the input (see ring_reduce_scatter_)
    note_initial("ring", [(0, buf.numel())])
    ring_reduce_scatter_(buf, n, r, "ring", src)
    ring_all_gather_(buf, n, r, "ring")
    return finish(buf, op, n, tensor.shape)


def reduce_scatter_all_gather_all_reduce(tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
    """CS336's identity, literally: the public reduce-scatter followed by all-gather."""
    check_op(op, tensor)
    n = dist.get_world_size()
    note_initial("rs_ag", [(0, tensor.numel())])
    mine = reduce_scatter(tensor, op="sum")
    pieces = all_gather(mine, sizes=chunk_sizes(tensor.numel(), n))
    return finish(torch.cat([p.reshape(-1) for p in pieces]), op, n, tensor.shape)


def _fold_in(buf, n, r, name):
    """MPICH's fix for N not a power of two, before the pairwise rounds.

    With p = 2^floor(log2 N) and rest = N - p, the first 2*rest ranks pair up; each even
    one sends its whole tensor to its odd neighbour and sits out. Returns the (possibly
    new) buffer, this rank's virtual rank among the p participants (None for a rank
    that sits out), p, rest, and ``real``, which maps a virtual rank back to its rank.
    One round (every rank calls :func:`exchange`, idle ones with nothing).
    """
    p = 1 << (n.bit_length() - 1)
    rest = n - p
    if rest:
        if r < 2 * rest and r % 2 == 0:
            exchange([(r + 1, buf, 0, "reduce")], [], name)
        elif r < 2 * rest:
            incoming = torch.empty_like(buf)
            exchange([], [(r - 1, incoming, 0, "reduce")], name)
            buf = incoming + buf  # lower rank first, as in every other sum here
        else:
            exchange([], [], name)
    if r < 2 * rest:
        vr = r // 2 if r % 2 else None
    else:
        vr = r - rest
    real = lambda v: 2 * v + 1 if v < rest else v + rest  # noqa: E731
    return buf, vr, p, rest, real


def _fold_out(buf, r, rest, name) -> None:
    """Hand the result back to the ranks that sat out (one round, if N != 2^k)."""
    if rest:
        if r < 2 * rest and r % 2 == 0:
            exchange([], [(r + 1, buf, 0, "copy")], name)
        elif r < 2 * rest:
            exchange([(r - 1, buf, 0, "copy")], [], name)
        else:
            exchange([], [], name)


def recursive_doubling_all_reduce(tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
    """MPICH's recursive doubling: whole vectors, log2 N rounds, partner ``r XOR 2^k``.

    With N = 2^k: in round k rank r swaps its *whole* current sum with rank ``r XOR 2^k``
    (distance 1, then 2, then 4, ...) and adds the partner's. After round k each rank
    holds the sum over a block of 2^(k+1) ranks, so log2 N rounds leave the total
    everywhere. Latency-optimal (the fewest rounds an all-reduce can take), but every
    round moves the whole tensor: log2 N tensors out of each rank, against 2(N-1)/N for
    Rabenseifner's :func:`recursive_halving_doubling_all_reduce` over the same pairs.
    This is the algorithm of L19 p.58-66 (exchanges at distance 1, 2, 4; log N steps),
    and MPICH's choice for short messages.

    Every rank ends with the same bits: floating-point addition is commutative, and both
    ranks of a pair add the same two partial sums, so the association tree is one fixed
    butterfly. N not a power of two: the extra ranks are folded in and out as in
    :func:`recursive_halving_doubling_all_reduce` (two more rounds, one more tensor).
    """
    buf, n, r = _start(tensor, op, "recursive_doubling")
    name = "recursive_doubling"
    buf, vr, p, rest, real = _fold_in(buf, n, r, name)
    incoming = torch.empty_like(buf)
    for k in range(p.bit_length() - 1):
        mask = 1 << k
        if vr is None:
            exchange([], [], name)
            continue
        partner = real(vr ^ mask)
        exchange([(partner, buf, 0, "reduce")], [(partner, incoming, 0, "reduce")], name)
        buf = buf + incoming  # a new tensor: the send above read the old one
    _fold_out(buf, r, rest, name)
    return finish(buf, op, n, tensor.shape)


def recursive_halving_doubling_all_reduce(tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
    """Rabenseifner's algorithm: reduce-scatter by recursive halving, all-gather by doubling.

    With N = 2^k: in round i of the halving phase rank r pairs with ``r XOR N/2^(i+1)``,
    keeps one half of its current segment, sends the other half and adds the partner's
    copy of the half it kept; after log2 N rounds rank r holds chunk r fully reduced.
    The doubling phase replays the pairs in reverse, swapping segments that double in
    size. Each rank sends (N-1)/N of the data per phase in log2 N rounds.

    N not a power of two (MPICH's fix): with p = 2^floor(log2 N) and rest = N - p, the
    first 2*rest ranks pair up; each even one sends its whole tensor to its odd neighbour
    and sits out. The remaining p ranks run the algorithm above; at the end each odd
    neighbour sends the result back. Two extra rounds, one extra full tensor each way.
    """
    buf, n, r = _start(tensor, op, "rhd")
    name = "recursive_halving_doubling"
    # Virtual rank among the p participants; even ranks below 2*rest have none.
    buf, vr, p, rest, real = _fold_in(buf, n, r, name)
    off = chunk_offsets(buf.numel(), p)
    lo, hi = 0, p  # the segment of chunks this rank is responsible for
    incoming = torch.empty_like(buf)
    masks = [p >> (i + 1) for i in range(p.bit_length() - 1)]
    for mask in masks:  # recursive halving: reduce-scatter
        if vr is None:
            exchange([], [], name)
            continue
        mid = (lo + hi) // 2
        keep, give = ((lo, mid), (mid, hi)) if vr & mask == 0 else ((mid, hi), (lo, mid))
        a, b = off[keep[0]], off[keep[1]]
        got = incoming[a:b]
        exchange([(real(vr ^ mask), buf[off[give[0]]:off[give[1]]], off[give[0]], "reduce")],
                 [(real(vr ^ mask), got, a, "reduce")], name)
        # Lower virtual rank's contribution first, so both halves of a pair agree in order.
        buf[a:b] = buf[a:b] + got if vr < vr ^ mask else got + buf[a:b]
        lo, hi = keep
    for mask in reversed(masks):  # recursive doubling: all-gather
        if vr is None:
            exchange([], [], name)
            continue
        size = hi - lo  # the partner's segment is the adjacent one of equal size
        plo = lo - size if vr & mask else lo + size
        exchange([(real(vr ^ mask), buf[off[lo]:off[hi]], off[lo], "copy")],
                 [(real(vr ^ mask), buf[off[plo]:off[plo + size]], off[plo], "copy")], name)
        lo, hi = min(lo, plo), max(hi, plo + size)
    _fold_out(buf, r, rest, name)
    return finish(buf, op, n, tensor.shape)


ALL_REDUCE_ALGORITHMS = {
    "parameter_server": parameter_server_all_reduce,
    "naive": naive_all_reduce,
    "tree": tree_all_reduce,
    "ring": ring_all_reduce,
    "recursive_doubling": recursive_doubling_all_reduce,
    "recursive_halving_doubling": recursive_halving_doubling_all_reduce,
    "reduce_scatter+all_gather": reduce_scatter_all_gather_all_reduce,
}
