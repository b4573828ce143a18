"""Memory, time and communication of one DP x TP x PP x ZeRO configuration.

Taught in notebook 09. The pieces come from the earlier notebooks:
model-state memory from ``companion.memory.zero_memory_per_gpu`` (notebook 03),
activations from ``companion.memory.activation_memory_per_layer`` (Korthikanti et al.),
the pipeline bubble from ``companion.pipeline.bubble_fraction`` (notebook 04), and the
time of each collective from the alpha-beta model of notebook 02.

Placement follows Megatron-LM: tensor-parallel ranks are adjacent (inside a node when
``tp <= gpus_per_node``), pipeline stages next, data-parallel replicas outermost. Each
collective is charged at the bandwidth its group really has (``planner.links``): NVLink
inside a node; across nodes, a hierarchical reduction that uses one NIC per member of
the group in each node (all 8 of a node's NICs for a DP group when TP x PP = 1, one
when TP x PP >= 8). TP at 16 spans two nodes; a pipeline runs at its slowest boundary.

Simplifications, stated so they can be argued with: every layer costs the same; the
busiest pipeline stage holds ceil(layers / pp) layers plus the larger embedding matrix;
TP and PP communication sit on the critical path; DP communication overlaps the
backward pass (the whole step for ZeRO-3) and only what does not fit is exposed; a
fixed ``kernel_efficiency`` turns peak FLOP/s into achieved FLOP/s.
"""
from __future__ import annotations

import dataclasses
import math

from .. import costmodel, memory
from ..pipeline import bubble_fraction
from .comm import comm_bytes_per_step
from .links import group_collective_time, pp_link
from .specs import ClusterSpec, ModelSpec
from ..validation import fraction, nonnegative_int, one_of, positive_int, positive_number

__all__ = ["Plan", "evaluate", "collective_time"]

ACT_BYTES = 2  # 16-bit activations and gradients on the wire
BUCKET_BYTES = 25e6  # PyTorch DDP's default gradient bucket


def collective_time(kind: str, nbytes: float, ranks: int, alpha: float, beta: float) -> float:
    """Alpha-beta time of a ring collective on a ``nbytes`` buffer over ``ranks`` ranks.

    The all-reduce is notebook 02's ring, ``costmodel.predict_time("ring", ...)``:
    2(p-1) alpha + 2(p-1)/p n/beta. All-gather and reduce-scatter are each half of it
    (all-reduce = reduce-scatter + all-gather); point-to-point is alpha + n/beta.
    """
    if kind == "p2p":
        return alpha + nbytes / beta
    full = costmodel.predict_time("ring", nbytes, ranks, alpha, beta)
    if kind == "all_reduce":
        return full
    if kind in ("all_gather", "reduce_scatter"):
        return full / 2
    raise ValueError(f"unknown collective {kind!r}; use all_reduce, all_gather, reduce_scatter or p2p.")


@dataclasses.dataclass
class Plan:
    dp: int
    tp: int
    pp: int
    zero: int
    micro_batch: int
    recompute: str
    chunks: int = 1  # interleaved 1F1B: model chunks per pipeline rank
    microbatches: int = 0
    memory: dict = dataclasses.field(default_factory=dict)   # bytes per GPU
    times: dict = dataclasses.field(default_factory=dict)    # seconds per step
    bubble: float = 0.0
    step_time: float = math.inf
    mfu: float = 0.0
    tp_inter_node: bool = False
    comm_bytes: dict = dataclasses.field(default_factory=dict)  # payload bytes per step
    reason: str = ""  # empty when feasible

    @property
    def feasible(self) -> bool:
        return not self.reason

    def label(self) -> str:
        interleave = f"x{self.chunks}" if self.chunks > 1 else ""
        return (f"DP{self.dp} TP{self.tp} PP{self.pp}{interleave} ZeRO-{self.zero} "
                f"mb{self.micro_batch} {self.recompute}")


