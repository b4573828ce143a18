"""Notebook 02's exercises (``notebooks/02_parameter_server_vs_allreduce.ipynb``).

A ladder: the parameter server as an all-reduce (warm-up, L19 p.50-53); a decision,
choosing the fastest all-reduce for 6 ranks with the alpha-beta model, where the rule
MPICH uses for powers of two picks the wrong algorithm (core, L19 p.58-66; Thakur,
Rabenseifner & Gropp 2005); and a binomial-tree all-reduce from send/recv for any N
(stretch, L19 p.57). Each is checked on real ranks, messages included. Exercise ids are
"02.<name>".
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
    id="02.parameter-server", level="warm-up", kind="implement",
    title="the parameter server as an all-reduce",
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
           "Blocking sends and receives are safe here if every rank follows the order of "
           "section 1's steps: nobody waits in a circle. The checker compares bits, so the "
           "server adds in rank order, as the task says."),
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


# ---- 02.tree (stretch) ---------------------------------------------------------------
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
                return (f"rank {rank} {kind} {len(got)} messages; in a binomial tree no rank "
                        f"handles more than ceil(log2 N) = {steps} each way (N-1 on one rank "
                        "is the parameter server's bottleneck)")
    if total != 2 * (world_size - 1):
        return (f"{total} messages were sent in all; a tree all-reduce sends 2(N-1) = "
                f"{2 * (world_size - 1)}: each rank but the root sends its partial sum up "
                "once and receives the total once")
    chain = longest_chain(calls_per_rank)
    if chain > 2 * steps:
        return (f"the longest chain of messages that wait for each other is {chain}; a "
                f"binomial tree needs only 2 ceil(log2 N) = {2 * steps} (halve the ranks that "
                "still hold a partial sum every round, instead of passing it along a line)")
    return None


TREE = register(Exercise(
    id="02.tree", level="stretch", kind="implement",
    title="a binomial-tree all-reduce from send and recv",
    student_name="my_tree_all_reduce",
    task="Write `my_tree_all_reduce(x)`: every rank returns the sum of `x` over all ranks, "
         "computed by a binomial tree: partial sums flow up to rank 0 in "
         "ceil(log2 N) rounds, then the total flows back down the same tree. It must work "
         "for any N; the checker uses 5 ranks and a 5-element tensor. It checks that `x` "
         "is left unchanged and counts the messages: 2(N-1) in all, each a whole tensor, "
         "no rank handling more than ceil(log2 N) each way, and no chain of more than "
         "2 ceil(log2 N) messages waiting for one another.",
    hints=("Think of a knockout tournament: every round, half of the ranks that still hold "
           "a partial sum hand it to a partner and drop out. Then run the tournament "
           "backwards to hand the total out.",
           "In round k the partners are 2^k apart. Each rank must be able to tell, from its "
           "rank and the round alone, whether it sends, receives or sits the round out; on "
           "5 ranks some partners do not exist.",
           "On the way back a rank may pass the total on only once it has it: which order "
           "of the rounds guarantees that? Receive into a fresh buffer the shape of `x`."),
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


# ---- 02.pick-by-size (core, a decision) ----------------------------------------------
PICK_WORLD = 6             # not a power of two: the recursive algorithms fold two ranks
ALPHA, BETA = 2e-6, 1e10   # an illustrative network: 2 µs per message, 10 GB/s
# Floats, each a multiple of 6 (the ring's chunks are equal): 4.1 kB, 49 kB, 61 kB and
# 1.04 MB, two on each side of where the ring overtakes recursive doubling on 6 ranks.
PICK_SIZES = (1026, 12288, 15360, 261120)
PICK_CHOICES = tuple(a for a in C.ALL_REDUCE_ALGORITHMS if a != "reduce_scatter+all_gather")
PICK_KEYS = ("algorithm", "seconds", "result")   # the first wrong one explains the rest


def pick_inputs(rank: int, world_size: int) -> tuple:
    return (*(torch.arange(n, dtype=torch.float32) % 7 + rank for n in PICK_SIZES), ALPHA, BETA)


def _label(x) -> str:
    return f"{x.numel() * x.element_size()} bytes"


def _fastest(nbytes: int, world_size: int, alpha: float, beta: float) -> str:
    times = {a: costmodel.predict_time(a, nbytes, world_size, alpha, beta) for a in PICK_CHOICES}
    return min(times, key=times.get)


def pick_expected(*args) -> dict:
    """The package's cost model decides; the sums are known from the inputs alone."""
    *xs, alpha, beta = args
    n = dist.get_world_size()
    out = {}
    for i, x in enumerate(xs):
        nbytes = x.numel() * x.element_size()
        best = _fastest(nbytes, n, alpha, beta)
        total = sum(pick_inputs(r, n)[i] for r in range(n))
        out[_label(x)] = {"algorithm": best,
                          "seconds": costmodel.predict_time(best, nbytes, n, alpha, beta),
                          "result": total}
    return out


