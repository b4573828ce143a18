"""Bytes each rank hands to collectives per training step, by kind of parallelism.

Taught in notebook 09. ``planner.evaluate`` turns these bytes into seconds with the
alpha-beta model; notebook 09 and ``tests/test_hybrid.py`` check them against the bytes
measured on real 2x2 DP x TP and PP x DP runs. All counts are *payloads* (the buffer
handed to the collective); a ring all-reduce puts 2(p-1)/p of its payload on each link.

* TP (Megatron, per block and micro-batch): two all-reduces of the block's
  ``[micro_batch, seq, hidden]`` activation in forward (after attention and after the
  MLP) and two of its gradient in backward; full recomputation repeats the forward two.
  With sequence parallelism each is an all-gather plus a reduce-scatter of the same
  activation, counted as one all-reduce of it. An **MoE block** pays the MLP's pair
  only for its shared experts, which Megatron-Core splits like the attention
  (``moe/shared_experts.py``). Its routed experts send no TP collective on the block's
  activation: Megatron-Core's all-to-all dispatcher (``moe/token_dispatcher.py``,
  ``MoEAlltoAllTokenDispatcher``; Megatron requires sequence parallelism with MoE and
  TP > 1) dispatches each rank's ``seq / (tp * cp)`` tokens in the EP group and, with
  ETP > 1, all-gathers them in the ETP group (``planner.Mesh.moe_layer_bytes``).
* PP (per stage boundary): each micro-batch's activation forward and its gradient back,
  each ``[micro_batch, seq, hidden] / tp`` with sequence parallelism.
* DP: the local gradients once through an all-reduce (DDP) or a reduce-scatter, then
  the parameters once (ZeRO-1/2) or twice (ZeRO-3) through all-gathers.
"""
from __future__ import annotations

from .specs import ModelSpec

__all__ = ["comm_bytes_per_step"]


def _tp_calls(model: ModelSpec, moe: bool, recompute: str) -> int:
    """All-reduce-sized TP collectives of one block per micro-batch, forward and backward
    (full recomputation repeats the forward ones): 2 each way for a dense block; for an
    MoE block the attention's one, plus one for shared experts."""
    per_forward = 2 if not moe else 1 + (1 if model.shared_experts else 0)
    return per_forward * (3 if recompute == "full" else 2)


def _stage_tp_calls(model: ModelSpec, pp: int, stage: int, recompute: str,
                    split: str | None) -> int:
    """:func:`_tp_calls` summed over the blocks of pipeline ``stage``."""
    blocks = model.stage_layers(pp, split)[stage]
    moe = model.stage_moe_layers(stage, pp, split)
    return (blocks - moe) * _tp_calls(model, False, recompute) + moe * _tp_calls(model, True,
                                                                                 recompute)


def comm_bytes_per_step(model: ModelSpec, dp: int, tp: int, pp: int, micro_batch: int,
                        microbatches: int, zero: int = 0, bytes_per_element: int = 2,
                        recompute: str = "selective", vocab_parallel: bool = True,
                        stage: int | None = None, sequence_parallel: bool | None = None,
                        cp: int = 1, ep: int = 1, etp: int | None = None,
                        split: str | None = None) -> dict:
    """Payload bytes per step for one rank: ``{"tp", "pp_boundary", "dp"}`` (an MoE
    block's EP and ETP traffic: ``planner.Mesh.moe_layer_bytes``).

    ``stage`` picks a pipeline stage (default: the busiest); ``pp_boundary`` counts both
    directions across one boundary. ``sequence_parallel`` (default: on when tp > 1)
    shards the activations sent between stages over the TP ranks. ``cp`` context-parallel
    ranks each hold ``seq_len / cp`` of every sequence, so TP and PP bytes divide by it;
    ``ep``/``etp``/``split`` pick the stage's parameters as ``ModelSpec.stage_params``
    does (CP and EP traffic themselves: ``planner.axes``, notebook 12).
    """
    etp = tp if etp is None else etp
    for name, value in (("dp", dp), ("tp", tp), ("pp", pp), ("micro_batch", micro_batch),
                        ("microbatches", microbatches), ("bytes_per_element", bytes_per_element),
                        ("cp", cp), ("ep", ep), ("etp", etp)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if zero not in (0, 1, 2, 3):
        raise ValueError(f"zero must be 0, 1, 2 or 3, got {zero!r}.")
    if sequence_parallel is None:
        sequence_parallel = tp > 1
    if stage is None:
        stage = max(range(pp), key=lambda s: model.stage_params(s, pp, tp, vocab_parallel,
                                                                ep, etp, split))
    activation = micro_batch * model.seq_len // cp * model.hidden * bytes_per_element
    tp_calls = _stage_tp_calls(model, pp, stage, recompute, split)
    tp_bytes = tp_calls * microbatches * activation if tp > 1 else 0
    shard = tp if sequence_parallel else 1
    pp_bytes = 2 * microbatches * activation // shard if pp > 1 else 0
    params = model.stage_params(stage, pp, tp, vocab_parallel, ep, etp, split) * bytes_per_element
    multiple = {0: 1, 1: 2, 2: 2, 3: 3}[zero]  # DDP's one all-reduce counts once as payload
    return {"tp": tp_bytes, "pp_boundary": pp_bytes, "dp": params * multiple if dp > 1 else 0}
