"""Exercise 12.stage-slicing (notebook 12, section 4): Alpa's stage slicing as a dynamic
program on Alpa's sub-mesh shapes, checked against exhaustive search on small models and
on a model too large for exhaustive search to finish."""
from __future__ import annotations

import contextlib
import functools
import itertools
import math
import time

from ...validation import positive_int
from ..exercise import Exercise, register

# ---- 12.stage-slicing -------------------------------------------------------------------
# Each problem: per-layer compute times (seconds for one micro-batch, forward and
# backward, on one device) and a cluster of nodes x GPUs per node. A stage of layers
# i..j-1 on d devices takes sum(times[i:j]) / d * efficiency(d) (intra-operator
# parallelism loses a little to its collectives) plus, when it has a successor, a fixed
# hand-off. As in Alpa, a stage's sub-mesh is 1, 2, 4, ... GPUs of one node or whole
# nodes, and the sub-meshes cover the cluster exactly.
HANDOFF = 0.02
LIMIT_S = 5.0   # per problem: a table-filling program needs well under a second


class _TooSlow(BaseException):
    """Past the checker's time limit: not an Exception, so an ``except Exception`` in the
    student's search cannot swallow it."""


# The checker's deadline (a perf_counter time) while a candidate runs, else None. It is
# checked in stage_time, which every search calls, and not by a signal: an alarm could
# fire inside the checker's own profile hook, and an exception there switches it off.
_DEADLINE: list = [None]


@contextlib.contextmanager
def _time_limit(seconds: float):
    _DEADLINE[0] = time.perf_counter() + seconds
    try:
        yield
    finally:
        _DEADLINE[0] = None


def _efficiency(devices: int) -> float:
    return 1.0 + 0.1 * (devices - 1)   # each extra device adds 10% of collective overhead


def stage_time(times, i, j, devices) -> float:
    """Time of layers ``i..j-1`` as one stage on ``devices`` devices (see above). Inside
    the checker of 12.stage-slicing, past its time limit, it stops the search."""
    if _DEADLINE[0] is not None and time.perf_counter() > _DEADLINE[0]:
        raise _TooSlow()
    return sum(times[i:j]) / devices * _efficiency(devices) + (HANDOFF if j < len(times) else 0.0)


def submesh_sizes(nodes: int, gpus_per_node: int) -> list[int]:
    """The device counts a stage may get: powers of two up to one node, then whole nodes
    (Alpa's shapes (1, 2^m) and (n, gpus_per_node); any mix of them that adds up to the
    cluster can be placed on it)."""
    positive_int("nodes", nodes, "pass the number of nodes, e.g. 2.")
    positive_int("gpus_per_node", gpus_per_node, "pass the GPUs in one node, e.g. 4.")
    inside = [1 << m for m in range(gpus_per_node.bit_length()) if 1 << m <= gpus_per_node]
    return sorted({*inside, *(n * gpus_per_node for n in range(1, nodes + 1))})


# A language model's embedding and LM head outweigh its blocks; the blocks alternate
# between three sizes. 40 layers on 16 GPUs: too many slicings for exhaustive search.
LARGE = (6.0, *(1.0 + 0.25 * (b % 3) for b in range(38)), 9.0)
LARGE_NODES, LARGE_GPUS = 4, 4
LARGE_NAME = f"{len(LARGE)} layers, {LARGE_NODES} nodes of {LARGE_GPUS}"
STAGE_PROBLEMS = {
    # (times, nodes, GPUs per node)
    "embedding + 6 blocks + LM head, 1 node of 4": ((3.0, 1, 1, 1, 1, 1, 1, 4.0), 1, 4),
    "8 equal blocks, 1 node of 4": ((1.0,) * 8, 1, 4),
    "a heavy first layer, 2 nodes of 4": ((5, 1, 2, 1, 2, 1, 1, 1, 1), 2, 4),
    "an uneven model, 1 node of 8": ((5, 1, 1.5, 1, 2, 3, 2), 1, 8),
    "two heavy layers, 2 nodes of 4": ((8, 5, 1.5, 8, 1.5), 2, 4),
    LARGE_NAME: (LARGE, LARGE_NODES, LARGE_GPUS),
}


