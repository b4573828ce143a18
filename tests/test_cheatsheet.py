"""The cheat-sheet's closed forms (companion.cheatsheet) held against the package functions,
simulators and schedules they summarise, and against what real ranks record.
notebooks/cheatsheet.ipynb runs under nbval separately."""
from __future__ import annotations

import math

import pytest

import companion
from companion import cheatsheet as cs, planner
from companion.collectives import costmodel
from companion.data_parallel import memory

POWERS = (2, 4, 8, 16, 64)


@pytest.mark.parametrize("n", POWERS)
def test_all_reduce_closed_forms_equal_costmodel(n):
    for name in costmodel.ALGORITHMS:
        assert cs.all_reduce_closed_form(name, n) == costmodel.coefficients(name, n), name
    rows = cs.all_reduce_table(n, 4e6, 1e-5, 1e9)
    assert [r["algorithm"] for r in rows] == list(costmodel.ALGORITHMS)
    for r in rows:
        a, b = cs.all_reduce_closed_form(r["algorithm"], n)
        assert r["formula"] == cs.ALL_REDUCE_FORMULAS[r["algorithm"]]
        assert r["seconds"] == pytest.approx(a * 1e-5 + b * 4e6 / 1e9)


def test_every_algorithm_has_a_formula_and_the_closed_forms_refuse_other_sizes():
    assert set(costmodel.ALGORITHMS) <= set(cs.ALL_REDUCE_FORMULAS)
    for name in cs.ALL_REDUCE_FORMULAS:
        assert len(cs.all_reduce_closed_form(name, 8)) == 2
    for bad in (1, 6, 12, "8"):
        with pytest.raises(ValueError, match="power of two"):
            cs.all_reduce_closed_form("ring", bad)
    with pytest.raises(ValueError, match="unknown algorithm"):
        cs.all_reduce_closed_form("butterfly", 8)


@pytest.mark.parametrize("n", (4, 8, 64))
def test_recursive_doubling_trades_bytes_for_rounds(n):
    alpha, beta = 1e-5, 1e9
    a_rd, b_rd = cs.all_reduce_closed_form("recursive_doubling", n)
    a_rh, b_rh = cs.all_reduce_closed_form("recursive_halving_doubling", n)
    assert a_rd < a_rh and b_rd > b_rh  # half the rounds, log2 N whole tensors
    crossover = (a_rh - a_rd) * alpha * beta / (b_rd - b_rh)
    lg = math.log2(n)
    assert crossover == pytest.approx(lg * alpha * beta / (lg - 2 * (n - 1) / n))
    assert costmodel.crossover_bytes("recursive_doubling", "recursive_halving_doubling", n,
                                     alpha, beta) == pytest.approx(crossover)


@pytest.mark.parametrize("psi, n", [(7.5e9, 64), (1e6, 4), (70e9, 128)])
def test_zero_closed_forms_equal_memory_module(psi, n):
    for stage in range(4):
        assert cs.zero_closed_form(psi, n, stage) == pytest.approx(
            memory.zero_memory_per_gpu(psi, n, stage)["total"])
        assert cs.zero_traffic_closed_form(psi, n, stage) == pytest.approx(
            memory.communication_volume(psi, n, stage)["total"])
    assert cs.zero_closed_form(psi, n, 0) == 16 * psi
    assert cs.zero_traffic_closed_form(psi, n, 3) == pytest.approx(
        1.5 * cs.zero_traffic_closed_form(psi, n, 0))


@pytest.mark.parametrize("p, m", [(2, 2), (4, 4), (4, 8), (3, 9), (8, 16), (2, 6)])
def test_bubble_closed_forms_equal_the_simulator(p, m):
    rows = {r["schedule"]: r for r in cs.bubble_table(p, m)}
    v_shaped = {"zb-v", "dualpipev"} if m >= 2 * p else set()
    assert set(rows) >= {name for name, _ in cs.SCHEDULES} - {"zb-v", "dualpipev"} | v_shaped
    for r in rows.values():
        if r["closed_form"] is None:                    # F = B = W: only the V's m >= 2p
            assert r["schedule"] in ("zb-v", "dualpipev") and m < 2 * p and r["why"], r
            continue
        assert r["closed_form"] == pytest.approx(r["simulated"], abs=1e-12), r
        if r["peak_closed_form"] is not None:
            assert r["peak_closed_form"] == r["peak_activations"], r
    assert rows["gpipe"]["closed_form"] == rows["1f1b"]["closed_form"] == (p - 1) / (m + p - 1)
    assert rows["gpipe"]["peak_activations"] == m and rows["1f1b"]["peak_activations"] == min(p, m)
    assert rows["zb-h1"]["closed_form"] == pytest.approx((p - 1) / (3 * m + p - 1))
    for name in {"interleaved-zb"} | v_shaped:          # notebook 04 section 8, v = 2
        assert rows[name]["closed_form"] == pytest.approx((p - 1) / (6 * m + p - 1)), name
    if v_shaped:
        assert rows["dualpipev"]["peak_closed_form"] == p + 0.5 and rows["zb-v"]["peak_closed_form"] == p


