"""Notebook 02's exercises (``notebooks/02_parameter_server_vs_allreduce.ipynb``).

A ladder: the parameter server as an all-reduce (warm-up, L19 p.50-53), a binary-tree
all-reduce from send/recv (core, L19 p.57), and choosing between recursive doubling and
Rabenseifner's algorithm by message size with the alpha-beta model, as MPICH does
(stretch, L19 p.58-66; Thakur, Rabenseifner & Gropp 2005). Each is checked on real
ranks, messages included. Exercise ids are "02.<name>".
"""
from __future__ import annotations

import math

import torch
import torch.distributed as dist

from .. import collectives as C
from ..collectives import costmodel
from .exercise import Exercise, register
from .nb01 import _PACKAGE_ALL_REDUCE, _TORCH_REDUCTIONS, _peers_problem, _recvs, _sends
from .patterns import all_of, only, per_rank
from .watch import P2P

_CONTEXT = ("import math\nimport torch\nimport torch.distributed as dist\nimport companion\n"
            "from companion import collectives as C")


def _values(rank: int, world_size: int) -> tuple:
    return (torch.arange(1.0, 7.0) + 10 * rank,)


# ---- 02.parameter-server (warm-up) ---------------------------------------------------
def _server_messages(rank, world_size, calls):
    if rank == 0:
        workers = list(range(1, world_size))
        return _peers_problem(calls, workers, workers,
                              f"the server (one receive from each worker {workers}, then "
                              "one send to each)")
    return _peers_problem(calls, [0], [0], "a worker (one push to rank 0, one pull from it)")


PARAMETER_SERVER = register(Exercise(
    id="02.parameter-server", level="warm-up", title="the parameter server as an all-reduce",
    student_name="my_parameter_server_all_reduce",
    task="Write `my_parameter_server_all_reduce(x)`: rank 0 is the server. Every other rank "
         "pushes its `x` to rank 0; rank 0 adds them to its own `x`, in rank order 1, 2, "
         "..., N-1, and sends the sum back to every worker; every rank returns the sum and "
         "leaves `x` unchanged. The checker counts the messages of section 1: rank 0 "
         "receives N-1 tensors and sends N-1, every other rank sends one to rank 0 and "
         "receives one from it.",
    hints=("Rank 0 plays the server of section 1: first it collects (a push from each "
           "worker), then it hands out (a pull). A worker talks to rank 0 only.",
           "On rank 0, start from a copy of its own `x` and add each worker's tensor as it "
           "arrives; receive into a fresh buffer, not into `x`.",
           "A worker: one send of `x` to rank 0, then one receive from rank 0 into a new "
           "tensor the shape of `x`; that tensor is what it returns.",
           "`dist.recv(buf, src=w)` for w in 1..N-1, then `dist.send(total, dst=w)` for each "
           "w; on a worker `dist.send(x, dst=0)` and `dist.recv(total, src=0)`."),
    inputs=_values, reference=C.parameter_server_all_reduce, pure=True,
    forbidden={
        **_TORCH_REDUCTIONS,
        "torch.distributed.gather": "torch's gather does the push for you",
        "companion.collectives.parameter_server_all_reduce":
            "it is the package's solution to this exercise",
        "companion.collectives.reduce": "the package's reduce does the push and the sum",
        "companion.collectives.broadcast": "the package's broadcast does the pull",
        "companion.collectives.gather": "the package's gather does the push",
        "companion.collectives.ring_all_reduce": "another all-reduce of the package",
        "companion.collectives.recursive_doubling_all_reduce": "another all-reduce of the "
                                                               "package",
        **{k: v for k, v in _PACKAGE_ALL_REDUCE.items() if "parameter_server" not in k},
    },
    pattern=all_of(only(*P2P, why="push and pull are point-to-point messages"),
                   per_rank(_server_messages)),
    context=_CONTEXT,
))


# ---- 02.tree (core) ------------------------------------------------------------------
def tree_inputs(rank: int, world_size: int) -> tuple:
    return (torch.arange(5, dtype=torch.float32) + 10 * rank,)


