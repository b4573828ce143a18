"""The emulated cluster (companion.topology) and the topology-aware collectives.

Three layers: the cluster's routes and the link model against hand-computed timelines
(no ranks); real ranks inside ``emulate`` (results equal torch.distributed's, exact
bytes per link class, the recorded messages equal the model's schedule, timestamps obey
the link model); and the model's predictions against closed forms. Nothing here asserts
a wall-clock duration: benchmarks/topology.py measures those.

Tolerances: integer-valued inputs with SUM must match dist.all_reduce exactly (small
integers add exactly in fp32 in any order); random floats with AVG within rtol=atol=1e-5
(a different but fixed order of at most 5 fp32 additions of O(1) values). Emulated
timestamps are compared with an absolute 1e-9 s: they are sums of the same few floats.
"""
from __future__ import annotations

import math
import time

import pytest
import torch
import torch.distributed as dist

import companion
from companion import collectives as C
from companion import topology as T
from companion.network import emulator

INTRA, INTER = (1e-5, 1e9), (5e-5, 1e8)  # fast enough for tests, finite so times move
SHAPES = [(2, 2, "nodes"), (3, 2, "nodes"), (2, 3, "torus"), (1, 3, "nodes"), (5, 1, "ring")]
NUMEL = 840  # divisible by every k * M here: the textbook byte counts are exact
BLOCK = 6  # elements per all-to-all block


# -- the cluster and the link model, by hand ------------------------------------------
def test_cluster_shape_links_and_routes():
    c = T.Cluster(2, 3)
    assert c.world_size == 6 and [c.node_of(r) for r in range(6)] == [0, 0, 0, 1, 1, 1]
    assert c.link(0, 2) == "intra" and c.link(2, 3) == "inter" and c.route(0, 5) == ((0, 5, "inter"),)
    ring = T.Cluster(3, 2, layout="ring")
    assert ring.neighbours(0) == [1, 5]
    assert ring.route(0, 3) == ((0, 1, "intra"), (1, 2, "inter"), (2, 3, "intra"))
    with pytest.raises(ValueError, match="route"):
        ring.link(0, 3)
    torus = T.Cluster(3, 4, layout="torus")  # rank r at (r // 4, r % 4)
    assert torus.neighbours(5) == [1, 4, 6, 9]
    assert torus.route(0, 6) == ((0, 1, "intra"), (1, 2, "intra"), (2, 6, "inter"))  # row first
    assert T.Cluster(2, 2, layout="torus").neighbours(0) == [1, 2]  # size-2 dims: one link pair
    assert len(torus.links()) == 12 * 4


def test_two_messages_queue_on_one_egress_port():
    c = T.Cluster(2, 2, intra=(1e-3, 1e6), inter=(2e-3, 1e5))
    b = 1000  # 1 ms on the intra link, 10 ms on the inter link
    out = T.schedule_time([[(0, 2, b), (0, 3, b), (0, 1, b)]], c)
    got = {(m["src"], m["dst"]): (m["start"], m["end"]) for m in out["messages"]}
    assert got[(0, 2)] == pytest.approx((0.0, 0.002 + 0.010))
    assert got[(0, 3)] == pytest.approx((0.010, 0.010 + 0.002 + 0.010))  # waits for the NIC
    assert got[(0, 1)] == pytest.approx((0.0, 0.001 + 0.001))  # its own port: no wait
    assert out["seconds"] == pytest.approx(0.022)


def test_two_messages_queue_on_one_ingress_port_and_rounds_follow_each_other():
    c = T.Cluster(2, 2, intra=(1e-3, 1e6), inter=(2e-3, 1e5))
    out = T.schedule_time([[(2, 0, 1000), (3, 0, 1000)], [(0, 1, 500)]], c)
    ends = [m["end"] for m in out["messages"]]
    assert ends[:2] == pytest.approx([0.012, 0.022])  # rank 3's bytes wait behind rank 2's
    assert out["messages"][2]["start"] == pytest.approx(0.022)  # round 2 once rank 0 has both
    # rank 0 is done when its 500 bytes have left (0.5 ms), rank 1 when they have arrived
    assert out["finish"] == pytest.approx([0.022 + 0.0005, 0.022 + 0.001 + 0.0005, 0.010, 0.010])


