"""Memory, time and communication of one DP x TP x PP x ZeRO configuration.

Taught in notebook 09. The pieces come from the earlier notebooks:
model-state memory from ``companion.data_parallel.memory.zero_memory_per_gpu`` (notebook 03),
activations from ``planner.memory_model`` (what each block keeps, Megatron-LM's way, as
torch's tracker checks it for torch's way),
the pipeline bubble from ``companion.pipeline.bubble_fraction`` (notebook 04), and the
time of each collective from the alpha-beta model of notebook 02.

Placement follows Llama 3 (Megatron-LM's default puts DP inside the pipeline instead):
tensor-parallel ranks are adjacent (inside a node when
``tp <= gpus_per_node``), pipeline stages next, data-parallel replicas outermost. Each
collective is charged at the bandwidth its group really has (``planner.links``): NVLink
inside a node; across nodes, a hierarchical reduction that uses one NIC per member of
the group in each node (all 8 of a node's NICs for a DP group when TP x PP = 1, one
when TP x PP >= 8). TP at 16 spans two nodes; a pipeline runs at its slowest boundary.

Simplifications, stated so they can be argued with: every layer costs the same; the
busiest pipeline stage holds ceil(layers / pp) layers plus the larger embedding matrix;
TP and PP communication sit on the critical path; DP communication overlaps the
backward pass (the whole step for ZeRO-3) and only what does not fit is exposed; a
fixed ``kernel_efficiency`` turns peak FLOP/s into achieved FLOP/s, and with
``attention="materialized"`` the attention scores' HBM traffic is added to the compute.
``planner.published`` checks the result against measured runs (notebook 12).
"""
from __future__ import annotations

import dataclasses
import math

from ..data_parallel import memory
from ..pipeline import bubble_fraction
from . import memory_model
from .axes import Mesh, in_flight
from .cluster_spec import ClusterSpec
from .comm import _stage_tp_calls, comm_bytes_per_step
from .compute import compute_time, score_traffic_time
from .feasibility import check_config, structural_reason
from .links import collective_time, group_collective_time, layout_collective_time, pp_link
from .specs import ModelSpec

__all__ = ["Plan", "evaluate"]

ACT_BYTES = 2  # 16-bit activations and gradients on the wire
BUCKET_BYTES = 25e6  # 25 MB; PyTorch DDP's bucket_cap_mb=25 is 25 MiB, 5 % more: it changes a call count at most by one


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


