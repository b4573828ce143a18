"""The experts' own TP degree (ETP) next to attention's TP, per-head widths that are not
hidden / heads, and the case studies of notebook 09 (planner.case_studies)."""
from __future__ import annotations

import dataclasses
import math

import pytest

from companion import hybrid
from companion.data_parallel import memory
from companion.planner import (CLUSTERS, MODELS, ClusterSpec, Mesh, ModelSpec,
                               comm_bytes_per_step, evaluate, group_collective_time, plan)
from companion.planner import case_studies as cs

MIXTRAL, MIXTRAL_22B = MODELS["Mixtral 8x7B"], MODELS["Mixtral 8x22B"]
DSV3, QWEN3, GEMMA2 = MODELS["DeepSeek-V3 671B"], MODELS["Qwen3 235B-A22B"], MODELS["Gemma 2 27B"]
H128, H256 = CLUSTERS["16 nodes, 128x H100"], CLUSTERS["32 nodes, 256x H100"]
H800 = CLUSTERS["DeepSeek-V3: 2,048x H800"]


def _same(a, b):
    return dataclasses.asdict(a) == dataclasses.asdict(b)


@pytest.mark.parametrize("model, cluster, batch, layout", [
    (MIXTRAL, H128, 512, dict(dp=32, tp=4, pp=1, ep=8, zero=1)),
    (MIXTRAL, H128, 512, dict(dp=16, tp=2, pp=4, ep=4, zero=1, chunks=2)),
    (DSV3, H800, 15360, dict(dp=64, tp=2, pp=16, ep=64, zero=1, schedule="dualpipev")),
])
def test_etp_equal_to_tp_is_the_default_exactly(model, cluster, batch, layout):
    assert _same(evaluate(model, cluster, batch, **layout),
                 evaluate(model, cluster, batch, **layout, etp=layout["tp"]))


# Step time and memory of three layouts, printed (repr) by the planner before head_dim,
# the ETP checks and the case studies were added: these must not move. Mixtral's two
# steps are 0.133 s shorter than they were before an MoE block stopped being charged a
# dense MLP's TP all-reduces (3.2781 and 2.5615 s): half their TP time. DeepSeek-V3's
# shared expert keeps that pair, so its row has not moved.
@pytest.mark.parametrize("model, cluster, batch, layout, step, total", [
    (MIXTRAL, H128, 512, dict(dp=32, tp=4, pp=1, ep=8, etp=4, zero=1),
     3.1451385702762384, 21204064768.0),
    (MIXTRAL, H128, 512, dict(dp=32, tp=4, pp=1, ep=8, etp=1, zero=1),
     2.4285761746851273, 38115498496.0),
    (DSV3, H800, 15360, dict(dp=64, tp=2, pp=16, ep=64, etp=2, zero=1, schedule="dualpipev"),
     14.843967916434375, 54351823104.0),
])
def test_existing_numbers_are_unchanged(model, cluster, batch, layout, step, total):
    p = evaluate(model, cluster, batch, **layout)
    assert (p.step_time, p.memory["total"]) == (step, total)


