"""The communication primitives, written with nothing but point-to-point messages.

Taught in notebook 01 (``notebooks/01_collectives.ipynb``), following L19 pages 44-47
(send/recv, scatter/gather, reduce/broadcast, all-gather) and CS336 L8
(reduce-scatter, all-to-all). Every function runs inside a rank, is called by every
rank of the default group with matching arguments, leaves its input untouched, and
returns a new tensor.

Chunks: scatter, reduce-scatter and the ring phases split the *flattened* tensor the
way ``torch.tensor_split`` does, so any size works (the first ``numel % N`` chunks get
one extra element; a tensor smaller than N leaves some chunks empty, and empty chunks
are never sent).

Algorithms (the step counts the notebook measures):

* broadcast / reduce: binomial tree, ``ceil(log2 N)`` rounds;
* scatter / gather: the root talks to each rank directly, one round;
* all-gather / reduce-scatter: ring, ``N - 1`` rounds, each rank sends ``(N-1)/N`` of
  the data;
* all-to-all: pairwise exchange, ``N - 1`` rounds (round s: send to ``r+s``, receive
  from ``r-s``), after ``N - 1`` rounds of small shape messages unless the caller passes
  ``output_shapes``.
"""
from __future__ import annotations

import math

import torch
import torch.distributed as dist

from .. import runtime
from ..validation import nonnegative_int
from .traffic import chunk_offsets, chunk_sizes, exchange, note_initial

__all__ = ["broadcast", "reduce", "scatter", "gather", "all_gather", "reduce_scatter",
           "all_to_all", "check_op", "finish"]

_MAX_DIMS = 8  # all-to-all shape messages have a fixed length so receivers can size them


def _check_tensor(tensor, name: str = "tensor") -> None:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}; "
                        "wrap the values with torch.tensor(...).")


def _check_root(name: str, root, tensor) -> None:
    # A root outside 0..N-1 would be wrapped round by the modular arithmetic below into
    # some other rank: a silently wrong result rather than an error.
    _check_tensor(tensor)
    nonnegative_int(name, root, "pass a rank number, e.g. 0.")
    n = runtime.world_size()
    if root >= n:
        raise ValueError(f"{name}={root} is not a rank of this group of {n}; "
                         f"pass a rank in 0..{n - 1}.")


def check_op(op: str, tensor: torch.Tensor) -> None:
    _check_tensor(tensor)
    if op not in ("sum", "avg"):
        raise ValueError(f"op must be 'sum' or 'avg', got {op!r}.")
    if op == "avg" and not tensor.is_floating_point():
        raise ValueError(f"op='avg' needs a floating-point tensor, got {tensor.dtype}; "
                         "convert it with .float() or use op='sum'.")


def finish(flat: torch.Tensor, op: str, n: int, shape) -> torch.Tensor:
    """Apply AVG's division once, at the end (as gloo does), and restore the shape.

    NCCL's float AVG instead multiplies every input by 1/N before summing (its
    ``PreMulSum``; integer AVG divides at the end), so its bits can differ from these.

    ``flat`` must be the collective's own buffer: it is divided in place."""
    if op == "avg":
        flat.div_(n)
    return flat.view(shape)


def _rounds(n: int) -> int:
    return math.ceil(math.log2(n)) if n > 1 else 0


