"""Inter-operator parallelism the way Alpa does it: slice layers into pipeline stages and
the cluster into sub-meshes with a dynamic program (L20 p.10-13).

Taught in notebook 12 (``notebooks/12_auto_parallelism.ipynb``). Zheng et al., "Alpa"
(OSDI 2022, https://arxiv.org/abs/2201.12023), section 5: a pipeline of stages with
per-micro-batch latencies t_1..t_S runs B micro-batches in (their eq. 2)::

    T = sum_i t_i + (B - 1) * max_i t_i

Each stage is a contiguous run of layers on a sub-mesh of shape (1, 2^k) inside a node or
(n, g) whole nodes, and t_i is its *intra-operator* cost: the best sharding of those
layers on that sub-mesh. :func:`alpha_beta_intra_op` is this package's small model of it
(the best DP x TP split under the alpha-beta model of ``companion.collectives.costmodel``); any
callable ``intra_op(layers, mesh, in_flight) -> IntraOpChoice | None`` plugs in instead,
e.g. one built on the integer program of ``companion.autoparallel.ilp``.

Modelling choices (say them when you argue with the numbers): 1F1B keeps ``min(s, B)``
micro-batches of activations on the stage that has s stages from it to the end (Alpa's
memory argument); a stage sends its output and receives its gradient over one NIC per
device (NVLink on a one-node cluster); a DP group's gradient all-reduce happens once per
step and is charged as 1/B of it per micro-batch; no ZeRO inside a stage.

The layers the program slices (:func:`model_layers` builds them from a
``planner.ModelSpec``) are :mod:`.layers`; the sub-mesh shapes and the default intra-op
cost, :mod:`.intra_op`. This module hands both on, as the notebook uses them beside the
program.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math

from ..validation import callable_arg, positive_int
from .intra_op import IntraOpChoice, alpha_beta_intra_op, submesh_shapes
from .layers import LLAMA_3_2_1B, Layer, model_layers

__all__ = ["pipeline_time", "plan_stages", "brute_force_stages", "equal_layers_plan",
           "compare_with_equal_split"]


@dataclasses.dataclass(frozen=True)
class Stage:
    """Layers ``start:stop`` on a sub-mesh ``mesh`` = (nodes, devices per node)."""
    start: int
    stop: int
    names: tuple
    mesh: tuple
    config: str
    time: float        # seconds per micro-batch, the stage boundary included
    memory: float      # bytes per device
    in_flight: int     # micro-batches whose activations it holds (1F1B)


@dataclasses.dataclass
class StagePlan:
    """Stages in pipeline order and the step time of eq. 2 (inf with a reason if none fits)."""
    stages: list
    step_time: float
    microbatches: int
    method: str
    reason: str = ""

    def label(self) -> str:
        return " | ".join(f"{s.names[0]}..{s.names[-1]} on {s.mesh[0]}x{s.mesh[1]} {s.config}"
                          if len(s.names) > 1 else f"{s.names[0]} on {s.mesh[0]}x{s.mesh[1]} "
                          f"{s.config}" for s in self.stages) or self.reason


def pipeline_time(stage_times, microbatches: int) -> float:
    """Alpa's eq. 2: ``sum(t) + (B - 1) * max(t)`` for B = ``microbatches``."""
    positive_int("microbatches", microbatches, "pass the number of micro-batches B, e.g. 8.")
    times = list(stage_times)
    if not times:
        raise ValueError("stage_times is empty; pass one time per stage.")
    return sum(times) + (microbatches - 1) * max(times)


def _check(layers, cluster, microbatches, intra_op):
    layers = list(layers) if not isinstance(layers, (str, bytes)) else layers
    if not layers or not all(isinstance(x, Layer) for x in layers):
        raise ValueError("layers must be a non-empty list of stages.Layer (e.g. from "
                         "model_layers(model)).")
    shapes = submesh_shapes(cluster)
    positive_int("microbatches", microbatches, "pass the number of micro-batches B, e.g. 8.")
    if intra_op is None:
        intra_op = alpha_beta_intra_op(cluster, microbatches)
    callable_arg("intra_op", intra_op, "pass intra_op(layers, mesh, in_flight) or None.")
    return layers, shapes, _stage_table(layers, cluster, microbatches, intra_op)


