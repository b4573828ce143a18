"""Exercise 12.stage-slicing (notebook 12, section 4): Alpa's stage slicing as a dynamic
program, checked against exhaustive search."""
from __future__ import annotations

import functools
import itertools

from ..exercise import Exercise, register

# ---- 12.stage-slicing -------------------------------------------------------------------
# Each problem: per-layer compute times (seconds for one micro-batch, forward and
# backward, on one device) and the devices to spread them over. A stage of layers i..j-1
# on d devices takes sum(times[i:j]) / d * efficiency(d) (intra-operator parallelism
# loses a little to its collectives) plus, when it has a successor, a fixed hand-off.
HANDOFF = 0.02


def _efficiency(devices: int) -> float:
    return 1.0 + 0.1 * (devices - 1)   # each extra device adds 10% of collective overhead


def stage_time(times, i, j, devices) -> float:
    """Time of layers ``i..j-1`` as one stage on ``devices`` devices (see above)."""
    return sum(times[i:j]) / devices * _efficiency(devices) + (HANDOFF if j < len(times) else 0.0)


STAGE_PROBLEMS = {
    # an uneven model: a large embedding first and a large LM head last
    "embedding + 6 blocks + LM head, 4 devices": ((3.0, 1, 1, 1, 1, 1, 1, 4.0), 4),
    "8 equal blocks, 4 devices": ((1.0,) * 8, 4),
    "one heavy layer in the middle, 3 devices": ((1, 1, 6.0, 1, 1, 1), 3),
    "5 layers, 5 devices": ((2, 1, 3, 1, 2), 5),
    "10 layers, 6 devices": ((2.5, 1, 1, 1, 1.5, 1, 1, 1, 1, 3.5), 6),
}


def stage_slicing_reference(times, devices):
    """Alpa's inter-operator DP, bottleneck form: ``best[j][d]`` is the smallest possible
    slowest stage for the first ``j`` layers on ``d`` devices."""
    n = len(times)
    inf = float("inf")
    best = [[inf] * (devices + 1) for _ in range(n + 1)]
    cut = [[None] * (devices + 1) for _ in range(n + 1)]
    best[0][0] = 0.0
    for j in range(1, n + 1):
        for d in range(1, devices + 1):
            for i in range(j):
                for k in range(1, d + 1):
                    value = max(best[i][d - k], stage_time(times, i, j, k))
                    if value < best[j][d]:
                        best[j][d], cut[j][d] = value, (i, k)
    stages, j, d = [], n, devices
    while j:
        i, k = cut[j][d]
        stages.append((i, j, k))
        j, d = i, d - k
    return best[n][devices], stages[::-1]


def brute_force_slicing(times, devices):
    """Every way to cut the layers and share the devices: the test of the DP."""
    n, best = len(times), (float("inf"), None)
    for cuts in range(min(n, devices)):   # every stage needs a device
        for where in itertools.combinations(range(1, n), cuts):
            bounds = (0, *where, n)
            parts = cuts + 1
            # the ways to write `devices` as an ordered sum of `parts` positive counts
            for marks in itertools.combinations(range(1, devices), cuts):
                share = [b - a for a, b in zip((0, *marks), (*marks, devices))]
                stages = [(bounds[s], bounds[s + 1], share[s]) for s in range(parts)]
                value = max(stage_time(times, *st) for st in stages)
                if value < best[0]:
                    best = (value, stages)
    return best


@functools.lru_cache(maxsize=None)
def _brute(times, devices):
    return brute_force_slicing(times, devices)[0]


def _slicing_inputs(rank, world_size):
    return (STAGE_PROBLEMS,)


def _stage_problem(stages, times, devices) -> str | None:
    if not isinstance(stages, (list, tuple)) or not stages:
        return f"returned {stages!r:.60} as the stages; return a list of (first, end, devices)"
    j = 0
    for st in stages:
        if not (isinstance(st, (list, tuple)) and len(st) == 3):
            return f"the stage {st!r:.40} is not a (first, end, devices) triple"
        i, end, k = st
        if i != j or not end > i:
            return (f"the stages must cover the layers in order without gaps: a stage "
                    f"starts at layer {i} where {j} was expected")
        if not (isinstance(k, int) and k >= 1):
            return f"the stage {st!r} has {k!r} devices; give every stage at least one"
        j = end
    if j != len(times):
        return f"the stages end at layer {j}, but there are {len(times)} layers"
    if sum(st[2] for st in stages) != devices:
        return f"the stages use {sum(st[2] for st in stages)} devices; there are {devices}"
    return None


def _answer_slicing(candidate, problems):
    out = {}
    for name, (times, devices) in problems.items():
        got = candidate(times, devices)
        if not (isinstance(got, tuple) and len(got) == 2):
            return got   # the feedback shows what came back instead of a pair
        value, stages = got
        problem = _stage_problem(stages, times, devices)
        slowest = max(stage_time(times, *st) for st in stages) if problem is None else None
        out[name] = {"slowest stage (returned)": round(float(value), 9),
                     "slowest stage of the returned stages": problem or round(slowest, 9)}
    return out


def _expected_slicing(problems):
    return {name: {"slowest stage (returned)": round(_brute(times, devices), 9),
                   "slowest stage of the returned stages": round(_brute(times, devices), 9)}
            for name, (times, devices) in problems.items()}


STAGE_SLICING = register(Exercise(
    id="12.stage-slicing", level="core",
    title="Alpa's stage slicing as a dynamic program",
    student_name="my_stage_slicing",
    task="A model is a chain of layers with compute times `times` (one micro-batch, one "
         "device). Cut it into contiguous stages and give stage s `k_s >= 1` of the "
         "`devices` devices (all of them used); a stage of layers `i..j-1` on `k` devices "
         "takes `stage_time(times, i, j, k)`. In a long pipeline the slowest stage sets the "
         "pace. Write `my_stage_slicing(times, devices)` returning `(slowest, stages)`: the "
         "smallest possible slowest-stage time and the stages as `(first, end, devices)` "
         "triples. The checker compares with an exhaustive search on five models, uneven "
         "ones included, and recomputes your stages' times.",
    hints=("Think of the best answer for the first j layers on d devices. The last stage of "
           "that answer is some layers i..j-1 on some k devices; what remains is a smaller "
           "problem of the same kind.",
           "best[j][d] = min over i < j and 1 <= k <= d of max(best[i][d - k], "
           "stage_time(times, i, j, k)), starting from best[0][0] = 0 and infinity elsewhere.",
           "Fill best for j = 1..n and d = 1..devices in increasing order, remember the (i, k) "
           "that won in a second table, and walk back from (n, devices) to list the stages."),
    inputs=_slicing_inputs, expected=_expected_slicing, adapter=_answer_slicing,
    forbidden={"companion.learning.nb12.stage_slicing_reference":
               "it is the package's solution to this exercise",
               "companion.learning.nb12.brute_force_slicing": "it is the checker's answer"},
    world_size=1, rtol=1e-9, timeout=30.0,
    context="import math\nfrom companion.learning.nb12 import stage_time",
))