def _structural_reason(model, cluster, global_batch, plan) -> str:
    dp, tp, pp = plan.dp, plan.tp, plan.pp
    if dp * tp * pp != cluster.gpus:
        return f"DP x TP x PP = {dp * tp * pp} but the cluster has {cluster.gpus} GPUs"
    if model.heads % tp:
        return f"TP={tp} does not divide the {model.heads} attention heads"
    if pp > model.layers:
        return f"PP={pp} stages for only {model.layers} layers"
    if global_batch % (dp * plan.micro_batch):
        return (f"global batch {global_batch} is not a multiple of DP x micro-batch = "
                f"{dp * plan.micro_batch}")
    m = global_batch // (dp * plan.micro_batch)
    if pp > 1 and m < pp:
        return (f"{m} micro-batch(es) per replica for {pp} pipeline stages: the pipeline never "
                "fills; raise the global batch or lower DP or the micro-batch size")
    if plan.chunks > 1 and (pp == 1 or m % pp or plan.chunks * pp > model.layers):
        return (f"interleaving {plan.chunks} chunks needs PP > 1, micro-batches ({m}) a multiple "
                f"of PP ({pp}) and at least {plan.chunks * pp} layers")
    if pp > 1 and plan.zero >= 2:
        return ("ZeRO-2/3 with pipeline parallelism would re-communicate gradients or weights "
                "for every micro-batch (DeepSpeed forbids the combination)")
    return ""


def _check_config(global_batch, dp, tp, pp, zero, micro_batch, recompute, chunks,
                  kernel_efficiency, reserve_gb) -> None:
    # Values that are no configuration at all; a configuration that merely cannot run
    # (DP x TP x PP != GPUs, TP not dividing the heads) is a Plan with a reason instead.
    for name, value in (("global_batch", global_batch), ("dp", dp), ("tp", tp), ("pp", pp),
                        ("micro_batch", micro_batch), ("chunks", chunks)):
        positive_int(name, value, f"pass a whole number >= 1 for {name}.")
    nonnegative_int("zero", zero, "pass a ZeRO stage: 0, 1, 2 or 3.")
    one_of("zero", zero, (0, 1, 2, 3), "pass a ZeRO stage: 0, 1, 2 or 3.")
    one_of("recompute", recompute, ("none", "selective", "full"))
    fraction("kernel_efficiency", kernel_efficiency, "pass the share of peak FLOP/s, e.g. 0.6.")
    positive_number("reserve_gb", reserve_gb, "pass the GB kept free per GPU, e.g. 2.0.",
                    zero=True)