def evaluate(model: ModelSpec, cluster: ClusterSpec, global_batch: int, dp: int, tp: int,
             pp: int, zero: int = 1, micro_batch: int = 1, recompute: str = "selective",
             chunks: int = 1, kernel_efficiency: float = 0.6, reserve_gb: float = 2.0, *,
             cp: int = 1, ep: int = 1, etp: int | None = None, schedule: str = "1f1b",
             stage_split: str | None = None, enforce_memory: bool = True,
             attention: str = "fused") -> Plan:
    """Memory per GPU, step time and MFU of one configuration; ``plan.reason`` says why
    it cannot run (empty when it can). ``global_batch`` is in sequences.

    The 5D options (notebook 12; the defaults give notebook 09's planner exactly):
    ``cp`` context-parallel ranks per sequence (``DP x TP x PP x CP = GPUs``); ``ep``
    expert-parallel ranks and ``etp`` the experts' TP degree (default: ``tp``) for a MoE
    model, taken from the ``TP x CP x DP`` ranks of a stage (``planner.axes``);
    ``schedule`` ``"1f1b"`` (with ``chunks`` > 1: interleaved) or ``"dualpipev"``
    (Sea AI Lab's V-shaped cut of the DualPipe DeepSeek-V3 trained with: the same bubble
    and the same hiding of the experts' all-to-all behind the paired micro-batch's
    compute, on one copy of the parameters where DualPipe keeps two); ``stage_split``
    ``None`` (compute averaged over stages, memory at the largest) or ``"llama3"`` (one block fewer on the first and last stages, which hold
    the embedding and head; time at the slowest stage). ``enforce_memory=False`` times
    a layout even where the memory model says it does not fit (how
    ``planner.published`` times the layouts papers report running; ``plan.memory``
    still says what the model predicts). ``attention`` ``"fused"`` (FlashAttention's
    kernels: the scores never reach HBM) or ``"materialized"`` (Megatron-LM before
    FlashAttention: each head's s x s scores are written and read, at HBM speed; see
    ``planner.compute.SCORE_BYTES``).
    """
    etp = tp if etp is None else etp
    check_config(global_batch, dp, tp, pp, zero, micro_batch, recompute, chunks,
                 kernel_efficiency, reserve_gb, cp, ep, etp, schedule, stage_split, attention)
    if etp != tp and not model.is_moe:
        raise ValueError(f"etp={etp}: the experts' own TP degree applies to MoE models only; "
                         f"{model.name} is dense (omit etp, or pass etp=tp={tp}).")
    if attention == "materialized" and not cluster.hbm_gbps:
        raise ValueError("attention='materialized' needs the cluster's HBM bandwidth: build "
                         "it with ClusterSpec.of or pass hbm_gbps.")
    plan = Plan(dp, tp, pp, zero, micro_batch, recompute, chunks, cp=cp, ep=ep, etp=etp,
                schedule=schedule, stage_split=stage_split)
    plan.reason = structural_reason(model, cluster, global_batch, plan)
    if plan.reason:
        return plan
    m = plan.microbatches = global_batch // (dp * micro_batch)
    mesh = Mesh(model, cluster, dp, tp, pp, cp, ep, etp)
    counts = model.stage_layers(pp, stage_split)
    parts = [model.stage_param_parts(s, pp, tp, True, ep, etp, stage_split) for s in range(pp)]
    dense_params, expert_params = parts[max(range(pp), key=lambda s: sum(parts[s]))]
    wire = comm_bytes_per_step(model, dp, tp, pp, micro_batch, m, zero, ACT_BYTES, recompute,
                               cp=cp, ep=ep, etp=etp, split=stage_split)

    plan.memory = _memory(model, plan, mesh, counts, dense_params, expert_params, reserve_gb)
    if enforce_memory and plan.memory["total"] > cluster.gpu_memory_gb * 1e9:
        plan.reason = (f"out of memory: needs {plan.memory['total'] / 1e9:.1f} GB per GPU, "
                       f"the GPU has {cluster.gpu_memory_gb:g} GB")
        return plan

    achieved = cluster.peak_tflops * 1e12 * kernel_efficiency
    tokens = global_batch * model.seq_len
    compute = compute_time(model, cluster, plan, counts, tokens, achieved)
    if attention == "materialized":
        compute += score_traffic_time(model, cluster, plan, global_batch)
    plan.tp_inter_node = tp > cluster.gpus_per_node
    times = {"compute": compute, "tp_comm": _tp_time(model, cluster, plan),
             "pp_comm": _pp_time(cluster, plan, mesh, wire)}
    cp_bytes, ep_bytes = _cp_ep_times(model, plan, mesh, counts, achieved, times)
    dp_time = _dp_time(cluster, plan, mesh, max(counts), dense_params, expert_params)
    overlap_window = compute if zero == 3 else compute * 2 / 3  # backward is 2/3 of it
    times.update(dp_comm_exposed=max(0.0, dp_time - overlap_window), dp_comm_total=dp_time)
    plan.bubble = _bubble(plan)
    plan.comm_bytes = {**wire, "cp": cp_bytes, "ep": ep_bytes} if cp > 1 or ep > 1 else wire
    _fill_result(model, cluster, plan, times, tokens)
    return plan


