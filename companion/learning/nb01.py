"""Notebook 01's exercises (``notebooks/01_collectives.ipynb``): collectives from send/recv.

A ladder: pass a tensor to the right neighbour (warm-up, L19 p.44), the ring
all-reduce (core, L19 p.57), recursive doubling (stretch, L19 p.58-66). Each is checked
on 4 real ranks: the values, that the input is left alone, and the messages themselves
(who sends how many, to whom, how big); the package's own collectives and
``torch.distributed``'s are refused. Exercise ids are "01.<name>".
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .. import collectives as C
from .exercise import Exercise, register
from .patterns import all_of, only, per_rank
from .watch import P2P

_SENDS = ("send", "isend")
_RECVS = ("recv", "irecv")
_CONTEXT = ("import torch\nimport torch.distributed as dist\nimport companion\n"
            "from companion import collectives as C")

_PACKAGE_ALL_REDUCE = {
    f"companion.collectives.{name}": "another all-reduce of the package: here you write one"
    for name in ("parameter_server_all_reduce", "naive_all_reduce", "tree_all_reduce",
                 "recursive_halving_doubling_all_reduce",
                 "reduce_scatter_all_gather_all_reduce")}
_TORCH_REDUCTIONS = {
    "torch.distributed.all_reduce": "torch's all-reduce does the whole job in one call",
    "torch.distributed.reduce_scatter": "torch's reduce-scatter is the first half of the job",
    "torch.distributed.reduce_scatter_tensor": "torch's reduce-scatter is the first half",
    "torch.distributed.all_gather": "torch's all-gather is the second half of the job",
    "torch.distributed.all_gather_into_tensor": "torch's all-gather is the second half",
    "torch.distributed.reduce": "torch's reduce does the summing for you",
    "torch.distributed.broadcast": "torch's broadcast hands the result out for you",
}


def _sends(calls):
    return [c for c in calls if c.name in _SENDS]


def _recvs(calls):
    return [c for c in calls if c.name in _RECVS]


def _peers_problem(calls, want_sends, want_recvs, what) -> str | None:
    """None when the sends go to exactly the peers ``want_sends`` (a list, order free)
    and the receives come from ``want_recvs``."""
    for kind, got, want in (("send", _sends(calls), want_sends),
                            ("receive", _recvs(calls), want_recvs)):
        peers = [c.peer for c in got]
        if sorted(peers, key=str) != sorted(want, key=str):
            return (f"made {len(peers)} {kind}(s) with peers {peers}; {what} needs "
                    f"{len(want)}, with peers {sorted(want)}")
    return None


# ---- 01.pass-right (warm-up) ----------------------------------------------------------
def pass_right_inputs(rank: int, world_size: int) -> tuple:
    return (torch.arange(1.0, 5.0) + 10 * rank,)


def pass_right_expected(x: torch.Tensor) -> torch.Tensor:
    """What the left neighbour holds: known without a message, since inputs are fixed."""
    left = (dist.get_rank() - 1) % dist.get_world_size()
    return pass_right_inputs(left, dist.get_world_size())[0]


def _pass_right_messages(rank, world_size, calls):
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    return _peers_problem(calls, [right], [left],
                          f"passing to the right (rank {rank}: send to {right}, receive "
                          f"from {left})")


PASS_RIGHT = register(Exercise(
    id="01.pass-right", level="warm-up", title="pass your tensor to the right neighbour",
    student_name="my_pass_right",
    task="The ranks sit in a ring: rank r's right neighbour is r+1 and the last rank's is "
         "rank 0. Write `my_pass_right(x)` so that every rank sends its `x` to its right "
         "neighbour and returns the tensor that arrives from its left neighbour, leaving "
         "`x` itself unchanged. This is one round of the ring all-reduce of section 6.",
    hints=("Every rank does two things in the same round: one message leaves to the "
           "right, one arrives from the left. Which rank is to the right of the last one?",
           "A receive needs a buffer of the right shape and dtype before the message "
           "arrives; make a new one rather than receiving into `x`.",
           "If every rank calls a blocking `send` first, each waits for a receiver that is "
           "itself stuck in `send` (for large tensors). Post `dist.isend` and `dist.irecv` "
           "first, then call `.wait()` on both.",
           "right = (r + 1) % N and left = (r - 1) % N, with r = dist.get_rank() and "
           "N = dist.get_world_size()."),
    inputs=pass_right_inputs, expected=pass_right_expected, pure=True,
    forbidden={
        "torch.distributed.all_gather": "torch's all-gather collects every tensor to pick "
                                        "one; here one message per rank is the lesson",
        "torch.distributed.all_gather_into_tensor": "torch's all-gather, into one tensor",
        "torch.distributed.all_to_all": "torch's all-to-all: use one send and one receive",
        "torch.distributed.all_to_all_single": "torch's all-to-all: use one send and one "
                                               "receive",
        "torch.distributed.broadcast": "torch's broadcast: use one send and one receive",
        "companion.collectives.all_gather": "the package's all-gather: use send/recv",
        "companion.collectives.all_to_all": "the package's all-to-all: use send/recv",
    },
    pattern=all_of(only(*P2P, why="point-to-point messages only"),
                   per_rank(_pass_right_messages)),
    context=_CONTEXT,
))


# ---- 01.ring (core) ------------------------------------------------------------------
def ring_inputs(rank: int, world_size: int) -> tuple:
    """10 elements: on 4 ranks, chunks of 3, 3, 2 and 2 (``tensor_split``)."""
    return (torch.arange(10, dtype=torch.float32) * (rank + 1),)


def _ring_messages(rank, world_size, calls):
    rounds = 2 * (world_size - 1)
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    problem = _peers_problem(calls, [right] * rounds, [left] * rounds,
                             f"the ring ({rounds} rounds of 2(N-1), each sending one chunk "
                             f"to the right neighbour {right} and receiving one from the "
                             f"left neighbour {left})")
    if problem:
        return problem
    numel = ring_inputs(rank, world_size)[0].numel()
    chunk = -(-numel // world_size) * 4  # the largest chunk of tensor_split, in bytes
    big = [c.bytes for c in _sends(calls) if c.bytes > chunk]
    if big:
        return (f"sent messages of {big} bytes; each ring message carries one chunk "
                f"(at most {chunk} bytes here), 1/N of the tensor")
    return None


RING = register(Exercise(
    id="01.ring", level="core", title="the ring all-reduce, from send and recv",
    student_name="my_ring_all_reduce",
    task="Write `my_ring_all_reduce(x)`: every rank returns the element-wise **sum** of "
         "`x` over all ranks, computed the ring way (L19 p.57): a reduce-scatter of N-1 "
         "rounds, then an all-gather of N-1 rounds, each round sending one chunk to the "
         "right neighbour and receiving one from the left. The checker uses a 10-element "
         "tensor on 4 ranks (chunks of 3, 3, 2, 2), checks that `x` is left unchanged, and "
         "counts every rank's messages: 2(N-1) sends, all to the right neighbour, 2(N-1) "
         "receives, all from the left, each one chunk.",
    hints=("Two halves of N-1 rounds: first every rank finishes one chunk of the sum (a "
           "reduce-scatter), then the finished chunks travel once more around the ring (an "
           "all-gather). Step through the replay of section 4 and note which chunk each "
           "rank sends in each round.",
           "Work on a flat copy of `x` (the caller's tensor must not change) and split it "
           "into N views with `tensor_split(N)`, which handles 10 elements on 4 ranks.",
           "As in the replay: in round s of the first half, rank r sends chunk "
           "(r - s - 1) % N and receives chunk (r - s - 2) % N, which it adds to its own. "
           "After N-1 rounds rank r holds the finished chunk r; in round s of the second "
           "half it sends chunk (r - s) % N on and copies the chunk (r - s - 1) % N that "
           "arrives instead of adding.",
           "Each round: `dist.isend(chunk.contiguous(), right)` and "
           "`dist.irecv(incoming, left)` with `incoming = torch.empty_like(...)`, then "
           "`.wait()` on both before touching `incoming`."),
    inputs=ring_inputs, reference=C.ring_all_reduce, pure=True,
    forbidden={
        **_TORCH_REDUCTIONS,
        "companion.collectives.ring_all_reduce": "it is the package's solution to this "
                                                 "exercise",
        "companion.collectives.reduce_scatter": "the package's ring reduce-scatter is the "
                                                "first half of this exercise",
        "companion.collectives.all_gather": "the package's ring all-gather is the second "
                                            "half of this exercise",
        "companion.collectives.primitives.ring_reduce_scatter_": "the package's ring "
                                                                 "reduce-scatter",
        "companion.collectives.primitives.ring_all_gather_": "the package's ring all-gather",
        "companion.collectives.recursive_doubling_all_reduce":
            "another all-reduce of the package: here you write the ring",
        **_PACKAGE_ALL_REDUCE,
    },
    pattern=all_of(only(*P2P, why="the ring is built from point-to-point messages"),
                   per_rank(_ring_messages)),
    context=_CONTEXT,
))


# ---- 01.recursive-doubling (stretch) -------------------------------------------------
def doubling_inputs(rank: int, world_size: int) -> tuple:
    return (torch.arange(6, dtype=torch.float32) + 100 * rank,)


def _doubling_messages(rank, world_size, calls):
    steps = world_size.bit_length() - 1  # log2 N, N a power of two
    partners = [rank ^ (1 << k) for k in range(steps)]
    problem = _peers_problem(calls, partners, partners,
                             f"recursive doubling (log2 N = {steps} rounds, one exchange "
                             f"with each of ranks {partners}, r XOR 2^k)")
    if problem:
        return problem
    whole = doubling_inputs(rank, world_size)[0].numel() * 4
    part = [c.bytes for c in _sends(calls) if c.bytes != whole]
    if part:
        return (f"sent messages of {part} bytes; recursive doubling sends the whole running "
                f"sum ({whole} bytes) every round (halves are Rabenseifner's algorithm)")
    return None


DOUBLING = register(Exercise(
    id="01.recursive-doubling", level="stretch",
    title="the all-reduce of L19 p.58-66, from send and recv",
    student_name="my_recursive_doubling_all_reduce",
    task="Write `my_recursive_doubling_all_reduce(x)` for N a power of two: in round k = 0, "
         "1, ..., log2 N - 1 rank r swaps its whole running sum with rank r XOR 2^k "
         "(distance 1, then 2, then 4) and adds what it receives; after log2 N rounds "
         "every rank holds the sum. The checker uses 4 ranks and a 6-element tensor, checks "
         "that `x` is left unchanged, and counts every rank's messages: log2 N sends and "
         "log2 N receives, one with each partner r XOR 2^k, each the whole tensor.",
    hints=("After round k a rank should hold the sum over a block of 2^(k+1) ranks. Pair "
           "up with the rank that holds the other half of your next block.",
           "The partner at distance 2^k is r XOR 2^k (`r ^ (1 << k)` in Python); both "
           "partners send their whole running sum and add what they receive.",
           "log2 N rounds: `for k in range(N.bit_length() - 1)` when N is a power of two. "
           "Send the running sum, not the original `x`.",
           "Post `dist.isend(total, partner)` and `dist.irecv(incoming, partner)`, wait on "
           "both, then `total = total + incoming` (a new tensor: never add into a buffer "
           "that is still being sent)."),
    inputs=doubling_inputs, reference=C.recursive_doubling_all_reduce,
    pure=True,
    forbidden={
        **_TORCH_REDUCTIONS,
        "companion.collectives.recursive_doubling_all_reduce":
            "it is the package's solution to this exercise",
        "companion.collectives.ring_all_reduce": "another all-reduce of the package: here "
                                                 "you write recursive doubling",
        **_PACKAGE_ALL_REDUCE,
    },
    pattern=all_of(only(*P2P, why="built from point-to-point messages"),
                   per_rank(_doubling_messages)),
    context=_CONTEXT,
))
