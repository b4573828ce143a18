"""Compute time of one plan: its matrix multiplications at a kernel efficiency, and
where a run writes its attention scores to memory, their HBM traffic.

Taught in notebook 12 (``notebooks/12_auto_parallelism.ipynb``, section 6), where
``planner.published`` checks both against measured runs; ``planner.cost.evaluate``
calls them for every plan of notebooks 09 and 12.
"""
from __future__ import annotations

from .specs import ModelSpec

__all__ = ["compute_time", "score_traffic_time", "stage_flops", "SCORE_BYTES"]


def compute_time(model, cluster, plan, counts, tokens, achieved) -> float:
    """Seconds of matrix multiplications per step at ``achieved`` FLOP/s per GPU."""
    # The model's FLOPs (+1 forward when everything is recomputed) over all GPUs; per
    # stage when the stages differ (a split, or experts padded to the capacity factor).
    recompute_factor = 4 / 3 if plan.recompute == "full" else 1.0
    compute = model.flops_per_token() * tokens * recompute_factor / (cluster.gpus * achieved)
    padding = (model.capacity_factor - 1) * 6.0 * model.top_k * model._mlp(model.expert_ffn or 1)
    if plan.stage_split is not None or padding:
        flops = [stage_flops(model, s, counts) for s in range(plan.pp)]
        slowest = max(flops) if plan.stage_split is not None else sum(flops) / plan.pp
        compute = slowest * tokens * recompute_factor / (cluster.gpus // plan.pp * achieved)
    return compute


# HBM bytes per element of a head's s x s scores, counted pass by pass for Megatron-LM's
# unfused attention in 16 bits. Forward 13: Q K^T writes the scores (2), the fused
# scale-mask-softmax reads and writes them (4), dropout reads, writes and stores its
# 1-byte mask (5), P V reads them (2). Backward 17: dO V^T writes (2), dropout's backward
# (5), the softmax's reads y and dy and writes dx (6), dS K and dS^T Q read dS (4).
# Recomputation (full, or selective: the attention core) runs the forward once more.
SCORE_BYTES = {"forward": 13, "backward": 17}


def score_traffic_time(model, cluster, plan, global_batch) -> float:
    """Seconds per step one GPU spends streaming its heads' s x s scores through HBM
    (``SCORE_BYTES`` per element; the full square, as unfused causal attention stores it)."""
    passes = SCORE_BYTES["forward"] + SCORE_BYTES["backward"]
    if plan.recompute != "none":
        passes += SCORE_BYTES["forward"]
    s = model.seq_len
    elements = (model.layers / plan.pp) * (global_batch / plan.dp) * (model.heads / plan.tp) \
        * s * s / plan.cp
    return elements * passes / (cluster.hbm_gbps * 1e9)


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