def stage_slicing_reference(times, nodes, gpus_per_node):
    """Alpa's inter-operator DP, bottleneck form: ``best[j][d]`` is the smallest possible
    slowest stage for the first ``j`` layers on ``d`` devices."""
    n, devices = len(times), nodes * gpus_per_node
    sizes = submesh_sizes(nodes, gpus_per_node)
    best = [[math.inf] * (devices + 1) for _ in range(n + 1)]
    cut = [[None] * (devices + 1) for _ in range(n + 1)]
    best[0][0] = 0.0
    for j in range(1, n + 1):
        for d in range(1, devices + 1):
            for i in range(j):
                for k in sizes:
                    if k > d:
                        break
                    value = max(best[i][d - k], stage_time(times, i, j, k))
                    if value < best[j][d]:
                        best[j][d], cut[j][d] = value, (i, k)
    stages, j, d = [], n, devices
    while j:
        i, k = cut[j][d]
        stages.append((i, j, k))
        j, d = i, d - k
    return best[n][devices], stages[::-1]


def slicings(n: int, devices: int, sizes) -> int:
    """How many slicings exhaustive search tries: ways to cut ``n`` layers into stages
    and give each stage a sub-mesh of one of ``sizes``, using ``devices`` in all."""
    ways = [[0] * (devices + 1) for _ in range(n + 1)]  # (stages ending at layer j, devices)
    ways[0][0] = 1
    for j in range(1, n + 1):
        for d in range(1, devices + 1):
            ways[j][d] = sum(ways[i][d - k] for i in range(j) for k in sizes if k <= d)
    return ways[n][devices]


def brute_force_slicing(times, nodes, gpus_per_node):
    """Every way to cut the layers and share the devices: the test of the DP."""
    n, devices = len(times), nodes * gpus_per_node
    sizes, best = set(submesh_sizes(nodes, gpus_per_node)), (math.inf, None)
    for cuts in range(min(n, devices)):   # every stage needs a device
        for where in itertools.combinations(range(1, n), cuts):
            bounds = (0, *where, n)
            # the ways to write `devices` as an ordered sum of cuts + 1 sub-mesh sizes
            for marks in itertools.combinations(range(1, devices), cuts):
                share = [b - a for a, b in zip((0, *marks), (*marks, devices))]
                if not sizes.issuperset(share):
                    continue
                stages = [(bounds[s], bounds[s + 1], share[s]) for s in range(cuts + 1)]
                value = max(stage_time(times, *st) for st in stages)
                if value < best[0]:
                    best = (value, stages)
    return best


@functools.lru_cache(maxsize=None)
def _expected_value(times, nodes, gpus_per_node):
    # Exhaustive search where it finishes; on the large model, the DP (equal to
    # exhaustive search on every small problem, which the solution's check proves).
    if slicings(len(times), nodes * gpus_per_node, submesh_sizes(nodes, gpus_per_node)) < 1e6:
        return brute_force_slicing(times, nodes, gpus_per_node)[0]
    return stage_slicing_reference(times, nodes, gpus_per_node)[0]


def _slicing_inputs(rank, world_size):
    return (STAGE_PROBLEMS,)


def _stage_problem(stages, times, nodes, gpus_per_node) -> str | None:
    if not isinstance(stages, (list, tuple)) or not stages:
        return f"returned {stages!r:.60} as the stages; return a list of (first, end, devices)"
    sizes, devices, j = submesh_sizes(nodes, gpus_per_node), nodes * gpus_per_node, 0
    for st in stages:
        if not (isinstance(st, (list, tuple)) and len(st) == 3):
            return f"the stage {st!r:.40} is not a (first, end, devices) triple"
        i, end, k = st
        if i != j or not end > i:
            return (f"the stages must cover the layers in order without gaps: a stage "
                    f"starts at layer {i} where {j} was expected")
        if not (isinstance(k, int) and k in sizes):
            return (f"stage {tuple(st)} has {k!r} GPUs; a sub-mesh here has "
                    f"{', '.join(map(str, sizes))}")
        j = end
    if j != len(times):
        return f"the stages end at layer {j}, but there are {len(times)} layers"
    if sum(st[2] for st in stages) != devices:
        return f"the stages use {sum(st[2] for st in stages)} devices; there are {devices}"
    return None