def _memory(model, plan, mesh, counts, dense_params, expert_params, reserve_gb) -> dict:
    # ZeRO shards the non-expert states over DP x CP (Megatron's distributed optimizer),
    # the experts' over their own data-parallel replicas, EDP = TP x CP x DP / (ETP x EP).
    states = memory.zero_memory_per_gpu(dense_params, plan.dp * plan.cp, plan.zero)
    if expert_params:
        extra = memory.zero_memory_per_gpu(expert_params, mesh.edp, plan.zero)
        states = {k: states[k] + extra[k] for k in states}
    # What a block keeps for backward, as Megatron-LM keeps it (planner.memory_model),
    # with fused attention; the last stage also holds one micro-batch's logits and loss.
    tokens, mb, tp = model.seq_len // plan.cp, plan.micro_batch, plan.tp
    per_layer = memory_model.block_activation_bytes(model, tokens, mb, tp, plan.recompute,
                                                    ACT_BYTES, keeps="megatron")
    loss = sum(memory_model.loss_bytes(tokens * mb, memory_model.padded_vocab(model, tp), tp,
                                       ACT_BYTES, keeps="megatron").values())
    # 1F1B: the first stage holds p micro-batches; interleaving adds (p-1)/(p v) of that
    # (Narayanan et al. 2021). Stage s of 1F1B holds p - s of them.
    pp, m, chunks, schedule = plan.pp, plan.microbatches, plan.chunks, plan.schedule
    first = in_flight(pp, m, chunks, schedule)

    def held(s):
        if plan.stage_split is None:
            return max(counts) * (first if s == 0 else min(pp - s, m))
        return counts[s] * (first if schedule == "dualpipev" or chunks > 1 else min(pp - s, m))

    activations = max(held(s) * per_layer + (loss if s == pp - 1 else 0) for s in range(pp))
    used = {"params": states["params"], "grads": states["grads"],
            "optimizer": states["optimizer"], "activations": activations,
            "reserve": reserve_gb * 1e9}
    used["total"] = sum(used.values())
    return used


def _tp_time(model, cluster, plan) -> float:
    # Per dense block and micro-batch, 2 all-reduces of one activation forward and 2
    # backward (with sequence parallelism: all-gathers and reduce-scatters of the same
    # bytes); an MoE block only the attention's, and its shared experts' (planner.comm).
    # The slowest stage is the one with the most of them.
    if plan.tp == 1:
        return 0.0
    calls = plan.microbatches * max(_stage_tp_calls(model, plan.pp, s, plan.recompute,
                                                    plan.stage_split) for s in range(plan.pp))
    activation = plan.micro_batch * model.seq_len // plan.cp * model.hidden * ACT_BYTES
    return calls * group_collective_time("all_reduce", activation, cluster, plan.tp)


def _pp_time(cluster, plan, mesh, wire) -> float:
    # Each micro-batch's activation forward and its gradient back across a boundary, at
    # the pace of the slowest boundary.
    if plan.pp == 1:
        return 0.0
    m = plan.microbatches
    alpha, beta, _ = pp_link(cluster, mesh.pp_stride, plan.pp)
    return 2 * m * plan.chunks * collective_time("p2p", wire["pp_boundary"] / (2 * m), 2,
                                                 alpha, beta)


def _cp_ep_times(model, plan, mesh, counts, achieved, times) -> tuple[float, float]:
    """Add the CP and EP seconds (total and exposed) to ``times``; return their bytes.

    CP traffic (ring attention, planner.axes) hides behind the attention core, but for
    its last dK/dV hop; EP's
    all-to-all is on the critical path, except under DualPipeV, where it overlaps the
    other micro-batch's compute (DeepSeek-V3 §3.2.1)."""
    mb, m, recompute = plan.micro_batch, plan.microbatches, plan.recompute
    attn_core = (2.0 * model.seq_len * model.attention_dim / plan.tp * mb
                 * model.seq_len / plan.cp / achieved)
    cp_bytes, cp_total, cp_exposed = mesh.cp_traffic(mb, m, max(counts), recompute, attn_core)
    moe_here = max(n - max(0, model.dense_layers - sum(counts[:s])) for s, n in enumerate(counts)) \
        if model.is_moe else 0
    ep_bytes, ep_total = mesh.ep_traffic(mb, m, moe_here, recompute)
    ep_total += mesh.etp_traffic(mb, m, moe_here, recompute)
    ep_exposed = ep_total if plan.schedule == "1f1b" else max(0.0, ep_total - times["compute"])
    times.update(cp_comm_exposed=cp_exposed, cp_comm_total=cp_total,
                 ep_comm_exposed=ep_exposed, ep_comm_total=ep_total)
    return cp_bytes, ep_bytes


