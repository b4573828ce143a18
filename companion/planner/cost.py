"""Memory, time and communication of one DP x TP x PP x ZeRO configuration.

Taught in notebook 09. The pieces come from the earlier notebooks:
model-state memory from ``companion.data_parallel.memory.zero_memory_per_gpu`` (notebook 03),
activations from ``companion.data_parallel.memory.activation_memory_per_layer`` (Korthikanti et al.),
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

from ..collectives import costmodel

from ..data_parallel import memory
from ..pipeline import bubble_fraction
from .comm import comm_bytes_per_step
from .axes import Mesh, in_flight
from .links import group_collective_time, layout_collective_time, pp_link
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
    cp: int = 1       # context parallelism (notebook 12)
    ep: int = 1       # expert parallelism (MoE models)
    etp: int = 1      # TP degree of the experts (the attention's is ``tp``)
    schedule: str = "1f1b"
    stage_split: str | None = None
    tokens_per_gpu_s: float = 0.0   # training tokens per GPU-second
    model_tflops: float = 0.0       # model FLOP/s per GPU (attention included), in TFLOP/s

    @property
    def feasible(self) -> bool:
        return not self.reason

    def label(self) -> str:
        interleave = f"x{self.chunks}" if self.chunks > 1 else ""
        cp = f" CP{self.cp}" if self.cp > 1 else ""
        ep = f" EP{self.ep}" + (f" ETP{self.etp}" if self.etp != self.tp else "") if self.ep > 1 else ""
        pipe = f"PP{self.pp}{interleave}" + (" DualPipeV" if self.schedule == "dualpipev" else "")
        return (f"DP{self.dp} TP{self.tp}{cp}{ep} {pipe} ZeRO-{self.zero} "
                f"mb{self.micro_batch} {self.recompute}")


def _structural_reason(model, cluster, global_batch, plan) -> str:
    dp, tp, pp, cp, ep = plan.dp, plan.tp, plan.pp, plan.cp, plan.ep
    if dp * tp * pp * cp != cluster.gpus:
        what = "DP x TP x PP" + (" x CP" if cp > 1 else "")
        return f"{what} = {dp * tp * pp * cp} but the cluster has {cluster.gpus} GPUs"
    if model.heads % tp:
        return f"TP={tp} does not divide the {model.heads} attention heads"
    if pp > model.layers:
        return f"PP={pp} stages for only {model.layers} layers"
    if model.seq_len % (2 * cp):
        return (f"CP={cp} needs the sequence ({model.seq_len}) in 2 x CP equal chunks "
                "(each rank takes one early and one late chunk, to balance causal attention)")
    if ep > 1 and not model.is_moe:
        return f"EP={ep} but {model.name} has no experts"
    if model.is_moe and (model.experts % ep or (tp * cp * dp) % (ep * plan.etp)):
        return (f"EP={ep} x ETP={plan.etp} must divide the {model.experts} experts and the "
                f"TP x CP x DP = {tp * cp * dp} ranks of a stage")
    if model.is_moe and model.expert_ffn % plan.etp:
        return f"ETP={plan.etp} does not divide the expert FFN ({model.expert_ffn})"
    if min(model.stage_layers(pp, plan.stage_split)) < 1:
        return f"the {plan.stage_split} split leaves a stage of PP={pp} without a layer"
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
    if plan.schedule == "dualpipev" and (pp == 1 or plan.chunks > 1 or m < 2 * pp
                                         or 2 * pp > model.layers):
        return (f"DualPipeV needs PP > 1, no interleaving, at least 2 x PP = {2 * pp} "
                f"micro-batches (has {m}) and 2 x PP layers")
    if pp > 1 and plan.zero >= 2:
        return ("ZeRO-2/3 with pipeline parallelism would re-communicate gradients or weights "
                "for every micro-batch (DeepSpeed forbids the combination)")
    return ""


def _check_config(global_batch, dp, tp, pp, zero, micro_batch, recompute, chunks,
                  kernel_efficiency, reserve_gb, cp=1, ep=1, etp=1, schedule="1f1b",
                  stage_split=None) -> None:
    # Values that are no configuration at all; a configuration that merely cannot run
    # (DP x TP x PP != GPUs, TP not dividing the heads) is a Plan with a reason instead.
    for name, value in (("global_batch", global_batch), ("dp", dp), ("tp", tp), ("pp", pp),
                        ("micro_batch", micro_batch), ("chunks", chunks), ("cp", cp),
                        ("ep", ep), ("etp", etp)):
        positive_int(name, value, f"pass a whole number >= 1 for {name}.")
    nonnegative_int("zero", zero, "pass a ZeRO stage: 0, 1, 2 or 3.")
    one_of("zero", zero, (0, 1, 2, 3), "pass a ZeRO stage: 0, 1, 2 or 3.")
    one_of("recompute", recompute, ("none", "selective", "full"))
    one_of("schedule", schedule, ("1f1b", "dualpipev"))
    one_of("stage_split", stage_split, (None, "llama3"))
    fraction("kernel_efficiency", kernel_efficiency, "pass the share of peak FLOP/s, e.g. 0.6.")
    positive_number("reserve_gb", reserve_gb, "pass the GB kept free per GPU, e.g. 2.0.",
                    zero=True)


def evaluate(model: ModelSpec, cluster: ClusterSpec, global_batch: int, dp: int, tp: int,
             pp: int, zero: int = 1, micro_batch: int = 1, recompute: str = "selective",
             chunks: int = 1, kernel_efficiency: float = 0.6, reserve_gb: float = 2.0, *,
             cp: int = 1, ep: int = 1, etp: int | None = None, schedule: str = "1f1b",
             stage_split: str | None = None) -> Plan:
    """Memory per GPU, step time and MFU of one configuration; ``plan.reason`` says why
    it cannot run (empty when it can). ``global_batch`` is in sequences.

    The 5D options (notebook 12; the defaults give notebook 09's planner exactly):
    ``cp`` context-parallel ranks per sequence (``DP x TP x PP x CP = GPUs``); ``ep``
    expert-parallel ranks and ``etp`` the experts' TP degree (default: ``tp``) for a MoE
    model, taken from the ``TP x CP x DP`` ranks of a stage (``planner.axes``);
    ``schedule`` ``"1f1b"`` (with ``chunks`` > 1: interleaved) or ``"dualpipev"``
    (DeepSeek's, which hides the experts' all-to-all behind the paired micro-batch's
    compute); ``stage_split`` ``None`` (compute averaged over stages, memory at the
    largest) or ``"llama3"`` (one block fewer on the first and last stages, which hold
    the embedding and head; time at the slowest stage).
    """
    etp = tp if etp is None else etp
    _check_config(global_batch, dp, tp, pp, zero, micro_batch, recompute, chunks,
                  kernel_efficiency, reserve_gb, cp, ep, etp, schedule, stage_split)
    plan = Plan(dp, tp, pp, zero, micro_batch, recompute, chunks, cp=cp, ep=ep, etp=etp,
                schedule=schedule, stage_split=stage_split)
    plan.reason = _structural_reason(model, cluster, global_batch, plan)
    if plan.reason:
        return plan
    m = plan.microbatches = global_batch // (dp * micro_batch)
    mesh = Mesh(model, cluster, dp, tp, pp, cp, ep, etp)
    counts = model.stage_layers(pp, stage_split)
    layers_per_stage = max(counts)
    parts = [model.stage_param_parts(s, pp, tp, True, ep, etp, stage_split) for s in range(pp)]
    busiest = max(range(pp), key=lambda s: sum(parts[s]))
    dense_params, expert_params = parts[busiest]
    wire = comm_bytes_per_step(model, dp, tp, pp, micro_batch, m, zero, ACT_BYTES, recompute,
                               cp=cp, ep=ep, etp=etp, split=stage_split)

    # ZeRO shards the non-expert states over DP x CP (Megatron's distributed optimizer),
    # the experts' over their own data-parallel replicas, EDP = TP x CP x DP / (ETP x EP).
    states = memory.zero_memory_per_gpu(dense_params, dp * cp, zero)
    if expert_params:
        extra = memory.zero_memory_per_gpu(expert_params, mesh.edp, zero)
        states = {k: states[k] + extra[k] for k in states}
    per_layer = memory.activation_memory_per_layer(
        model.seq_len // cp, micro_batch, model.hidden, model.heads, tp=tp,
        sequence_parallel=tp > 1, recompute=recompute)
    # 1F1B: the first stage holds p micro-batches; interleaving adds (p-1)/(p v) of that
    # (Narayanan et al. 2021). Stage s of 1F1B holds p - s of them.
    if stage_split is None:
        held = layers_per_stage * in_flight(pp, m, chunks, schedule)
    else:
        first = in_flight(pp, m, chunks, schedule)
        held = max(n * (first if schedule == "dualpipev" or chunks > 1 else min(pp - s, m))
                   for s, n in enumerate(counts))
    plan.memory = {"params": states["params"], "grads": states["grads"],
                   "optimizer": states["optimizer"],
                   "activations": per_layer * held,
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
    padding = (model.capacity_factor - 1) * 6.0 * model.top_k * model._mlp(model.expert_ffn or 1)
    if stage_split is not None or padding:
        flops = [stage_flops(model, s, counts) for s in range(pp)]
        slowest = max(flops) if stage_split is not None else sum(flops) / pp
        compute = slowest * tokens * recompute_factor / (cluster.gpus // pp * achieved)

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
        pp_alpha, pp_beta, _ = pp_link(cluster, mesh.pp_stride, pp)
        pp_time = messages * collective_time("p2p", wire["pp_boundary"] / (2 * m), 2,
                                             pp_alpha, pp_beta)

    # CP (ring attention) and EP (all-to-all), planner.axes: CP traffic hides behind the
    # attention core; EP's all-to-all is on the critical path, except under DualPipeV,
    # where it overlaps the other micro-batch's compute (DeepSeek-V3 §3.2.1).
    attn_core = (2.0 * model.seq_len * model.attention_dim / tp * micro_batch
                 * model.seq_len / cp / achieved)
    cp_bytes, cp_total, cp_exposed = mesh.cp_traffic(micro_batch, m, layers_per_stage,
                                                     recompute, attn_core)
    moe_here = max(n - max(0, model.dense_layers - sum(counts[:s])) for s, n in enumerate(counts)) \
        if model.is_moe else 0
    ep_bytes, ep_total = mesh.ep_traffic(micro_batch, m, moe_here, recompute)
    ep_total += mesh.etp_traffic(micro_batch, m, moe_here, recompute)
    ep_exposed = ep_total if schedule == "1f1b" else max(0.0, ep_total - compute)

    # DP: not one call: DDP-style wrappers reduce 25 MB buckets, FSDP gathers and
    # reduce-scatters layer by layer, and every call pays its rings' latencies. The
    # group is dp ranks spaced tp * pp apart: it shares a node's NICs with the other
    # model-parallel ranks' groups (planner.links). With CP it is DP x CP, and a MoE's
    # experts reduce over their EDP group.
    if zero == 0:
        ops = ["all_reduce"]
    else:
        ops = ["reduce_scatter"] + ["all_gather"] * (2 if zero == 3 else 1)

    def dp_seconds(n_params, layout, replicas):
        shard_bytes = n_params * ACT_BYTES
        calls = layers_per_stage if zero == 3 else max(1, math.ceil(shard_bytes / BUCKET_BYTES))
        per_call = shard_bytes / calls
        if layout is None:
            return calls * sum(group_collective_time(op, per_call, cluster, dp, tp * pp)
                               for op in ops) if replicas > 1 else 0.0
        return calls * sum(layout_collective_time(op, per_call, cluster, *layout)
                           for op in ops) if replicas > 1 else 0.0

    legacy = cp == 1 and not model.is_moe
    dp_time = dp_seconds(dense_params, None if legacy else mesh.dp_cp_layout, dp * cp)
    if expert_params:
        dp_time += dp_seconds(expert_params, mesh.edp_layout, mesh.edp)
    overlap_window = compute if zero == 3 else compute * 2 / 3  # backward is 2/3 of it
    dp_exposed = max(0.0, dp_time - overlap_window)

    if pp == 1:
        plan.bubble = 0.0
    elif schedule == "dualpipev":
        plan.bubble = bubble_fraction(pp, m, "dualpipev")
    elif chunks > 1:
        plan.bubble = bubble_fraction(pp, m, "interleaved", chunks=chunks)
    else:
        plan.bubble = bubble_fraction(pp, m, "1f1b")
    busy = compute + tp_time + pp_time + cp_exposed + ep_exposed
    plan.step_time = busy / (1 - plan.bubble) + dp_exposed
    plan.comm_bytes = wire
    if cp > 1 or ep > 1:
        plan.comm_bytes = {**wire, "cp": cp_bytes, "ep": ep_bytes}
    plan.times = {"compute": compute, "tp_comm": tp_time, "pp_comm": pp_time,
                  "bubble": busy / (1 - plan.bubble) - busy, "dp_comm_exposed": dp_exposed,
                  "dp_comm_total": dp_time}
    if cp > 1 or model.is_moe:
        plan.times.update(cp_comm_exposed=cp_exposed, cp_comm_total=cp_total,
                          ep_comm_exposed=ep_exposed, ep_comm_total=ep_total)
    useful = 6.0 * model.num_params() * tokens
    if model.is_moe or model.mla:
        useful = 6.0 * model.active_params() * tokens
    plan.mfu = useful / (plan.step_time * cluster.gpus * cluster.peak_tflops * 1e12)
    plan.tokens_per_gpu_s = tokens / (plan.step_time * cluster.gpus)
    plan.model_tflops = model.flops_per_token() * plan.tokens_per_gpu_s / 1e12
    return plan


def stage_flops(model: ModelSpec, stage: int, counts: list[int]) -> float:
    """Training FLOPs per token of one pipeline stage: its blocks (6 x active parameters
    plus attention, a MoE block's experts padded to the capacity factor) and, on the last
    stage, the output head (the input embedding is a lookup, no FLOPs)."""
    first = sum(counts[:stage])
    dense = max(0, min(counts[stage], model.dense_layers - first)) if model.is_moe else counts[stage]
    moe = counts[stage] - dense
    attention = 6.0 * model.seq_len * model.attention_dim
    flops = dense * (6.0 * model.layer_params() + attention)
    if moe:
        split, replicated, _ = model.moe_layer_params()
        experts = model.top_k * model.capacity_factor * model._mlp(model.expert_ffn)
        flops += moe * (6.0 * (split + replicated + experts) + attention)
    if stage == len(counts) - 1:
        flops += 6.0 * model.vocab * model.hidden
    return flops
