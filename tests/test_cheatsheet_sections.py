"""The cheat-sheet's sections 10-12 (companion.cheatsheet.scaling) held against the package
functions notebooks 00, 06 and 10-12 call, and the cheat-sheet's index against its section
headings in every edition. notebooks/cheatsheet.ipynb runs under nbval separately."""
from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest
import torch

from companion import cheatsheet as cs, hybrid, planner, topology
from companion.autoparallel import stages

ROOT = Path(__file__).resolve().parent.parent
EDITIONS = {"en": ROOT / "notebooks" / "cheatsheet.ipynb",
            "zh-CN": ROOT / "notebooks" / "zh-CN" / "cheatsheet.ipynb",
            "zh-TW": ROOT / "notebooks" / "zh-TW" / "cheatsheet.ipynb"}
H128 = planner.CLUSTERS["16 nodes, 128x H100"]


def test_recompute_factor_is_what_the_planner_charges():
    assert cs.recompute_factor() == 4 / 3 == cs.recompute_factor(2.0, 4.0)
    assert cs.recompute_factor(1.0, 1.0) == 1.5
    llama = planner.MODELS["Llama-3 70B"]
    compute = {r: planner.evaluate(llama, H128, 512, dp=4, tp=8, pp=4, zero=1,
                                   recompute=r).times["compute"] for r in ("none", "full")}
    assert compute["full"] / compute["none"] == pytest.approx(cs.recompute_factor())


CLUSTERS = [topology.Cluster(2, 2), topology.Cluster(3, 2), topology.Cluster(1, 4),
            topology.Cluster(4, 1), topology.Cluster(4, 8, intra=H128.link(False),
                                                     inter=H128.link(True))]


@pytest.mark.parametrize("net", CLUSTERS, ids=lambda c: f"{c.nodes}x{c.ranks_per_node}")
@pytest.mark.parametrize("algorithm", ["ring", "hierarchical"])
def test_bytes_per_link_class_equal_the_closed_form(net, algorithm):
    nbytes = 4 * net.world_size * 1000          # float32, divisible by every chunk count
    counted = cs.link_bytes(algorithm, nbytes, net)
    closed = cs.link_bytes_closed_form(algorithm, nbytes, net)
    assert counted == pytest.approx(closed), (counted, closed)
    assert sum(counted.values()) == pytest.approx(2 * (net.world_size - 1) * nbytes)  # a ring's total
    if algorithm == "hierarchical":
        assert topology.predict(algorithm, nbytes, net) == pytest.approx(
            cs.hierarchical_seconds(nbytes, net))


def test_notebook_11s_two_by_two_numbers():
    net = topology.Cluster(2, 2)
    assert cs.link_bytes("ring", 10 ** 6, net) == {"intra": 3 * 10 ** 6, "inter": 3 * 10 ** 6}
    assert cs.link_bytes("hierarchical", 10 ** 6, net) == {"intra": 4 * 10 ** 6, "inter": 2 * 10 ** 6}


@pytest.mark.parametrize("rows, cols", [(3, 3), (4, 4), (3, 5)])
def test_torus_and_switch_closed_forms_equal_the_topology_model(rows, cols):
    link = (1e-3, 20e6)
    torus = topology.Cluster(rows, cols, layout="torus", intra=link, inter=(2e-3, 10e6))
    nbytes = 4 * 2 * rows * cols * 100
    assert topology.predict("torus", nbytes, torus) == pytest.approx(cs.torus_seconds(nbytes, torus))
    for shape in ((rows * cols, 1), (1, rows * cols)):
        switch = topology.Cluster(*shape, intra=link, inter=link)
        assert topology.predict("all_to_all", 4000, switch) == pytest.approx(
            cs.switch_all_to_all_seconds(4000, switch))
    with pytest.raises(ValueError, match="rows and cols > 2"):
        cs.torus_seconds(nbytes, topology.Cluster(2, 4, layout="torus"))


