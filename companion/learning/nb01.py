"""Notebook 01's exercises (``notebooks/01_collectives.ipynb``): collectives from send/recv.

A ladder: fix a neighbour exchange that deadlocks (warm-up, a diagnosis, L19 p.44), the
ring all-reduce (core, L19 p.57), recursive doubling for any number of ranks, folding
the ranks beyond a power of two in and out as MPICH does (stretch, L19 p.58-66). Each
is checked on real ranks: the values, that the input is left alone, and the messages
themselves (who sends how many, to whom, how big); the package's own collectives and
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


# ---- 01.pass-right (warm-up, a diagnosis) ---------------------------------------------
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
    id="01.pass-right", level="warm-up", kind="diagnose",
    title="fix the neighbour exchange that deadlocks",
    student_name="my_pass_right",
    task="The ranks sit in a ring: rank r's right neighbour is r+1 and the last rank's is "
         "rank 0. `broken_pass_right(x)` in the notebook sends `x` to the right neighbour "
         "and returns what arrives from the left, yet on 4 ranks it never finishes, "
         "whatever the size of `x`. Find out why, then write `my_pass_right(x)`: the same "
         "exchange, without the deadlock and leaving `x` unchanged. The checker runs it "
         "on 4 real ranks with a time limit and counts every rank's messages: one send to "
         "the right neighbour, one receive from the left, no collectives.",
    hints=("Run the check on `broken_pass_right` and read the verdict. Then ask, for one "
           "rank: in which call is it stuck, and which rank would have to do what for "
           "that call to return?",
           "With gloo, a blocking `dist.send` returns only once the receiving rank has "
           "posted the matching receive. In the broken version, what is every rank doing "
           "at that moment?",
           "Some receive must already be posted while a send waits for it. Which calls of "
           "section 1 make that possible, and is there also an order of blocking calls "
           "that does? Receive into a new buffer, not into `x`."),
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
        "companion.collectives.traffic.exchange": "the package's exchange posts the "
                                                  "messages for you: that is the fix to find",
    },
    pattern=all_of(only(*P2P, why="point-to-point messages only"),
                   per_rank(_pass_right_messages)),
    timeout=10.0, context=_CONTEXT,
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
    id="01.ring", level="core", kind="implement",
    title="the ring all-reduce, from send and recv",
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
           "Read the replay round by round: the chunk a rank sends in a round is the one "
           "it added to in the round before, so the chunk index moves back by one each "
           "round. After the first half, find which chunk each rank holds finished: that "
           "is where its second half starts, copying instead of adding.",
           "Each round every rank sends and receives at the same time: post both before "
           "waiting on either (as in 01.pass-right), and receive into a fresh buffer, "
           "never into a chunk that is still being sent."),
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
DOUBLING_WORLD = 6   # not a power of two: 4 ranks pair up, 2 are folded in and out


def doubling_inputs(rank: int, world_size: int) -> tuple:
    # Whole numbers: every order of summation gives the same bits.
    return (torch.arange(5, dtype=torch.float32) + 100 * rank,)


def _doubling_pattern(calls_per_rank, world_size):
    """Recursive doubling on the largest power of two p <= N, with the N - p extra ranks
    folded in (one whole tensor to a partner) and out (the result back), whichever ranks
    the student folds: checked by counting, not by matching one layout."""
    p = 1 << (world_size.bit_length() - 1)
    rest, steps = world_size - p, p.bit_length() - 1
    whole = doubling_inputs(0, world_size)[0].numel() * 4
    peers = {}
    for rank, calls in enumerate(calls_per_rank):
        sends = _sends(calls)
        part = [c.bytes for c in sends if c.bytes != whole]
        if part:
            return (f"rank {rank} sent messages of {part} bytes; recursive doubling sends "
                    f"the whole running sum ({whole} bytes) every time (halves are "
                    "Rabenseifner's algorithm)")
        peers[rank] = (sorted(c.peer for c in sends), sorted(c.peer for c in _recvs(calls)))
    folded = {r: out[0] for r, (out, back) in peers.items() if len(out) == 1 and out == back}
    for rank, (out, back) in peers.items():
        if rank in folded:
            continue
        mine = [r for r, q in folded.items() if q == rank]
        exchanges = [q for q in out if q not in mine]
        if (len(mine) > 1 or exchanges != [q for q in back if q not in mine]
                or len(out) != steps + len(mine) or len(set(exchanges)) != steps):
            return (f"rank {rank} sent to {out} and received from {back}. With N = "
                    f"{world_size} every rank is one of three kinds: folded in (one send "
                    f"and one receive, with one partner), one of the p = {p} that pair up "
                    f"({steps} exchanges with {steps} different ranks), or one of those "
                    f"that also folds one rank in and out ({steps + 1} of each)")
    if len(folded) != rest:
        return (f"{len(folded)} rank(s) sat out ({sorted(folded)}); with N = {world_size} "
                f"and p = {p}, N - p = {rest} ranks sit out, each folded into its own "
                f"partner, and the other {p} run recursive doubling in log2 p = {steps} "
                "rounds")
    return None


DOUBLING = register(Exercise(
    id="01.recursive-doubling", level="stretch", kind="implement",
    title="recursive doubling for any number of ranks",
    student_name="my_recursive_doubling_all_reduce",
    task="Write `my_recursive_doubling_all_reduce(x)`: every rank returns the sum of `x` "
         "over all ranks by recursive doubling (L19 p.58-66, section 4), for **any** N, "
         "not only powers of two. With p the largest power of two not above N, the N - p "
         "extra ranks are folded in first (each hands its whole tensor to a partner and "
         "sits out), the p remaining ranks run recursive doubling among themselves, and "
         "each partner hands the result back at the end (MPICH's fix, drawn for N = 5 in "
         "section 4). The checker uses **6 ranks** and a 5-element tensor, checks that "
         "`x` is left unchanged, and counts every rank's messages: each a whole tensor; "
         "N - p ranks with one send and one receive to a single partner; the others "
         "log2 p exchanges with log2 p different ranks, plus the fold on a partner.",
    hints=("Do the power-of-two case of section 4 first, on paper, for 4 ranks. Then "
           "ask what goes wrong on 6: which partners r XOR 2^k do not exist?",
           "Make the problem a power of two before you start: pair the extra ranks with "
           "ranks that stay, fold their tensors in, and remember who owes whom the result. "
           "Every rank must be able to work out, from N and its own rank alone, whether "
           "it sits out and who its partner is.",
           "The ranks that stay are not numbered 0, 1, ..., p-1. Give each a number in "
           "0..p-1, pair those numbers by XOR, and translate a partner's number back into "
           "a real rank before sending.",
           "Post every exchange's send and receive before waiting on either, and add "
           "into a new tensor, never into one that is still being sent."),
    inputs=doubling_inputs, reference=C.recursive_doubling_all_reduce,
    pure=True, world_size=DOUBLING_WORLD, timeout=15.0,
    forbidden={
        **_TORCH_REDUCTIONS,
        "companion.collectives.recursive_doubling_all_reduce":
            "it is the package's solution to this exercise",
        "companion.collectives.all_reduce._fold_in": "the package's fold: write your own",
        "companion.collectives.all_reduce._fold_out": "the package's fold: write your own",
        "companion.collectives.ring_all_reduce": "another all-reduce of the package: here "
                                                 "you write recursive doubling",
        **_PACKAGE_ALL_REDUCE,
    },
    pattern=all_of(only(*P2P, why="built from point-to-point messages"), _doubling_pattern),
    context=_CONTEXT,
))