def test_multi_hop_adds_latencies_and_streams_at_the_slowest_hop():
    ring = T.Cluster(3, 2, intra=(1e-3, 1e6), inter=(2e-3, 1e5), layout="ring")
    out = T.schedule_time([[(0, 3, 1000)]], ring)
    assert out["seconds"] == pytest.approx(1e-3 + 2e-3 + 1e-3 + 1000 / 1e5)
    assert ring.hop_time(1000, 0, 3) == pytest.approx(out["seconds"])


def test_closed_forms():
    alpha_i, beta_i, alpha_e, beta_e = 1e-4, 1e9, 1e-3, 1e8
    c = lambda a, b, m: a + m / b  # noqa: E731
    n = 12_000_000
    for nodes, k in ((2, 2), (3, 2), (2, 4), (4, 3)):
        cl = T.Cluster(nodes, k, intra=(alpha_i, beta_i), inter=(alpha_e, beta_e))
        want = (2 * (k - 1) * c(alpha_i, beta_i, n / k)
                + 2 * (nodes - 1) * c(alpha_e, beta_e, n / (k * nodes)))
        assert T.predict("hierarchical", n, cl) == pytest.approx(want)
        assert T.predict("hierarchical", n, cl) < T.predict("ring", n, cl)
    torus = T.Cluster(3, 4, intra=(alpha_i, beta_i), inter=(alpha_e, beta_e), layout="torus")
    assert T.predict("torus", n, torus) == pytest.approx(
        2 * 3 * c(alpha_i, beta_i, n / 8) + 2 * 2 * c(alpha_e, beta_e, n / 24))
    one_node = T.Cluster(1, 4, intra=(alpha_i, beta_i), inter=(alpha_e, beta_e))
    assert T.predict("all_to_all", 4000, one_node) == pytest.approx(3 * c(alpha_i, beta_i, 4000))
    # The flat ring across 2 nodes of 2: ranks 1 and 3 send over their NIC in all 6 rounds.
    # Their rounds follow each other as soon as the NIC is free (the intra hop feeding
    # them is faster), so the latencies overlap and only the bytes add up:
    # 6 * (n/4) / beta_inter + one alpha_inter, not 6 * c(inter, n/4).
    two = T.Cluster(2, 2, intra=(alpha_i, beta_i), inter=(alpha_e, beta_e))
    assert n / 4 / beta_e > c(alpha_i, beta_i, n / 4)  # the regime this closed form is for
    assert T.predict("ring", n, two) == pytest.approx(6 * n / 4 / beta_e + alpha_e)


def test_all_to_all_on_a_ring_costs_more_than_behind_a_switch():
    # Bandwidth only (alpha = 0): behind a switch a rank's port sends N-1 blocks; on a
    # bidirectional ring its busier link forwards cw (cw+1)/2 of them, cw = N // 2
    # (N = 4 is a tie: 3 blocks either way).
    link, b = (0.0, 1e8), 40_000
    for nodes in (4, 6, 8, 12):
        switch = T.Cluster(nodes, 1, intra=link, inter=link)
        ring = T.Cluster(nodes, 1, intra=link, inter=link, layout="ring")
        cw = nodes // 2
        assert T.predict("all_to_all", b, switch) == pytest.approx((nodes - 1) * b / 1e8)
        assert T.predict("torus_all_to_all", b, ring) == pytest.approx(cw * (cw + 1) / 2 * b / 1e8)
    torus = T.Cluster(4, 4, intra=link, inter=link, layout="torus")  # 12 + 12 blocks against 15
    assert T.predict("torus_all_to_all", b, torus) == pytest.approx(24 * b / 1e8)
    assert T.predict("all_to_all", b, T.Cluster(4, 4, intra=link, inter=link)) == pytest.approx(15 * b / 1e8)