def longest_chain(calls_per_rank) -> int:
    """The most messages in a row that each had to wait for the one before.

    A send depends on every receive its rank made before it (in call order). The j-th
    send from a to b is matched with b's j-th receive from a. A ring of N ranks that
    passes a tensor on one hop at a time has a chain of N-1; a binomial tree reduce and
    broadcast, 2 ceil(log2 N). Receives from an unnamed source count as independent.
    """
    sends, recvs = {}, {}   # (src, dst, j) -> (rank, index in its calls)
    for rank, calls in enumerate(calls_per_rank):
        seen = {}
        for i, c in enumerate(calls):
            if c.name in ("send", "isend", "recv", "irecv") and c.peer is not None:
                key = (rank, c.peer, c.name in ("send", "isend"))
                j = seen.get(key, 0)
                seen[key] = j + 1
                if key[2]:
                    sends[(rank, c.peer, j)] = (rank, i)
                else:
                    recvs[(c.peer, rank, j)] = (rank, i)
    depth: dict = {}

    def send_depth(msg, active=frozenset()) -> int:
        if msg in depth:
            return depth[msg]
        if msg in active:   # irecv and isend posted together: no real dependency
            return 0
        rank, i = sends[msg]
        before = [m for m, (r, k) in recvs.items() if r == rank and k < i and m in sends]
        d = 1 + max((send_depth(m, active | {msg}) for m in before), default=0)
        depth[msg] = d
        return d

    return max((send_depth(m) for m in sends), default=0)


def _tree_pattern(calls_per_rank, world_size):
    steps = math.ceil(math.log2(world_size))
    whole = tree_inputs(0, world_size)[0].numel() * 4
    total = 0
    for rank, calls in enumerate(calls_per_rank):
        sends, recvs = _sends(calls), _recvs(calls)
        total += len(sends)
        part = [c.bytes for c in sends if c.bytes != whole]
        if part:
            return (f"rank {rank} sent messages of {part} bytes; in a tree every message is "
                    f"a whole (partial) sum, {whole} bytes here")
        for kind, got in (("sent", sends), ("received", recvs)):
            if len(got) > steps:
                return (f"rank {rank} {kind} {len(got)} messages; in a binary tree no rank "
                        f"handles more than ceil(log2 N) = {steps} each way (N-1 on one rank "
                        "is the parameter server's bottleneck)")
    if total != 2 * (world_size - 1):
        return (f"{total} messages were sent in all; a tree all-reduce sends 2(N-1) = "
                f"{2 * (world_size - 1)}: each rank but the root sends its partial sum up "
                "once and receives the total once")
    chain = longest_chain(calls_per_rank)
    if chain > 2 * steps:
        return (f"the longest chain of messages that wait for each other is {chain}; a "
                f"binary tree needs only 2 ceil(log2 N) = {2 * steps} (halve the ranks that "
                "still hold a partial sum every round, instead of passing it along a line)")
    return None


TREE = register(Exercise(
    id="02.tree", level="core", title="a binary-tree all-reduce from send and recv",
    student_name="my_tree_all_reduce",
    task="Write `my_tree_all_reduce(x)`: every rank returns the sum of `x` over all ranks, "
         "computed by a binary (binomial) tree: partial sums flow up to rank 0 in "
         "ceil(log2 N) rounds, then the total flows back down the same tree. It must work "
         "for any N; the checker uses 5 ranks and a 5-element tensor. It checks that `x` "
         "is left unchanged and counts the messages: 2(N-1) in all, each a whole tensor, "
         "no rank handling more than ceil(log2 N) each way, and no chain of more than "
         "2 ceil(log2 N) messages waiting for one another.",
    hints=("Think of a knockout tournament: every round, half of the ranks that still hold "
           "a partial sum hand it to a partner and drop out. Then run the tournament "
           "backwards to hand the total out.",
           "Reduce, with distance d = 1, 2, 4, ... while d < N: a rank with r % (2d) == d "
           "sends its partial sum to r - d and is done; a rank with r % (2d) == 0 receives "
           "from r + d, if that rank exists, and adds.",
           "Broadcast: the same pairs in reverse order (the largest d first), so that a "
           "rank only sends the total once it has it: r % (2d) == 0 sends to r + d (if it "
           "exists), r % (2d) == d receives from r - d.",
           "Keep a list of the distances, `ds = []; d = 1; while d < n: ds.append(d); "
           "d *= 2`, then loop over `ds` and `reversed(ds)`; receive into "
           "`torch.empty_like(x)`."),
    inputs=tree_inputs, reference=C.tree_all_reduce, pure=True, world_size=5,
    forbidden={
        **_TORCH_REDUCTIONS,
        "companion.collectives.tree_all_reduce": "it is the package's solution to this "
                                                 "exercise",
        "companion.collectives.reduce": "the package's tree reduce is the first half of "
                                        "this exercise",
        "companion.collectives.broadcast": "the package's tree broadcast is the second half",
        "companion.collectives.ring_all_reduce": "another all-reduce of the package",
        "companion.collectives.recursive_doubling_all_reduce": "another all-reduce of the "
                                                               "package",
        **{k: v for k, v in _PACKAGE_ALL_REDUCE.items() if "tree" not in k},
    },
    pattern=all_of(only(*P2P, why="the tree is built from point-to-point messages"),
                   _tree_pattern),
    context=_CONTEXT,
))


