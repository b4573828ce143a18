"""Notebook 12's exercises (``notebooks/12_auto_parallelism.ipynb``): auto-parallelism.

* ``12.megatron-placements`` (warm-up, real ranks): give DTensor placements to the two
  weights of an MLP so that one forward and one backward pass need exactly the
  communication Megatron's column-then-row split needs, one all-reduce; checked on 4
  ranks with torch's ``CommDebugMode`` counting the collectives DTensor issues.
* ``12.stage-slicing`` (core): Alpa's inter-operator dynamic program: cut a chain of
  layers into contiguous stages, give each stage a number of devices, and minimise the
  slowest stage; checked against exhaustive search on problems with uneven layers.
* ``12.ep-cp-degrees`` (stretch): choose the expert- and context-parallel degrees of a
  run with the 5D planner's breakdowns (see the end of this module).
"""
from __future__ import annotations

import functools
import itertools

import torch
import torch.distributed as dist

from .exercise import Exercise, register

# ---- 12.megatron-placements -------------------------------------------------------------
# An MLP relu(x @ W1.T) @ W2.T small enough to print, on a 1D mesh of the 4 ranks.
D, FFN, TOKENS = 8, 16, 4


def _mlp_inputs(rank, world_size):
    g = torch.Generator().manual_seed(12)
    w1 = torch.randn(FFN, D, generator=g)
    w2 = torch.randn(D, FFN, generator=g)
    return w1, w2


def megatron_placements_reference(w1, w2, mesh):
    """The package's answer: W1 split by its rows (the hidden units, a column-parallel
    layer in Megatron's words) and W2 by its columns (row-parallel)."""
    from torch.distributed.tensor import Shard, distribute_tensor
    return (distribute_tensor(w1, mesh, [Shard(0)]), distribute_tensor(w2, mesh, [Shard(1)]))


COLLECTIVES = ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor",
               "all_to_all_single")


def comm_counts(mode) -> dict[str, int]:
    """``CommDebugMode``'s counts by collective name (``all_reduce``), not by op object;
    every collective DTensor can issue is listed, so a difference names the one that
    differs rather than a missing key."""
    counts = {str(op).split(".")[-1]: n for op, n in mode.get_comm_counts().items() if n}
    return {**{name: 0 for name in COLLECTIVES}, **counts}


