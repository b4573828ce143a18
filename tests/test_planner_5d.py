"""The 5D planner (notebook 12): CP and EP, MoE specs, and published runs.

Published runs and what they measured (the planner predicts; tolerances say how close):

* Llama 3 405B pre-training, TP8 CP1 PP16 DP128 on 16,384 H100, 8K sequences, 16M
  tokens per step: 400 TFLOP/s per GPU (41% BF16 MFU), arXiv 2407.21783 Table 4.
* Its long-context stage, TP8 CP16 PP16 DP8, 131,072-token sequences: 380 TFLOP/s.
* DeepSeek-V3, EP64 x PP16 x ZeRO-1 (DP128), no TP, on 2,048 H800 (arXiv 2412.19437
  §3.2-3.4): 180K H800 GPU hours per trillion tokens = 1,543 tokens per GPU-second
  (the paper gives no MFU). Batch 15,360 sequences of 4,096 tokens.

Modelling choices: kernel efficiency 0.6 of the bf16 peak for every plan (not fitted);
DeepSeek's FP8 GEMMs are not modelled; memory budgets 80 GB (the datasheets' GiB read as
GB, erring safe). Where the planner disagrees with the published choice the test pins
the disagreement and its cause, rather than tuning the model to agree.
"""
from __future__ import annotations

import dataclasses

import pytest

from companion import cheatsheet
from companion.sequence_parallel.ring import ring_hops

from companion.planner import memory_model
from companion.planner import (CLUSTERS, MODELS, Mesh, all_to_all_time, axis_layout, evaluate,
                               group_layout, plan)

LLAMA, BIG = MODELS["Llama-3 405B"], CLUSTERS["Llama-3 scale: 16,384x H100"]
LLAMA_128K = dataclasses.replace(LLAMA, name="Llama-3 405B, 128K", seq_len=131072)
DSV3, H800 = MODELS["DeepSeek-V3 671B"], CLUSTERS["DeepSeek-V3: 2,048x H800"]
DS_BATCH = 15360


def test_moe_parameter_counts_from_architecture():
    # DeepSeek-V3: 671B total, 37B activated (the paper's abstract); Mixtral 46.7B / 12.9B.
    assert DSV3.num_params() == pytest.approx(671e9, rel=0.005)
    assert DSV3.active_params() == pytest.approx(37e9, rel=0.03)
    mix = MODELS["Mixtral 8x7B"]
    assert mix.num_params() == pytest.approx(46.7e9, rel=0.01)
    assert mix.active_params() == pytest.approx(12.9e9, rel=0.01)


def test_defaults_are_notebook_09s_planner():
    base = evaluate(LLAMA, BIG, 2048, 128, 8, 16, 1, 1, "full", 4)
    same = evaluate(LLAMA, BIG, 2048, 128, 8, 16, 1, 1, "full", 4, cp=1, ep=1, etp=8,
                    schedule="1f1b", stage_split=None)
    assert (base.step_time, base.memory, base.times) == (same.step_time, same.memory, same.times)


@pytest.mark.parametrize("size, stride", [(8, 1), (4, 2), (128, 1), (64, 2), (16, 8), (2, 8)])
def test_axis_layout_of_one_axis_is_group_layout(size, stride):
    assert axis_layout(8, [stride, size], [False, True]) == group_layout(8, size, stride)


def test_deepseek_ep64_spans_eight_whole_nodes_and_pp_crosses_nodes():
    mesh = Mesh(DSV3, H800, dp=128, tp=1, pp=16, cp=1, ep=64, etp=1)
    assert mesh.ep_layout == (8, 8) and mesh.edp == 2 and mesh.pp_stride == 128
    assert mesh.dp_cp_layout == (8, 16)


def test_all_to_all_time_hand_computed():
    # 64 ranks, 8 per node: 7/64 of 1 GB on NVLink (450 GB/s), 56/64 on one NIC (50 GB/s).
    c = CLUSTERS["16 nodes, 128x H100"]
    t = all_to_all_time(1e9, c, 8, 8)
    assert t == pytest.approx(3e-6 + 10e-6 + 56 / 64 * 1e9 / 50e9)
    # Node-limited routing caps what crosses the NIC.
    assert all_to_all_time(1e9, c, 8, 8, inter_bytes=0.25e9) < t