# ---- 02.pick-by-size (stretch) -------------------------------------------------------
ALPHA, BETA = 2e-6, 1e10   # an illustrative network: 2 µs per message, 10 GB/s
SMALL, LARGE = 1024, 262144   # floats: 4.1 kB and 1.05 MB, on either side of n* = 80 kB


def pick_inputs(rank: int, world_size: int) -> tuple:
    small = torch.arange(SMALL, dtype=torch.float32) % 7 + rank
    large = torch.arange(LARGE, dtype=torch.float32) % 7 + rank
    return small, large, ALPHA, BETA


def pick_adapter(candidate, small, large, alpha, beta):
    """The student's function, once on each side of the crossover."""
    return [candidate(small, alpha, beta), candidate(large, alpha, beta)]


def pick_reference(x, alpha, beta):
    n = dist.get_world_size()
    crossover = costmodel.rd_rhd_crossover_bytes(n, alpha, beta)
    nbytes = x.numel() * x.element_size()
    if crossover is None or nbytes <= crossover:
        return {"algorithm": "recursive_doubling", "result": C.recursive_doubling_all_reduce(x)}
    return {"algorithm": "recursive_halving_doubling",
            "result": C.recursive_halving_doubling_all_reduce(x)}


def _pick_messages(rank, world_size, calls):
    steps = world_size.bit_length() - 1
    small, large = SMALL * 4, LARGE * 4
    sends = _sends(calls)
    first = [c.bytes for c in sends if c.bytes <= small]
    second = [c.bytes for c in sends if c.bytes > small]
    if first != [small] * steps:
        return (f"for the small tensor it sent {first} bytes; recursive doubling sends the "
                f"whole tensor ({small} bytes) in each of log2 N = {steps} rounds")
    if len(second) != 2 * steps or sum(second) != 2 * (world_size - 1) * large // world_size:
        return (f"for the large tensor it sent {len(second)} messages, {sum(second)} bytes; "
                f"Rabenseifner's algorithm sends {2 * steps} messages of halves and "
                f"quarters, {2 * (world_size - 1) * large // world_size} bytes in all")
    return None


PICK = register(Exercise(
    id="02.pick-by-size", level="stretch",
    title="choose the all-reduce by message size, as MPICH does",
    student_name="my_pick_all_reduce",
    task="Write `my_pick_all_reduce(x, alpha, beta)`: with the alpha-beta model of section 3 "
         "decide which of recursive doubling and Rabenseifner's recursive halving/doubling "
         "is faster for `x` on this many ranks, run that one (the package's "
         "`C.recursive_doubling_all_reduce` or `C.recursive_halving_doubling_all_reduce`) "
         "and return `{\"algorithm\": name, \"result\": the sum}` with name "
         "\"recursive_doubling\" or \"recursive_halving_doubling\" (on a tie, recursive "
         "doubling). Write the two formulas yourself: the package's cost model is not "
         "allowed. The checker calls it on 4 ranks with alpha = 2 µs, beta = 10 GB/s, once "
         "with a 4.1 kB tensor and once with a 1.05 MB one, and checks the names, the sums and "
         "that the messages sent are those of the algorithm you named.",
    hints=("Each algorithm costs T(n) = a·alpha + b·n/beta: a counts the rounds, b the "
           "tensors that leave a rank. Read a and b off section 3's table for both.",
           "Recursive doubling: log2 N rounds, a whole tensor each (a = b = log2 N). "
           "Rabenseifner: 2 log2 N rounds, 2(N-1)/N of the tensor in all.",
           "n is in bytes: `x.numel() * x.element_size()`; N is `dist.get_world_size()`. "
           "Every rank computes the same choice, so all ranks run the same algorithm.",
           "Compare `math.log2(N) * (alpha + n / beta)` with `2 * math.log2(N) * alpha + "
           "2 * (N - 1) / N * n / beta` and pick the smaller (recursive doubling on a tie)."),
    inputs=pick_inputs, reference=pick_reference, adapter=pick_adapter,
    forbidden={
        "companion.collectives.costmodel.predict_time": "the package's cost model: write the two "
                                            "formulas yourself",
        "companion.collectives.costmodel.coefficients": "the package's cost model: write the formulas",
        "companion.collectives.costmodel.crossover_bytes": "the package's crossover: derive it",
        "companion.collectives.costmodel.rd_rhd_crossover_bytes": "the package's crossover: derive it",
        "companion.learning.nb02.pick_reference": "it is the package's solution to this "
                                                  "exercise",
        "torch.distributed.all_reduce": "torch's all-reduce picks its own algorithm",
    },
    pattern=all_of(only(*P2P, why="both algorithms are point-to-point messages"),
                   per_rank(_pick_messages)),
    context=_CONTEXT,
))