def evaluate(model: ModelSpec, cluster: ClusterSpec, global_batch: int, dp: int, tp: int,
             pp: int, zero: int = 1, micro_batch: int = 1, recompute: str = "selective",
             chunks: int = 1, kernel_efficiency: float = 0.6, reserve_gb: float = 2.0) -> Plan:
    """Memory per GPU, step time and MFU of one configuration; ``plan.reason`` says why
    it cannot run (empty when it can). ``global_batch`` is in sequences."""
    _check_config(global_batch, dp, tp, pp, zero, micro_batch, recompute, chunks,
                  kernel_efficiency, reserve_gb)
    plan = Plan(dp, tp, pp, zero, micro_batch, recompute, chunks)
    plan.reason = _structural_reason(model, cluster, global_batch, plan)
    if plan.reason:
        return plan
    m = plan.microbatches = global_batch // (dp * micro_batch)
    layers_per_stage = max(model.stage_layers(pp))
    params_per_gpu = model.params_per_gpu(tp, pp)
    wire = comm_bytes_per_step(model, dp, tp, pp, micro_batch, m, zero, ACT_BYTES, recompute)

    states = memory.zero_memory_per_gpu(params_per_gpu, dp, zero)
    per_layer = memory.activation_memory_per_layer(
        model.seq_len, micro_batch, model.hidden, model.heads, tp=tp,
        sequence_parallel=tp > 1, recompute=recompute)
    # 1F1B: the first stage holds p micro-batches; interleaving adds (p-1)/(p v) of that
    # (Narayanan et al. 2021).
    in_flight = min(pp, m) * (1 + (pp - 1) / (pp * chunks) if chunks > 1 else 1) if pp > 1 else 1
    plan.memory = {"params": states["params"], "grads": states["grads"],
                   "optimizer": states["optimizer"],
                   "activations": per_layer * layers_per_stage * in_flight,
                   "reserve": reserve_gb * 1e9}
    plan.memory["total"] = sum(plan.memory.values())
    if plan.memory["total"] > cluster.gpu_memory_gb * 1e9:
        plan.reason = (f"out of memory: needs {plan.memory['total'] / 1e9:.1f} GB per GPU, "
                       f"the GPU has {cluster.gpu_memory_gb:g} GB")
        return plan

    # Compute: the model's FLOPs (+1 forward when everything is recomputed) over all GPUs.
    tokens = global_batch * model.seq_len
    recompute_factor = 4 / 3 if recompute == "full" else 1.0
    achieved = cluster.peak_tflops * 1e12 * kernel_efficiency
    compute = model.flops_per_token() * tokens * recompute_factor / (cluster.gpus * achieved)

    # TP: per block and micro-batch, 2 all-reduces forward and 2 backward (with sequence
    # parallelism: all-gathers and reduce-scatters of the same total bytes).
    plan.tp_inter_node = tp > cluster.gpus_per_node
    tp_calls = (4 + (2 if recompute == "full" else 0)) * layers_per_stage * m
    tp_time = tp_calls * group_collective_time("all_reduce", wire["tp"] / max(tp_calls, 1),
                                               cluster, tp) if tp > 1 else 0.0

    # PP: each micro-batch's activation forward and its gradient back across a boundary,
    # at the pace of the slowest boundary.
    pp_time = 0.0
    if pp > 1:
        messages = 2 * m * chunks
        pp_alpha, pp_beta, _ = pp_link(cluster, tp, pp)
        pp_time = messages * collective_time("p2p", wire["pp_boundary"] / (2 * m), 2,
                                             pp_alpha, pp_beta)

    # DP: not one call: DDP-style wrappers reduce 25 MB buckets, FSDP gathers and
    # reduce-scatters layer by layer, and every call pays its rings' latencies. The
    # group is dp ranks spaced tp * pp apart: it shares a node's NICs with the other
    # model-parallel ranks' groups (planner.links).
    shard_bytes = params_per_gpu * ACT_BYTES
    calls = layers_per_stage if zero == 3 else max(1, math.ceil(shard_bytes / BUCKET_BYTES))
    per_call = shard_bytes / calls
    if zero == 0:
        ops = ["all_reduce"]
    else:
        ops = ["reduce_scatter"] + ["all_gather"] * (2 if zero == 3 else 1)
    dp_time = calls * sum(group_collective_time(op, per_call, cluster, dp, tp * pp)
                          for op in ops) if dp > 1 else 0.0
    overlap_window = compute if zero == 3 else compute * 2 / 3  # backward is 2/3 of it
    dp_exposed = max(0.0, dp_time - overlap_window)

    if pp == 1:
        plan.bubble = 0.0
    elif chunks > 1:
        plan.bubble = bubble_fraction(pp, m, "interleaved", chunks=chunks)
    else:
        plan.bubble = bubble_fraction(pp, m, "1f1b")
    busy = compute + tp_time + pp_time
    plan.step_time = busy / (1 - plan.bubble) + dp_exposed
    plan.comm_bytes = wire
    plan.times = {"compute": compute, "tp_comm": tp_time, "pp_comm": pp_time,
                  "bubble": busy / (1 - plan.bubble) - busy, "dp_comm_exposed": dp_exposed,
                  "dp_comm_total": dp_time}
    useful = 6.0 * model.num_params() * tokens
    plan.mfu = useful / (plan.step_time * cluster.gpus * cluster.peak_tflops * 1e12)
    return plan