def test_context_parallel_divides_activations_and_sends_ring_bytes():
    p = evaluate(LLAMA_128K, BIG, 128, 8, 8, 16, 1, 1, "full", 4, cp=16, stage_split="llama3")
    assert p.feasible, p.reason
    # Full recomputation keeps each block's input, a sequence shard: CP and TP divide it.
    per_layer = memory_model.block_activation_bytes(LLAMA, 131072 // 16, 1, 8, "full",
                                                    keeps="megatron")
    assert per_layer == 2 * (131072 // 16) * LLAMA.hidden / 8
    first = 16 * (1 + 15 / 64)
    loss = sum(memory_model.loss_bytes(131072 // 16, memory_model.padded_vocab(LLAMA, 8), 8,
                                       keeps="megatron").values())
    counts = LLAMA.stage_layers(16, "llama3")
    assert p.memory["activations"] == pytest.approx(max(
        n * first * per_layer + (loss if s == 15 else 0) for s, n in enumerate(counts)))
    kv = LLAMA.kv_dim // 8   # one KV head per TP rank
    one_layer = 2 * cheatsheet.attention_bytes("ring", 1, 131072, kv, 16) + \
        cheatsheet.attention_bytes("ring", 1, 131072, kv, 16, phase="backward")
    assert p.comm_bytes["cp"] == pytest.approx(one_layer * 8 * p.microbatches)
    # The CP group (ranks 8 apart, 16 of them) spans two nodes, so a ring step is one
    # NIC's point-to-point send of a K and a V block. Forward takes 15 hops, backward 15
    # more and 16 of dK/dV. GQA keeps the blocks small, so the ring hides every hop
    # behind a step's attention except the last dK/dV hop, which has nothing after it.
    alpha, beta = BIG.link(True)
    hop = alpha + 2 * (131072 // 16) * kv * 2 / beta
    blocks = 8 * p.microbatches
    assert p.times["cp_comm_total"] == pytest.approx((2 * 15 + 15 + 16) * hop * blocks)
    assert p.times["cp_comm_exposed"] == pytest.approx(hop * blocks)


def test_ring_hops_count_the_ring_attention_bytes():
    for cp in (2, 4, 16):
        block = 2 * 1 * (4096 // cp) * 128 * 2   # a K and a V block, 16-bit
        assert cheatsheet.attention_bytes("ring", 1, 4096, 128, cp) == ring_hops(cp) * block
        assert cheatsheet.attention_bytes("ring", 1, 4096, 128, cp, phase="backward") == \
            ring_hops(cp, "backward") * block


def test_a_slow_ring_step_is_exposed_hop_by_hop():
    # A CP ring whose hops outlast its attention steps: each forward hop exposes what it
    # takes beyond one step, each backward step what its two hops take beyond two steps.
    mesh = Mesh(LLAMA_128K, BIG, 8, 8, 16, 16, 1, 1)
    alpha, beta = BIG.link(True)
    kv = LLAMA.kv_dim // 8
    hop = alpha + 2 * (131072 // 16) * kv * 2 / beta
    step = hop / 4
    _, total, exposed = mesh.cp_traffic(1, 1, 1, "selective", step * 16)
    assert total == pytest.approx((15 + 31) * hop)
    assert exposed == pytest.approx(15 * (hop - step) + 15 * (2 * hop - 2 * step) + hop)


def test_llama3_balances_first_and_last_stage():
    assert LLAMA.stage_layers(16, "llama3") == [7] + [8] * 14 + [7]
    assert sum(DSV3.stage_layers(16, "llama3")) == 61


def test_dense_models_reject_ep_and_moe_rejects_uneven_ep():
    assert "has no experts" in evaluate(LLAMA, BIG, 2048, 128, 8, 16, ep=2).reason
    assert "must divide" in evaluate(DSV3, H800, DS_BATCH, 128, 1, 16, ep=512,
                                     schedule="dualpipev").reason


def test_dualpipev_hides_the_all_to_all_that_1f1b_exposes():
    kw = dict(zero=1, micro_batch=1, recompute="full", ep=64)
    dual = evaluate(DSV3, H800, DS_BATCH, 128, 1, 16, schedule="dualpipev", **kw)
    plain = evaluate(DSV3, H800, DS_BATCH, 128, 1, 16, schedule="1f1b", **kw)
    assert dual.times["ep_comm_exposed"] == 0 < dual.times["ep_comm_total"]
    assert plain.times["ep_comm_exposed"] == plain.times["ep_comm_total"]
    assert plain.step_time > 1.4 * dual.step_time


def test_llama3_405b_pretraining_against_table_4():
    feasible, _ = plan(LLAMA, BIG, 2048, stage_split="llama3", zero_stages=(1,),
                       tp_options=(4, 8, 16))
    published = min((p for p in feasible if (p.dp, p.tp, p.pp, p.cp) == (128, 8, 16, 1)),
                    key=lambda p: p.step_time)
    # Feasible only with full recomputation, which costs 4/3 of the compute: predicted
    # 310 TFLOP/s per GPU against the measured 400 (0.78x). Tolerance: within 30% below.
    assert published.recompute == "full"
    assert 0.70 * 400 < published.model_tflops < 1.05 * 400
    inside = [p for p in feasible if not p.tp_inter_node]
    assert published.step_time <= 1.05 * inside[0].step_time
    # The overall favourite spans TP16 over two nodes to fit selective recomputation.
    assert feasible[0].tp == 16 and published.step_time / feasible[0].step_time < 1.4


def test_llama3_405b_long_context_against_table_4():
    feasible, _ = plan(LLAMA_128K, BIG, 128, cp_options=(8, 16, 32), stage_split="llama3",
                       zero_stages=(1,), tp_options=(8,), micro_batches=(1,))
    published = min((p for p in feasible if (p.dp, p.tp, p.pp, p.cp) == (8, 8, 16, 16)),
                    key=lambda p: p.step_time)
    # Measured 380 TFLOP/s per GPU (attention counted); predicted 325 (0.86x).
    assert 0.75 * 380 < published.model_tflops < 1.1 * 380
    assert published.step_time / feasible[0].step_time < 1.6


def test_deepseek_v3_against_its_gpu_hours():
    feasible, _ = plan(DSV3, H800, DS_BATCH, zero_stages=(1,), micro_batches=(1,),
                       recomputes=("selective", "full"), schedules=("dualpipev",),
                       tp_options=(1, 2), ep_options=(32, 64), etp_options=(1,))
    published = [p for p in feasible if (p.dp, p.tp, p.pp, p.ep) == (128, 1, 16, 64)]
    assert published
    p = published[0]
    measured = 1e12 / (180e3 * 3600)   # tokens per GPU-second
    assert p.tokens_per_gpu_s == pytest.approx(measured, rel=0.15)
    # Selective recomputation misses the 80 GB budget by 2% (DeepSeek also caches MoE
    # activations in FP8, §3.3, not modelled), so the planner must recompute fully.
    assert p.recompute == "full"
    assert p.step_time / feasible[0].step_time < 1.35