def _dp_time(cluster, plan, mesh, layers_per_stage, dense_params, expert_params) -> float:
    # Not one call: DDP-style wrappers reduce 25 MB buckets, FSDP gathers and
    # reduce-scatters layer by layer, and every call pays its rings' latencies. The
    # group is dp ranks spaced tp * pp apart: it shares a node's NICs with the other
    # model-parallel ranks' groups (planner.links). With CP it is DP x CP, and a MoE's
    # experts reduce over their EDP group.
    zero = plan.zero
    if zero == 0:
        ops = ["all_reduce"]
    else:
        ops = ["reduce_scatter"] + ["all_gather"] * (2 if zero == 3 else 1)

    def seconds(n_params, layout, replicas):
        if replicas == 1:
            return 0.0
        shard_bytes = n_params * ACT_BYTES
        calls = layers_per_stage if zero == 3 else max(1, math.ceil(shard_bytes / BUCKET_BYTES))
        per_call = shard_bytes / calls
        if layout is None:
            return calls * sum(group_collective_time(op, per_call, cluster, plan.dp,
                                                     plan.tp * plan.pp) for op in ops)
        return calls * sum(layout_collective_time(op, per_call, cluster, *layout) for op in ops)

    # Notebook 09's planner (dense, no CP) lays the DP group out as planner.links does, dp
    # ranks tp * pp apart: for powers of two the layout of mesh.dp_cp_layout, but it
    # refuses a group that does not fill nodes evenly instead of rounding.
    dense_layout = None if plan.cp == 1 and not mesh.model.is_moe else mesh.dp_cp_layout
    total = seconds(dense_params, dense_layout, plan.dp * plan.cp)
    if expert_params:
        total += seconds(expert_params, mesh.edp_layout, mesh.edp)
    return total


def _bubble(plan) -> float:
    if plan.pp == 1:
        return 0.0
    if plan.schedule == "dualpipev":
        return bubble_fraction(plan.pp, plan.microbatches, "dualpipev")
    if plan.chunks > 1:
        return bubble_fraction(plan.pp, plan.microbatches, "interleaved", chunks=plan.chunks)
    return bubble_fraction(plan.pp, plan.microbatches, "1f1b")


def _fill_result(model, cluster, plan, times, tokens) -> None:
    # The bubble stretches the critical path (compute, TP, PP and the exposed CP and EP
    # traffic); the exposed DP traffic comes after it.
    busy = (times["compute"] + times["tp_comm"] + times["pp_comm"] + times["cp_comm_exposed"]
            + times["ep_comm_exposed"])
    plan.step_time = busy / (1 - plan.bubble) + times["dp_comm_exposed"]
    plan.times = {k: times[k] for k in ("compute", "tp_comm", "pp_comm")}
    plan.times.update(bubble=busy / (1 - plan.bubble) - busy,
                      dp_comm_exposed=times["dp_comm_exposed"],
                      dp_comm_total=times["dp_comm_total"])
    if plan.cp > 1 or model.is_moe:
        plan.times.update({k: times[k] for k in ("cp_comm_exposed", "cp_comm_total",
                                                 "ep_comm_exposed", "ep_comm_total")})
    useful = 6.0 * model.num_params() * tokens
    if model.is_moe or model.mla:
        useful = 6.0 * model.active_params() * tokens
    plan.mfu = useful / (plan.step_time * cluster.gpus * cluster.peak_tflops * 1e12)
    plan.tokens_per_gpu_s = tokens / (plan.step_time * cluster.gpus)
    plan.model_tflops = model.flops_per_token() * plan.tokens_per_gpu_s / 1e12