# -- real ranks inside the emulated cluster ----------------------------------------------
def _inputs(numel, integer):
    g = torch.Generator().manual_seed(100 * dist.get_rank() + numel)
    return torch.randint(-8, 9, (numel,), generator=g).float() if integer else torch.randn(numel, generator=g)


def _rank_job(cluster):
    failures, n = [], dist.get_world_size()
    with T.emulate(cluster):
        for numel in (3, 35, NUMEL):
            for integer, op, dop in ((True, "sum", dist.ReduceOp.SUM), (False, "avg", dist.ReduceOp.AVG)):
                x = _inputs(numel, integer).view(-1, 1) if numel % 5 == 0 else _inputs(numel, integer)
                keep, ref = x.clone(), x.clone()
                dist.all_reduce(ref, op=dop)
                for name, y in (("hierarchical", C.hierarchical_all_reduce(x, op=op)),
                                ("hierarchical k", C.hierarchical_all_reduce(
                                    x, op=op, ranks_per_node=cluster.ranks_per_node)),
                                ("torus", C.torus_all_reduce(x, op=op))):
                    ok = torch.equal(y, ref) if integer else torch.allclose(y, ref, rtol=1e-5, atol=1e-5)
                    if not ok or y.shape != ref.shape:
                        failures.append(f"{name} {op} numel={numel}")
                if not torch.equal(x, keep):
                    failures.append(f"input modified numel={numel}")
        blocks = [torch.arange(BLOCK, dtype=torch.float32) + 100 * dist.get_rank() + 10 * j
                  for j in range(n)]
        ref = list(torch.empty(n * BLOCK).chunk(n))
        dist.all_to_all(ref, blocks)
        if not all(torch.equal(a, b) for a, b in zip(C.torus_all_to_all(blocks), ref)):
            failures.append("torus_all_to_all")
        if not all(torch.equal(a, b) for a, b in zip(C.torus_all_to_all(blocks, rows=1), ref)):
            failures.append("torus_all_to_all rows=1")
        x, recorded = torch.ones(NUMEL), {}
        for name, call in (("ring", lambda: C.ring_all_reduce(x)),
                           ("hierarchical", lambda: C.hierarchical_all_reduce(x)),
                           ("torus", lambda: C.torus_all_reduce(x)),
                           ("all_to_all", lambda: C.all_to_all(blocks, [b.shape for b in blocks])),
                           ("torus_all_to_all", lambda: C.torus_all_to_all(blocks))):
            dist.barrier()
            with C.traffic() as t:
                call()
            recorded[name] = t
    return failures, recorded