def _answer_slicing(candidate, problems):
    out = {}
    for name, (times, nodes, g) in problems.items():
        try:
            with _time_limit(LIMIT_S):
                got = candidate(times, nodes, g)
        except _TooSlow:
            tries = slicings(len(times), nodes * g, submesh_sizes(nodes, g))
            out[name] = {f"finished within {LIMIT_S:g} s": (
                f"no: exhaustive search has {tries:.1e} slicings; a table has "
                f"{(len(times) + 1) * (nodes * g + 1)} entries"),
                "stages": "-", "slowest stage (returned)": "-", "slowest of your stages": "-"}
            break
        if not (isinstance(got, tuple) and len(got) == 2):
            return got   # the feedback shows what came back instead of a pair
        value, stages = got
        problem = _stage_problem(stages, times, nodes, g)
        out[name] = {f"finished within {LIMIT_S:g} s": True, "stages": problem or "valid",
                     "slowest stage (returned)": round(float(value), 9),
                     "slowest of your stages": "-" if problem else
                     round(max(stage_time(times, *st) for st in stages), 9)}
    return out


def _expected_slicing(problems):
    return {name: {f"finished within {LIMIT_S:g} s": True, "stages": "valid",
                   "slowest stage (returned)": round(_expected_value(times, nodes, g), 9),
                   "slowest of your stages": round(_expected_value(times, nodes, g), 9)}
            for name, (times, nodes, g) in problems.items()}


STAGE_SLICING = register(Exercise(
    id="12.stage-slicing", level="stretch", kind="implement",
    title="Alpa's stage slicing on sub-meshes, as a dynamic program",
    student_name="my_stage_slicing",
    task="A model is a chain of layers with compute times `times` (one micro-batch, one "
         "device), to run on `nodes` nodes of `gpus_per_node` GPUs. Cut it into contiguous "
         "stages and give each stage a sub-mesh, as Alpa does: 1, 2, 4, ... GPUs inside one "
         "node (a power of two, at most a node) or whole nodes; the sub-meshes use every "
         "GPU. A stage of layers `i..j-1` on `k` GPUs takes `stage_time(times, i, j, k)`, "
         "and in a long pipeline the slowest stage sets the pace. Write "
         "`my_stage_slicing(times, nodes, gpus_per_node)` returning `(slowest, stages)`: the "
         "smallest possible slowest-stage time and the stages as `(first, end, devices)` "
         f"triples. The checker compares with exhaustive search on {len(STAGE_PROBLEMS) - 1} "
         "small models, recomputes your stages' times, and then gives you a "
         f"{len(LARGE)}-layer model on {LARGE_NODES} nodes of {LARGE_GPUS} GPUs with "
         f"{LIMIT_S:g} s to answer: exhaustive search there has "
         f"{slicings(len(LARGE), LARGE_NODES * LARGE_GPUS, submesh_sizes(LARGE_NODES, LARGE_GPUS)):.1e}"
         " slicings to try.",
    hints=("Think of the best answer for the first j layers on d GPUs. Its last stage is "
           "some layers i..j-1 on some sub-mesh of k GPUs; what is left over is a smaller "
           "problem of exactly the same kind.",
           "So one table, indexed by (layers covered, GPUs used), holds every answer you "
           "need, and each entry depends only on entries with fewer layers. Which k may "
           "the last stage take on this cluster, and what does an entry with no valid "
           "slicing hold?",
           "To return the stages and not only the time, keep a second table saying which "
           "(i, k) won each entry, and walk it back from the whole model. The table has "
           "(layers + 1) x (GPUs + 1) entries, each trying every (i, k): count how many "
           f"stage_time calls that is for {len(LARGE)} layers on {LARGE_NODES * LARGE_GPUS} GPUs."),
    inputs=_slicing_inputs, expected=_expected_slicing, adapter=_answer_slicing,
    forbidden={"companion.learning.nb12.stage_slicing_reference":
               "it is the package's solution to this exercise",
               "companion.learning.nb12.brute_force_slicing": "it is the checker's answer",
               "companion.autoparallel.stages.plan_stages":
               "it is Alpa's program, the one you are writing"},
    world_size=1, rtol=1e-9, timeout=40.0,
    context="import math\nfrom companion.learning.nb12 import stage_time, submesh_sizes",
))