def pick_adapter(candidate, *args) -> dict:
    """The student's function on each tensor in turn, its answers in a fixed key order."""
    *xs, alpha, beta = args
    out = {}
    for x in xs:
        got = candidate(x, alpha, beta)
        if isinstance(got, dict) and set(got) == set(PICK_KEYS):
            # "reduce_scatter+all_gather" is the ring's two halves, run one by one
            got = {k: "ring" if got[k] == "reduce_scatter+all_gather" else got[k]
                   for k in PICK_KEYS}
        out[_label(x)] = got
    return out


def _pick_messages(rank, world_size, calls):
    """The messages of the algorithms the model rates fastest (names already checked):
    recursive doubling with the package's fold (of the first 2(N-p) ranks, the even one
    of each pair sits out), or the ring."""
    p = 1 << (world_size.bit_length() - 1)
    rest, steps = world_size - p, p.bit_length() - 1
    rd = steps if rank >= 2 * rest else 1 if rank % 2 == 0 else steps + 1
    count = total = 0
    for numel in PICK_SIZES:
        if _fastest(numel * 4, world_size, ALPHA, BETA) == "recursive_doubling":
            count, total = count + rd, total + rd * numel * 4
        else:
            count += 2 * (world_size - 1)
            total += 2 * (world_size - 1) * numel * 4 // world_size
    sends = _sends(calls)
    got = sum(c.bytes for c in sends)
    if (len(sends), got) != (count, total):
        return (f"sent {len(sends)} messages, {got} bytes, over the four tensors; the "
                f"algorithms you named send {count} messages, {total} bytes, from this "
                "rank: run the algorithm you name")
    return None


PICK = register(Exercise(
    id="02.pick-by-size", level="core", kind="decide",
    title="choose the fastest all-reduce for 6 ranks, and run it",
    student_name="my_pick_all_reduce",
    task="Write `my_pick_all_reduce(x, alpha, beta)`: decide with the alpha-beta model of "
         "section 3 which of the six all-reduces of its table (\"parameter_server\", "
         "\"naive\", \"tree\", \"ring\", \"recursive_doubling\", "
         "\"recursive_halving_doubling\") is fastest for `x` on **these** ranks, run that "
         "one (the package's `C.ALL_REDUCE_ALGORITHMS[name]`), and return "
         "`{\"algorithm\": name, \"seconds\": its predicted time, \"result\": the sum}`. "
         "The checker runs it on **6 ranks**, not a power of two, with alpha = 2 µs and "
         "beta = 10 GB/s, on tensors of 4.1 kB, 49 kB, 61 kB and 1.04 MB. It refuses an "
         "algorithm that the package's model does not rate fastest, a predicted time that "
         "differs from the model's, and messages that are not those of the algorithm "
         "named. Work the costs out yourself: the package's cost model is not allowed.",
    hints=("Section 3's table gives (a, b) for N a power of two and says what folding adds "
           "otherwise. On 6 ranks, which of the six algorithms fold, and what does that do "
           "to their costs?",
           "Compare all six, not only the two MPICH switches between: the rule derived in "
           "notebook 01 for powers of two is not the answer here. Check your costs against "
           "section 2's measured rounds and bytes at N = 6.",
           "n is in bytes, and every rank must reach the same decision from what every rank "
           "knows; ranks that run different algorithms wait for each other forever."),
    inputs=pick_inputs, expected=pick_expected, adapter=pick_adapter,
    forbidden={
        "companion.collectives.costmodel.predict_time": "the package's cost model: work the "
                                                        "costs out yourself",
        "companion.collectives.costmodel.coefficients": "the package's cost model: read the "
                                                        "coefficients off the table",
        "companion.collectives.costmodel.crossover_bytes": "the package's crossover: derive it",
        "companion.collectives.costmodel.rd_rhd_crossover_bytes":
            "the package's crossover: derive it",
        "companion.learning.nb02.pick_expected": "it is the checker's answer",
        "companion.learning.nb02._fastest": "it is the checker's answer",
        "torch.distributed.all_reduce": "torch's all-reduce picks its own algorithm",
    },
    pattern=all_of(only(*P2P, why="the package's all-reduces are point-to-point messages"),
                   per_rank(_pick_messages)),
    world_size=PICK_WORLD, rtol=1e-9, context=_CONTEXT,
))