def broadcast(tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
    """``src``'s tensor, on every rank (others pass a tensor of the same shape and dtype).

    Binomial tree: in the round with distance ``d`` (largest first) every rank that
    already has the data sends it ``d`` ranks further, so the number of holders doubles
    each round.
    """
    _check_root("src", src, tensor)
    n, r = dist.get_world_size(), dist.get_rank()
    buf = tensor.detach().clone().contiguous().view(-1)
    note_initial("broadcast", [(0, buf.numel())] if r == src else [])
    vr = (r - src) % n  # rank relative to the root
    for k in reversed(range(_rounds(n))):
        d = 1 << k
        sends, recvs = [], []
        if vr % (2 * d) == 0 and vr + d < n:
            sends.append(((vr + d + src) % n, buf, 0, "copy"))
        elif vr % (2 * d) == d:
            recvs.append(((vr - d + src) % n, buf, 0, "copy"))
        exchange(sends, recvs, "broadcast")
    return buf.view(tensor.shape)


def reduce(tensor: torch.Tensor, dst: int = 0, op: str = "sum"):
    """The sum (or mean) over ranks on ``dst``; ``None`` on the other ranks.

    Binomial tree, the broadcast run backwards: in the round with distance ``d``
    (smallest first) rank ``vr`` with ``vr % 2d == d`` sends its partial sum to
    ``vr - d`` and drops out.
    """
    _check_root("dst", dst, tensor)
    check_op(op, tensor)
    n, r = dist.get_world_size(), dist.get_rank()
    acc = tensor.detach().clone().contiguous().view(-1)
    note_initial("reduce", [(0, acc.numel())])
    incoming = torch.empty_like(acc)
    vr = (r - dst) % n
    for k in range(_rounds(n)):
        d = 1 << k
        sends, recvs = [], []
        if vr % (2 * d) == d:
            sends.append(((vr - d + dst) % n, acc, 0, "reduce"))
        elif vr % (2 * d) == 0 and vr + d < n:
            recvs.append(((vr + d + dst) % n, incoming, 0, "reduce"))
        exchange(sends, recvs, "reduce")
        if recvs:
            acc += incoming
    return finish(acc, op, n, tensor.shape) if r == dst else None


def scatter(tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
    """Chunk ``rank`` of ``src``'s flattened tensor (1-D); all ranks pass the same shape."""
    _check_root("src", src, tensor)
    n, r = dist.get_world_size(), dist.get_rank()
    flat = tensor.detach().contiguous().view(-1)
    off = chunk_offsets(flat.numel(), n)
    note_initial("scatter", [(0, flat.numel())] if r == src else [])
    if r == src:
        sends = [(j, flat[off[j]:off[j + 1]], off[j], "copy") for j in range(n) if j != src]
        exchange(sends, [], "scatter")
        return flat[off[r]:off[r + 1]].clone()
    out = torch.empty(off[r + 1] - off[r], dtype=flat.dtype, device=flat.device)
    exchange([], [(src, out, off[r], "copy")], "scatter")
    return out


def gather(tensor: torch.Tensor, dst: int = 0):
    """On ``dst``: the list of every rank's tensor (all the same shape); ``None`` elsewhere."""
    _check_root("dst", dst, tensor)
    n, r = dist.get_world_size(), dist.get_rank()
    mine = tensor.detach().contiguous()
    if r != dst:
        exchange([(dst, mine.view(-1), r * mine.numel(), "copy")], [], "gather")
        return None
    out = [mine.clone() if j == r else torch.empty_like(mine) for j in range(n)]
    exchange([], [(j, out[j].view(-1), j * mine.numel(), "copy") for j in range(n) if j != r],
             "gather")
    return out


def ring_reduce_scatter_(buf: torch.Tensor, n: int, r: int, collective: str,
                         src: torch.Tensor | None = None) -> None:
    """Into the flat ``buf``: afterwards chunk ``r`` holds the sum over ranks.

    Round s: send chunk ``r-s-1`` to the right neighbour, receive chunk ``r-s-2`` from
    the left one and add it; after ``N-1`` rounds chunk ``r`` has passed every rank.
    With ``src`` (this rank's flat input) the work is out of place: each chunk is read
    from ``src`` the first time it is touched, which saves copying the whole input into
    ``buf`` first (every chunk is either sent from ``src`` or written before it is sent).
    """
    src = buf if src is None else src
    if n == 1:
        if src is not buf:
            buf.copy_(src)
        return
    off = chunk_offsets(buf.numel(), n)
    right, left = (r + 1) % n, (r - 1) % n
    incoming = torch.empty(max(chunk_sizes(buf.numel(), n)), dtype=buf.dtype, device=buf.device)
    for s in range(n - 1):
        c_out, c_in = (r - s - 1) % n, (r - s - 2) % n
        got = incoming[:off[c_in + 1] - off[c_in]]
        out = (src if s == 0 else buf)[off[c_out]:off[c_out + 1]]
        exchange([(right, out, off[c_out], "reduce")], [(left, got, off[c_in], "reduce")],
                 collective)
        torch.add(src[off[c_in]:off[c_in + 1]], got, out=buf[off[c_in]:off[c_in + 1]])


def ring_all_gather_(buf: torch.Tensor, n: int, r: int, collective: str, off=None) -> None:
    """In place on the flat ``buf``, where rank r's chunk is already right: fill the rest.

    Round s: send chunk ``r-s`` right, receive chunk ``r-s-1`` from the left (a copy).
    """
    off = chunk_offsets(buf.numel(), n) if off is None else off
    right, left = (r + 1) % n, (r - 1) % n
    for s in range(n - 1):
        c_out, c_in = (r - s) % n, (r - s - 1) % n
        exchange([(right, buf[off[c_out]:off[c_out + 1]], off[c_out], "copy")],
                 [(left, buf[off[c_in]:off[c_in + 1]], off[c_in], "copy")], collective)


def reduce_scatter(tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
    """Chunk ``rank`` (1-D) of the flattened sum (or mean) over ranks. Ring algorithm."""
    check_op(op, tensor)
    n, r = dist.get_world_size(), dist.get_rank()
    src = tensor.detach().contiguous().view(-1)
    buf = torch.empty_like(src)
    note_initial("reduce_scatter", [(0, buf.numel())])
    ring_reduce_scatter_(buf, n, r, "reduce_scatter", src)
    off = chunk_offsets(buf.numel(), n)
    return finish(buf[off[r]:off[r + 1]].clone(), op, n, (-1,))


def all_gather(tensor: torch.Tensor, sizes: list[int] | None = None) -> list[torch.Tensor]:
    """Every rank's tensor, in rank order, on every rank. Ring algorithm.

    Without ``sizes`` all ranks must pass the same shape. With ``sizes`` (the number
    of elements of each rank's tensor, e.g. the chunks of :func:`reduce_scatter`) the
    pieces may differ in size and come back flat.
    """
    _check_tensor(tensor)
    n, r = dist.get_world_size(), dist.get_rank()
    mine = tensor.detach().contiguous().view(-1)
    if sizes is None:
        sizes = [mine.numel()] * n
    if len(sizes) != n or sizes[r] != mine.numel():
        raise ValueError(f"sizes must list the element count of each of the {n} ranks' tensors "
                         f"(this rank, {r}, has {mine.numel()}); got {sizes}.")
    off = [0]
    for s in sizes:
        off.append(off[-1] + s)
    buf = torch.empty(off[-1], dtype=mine.dtype, device=mine.device)
    buf[off[r]:off[r + 1]] = mine
    note_initial("all_gather", [(off[r], sizes[r])])
    ring_all_gather_(buf, n, r, "all_gather", off)
    pieces = [buf[off[j]:off[j + 1]].clone() for j in range(n)]
    if len(set(sizes)) == 1:
        pieces = [p.view(tensor.shape) for p in pieces]
    return pieces


def all_to_all(inputs: list[torch.Tensor], output_shapes=None) -> list[torch.Tensor]:
    """``inputs[j]`` goes to rank j; ``output[j]`` is what rank j sent here.

    Same meaning as ``dist.all_to_all``; the tensors may differ in size (all share one
    dtype). Receivers must know what to expect: pass ``output_shapes`` when you know
    them, otherwise ``N - 1`` first pairwise rounds of small shape messages (counted as
    traffic, kind "meta") tell them. Pairwise exchange: round s sends to ``r+s`` and receives
    from ``r-s``, so every pair meets exactly once.
    """
    for j, x in enumerate(inputs):
        _check_tensor(x, f"inputs[{j}]")
    n, r = dist.get_world_size(), dist.get_rank()
    if len(inputs) != n:
        raise ValueError(f"all_to_all needs one tensor per rank: {n} ranks, got {len(inputs)}.")
    inputs = [x.detach().contiguous() for x in inputs]
    if output_shapes is None:
        output_shapes = _exchange_shapes(inputs, n, r)
    outputs = [inputs[j].clone() if j == r else
               torch.empty(tuple(output_shapes[j]), dtype=inputs[r].dtype, device=inputs[r].device)
               for j in range(n)]
    for s in range(1, n):
        to, frm = (r + s) % n, (r - s) % n
        exchange([(to, inputs[to].view(-1), 0, "copy")],
                 [(frm, outputs[frm].view(-1), 0, "copy")], "all_to_all")
    return outputs


def _exchange_shapes(inputs, n, r):
    shapes = [None] * n
    shapes[r] = inputs[r].shape
    for s in range(1, n):
        to, frm = (r + s) % n, (r - s) % n
        shape = inputs[to].shape
        if len(shape) > _MAX_DIMS:
            raise ValueError(f"all_to_all supports tensors of up to {_MAX_DIMS} dimensions; "
                             "reshape, or pass output_shapes.")
        # Shapes are metadata the host reads back at once: on the CPU, where gloo carries
        # them beside NCCL, rather than a round trip through the GPU.
        out = torch.tensor([len(shape), *shape] + [0] * (_MAX_DIMS - len(shape)),
                           dtype=torch.int64, device="cpu")
        got = torch.empty(_MAX_DIMS + 1, dtype=torch.int64, device="cpu")
        exchange([(to, out, 0, "meta")], [(frm, got, 0, "meta")], "all_to_all")
        shapes[frm] = tuple(got[1:1 + int(got[0])].tolist())
    return shapes