def test_cp_bytes_equal_the_planners():
    long = dataclasses.replace(planner.MODELS["Llama-3 405B"], name="Llama-3 405B, 128K",
                               seq_len=131072)
    big = planner.CLUSTERS["Llama-3 scale: 16,384x H100"]
    for recompute in ("full", "selective"):
        p = planner.evaluate(long, big, 128, 8, 8, 16, 1, 1, recompute, 4, cp=16,
                             stage_split="llama3", enforce_memory=False)
        per_layer = cs.cp_bytes_per_layer(1, long.seq_len, long.kv_dim // 8, 16,
                                          recompute=recompute)
        layers = max(long.stage_layers(16, "llama3"))
        assert p.comm_bytes["cp"] == pytest.approx(per_layer * layers * p.microbatches), recompute
    n = 1 * 4096 * 128 * 2
    assert cs.cp_bytes_per_layer(1, 4096, 128, 4) == pytest.approx(2 * n * 3 / 4 + 2 * n * 7 / 4)


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_ep_bytes_equal_the_planners_and_the_ranks_closed_form(recompute):
    ds, h800 = planner.MODELS["DeepSeek-V3 671B"], planner.CLUSTERS["DeepSeek-V3: 2,048x H800"]
    for mb, tp in ((1, 1), (2, 2)):
        mesh = planner.Mesh(ds, h800, dp=128 // tp, tp=tp, pp=16, cp=1, ep=64, etp=1)
        tokens = mb * ds.seq_len / tp
        assert mesh.ep_traffic(mb, 1, 1, recompute)[0] == pytest.approx(cs.ep_bytes_per_layer(
            tokens, ds.top_k, ds.hidden, ds.capacity_factor, recompute=recompute))
    # notebook 12 section 7's layer: capacity exact, so the buffer is what is routed
    real = hybrid.ep_all_to_all_bytes(tokens=16, d_model=16, n_experts=4, top_k=2,
                                      capacity_factor=1.25, ep=2)
    assert real["payload"] == cs.ep_bytes_per_layer(16, 2, 16, 1.25, e=4)


def test_the_scaling_efficiency_row_is_why_distribute_and_notebook_00s_table():
    from companion import why_distribute
    t_1, t_256 = why_distribute.NOTES["tsm_1_node_s"], why_distribute.NOTES["tsm_256_nodes_s"]
    tsm = why_distribute.scaling(t_1, t_256, 1, 256)            # what sections 11 and 11 §1 call
    assert tsm["efficiency"] == pytest.approx((t_1 / t_256) / (256 / 1))   # (t_a / t_b) / (u_b / u_a)
    rows = {r["quantity"]: r["recomputed"] for r in why_distribute.lecture_numbers()}   # notebook 00 §0
    assert rows["TSM scaling efficiency"] == tsm["efficiency"]
    assert rows["TSM speed-up, 1 -> 256 Summit nodes"] == tsm["speedup"]
    assert why_distribute.scaling(40.0, 10.0, 2, 16)["efficiency"] == pytest.approx(0.5)
    paper = why_distribute.scaling(49 * 3600 + 55 * 60, 14 * 60 + 13, 1, 256)   # arXiv 1910.00932
    assert 0.8 < paper["efficiency"] < tsm["efficiency"] < 0.85


def test_the_auxiliary_loss_is_alpha_e_sum_f_p_of_the_packages_router():
    from companion.sequence_parallel import moe, moe_balance
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(512, 8, generator=gen, dtype=torch.float64) + moe_balance.zipf_offset(8, 0.5)
    probs = logits.softmax(dim=-1).mean(dim=0)
    for k in (1, 2):                                         # f_i from the package's route
        _token, expert, _slot, _gate = moe.route(logits, k, 512 * k)
        f = torch.bincount(expert, minlength=8).double() / (512 * k)
        assert moe_balance.switch_aux_loss(logits, top_k=k) == pytest.approx(0.01 * 8 * float((f * probs).sum()))
    f_switch = torch.bincount(logits.argmax(dim=-1), minlength=8).double() / 512   # Switch's top-1 f_i
    assert moe_balance.switch_aux_loss(logits) == pytest.approx(0.01 * 8 * float((f_switch * probs).sum()))
    uniform = torch.eye(8, dtype=torch.float64).repeat(64, 1)   # f and P uniform: the loss is alpha
    assert moe_balance.switch_aux_loss(uniform) == pytest.approx(0.01)
    assert moe_balance.switch_aux_loss(uniform, top_k=2, alpha=0.1) == pytest.approx(0.1)
    assert moe_balance.switch_aux_loss(logits, 2) > moe_balance.switch_aux_loss(logits - moe_balance.zipf_offset(8, 0.5), 2)
    with pytest.raises(ValueError, match="logits"):
        moe_balance.switch_aux_loss(torch.zeros(8))


def test_the_bias_row_is_update_bias_and_notebook_06s_balancing():
    from companion.sequence_parallel import moe_balance
    load = torch.tensor([9.0, 1.0, 4.0, 6.0])                  # mean 5
    step = moe_balance.update_bias(torch.zeros(4), load, 0.001)
    assert step.tolist() == pytest.approx((0.001 * torch.sign(load.mean() - load)).tolist())
    assert step.tolist() == pytest.approx([-0.001, 0.001, 0.001, -0.001])
    # the cheat-sheet's worked example: notebook 06 §7's layer and run, in one process
    # (tests/test_moe_balance.py holds the ranks' run equal to it, bit for bit)
    ref = moe_balance.balance_reference(world_size=4, steps=40, gamma=0.01, skew=0.5, n_experts=8,
                                        top_k=2, tokens=2048, d_model=64, dtype="float32")
    ranks = {k: [sum(ref[k][2 * r:2 * r + 2]) for r in range(4)] for k in ("load_before", "load_after")}
    assert moe_balance.load_ratio(ranks["load_after"]) < 1.25 < moe_balance.load_ratio(ranks["load_before"])
    assert all(b / 0.01 == pytest.approx(round(b / 0.01), abs=1e-3) and abs(b) <= 0.4 + 1e-6
               for b in ref["bias"])                            # 40 steps of +-gamma (or 0)
    assert ref["bias"][0] < 0 < ref["bias"][-1]


def test_the_node_limited_row_counts_what_notebook_06_counts():
    from companion.sequence_parallel import moe_nodes
    with torch.random.fork_rng():
        torch.manual_seed(0)
        drawn = torch.rand(2048, 256)                         # notebook 06 §8's scores, as it draws them
    scores = torch.rand(2048, 256, generator=torch.Generator().manual_seed(0))   # the cheat-sheet's
    assert torch.equal(drawn, scores)
    limited, top8 = moe_nodes.node_limited_topk(scores, 8, 8, 4), scores.topk(8, dim=-1).indices
    nodes = [set((row // 32).tolist()) for row in limited]
    assert max(map(len, nodes)) <= 4                            # M = 4 of 8 nodes
    once = moe_nodes.cross_node_rows(limited, 0, 32, True)      # |nodes(t) \ {own}| per token
    assert once == sum(len(n - {0}) for n in nodes) <= 4 * len(nodes)
    assert moe_nodes.cross_node_rows(top8, 0, 32, False) == int((top8 // 32 != 0).sum())   # one per remote expert
    assert once < moe_nodes.cross_node_rows(top8, 0, 32, True) < moe_nodes.cross_node_rows(top8, 0, 32, False)


def test_edp_and_alpas_objective_are_the_packages():
    ds, h800 = planner.MODELS["DeepSeek-V3 671B"], planner.CLUSTERS["DeepSeek-V3: 2,048x H800"]
    for dp, tp, ep, etp in ((128, 1, 64, 1), (128, 1, 32, 1), (64, 2, 64, 1), (64, 2, 32, 2)):
        mesh = planner.Mesh(ds, h800, dp=dp, tp=tp, pp=16, cp=1, ep=ep, etp=etp)
        assert mesh.edp == tp * dp // (etp * ep)
    assert stages.pipeline_time([1.0, 3.0, 2.0], 5) == 1 + 3 + 2 + 4 * 3


# ---- the index ------------------------------------------------------------------------
def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("language", list(EDITIONS))
def test_the_index_is_written_from_the_section_headings(language):
    cells = _cells(EDITIONS[language])
    index = next(c for c in cells if c["id"] == cs.INDEX_ID)
    others = [c for c in cells if c["id"] != cs.INDEX_ID]
    assert "".join(index["source"]) == cs.index_markdown(others, language), \
        "the index is stale: run python -m companion.tools.cheatsheet_index, then i18n_build"
    found = cs.sections(others)
    assert [int(n) for n, *_ in found] == list(range(1, len(found) + 1)) and len(found) >= 12
    for number, title, derived, lectures in found:   # each row names notebooks and pages
        assert title and re.search(r"\b\d\d §\d", derived) and lectures, (number, title)


def test_sections_read_the_derived_line():
    text = ("## 7 · Seven\n\n*Derived in 08 §1-3 · L20 p.17-22 (latency), p.62-64 · Zhu et "
            "al. 2021.*\n\nbody")
    assert cs.sections([text, "## Self-check", {"cell_type": "code", "source": "## 9 · x"}]) == [
        ("7", "Seven", "08 §1-3", "L20 p.17-22, p.62-64")]
    assert cs.sections(["## 2 · 二\n\n*推导见 03 §1-3 · L19 p.68-73 · ZeRO*。"]) == [
        ("2", "二", "03 §1-3", "L19 p.68-73")]


def test_the_index_tool_has_nothing_to_write():
    from companion.tools import cheatsheet_index
    assert cheatsheet_index.plan() == {}, "run python -m companion.tools.cheatsheet_index"


def test_no_sentence_describes_what_the_package_does_not_do_yet():
    pattern = re.compile(r"not yet|once the package|(?<![_.])\bfuture\b|planned|will be (added|built)|"
                         r"to come|coming soon|TODO", re.I)
    texts = ["".join(c["source"]) for c in _cells(EDITIONS["en"])]
    texts += [p.read_text(encoding="utf-8") for p in (ROOT / "companion" / "cheatsheet").glob("*.py")]
    found = [m.group(0) for t in texts for m in pattern.finditer(t)]
    assert not found, found
    zh = json.loads((ROOT / "translations" / "zh-CN" / "cheatsheet.json").read_text(encoding="utf-8"))
    assert not [c["id"] for c in zh["cells"] if re.search(r"尚未|将来|以后会|计划中|等包实现", c["zh"])]


@pytest.mark.parametrize("delta, m", [(2.4, 11_135.0), (32.8, 11_135.0), (60.0, 3600.0)])
def test_the_checkpoint_rows_are_companion_resilience(delta, m):
    from companion import resilience
    tau = resilience.young_interval(delta, m)
    assert tau == pytest.approx(math.sqrt(2 * delta * m))
    assert resilience.goodput(tau, delta, m) == pytest.approx(1 - delta / tau - tau / 2 / m)
    x = delta / (2 * m)
    assert resilience.daly_interval(delta, m) == pytest.approx(tau * (1 + math.sqrt(x) / 3 + x / 9) - delta)
    assert resilience.daly_interval(delta, m) < tau
    t_d = resilience.daly_interval(delta, m)
    assert resilience.goodput(t_d, delta, m, model="daly") == pytest.approx(
        t_d / (m * math.expm1((t_d + delta) / m)))
    assert resilience.scale_mtbi(m, 16_384, 163_840) == pytest.approx(m / 10)