def _stage_table(layers, cluster, microbatches, intra_op):
    """``stage(k, i, mesh, s)``: layers k..i-1 on ``mesh`` with s stages from it to the end,
    as a Stage (None if nothing fits), each distinct case costed once."""
    alpha, beta = cluster.link(cluster.nodes > 1)

    @functools.lru_cache(maxsize=None)
    def stage(k, i, mesh, s):
        in_flight = min(s, microbatches)
        choice = intra_op(layers[k:i], mesh, in_flight)
        if choice is None:
            return None
        p = mesh[0] * mesh[1]
        # output forward, its gradient back; each device sends its 1/p share on its own NIC
        send = 2 * (alpha + layers[i - 1].activation_bytes / (p * beta)) if i < len(layers) else 0.0
        return Stage(k, i, tuple(x.name for x in layers[k:i]), mesh, choice.config,
                     choice.time + send, choice.memory, in_flight)

    return lambda k, i, mesh, s: stage(k, i, mesh, min(s, microbatches))


def _finish(stages, microbatches, method, reason):
    if not stages:
        return StagePlan([], math.inf, microbatches, method, reason)
    return StagePlan(list(stages), pipeline_time([s.time for s in stages], microbatches),
                     microbatches, method)


def plan_stages(layers, cluster, microbatches: int, intra_op=None) -> StagePlan:
    """Alpa's dynamic program (section 5.2): the stages and sub-meshes that minimise eq. 2
    using every device of ``cluster``. ``intra_op`` defaults to :func:`alpha_beta_intra_op`."""
    layers, shapes, stage = _check(layers, cluster, microbatches, intra_op)
    K, D, B = len(layers), cluster.gpus, microbatches
    max_s = min(K, D)
    # Every way to start a stage at layer k with s stages to go, fastest first, so that a
    # bound t_max cuts the loop short: (time, end layer i, devices, Stage).
    moves = {(k, s): sorted(((st.time, i, mesh[0] * mesh[1], st)
                             for i in range(k + 1, K - s + 2) for mesh in shapes
                             if (st := stage(k, i, mesh, s)) is not None),
                            key=lambda move: move[:3])
             for k in range(K) for s in range(1, max_s + 1)}

    def solve(t_max):
        @functools.lru_cache(maxsize=None)
        def F(s, k, d):
            """Least sum of stage times for layers k.. as s stages on exactly d devices,
            none slower than t_max: (sum, stages)."""
            if s == 0:
                return (0.0, ()) if k == K and d == 0 else (math.inf, ())
            out = (math.inf, ())
            for t, i, size, st in moves.get((k, s), ()):
                if t > t_max:
                    break
                if size <= d - (s - 1):  # leave at least one device to every later stage
                    rest, tail = F(s - 1, i, d - size)
                    if t + rest < out[0]:
                        out = (t + rest, (st, *tail))
            return out
        return [F(s, 0, D) for s in range(1, max_s + 1)]

    def T(stages):
        return pipeline_time([x.time for x in stages], B) if stages else math.inf

    # Unbounded, the program gives the least sum of stage times: a first plan, and a lower
    # bound on the sum term of every plan.
    unbounded = [r for r in solve(math.inf) if r[1]]
    if not unbounded:
        return _finish((), B, "alpa-dp", "no slicing fits in memory on this cluster")
    least_sum = min(total for total, _ in unbounded)
    best = min((stages for _, stages in unbounded), key=T)
    # t_max, the slowest stage, is one of the stage times: enumerate them, fastest first.
    for t_max in sorted({move[0] for options in moves.values() for move in options}):
        if least_sum + (B - 1) * t_max >= T(best):
            break  # every plan whose slowest stage takes t_max or more is slower than best
        for _, stages in solve(t_max):
            if T(stages) < T(best):
                best = stages
    return _finish(best, B, "alpa-dp", "")