def test_bubble_closed_forms_at_unequal_costs_and_the_dualpipe_readme():
    from companion.pipeline import OpCosts, simulate
    costs = OpCosts(F=1.0, B=1.5, W=0.75)               # notebook 04 section 8's costs
    rows = {r["schedule"]: r for r in cs.bubble_table(4, 8, costs=costs)}
    held = [r for r in rows.values() if r["closed_form"] is not None]
    assert {r["schedule"] for r in held} >= {"1f1b", "zb-h1", "interleaved-zb", "zb-v"}
    assert rows["dualpipev"]["closed_form"] is None and "F = B" in rows["dualpipev"]["why"]
    for r in held:
        assert r["closed_form"] == pytest.approx(r["simulated"], abs=1e-12), r
    work = 8 * (costs.F + costs.B + costs.W)
    idle = {name: simulate(name, 4, 8, costs=costs).makespan - work for name in ("1f1b", "zb-h1")}
    assert idle["1f1b"] == pytest.approx(3 * (costs.F + costs.B + costs.W))   # README (PP-1)(F+B)
    assert idle["zb-h1"] == pytest.approx(3 * (costs.F + costs.B - costs.W))  # README (PP-1)(F+B-2W)


@pytest.mark.parametrize("t", (1, 2, 4, 8))
def test_tp_bytes_are_the_same_with_and_without_sequence_parallelism(t):
    b, s, h, e = 2, 16, 64, 2
    expected = 4 * (t - 1) / t * b * s * h * e
    assert cs.tp_bytes_per_layer(b, s, h, t, e) == pytest.approx(expected)
    assert cs.tp_bytes_per_layer(b, s, h, t, e, sequence_parallel=True) == pytest.approx(expected)
    per_phase = {mode: sum(c.values()) for mode, phases in cs.TP_COLLECTIVES_PER_LAYER.items()
                 for c in phases.values()}
    assert per_phase == {"tp": 2, "tp+sp": 4}  # each all-reduce becomes a gather + a scatter


@pytest.mark.parametrize("t", (1, 2, 8))
def test_activation_closed_forms_equal_memory_module(t):
    s, b, h, a = 2048, 1, 12288, 96
    act = memory.activation_memory_per_layer
    assert cs.activation_closed_form(s, b, h, a, t, "tp") == pytest.approx(act(s, b, h, a, tp=t))
    assert cs.activation_closed_form(s, b, h, a, t, "tp+sp") == pytest.approx(
        act(s, b, h, a, tp=t, sequence_parallel=True))
    assert cs.activation_closed_form(s, b, h, a, t, "tp+sp+selective") == pytest.approx(
        act(s, b, h, a, tp=t, sequence_parallel=True, recompute="selective"))
    assert cs.activation_closed_form(s, b, h, a, t, "full") == act(s, b, h, a, tp=t, recompute="full")


def test_attention_volumes():
    b, s, h, e = 1, 4096, 1024, 2
    n = b * s * h * e
    assert cs.attention_bytes("ulysses", b, s, h, 2, e) == cs.attention_bytes("ring", b, s, h, 2, e)
    for p in (4, 8, 64):
        uly, ring = (cs.attention_bytes(m, b, s, h, p, e) for m in ("ulysses", "ring"))
        assert uly == pytest.approx(ring * 2 / p)  # Ulysses shrinks with P, the ring does not
        assert ring == cs.attention_bytes("tp", b, s, h, p, e) < 2 * n
        assert cs.attention_bytes("ring", b, s, h, p, e, "backward") == pytest.approx(2 * n * (2 * p - 1) / p)
        assert cs.attention_bytes("ulysses", b, s, h, p, e, "backward") == uly


@pytest.mark.parametrize("method", ["dense", "dgc", "powersgd", "onebit", "terngrad"])
@pytest.mark.parametrize("shape", [(64, 128), (3, 100), (257, 33)])
def test_compression_closed_forms_equal_the_codecs_payloads(method, shape):
    n, m = shape
    assert cs.measured_bytes(method, n, m, density=0.01, rank=4) == cs.compressed_bytes(
        method, n, m, density=0.01, rank=4)


def test_compression_ratios_match_the_rules_of_thumb():
    n, m = 4096, 9216
    dense = cs.compressed_bytes("dense", n, m)
    assert dense / cs.compressed_bytes("dgc", n, m, density=0.001) == pytest.approx(500, rel=1e-3)
    assert dense / cs.compressed_bytes("onebit", n, m) == pytest.approx(32, rel=0.02)
    assert dense / cs.compressed_bytes("terngrad", n, m) == pytest.approx(16, rel=1e-5)
    assert dense / cs.compressed_bytes("powersgd", n, m, rank=4) == pytest.approx(n * m / (4 * (n + m)))