@pytest.fixture(scope="module")
def runs():
    out = {}
    for nodes, k, layout in SHAPES:
        cluster = T.Cluster(nodes, k, intra=INTRA, inter=INTER, layout=layout)
        out[(nodes, k, layout)] = (cluster, companion.launch(_rank_job, cluster,
                                                             world_size=cluster.world_size,
                                                             timeout=120))
    return out


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}-{lay}" for m, k, lay in SHAPES])
def test_equal_to_torch_distributed(runs, shape):
    _, results = runs[shape]
    for r, (failures, _) in enumerate(results):
        assert not failures, f"rank {r}: {failures}"


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}-{lay}" for m, k, lay in SHAPES])
def test_exact_bytes_per_link_class(runs, shape):
    cluster, results = runs[shape]
    nodes, k = cluster.nodes, cluster.ranks_per_node
    n = NUMEL * 4
    for _, rec in results:
        want = {"intra": 2 * (k - 1) * n // k, "inter": 2 * (nodes - 1) * n // (nodes * k)}
        want = {key: v for key, v in want.items() if v}
        for name in ("hierarchical", "torus"):
            assert rec[name].bytes_per_link() == want, name
            assert rec[name].bytes_per_link("recv") == want, name
        if cluster.layout == "torus":  # only neighbour messages: one hop each
            assert rec["torus"].bytes_per_link(per_hop=True) == want


def test_flat_ring_across_two_nodes_puts_all_its_bytes_on_two_nics(runs):
    cluster, results = runs[(2, 2, "nodes")]
    n = NUMEL * 4
    ring = [rec["ring"].bytes_per_link() for _, rec in results]
    assert ring == [{"intra": 3 * n // 2}, {"inter": 3 * n // 2}, {"intra": 3 * n // 2}, {"inter": 3 * n // 2}]
    hier = [rec["hierarchical"].bytes_per_link()["inter"] for _, rec in results]
    assert hier == [n // 2] * 4  # half a tensor on each of 4 NICs, against 1.5 tensors on 2


def _rounds_of(traffics):
    steps = sorted({m.step for t in traffics for m in t.log})
    return [sorted((r, m.peer, m.bytes) for r, t in enumerate(traffics)
                   for m in t.log if m.op == "send" and m.step == s) for s in steps]


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}-{lay}" for m, k, lay in SHAPES])
def test_recorded_messages_are_the_models_schedule(runs, shape):
    cluster, results = runs[shape]
    for name in ("ring", "hierarchical", "torus", "all_to_all", "torus_all_to_all"):
        traffics = [rec[name] for _, rec in results]
        nbytes = BLOCK * 4 if "all_to_all" in name else NUMEL * 4
        want = [sorted(rnd) for rnd in T.schedule(name, nbytes, cluster)]
        assert _rounds_of(traffics) == [rnd for rnd in want if rnd], name
        assert T.simulate(traffics, cluster)["seconds"] == pytest.approx(
            T.predict(name, nbytes, cluster)), name


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}-{lay}" for m, k, lay in SHAPES])
def test_timestamps_follow_the_link_model(runs, shape):
    cluster, results = runs[shape]
    for _, rec in results:
        for t in rec.values():
            for m in t.log:
                assert m.link == ("intra" if cluster.node_of(t.rank) == cluster.node_of(m.peer) else "inter")
                first = m.hops[0]
                if m.op == "send":  # the sender's port is busy for bytes / beta of the first hop
                    assert m.end - m.start == pytest.approx(m.bytes / cluster.params(first[2])[1], abs=1e-9)
                else:  # never faster than idle links
                    assert m.end - m.start >= cluster.hop_time(m.bytes, m.peer, t.rank) - 1e-9
    tl = T.timeline([rec["hierarchical"] for _, rec in results])
    assert tl[0]["start"] == 0.0 and all(a["start"] <= b["start"] for a, b in zip(tl, tl[1:]))
    assert {row["collective"] for row in tl} == {"hierarchical"}


def _queueing_job(cluster):
    r = dist.get_rank()
    b = torch.ones(250)  # 1000 bytes
    with T.emulate(cluster), C.traffic() as t:
        sends = [(2, b, 0, "copy"), (3, b, 0, "copy"), (1, b, 0, "copy")] if r == 0 else []
        recvs = [(0, torch.empty(250), 0, "copy")] if r else []
        _exchange(sends, recvs)
        returned = time.perf_counter()
        # round 2: ranks 2 and 3 both send to rank 1 over its one inter-node port
        sends = [(1, b, 0, "copy")] if r in (2, 3) else []
        recvs = [(2, torch.empty(250), 0, "copy"), (3, torch.empty(250), 0, "copy")] if r == 1 else []
        _exchange(sends, recvs)
    return t, returned


def _exchange(sends, recvs):
    from companion.collectives.traffic import exchange
    exchange(sends, recvs, "hand")


def test_emulator_queues_two_messages_on_one_port_as_computed_by_hand():
    alpha_i, beta_i, alpha_e, beta_e = 1e-3, 1e6, 2e-3, 1e5
    cluster = T.Cluster(2, 2, intra=(alpha_i, beta_i), inter=(alpha_e, beta_e))
    res = companion.launch(_queueing_job, cluster, world_size=4, timeout=60)
    logs = [t.log for t, _ in res]
    to2, to3, to1 = [m for m in logs[0] if m.step == 0]
    s = to2.start
    assert (to2.end, to3.start, to3.end) == pytest.approx((s + 0.01, s + 0.01, s + 0.02), abs=1e-9)
    assert (to1.start, to1.end) == pytest.approx((s, s + 0.001), abs=1e-9)  # the intra port
    got = {r: next(m for m in logs[r] if m.step == 0 and m.op == "recv") for r in (1, 2, 3)}
    assert got[2].end == pytest.approx(s + alpha_e + 0.01, abs=1e-9)
    assert got[3].end == pytest.approx(s + 0.01 + alpha_e + 0.01, abs=1e-9)
    assert got[1].end == pytest.approx(s + alpha_i + 0.001, abs=1e-9)
    for r in (1, 2, 3):  # the data were withheld until the emulated arrival
        assert res[r][1] >= got[r].end
    first, second = sorted((m for m in logs[1] if m.step == 1), key=lambda m: m.end)
    assert second.end == pytest.approx(max(second.start + alpha_e, first.end) + 0.01, abs=1e-9)
    assert res[0][0].bytes_per_link() == {"inter": 2000, "intra": 1000}


# -- where the node shape comes from ---------------------------------------------------------
def test_node_shape_needs_a_cluster_or_torchrun(monkeypatch):
    for name in ("GROUP_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="ranks_per_node=None.*pass ranks_per_node"):
        emulator.node_shape(None)
    monkeypatch.setenv("GROUP_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("RANK", "1")
    assert emulator.node_shape(None) == 1
    monkeypatch.setenv("RANK", "3")
    with pytest.raises(ValueError, match="nproc-per-node"):
        emulator.node_shape(None)


def test_emulate_refuses_a_cluster_of_another_size():
    with pytest.raises(ValueError, match="world_size=cluster.world_size"):
        with T.emulate(T.Cluster(2, 2)):
            pass
    assert math.isnan(C.Message(0, "send", 1, 4).start)


def test_the_rack_tradeoff_is_derived_from_the_published_totals():
    from companion.topology import trends
    rack = trends.rack_tradeoff()
    nvl, cm = (trends.SCALE_UP_SYSTEMS[k] for k in ("GB200 NVL72", "CloudMatrix 384"))
    assert rack["power"] == cm["power_kw"] / nvl["power_kw"]          # the lecture's "four times"
    assert 3.5 < rack["power"] < 4.0 and 2.2 < rack["watts_per_flop"] < 2.4
    assert rack["watts_per_flop"] * rack["compute"] == pytest.approx(rack["power"])
    assert rack["systems"]["GB200 NVL72"]["tflops_per_chip"] == 2500.0
    # Huawei's paper (arXiv 2506.12708): 752 TFLOP/s per 910C, ~289 PFLOP/s for the 384,
    # a few percent under SemiAnalysis's 300 (notebook 11 prints both)
    paper = trends.CLOUDMATRIX_PAPER
    assert paper["chips"] == cm["chips"]
    paper_pflops = paper["chips"] * paper["bf16_tflops_per_chip"] / 1e3
    assert 0.95 < paper_pflops / cm["dense_bf16_pflops"] < 1.0
    # with the paper's compute and the same power, the watts per FLOP/s rise by the inverse
    with_paper = trends.rack_tradeoff(other_pflops=paper_pflops)
    assert with_paper["power"] == rack["power"]
    assert with_paper["watts_per_flop"] == pytest.approx(
        rack["watts_per_flop"] * cm["dense_bf16_pflops"] / paper_pflops)
    assert trends.SCALE_UP_SYSTEMS["CloudMatrix 384"]["dense_bf16_pflops"] == cm["dense_bf16_pflops"]


def test_bisection_per_chip_shares_the_cut_among_half_the_chips():
    from companion.topology import trends
    assert trends.bisection_per_chip(4, 8e9) == 0.5e9      # 1 GB/s over a cut of 2 senders
