"""The cheat-sheet's sections 10-12 (companion.cheatsheet.scaling) held against the package
functions notebooks 10-12 call, and the cheat-sheet's index against its section headings in
every edition. notebooks/cheatsheet.ipynb runs under nbval separately."""
from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest

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