def run_sharded_mlp(candidate, w1, w2):
    """Distribute the weights as ``candidate`` says, run forward and backward under
    ``CommDebugMode``, and return the values and the collectives of each pass."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Replicate, distribute_tensor
    from torch.distributed.tensor.debug import CommDebugMode

    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    x = torch.randn(TOKENS, D, generator=torch.Generator().manual_seed(1))
    d1, d2 = candidate(w1, w2, mesh)
    for name, d in (("w1", d1), ("w2", d2)):
        if not isinstance(d, DTensor):
            raise TypeError(f"my_megatron_placements returned {type(d).__name__} for {name}; "
                            "return DTensors made with distribute_tensor(w, mesh, [placement])")
    d1, d2 = d1.detach().requires_grad_(), d2.detach().requires_grad_()
    dx = distribute_tensor(x, mesh, [Replicate()])
    with CommDebugMode() as forward:
        out = torch.relu(dx @ d1.T) @ d2.T
        # The layer's caller wants the whole output on every rank, as nn.Linear gives it.
        out = out.redistribute(mesh, [Replicate()])
    with CommDebugMode() as backward:
        (out.to_local() ** 2).sum().backward()
    return {"weight elements on this rank": d1.to_local().numel() + d2.to_local().numel(),
            "output": out.to_local(), "W1 gradient": d1.grad.full_tensor(),
            "W2 gradient": d2.grad.full_tensor(),
            "collectives in forward": comm_counts(forward),
            "collectives in backward": comm_counts(backward)}


PLACEMENTS = register(Exercise(
    id="12.megatron-placements", level="warm-up",
    title="DTensor placements for a column-then-row MLP",
    student_name="my_megatron_placements",
    task=f"The MLP `relu(x @ W1.T) @ W2.T` (W1: [{FFN}, {D}], W2: [{D}, {FFN}]) runs on a "
         "1D mesh of 4 ranks with torch's DTensor. Write `my_megatron_placements(w1, w2, "
         "mesh)` returning `(W1, W2)` as DTensors made with `distribute_tensor(w, mesh, "
         "[placement])`, where a placement is `Shard(dim)` or `Replicate()`. Whatever you "
         "choose, DTensor computes the right output: the placements decide only the "
         "communication and the memory. The checker runs forward and backward on 4 ranks under "
         "`CommDebugMode` and wants the values of one process **and** Megatron's traffic: "
         "one all-reduce in forward, none in backward, with each rank holding "
         "a quarter of the weights.",
    hints=("In x @ W1.T each row of W1 makes one hidden unit; in W2 each column consumes "
           "one. If a rank holds some hidden units end to end, what does it need from the "
           "others before the last sum?",
           "Split the hidden dimension in both matrices: it is W1's dimension 0 and W2's "
           "dimension 1. Each rank then computes a partial output that the ranks add up "
           "once.",
           "from torch.distributed.tensor import Shard; `distribute_tensor(w1, mesh, "
           "[Shard(0)])` splits W1's rows over the mesh."),
    inputs=_mlp_inputs, reference=megatron_placements_reference, adapter=run_sharded_mlp,
    forbidden={"companion.learning.nb12.megatron_placements_reference":
               "it is the package's solution to this exercise",
               "torch.distributed.tensor.parallel.parallelize_module":
               "its ColwiseParallel/RowwiseParallel styles choose the placements for you"},
    pure=True, rtol=1e-5, atol=1e-5, timeout=60.0,
    context="import torch\nfrom torch.distributed.tensor import Replicate, Shard, distribute_tensor",
))


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


# ---- 12.cp-ep-degrees -------------------------------------------------------------------
# CS336 L8 §7.2: split the model only as far as it must go, and give the rest to data
# parallelism. With TP and PP fixed, the smallest CP that fits leaves the most DP; then
# the EP degree is a free choice of the MoE layers, judged by step time.
CP_DEGREES = (1, 2, 4, 8, 16, 32)
TOLERANCE = 0.10


def _cp_ep_problems():
    import dataclasses
    from ..planner import CLUSTERS, MODELS
    llama_128k = dataclasses.replace(MODELS["Llama-3 405B"], name="Llama-3 405B, 128K",
                                     seq_len=131072)
    llama70_32k = dataclasses.replace(MODELS["Llama-3 70B"], name="Llama-3 70B, 32K",
                                      seq_len=32768)
    h128 = CLUSTERS["16 nodes, 128x H100"]
    return {
        "Llama-3 405B, 131,072-token sequences, 16,384 H100s, TP 8, PP 16":
            (llama_128k, CLUSTERS["Llama-3 scale: 16,384x H100"], 128, 8, 16),
        "Llama-3 70B, 32,768-token sequences, 128 H100s, TP 8, PP 2": (llama70_32k, h128, 64, 8, 2),
        "DeepSeek-V3, 2,048 H800s, TP 1, PP 16": (MODELS["DeepSeek-V3 671B"],
                                                  CLUSTERS["DeepSeek-V3: 2,048x H800"], 15360, 1, 16),
        "Mixtral 8x7B, 128 H100s, TP 1, PP 2": (MODELS["Mixtral 8x7B"], h128, 512, 1, 2),
    }


def ep_options(model) -> list[int]:
    """EP degrees to consider: powers of two dividing the experts, up to 64 (8 nodes)."""
    if not model.is_moe:
        return [1]
    return [e for e in (1, 2, 4, 8, 16, 32, 64) if model.experts % e == 0]


def evaluate_axes(model, cluster, global_batch, tp, pp, cp, ep):
    """``planner.evaluate`` of DP = GPUs / (TP x PP x CP) with ZeRO-1, micro-batch 1,
    Llama 3's balanced stages and 1F1B, the better of selective and full recomputation
    and of 1 or 4 interleaved chunks; experts unsplit (ETP 1)."""
    from ..planner import evaluate
    dp = cluster.gpus // (tp * pp * cp)
    if dp < 1 or dp * tp * pp * cp != cluster.gpus:
        return evaluate(model, cluster, global_batch, max(dp, 1), tp, pp, cp=cp, ep=ep)
    tries = [evaluate(model, cluster, global_batch, dp, tp, pp, 1, 1, recompute, chunks,
                      cp=cp, ep=ep, etp=1 if model.is_moe else None, stage_split="llama3")
             for recompute in ("selective", "full") for chunks in ((1, 4) if pp > 1 else (1,))]
    fits = [p for p in tries if p.feasible]
    return min(fits, key=lambda p: p.step_time) if fits else tries[0]


def cp_ep_reference(model, cluster, global_batch, tp, pp):
    """The smallest CP with any feasible EP, then the fastest EP at that CP."""
    for cp in CP_DEGREES:
        if cluster.gpus % (tp * pp * cp):
            continue
        fits = [(p.step_time, ep) for ep in ep_options(model)
                if (p := evaluate_axes(model, cluster, global_batch, tp, pp, cp, ep)).feasible]
        if fits:
            return cp, min(fits)[1]
    return None


def _cp_ep_inputs(rank, world_size):
    # The package's answers are found here, before the student's code is watched (the
    # adapter runs inside the watch, where calling the reference would count as theirs).
    problems = _cp_ep_problems()
    return problems, {name: cp_ep_reference(*args) for name, args in problems.items()}


def _judge_cp_ep(candidate, problems, answers):
    out = {}
    for name, (model, cluster, batch, tp, pp) in problems.items():
        got = candidate(model, cluster, batch, tp, pp)
        if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(v, int) for v in got)):
            return got   # the feedback shows what came back instead of (cp, ep)
        cp, ep = got
        p = evaluate_axes(model, cluster, batch, tp, pp, cp, ep)
        best_cp, best_ep = answers[name]
        best = evaluate_axes(model, cluster, batch, tp, pp, best_cp, best_ep)
        out[name] = {"fits": True if p.feasible else p.reason,
                     "CP is the smallest that fits": cp <= best_cp or
                     f"CP {cp}, but CP {best_cp} fits and leaves {cp // best_cp}x the DP",
                     f"step within {TOLERANCE:.0%} of the best EP at that CP":
                     (p.feasible and p.step_time <= (1 + TOLERANCE) * best.step_time) or
                     (f"{p.step_time:.2f} s against {best.step_time:.2f} s (EP {best_ep}); "
                      f"exposed all-to-all {p.times.get('ep_comm_exposed', 0):.2f} s"
                      if p.feasible else "it does not fit")}
    return out


def _cp_ep_expected(problems, answers):
    return {name: {"fits": True, "CP is the smallest that fits": True,
                   f"step within {TOLERANCE:.0%} of the best EP at that CP": True}
            for name in problems}


CP_EP = register(Exercise(
    id="12.cp-ep-degrees", level="stretch", title="context- and expert-parallel degrees",
    student_name="my_cp_ep",
    task="TP and PP are fixed (the runs' published values or close to them). Write "
         "`my_cp_ep(model, cluster, global_batch, tp, pp)` returning `(cp, ep)`: the "
         "context-parallel degree and, for a MoE model, the expert-parallel degree "
         "(1 for a dense model); DP is what remains, GPUs / (TP x PP x CP). Follow CS336's "
         "rule: split a sequence only as far as memory forces (the smallest CP that fits, "
         "which keeps DP largest), then choose the EP with the fastest step at that CP. "
         "Inside your function you may call `evaluate_axes(model, cluster, global_batch, "
         "tp, pp, cp, ep)` (from `companion.learning.nb12`) and read `p.feasible`, "
         "`p.reason`, `p.step_time`, `p.times`; the planner's search is not allowed. The "
         "checker runs four problems: Llama-3 405B's long-context stage, Llama-3 70B at "
         "32K tokens, DeepSeek-V3 and Mixtral 8x7B.",
    hints=("Two questions, in order: the smallest CP for which some configuration fits, "
           "then the EP that is fastest at that CP. A dense model has one EP: 1.",
           "Try CP = 1, 2, 4, ... and, for each, every EP from `ep_options(model)`; stop at "
           "the first CP where `evaluate_axes(...).feasible` holds for some EP.",
           "At that CP keep the EP with the smallest `step_time`. Compare what you get for "
           "DeepSeek-V3 with its published EP 64: `p.times['ep_comm_exposed']` says why "
           "DeepSeek needed DualPipeV to hide it."),
    inputs=_cp_ep_inputs, expected=_cp_ep_expected, adapter=_judge_cp_ep,
    forbidden={"companion.learning.nb12.cp_ep_reference":
               "it is the package's solution to this exercise",
               "companion.planner.search.plan": "the search would choose for you",
               "companion.widgets.autoparallel.search_5d": "the search would choose for you"},
    world_size=1, timeout=60.0,
    context="from companion.learning.nb12 import evaluate_axes, ep_options, CP_DEGREES",
))
