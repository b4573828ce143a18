"""The experts' own TP degree (ETP) next to attention's TP, per-head widths that are not
hidden / heads, and the case studies of notebook 09 (planner.case_studies)."""
from __future__ import annotations

import dataclasses
import math

import pytest

from companion.data_parallel import memory
from companion.planner import CLUSTERS, MODELS, ClusterSpec, Mesh, evaluate, plan
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
# the ETP checks and the case studies were added: these must not move.
@pytest.mark.parametrize("model, cluster, batch, layout, step, total", [
    (MIXTRAL, H128, 512, dict(dp=32, tp=4, pp=1, ep=8, etp=4, zero=1),
     3.2781030315029054, 21204064768.0),
    (MIXTRAL, H128, 512, dict(dp=32, tp=4, pp=1, ep=8, etp=1, zero=1),
     2.5615406359117943, 38115498496.0),
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