def test_expert_weights_divide_by_ep_times_etp_and_their_optimizer_by_all_ranks():
    # TP x DP = 64 ranks per stage = EP x ETP x EDP: doubling ETP halves what a GPU holds
    # of the experts and halves EDP, so ZeRO-1's share of their optimizer states stays.
    moe_layers, routed = MIXTRAL_22B.moe_layers, MIXTRAL_22B.moe_layer_params()[2]
    plans = {}
    for etp in (1, 2, 4):
        experts = MIXTRAL_22B.stage_param_parts(0, 1, 4, True, 8, etp)[1]
        assert experts == moe_layers * routed // (8 * etp)
        plans[etp] = p = evaluate(MIXTRAL_22B, H256, 256, dp=64, tp=4, pp=1, zero=1, ep=8,
                                  etp=etp, recompute="full", enforce_memory=False)
        dense = MIXTRAL_22B.stage_param_parts(0, 1, 4, True, 8, etp)[0]
        expected = memory.zero_memory_per_gpu(dense, 64, 1)
        mine = memory.zero_memory_per_gpu(experts, 4 * 64 // (8 * etp), 1)
        for key in ("params", "grads", "optimizer"):
            assert p.memory[key] == pytest.approx(expected[key] + mine[key], rel=1e-12)
    weights = {e: plans[e].memory["params"] - plans[4].memory["params"] for e in (1, 2)}
    assert weights[1] == pytest.approx(3 * weights[2], rel=1e-9)   # (1 - 1/4) vs (1/2 - 1/4)
    assert plans[1].memory["optimizer"] == pytest.approx(plans[4].memory["optimizer"], rel=1e-12)
    # Without ZeRO the optimizer states are replicated and shrink with EP x ETP too.
    z0 = {e: evaluate(MIXTRAL_22B, H256, 256, dp=64, tp=4, pp=1, zero=0, ep=8, etp=e,
                      recompute="full", enforce_memory=False).memory["optimizer"] for e in (1, 4)}
    assert z0[1] > z0[4]


def test_expert_groups_follow_ep_and_etp():
    mesh = Mesh(MIXTRAL_22B, H256, dp=16, tp=4, pp=4, cp=1, ep=8, etp=1)
    assert (mesh.edp, mesh.ep_layout, mesh.etp_layout) == (8, (8, 1), (1, 1))
    mesh = Mesh(MIXTRAL_22B, H256, dp=16, tp=4, pp=4, cp=1, ep=8, etp=4)
    assert (mesh.edp, mesh.ep_layout, mesh.etp_layout) == (2, (2, 4), (4, 1))
    # ETP 1: no gather inside an ETP group, only EP's all-to-all
    whole = evaluate(MIXTRAL_22B, H256, 256, dp=16, tp=4, pp=4, zero=1, ep=8, etp=1)
    split = evaluate(MIXTRAL_22B, H256, 256, dp=16, tp=4, pp=4, zero=1, ep=8, etp=4)
    assert mesh.etp_traffic(1, whole.microbatches, 14, "selective") > 0
    assert whole.times["ep_comm_total"] < split.times["ep_comm_total"]


def test_etp_that_is_no_configuration_raises_and_one_that_cannot_run_says_why():
    with pytest.raises(ValueError, match="etp=2"):
        evaluate(MODELS["Llama-3 70B"], H128, 512, dp=32, tp=4, pp=1, etp=2)
    with pytest.raises(ValueError, match="etp_options"):
        plan(MODELS["Llama-3 70B"], H128, 512, etp_options=(1,))
    with pytest.raises(ValueError, match=r"ep=3"):
        MIXTRAL.stage_param_parts(0, 1, 1, True, 3, 1)
    with pytest.raises(ValueError, match=r"etp=3"):
        MIXTRAL.stage_param_parts(0, 1, 1, True, 8, 3)
    # well-formed but unrunnable: ETP x EP exceeds the TP x DP = 8 ranks of a stage
    assert "must divide" in evaluate(MIXTRAL, H128, 512, dp=2, tp=4, pp=16, ep=8, etp=4).reason


def test_head_dim_counts_match_the_published_tables():
    # Gemma 2 (arXiv 2408.00118, Table 2): 26,047,480,320 + 1,180,237,824 parameters; the
    # planner leaves out the two post-norms of each block (46 x 2 x 4608).
    assert GEMMA2.num_params() + 46 * 2 * 4608 == 26_047_480_320 + 1_180_237_824
    assert GEMMA2.attention_dim == 32 * 128 and GEMMA2.kv_dim == 16 * 128
    # Qwen3-235B-A22B: "235B, 22B activated" with 128-wide heads (64 x 128 = 2 x hidden)
    assert QWEN3.num_params() / 1e9 == pytest.approx(235, rel=0.01)
    assert QWEN3.active_params() / 1e9 == pytest.approx(22, rel=0.02)
    narrow = dataclasses.replace(QWEN3, head_dim=None)
    assert narrow.active_params() < QWEN3.active_params()
    with pytest.raises(ValueError, match="head_dim"):
        dataclasses.replace(QWEN3, head_dim=0)


def test_plan_takes_one_domain_of_any_size_and_refuses_other_counts_across_nodes():
    tpu = CLUSTERS["Gemma 2: 6,144x TPU v5p"]
    feasible, _ = plan(GEMMA2, tpu, 1536, tp_options=(8,), zero_stages=(3,), micro_batches=(1,),
                       recomputes=("none",), chunk_options=(1,))
    assert any(p.dp == 768 for p in feasible)
    odd = ClusterSpec("3 nodes", 8, 3, 80.0, 989.0, 450.0, 50.0)
    with pytest.raises(ValueError, match="powers of two"):
        plan(MODELS["Llama-3 8B"], odd, 64)


def test_every_case_study_finds_its_published_layout():
    results = {c.name: cs.evaluate_case(c) for c in cs.CASES}
    for name, r in results.items():
        if r.case.model is None:
            assert r.published is None and r.case.cannot
            continue
        p = r.published
        assert cs._matches(p, r.case.published), name
        assert p.feasible and r.fits and 1 <= r.rank <= r.ranked, name
        assert r.best.step_time <= p.step_time and r.gap >= 1, name
    qwen = results["Qwen 3"].published
    assert (qwen.dp, qwen.tp, qwen.pp, qwen.ep, qwen.etp, qwen.chunks) == (16, 2, 8, 32, 1, 4)
    assert cs.layout_label(qwen).startswith("DP16 TP2 EP32 ETP1 PP8 VP4")
    gemma = results["Gemma 2"].published
    assert (gemma.dp, gemma.tp, gemma.pp, gemma.zero) == (768, 8, 1, 3)
    assert math.isclose(results["Gemma 2"].case.cluster_spec().intra_bw_gbps, 200.0)


def test_a_case_study_with_a_bad_row_raises():
    with pytest.raises(ValueError, match="published"):
        cs.CaseStudy("x", "l", "Yi 34B", "s", "128 nodes, 1,024x A100", 8, {"pipeline": 4})
    with pytest.raises(ValueError, match="cannot"):
        cs.CaseStudy("x", "l", None, "s")
    row = cs.CaseStudy("x", "l", "Yi 34B", "s", "128 nodes, 1,024x A100", 1024, {"tp": 3},
                       search={"tp_options": (1, 2)})
    with pytest.raises(ValueError, match="no layout"):
        cs.evaluate_case(row)


# A tiny MoE whose bytes can be counted by hand: 16 tokens of width 8, 4 experts of which
# each token uses 2, bf16 (2 bytes); TP 2, EP 2, ETP 2 on one node, micro-batch 1.
TINY_MOE = ModelSpec("tiny MoE", layers=2, hidden=8, heads=2, seq_len=16, vocab=32,
                     gated_mlp=True, experts=4, top_k=2, expert_ffn=8)


def test_an_moe_block_sends_what_megatrons_all_to_all_dispatcher_sends():
    # By hand, per MoE block and micro-batch, forward and backward (Megatron-Core's
    # MoEAlltoAllTokenDispatcher: permute -> all-to-all in EP -> all-gather in ETP ->
    # experts -> reduce-scatter in ETP -> all-to-all in EP; sequence parallelism on):
    # * TP: the block's activation is 16 x 8 x 2 = 256 bytes. Attention's all-gather and
    #   reduce-scatter count as one all-reduce of it each way: 2 x 256 = 512. (A dense
    #   block's MLP adds another 2 x 256: 1024, what the planner charged MoE blocks before.)
    # * EP: under sequence parallelism a rank routes 16 / TP = 8 tokens, each to 2
    #   experts: 16 x 8 x 2 = 256 bytes per all-to-all; dispatch and combine, forward
    #   and backward: 4 x 256 = 1024.
    # * ETP: the ETP group of 2 gathers the routed tokens, 2 x 256 = 512 bytes, and
    #   reduce-scatters the experts' output, counted like TP as one all-reduce of 512
    #   each way: 2 x 512 = 1024.
    mesh = Mesh(TINY_MOE, CLUSTERS["1 node, 8x H100"], dp=2, tp=2, pp=1, cp=1, ep=2, etp=2)
    assert mesh.moe_layer_bytes(1) == {"tp": 512, "ep": 1024, "etp": 1024}
    # The rank-level EP x DP run's closed form moves the same all-to-all bytes for the
    # rank's 8 tokens (capacity 8 x 2 / 4 = 4 per expert, no padding).
    form = hybrid.ep_all_to_all_bytes(tokens=8, d_model=8, n_experts=4, top_k=2,
                                      capacity_factor=1.0, ep=2, bytes_per_element=2)
    assert form["payload"] == mesh.moe_layer_bytes(1)["ep"]
    assert mesh.ep_traffic(1, 1, 1, "selective")[0] == form["payload"]
    # Full recomputation repeats the forward collectives: 3 of each pair, 6 all-to-alls.
    assert mesh.moe_layer_bytes(1, "full") == {"tp": 768, "ep": 1536, "etp": 1536}
    # Per step: both blocks are MoE blocks, so TP moves 2 x 512 (not 2 x 1024).
    assert comm_bytes_per_step(TINY_MOE, dp=2, tp=2, pp=1, micro_batch=1, microbatches=1,
                               ep=2, etp=2)["tp"] == 2 * 512
    # A first dense block keeps its MLP's pair; a shared expert is split like the
    # attention and pays it too.
    one_dense = dataclasses.replace(TINY_MOE, dense_layers=1)
    assert comm_bytes_per_step(one_dense, 2, 2, 1, 1, 1, ep=2, etp=2)["tp"] == 1024 + 512
    shared = dataclasses.replace(TINY_MOE, shared_experts=1)
    assert Mesh(shared, CLUSTERS["1 node, 8x H100"], 2, 2, 1, 1, 2, 2).moe_layer_bytes(1)["tp"] \
        == 1024
    assert comm_bytes_per_step(shared, 2, 2, 1, 1, 1, ep=2, etp=2)["tp"] == 2 * 1024


def test_the_step_charges_the_moe_blocks_tp_time_at_the_attentions_calls():
    # Qwen 3's published layout: 94 MoE blocks, no shared expert, PP 8 with Llama 3's
    # split; the slowest stage has the most blocks, each 2 all-reduces of one 4K x 4096
    # bf16 activation per micro-batch (forward and backward) in a TP group of 2.
    qwen = cs.evaluate_case(next(c for c in cs.CASES if c.name == "Qwen 3")).published
    blocks = max(QWEN3.stage_layers(8, "llama3"))
    one = group_collective_time("all_reduce", 4096 * 4096 * 2, H256, 2)
    assert qwen.times["tp_comm"] == pytest.approx(2 * blocks * qwen.microbatches * one, rel=1e-12)
    # A dense model is charged as before: 4 per block.
    llama = evaluate(MODELS["Llama-3 70B"], H128, 512, dp=16, tp=8, pp=1, zero=1)
    act = 8192 * 8192 * 2
    assert llama.times["tp_comm"] == pytest.approx(
        4 * 80 * llama.microbatches * group_collective_time("all_reduce", act, H128, 8),
        rel=1e-12)