def brute_force_stages(layers, cluster, microbatches: int, intra_op=None) -> StagePlan:
    """Every contiguous slicing times every assignment of sub-meshes that uses all devices:
    the reference :func:`plan_stages` must equal (small cases only: <= 8 layers)."""
    layers, shapes, stage = _check(layers, cluster, microbatches, intra_op)
    if len(layers) > 8:
        raise ValueError(f"layers has {len(layers)} layers; brute force is for <= 8.")
    K, best, best_t = len(layers), (), math.inf
    for n_cuts in range(min(K, cluster.gpus)):
        for cuts in itertools.combinations(range(1, K), n_cuts):
            bounds = list(zip((0, *cuts), (*cuts, K)))
            for meshes in itertools.product(shapes, repeat=len(bounds)):
                if sum(n * m for n, m in meshes) != cluster.gpus:
                    continue
                stages = [stage(k, i, mesh, len(bounds) - j)
                          for j, ((k, i), mesh) in enumerate(zip(bounds, meshes))]
                if all(stages) and pipeline_time([s.time for s in stages], microbatches) < best_t:
                    best, best_t = stages, pipeline_time([s.time for s in stages], microbatches)
    return _finish(best, microbatches, "brute-force", "no slicing fits in memory on this cluster")


def equal_layers_plan(layers, cluster, microbatches: int, stages: int | None = None,
                      intra_op=None) -> StagePlan:
    """The hand-made baseline: ``stages`` equal sub-meshes, the blocks split evenly
    (earlier stages take the remainder, as ``ModelSpec.stage_layers``), the embedding on the
    first stage and the head on the last. ``stages=None`` tries every power of two that
    divides the devices and keeps the fastest."""
    layers, shapes, stage = _check(layers, cluster, microbatches, intra_op)
    D, g = cluster.gpus, cluster.gpus_per_node
    blocks = [i for i, x in enumerate(layers) if x.kind == "block"] or list(range(len(layers)))
    options = [1 << k for k in range(D.bit_length()) if D % (1 << k) == 0 and (1 << k) <= len(blocks)]
    if stages is not None:
        positive_int("stages", stages, "pass the number of pipeline stages, e.g. 4.")
        if stages not in options:
            raise ValueError(f"stages={stages} must be a power of two dividing the "
                             f"{D} devices and at most the {len(blocks)} blocks; try {options}.")
        options = [stages]
    best = _finish((), microbatches, "equal-layers", "no equal split fits in memory")
    for S in options:
        size = D // S
        mesh = (1, size) if size <= g else (size // g, g)
        base, extra = divmod(len(blocks), S)
        ends = list(itertools.accumulate(base + (j < extra) for j in range(S)))
        bounds = [0] + [blocks[e - 1] + 1 for e in ends[:-1]] + [len(layers)]
        plan = [stage(bounds[j], bounds[j + 1], mesh, S - j) for j in range(S)]
        if all(plan):
            candidate = _finish(plan, microbatches, "equal-layers", "")
            if candidate.step_time < best.step_time:
                best = candidate
    return best


def compare_with_equal_split(layers, cluster, microbatches: int, intra_op=None) -> dict:
    """Alpa's plan next to the best equal-layers split on the same cost model:
    ``{"alpa": StagePlan, "equal": StagePlan, "speedup": equal / alpa step time}``."""
    alpa = plan_stages(layers, cluster, microbatches, intra_op)
    equal = equal_layers_plan(layers, cluster, microbatches, intra_op=intra_op)
    return {"alpa": alpa, "equal": equal, "speedup": equal.step_time / alpa.step_time}