@pytest.mark.parametrize("c, lat", [(0.01, 0.1), (0.02, 0.005), (0.01, 0.0)])
@pytest.mark.parametrize("delay, k", [(0, 1), (3, 4), (10, 10)])
def test_step_time_closed_forms_equal_the_modeled_schedule(c, lat, delay, k):
    for algorithm, kw in (("sync", {}), ("fedavg", {"local_steps": k}), ("dga", {"delay": delay})):
        assert cs.dga_step_time(algorithm, c, lat, **kw) == pytest.approx(
            cs.modeled_step_time(algorithm, c, lat, **kw), rel=1e-9, abs=1e-12), (algorithm, kw)
    assert cs.dga_step_time("dga", c, lat, delay=0) == cs.dga_step_time("sync", c, lat)


def test_mfu_and_the_planner_rules():
    model, cluster = planner.MODELS["Llama-3 70B"], planner.CLUSTERS["16 nodes, 128x H100"]
    good = planner.evaluate(model, cluster, 512, dp=4, tp=8, pp=4, zero=1)
    assert good.feasible and not good.tp_inter_node
    assert good.mfu == pytest.approx(cs.mfu(model.num_params(), 512 * model.seq_len, good.step_time,
                                            cluster.gpus, cluster.peak_tflops * 1e12))
    across = planner.evaluate(model, cluster, 512, dp=4, tp=16, pp=2, zero=1)
    assert across.tp_inter_node and across.times["tp_comm"] > 1.9 * good.times["tp_comm"]  # traffic doubles with TP
    broken = {"cluster has": dict(dp=8, tp=8, pp=4, zero=1),
              "ZeRO-2/3": dict(dp=4, tp=8, pp=4, zero=3),
              "never fills": dict(dp=4, tp=8, pp=4, zero=1, micro_batch=64),
              "does not divide": dict(dp=1, tp=128, pp=1, zero=1)}
    for words, cfg in broken.items():
        plan = planner.evaluate(model, cluster, 512, **cfg)
        assert not plan.feasible and words in plan.reason, (cfg, plan.reason)
    assert all(len(rule) == 4 and " · " in rule[3] for rule in cs.PLANNER_RULES)


def test_markdown_table():
    assert cs.markdown_table(["a", "b"], [[1, 2.5], ["x", "y"]]) == (
        "| a | b |\n|---|---|\n| 1 | 2.5 |\n| x | y |")


def test_recorded_run_on_real_ranks_matches_the_formulas():
    p, alpha, beta = 4, 1e-5, 1e9
    run = companion.launch(cs.recorded_run, world_size=p)
    for name in costmodel.ALGORITHMS:
        assert costmodel.predict_from_traffic([r[name] for r in run], alpha, beta) == pytest.approx(
            costmodel.predict_time(name, 840 * 4, p, alpha, beta)), name
    for r in run:
        for method in ("ulysses", "ring"):
            for phase in ("forward", "backward"):
                assert r[f"{method}_attention"][f"{phase}_bytes"] == cs.attention_bytes(
                    method, 1, 16, 32, p, 4, phase), (method, phase)
        for mode, sp in (("tp", False), ("tp+sp", True)):
            assert {ph: r[mode][ph] for ph in ("forward", "backward")} == cs.TP_COLLECTIVES_PER_LAYER[mode]
            assert r[mode]["forward_bytes"] == cs.tp_bytes_per_layer(2, 8, 16, p, 8, sp)


@pytest.mark.parametrize("chip, across", [("H100", False), ("H100", True), ("A100", True), ("B200", False)])
def test_roofline_closed_forms_equal_companion_roofline(chip, across):
    from companion import hardware, roofline
    c, w = hardware.accelerator(chip).flops, roofline.collective_bandwidth(chip, across)
    for f, b, n in ((28_672, 2 ** 20, 128), (53_248, 2 ** 24, 16_384), (3072, 1e4, 8)):
        forms = cs.roofline_closed_forms(c, w, f, b, n)
        assert forms["dp_critical_tokens"] == pytest.approx(roofline.dp_critical_tokens(c, w))
        assert forms["tp_max_degree"] == pytest.approx(roofline.tp_max_degree(f, c, w))
        assert forms["fsdp_tp_split"] == pytest.approx(roofline.fsdp_tp_split(b, f, n))
        assert forms["fsdp_tp_min_tokens"] == pytest.approx(roofline.fsdp_tp_min_tokens(c, w, f))
        for k, z, g in ((8, 64, 8), (2, 16, 1), (8, 256, 8), (1, 4, 2)):
            ep = cs.roofline_closed_forms(c, w, f, b, n, k, z, g)["ep_min_d_ff"]
            assert ep == pytest.approx(roofline.ep_min_d_ff(k, z, c, w, domain=g))
    assert len(cs.ROOFLINE_RULES) == 7 and all(len(r) == 4 and " · " in r[3] for r in cs.ROOFLINE_RULES)
    # the across-nodes row: Y W_fsdp, so FSDP's time per GPU, is the same for every Y
    assert len({y * roofline.fsdp_tp_bandwidths("H100", 1024, y)[0] for y in (1, 2, 4, 8)}) == 1
