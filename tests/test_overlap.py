"""companion.overlap: the span arithmetic, the crossover formula, and DDP / FSDP steps on
real ranks behind the emulated link (what is issued when, and that the link changes
timing, never the arithmetic). Timing itself is a benchmark's business
(benchmarks/overlap.py), not a test's.
"""
import math

import pytest
import torch

import companion
from companion.collectives.accounting import ring_bytes
from companion.overlap import (crossover_batch, draw_overlap, measure_overlap, merge_spans,
                               mlp_flops, overlap_length, predicted_crossover,
                               slowest_rank_exposed, span_length, step_timeline)

NAN = math.nan


def _record(kind, issued, start, end, wait_start=NAN, wait_end=NAN, nbytes=100):
    return {"kind": kind, "tag": None, "bytes": nbytes, "issued": issued, "start": start,
            "end": end, "real_end": start, "wait_start": wait_start, "wait_end": wait_end}


def test_span_arithmetic():
    assert merge_spans([(3, 4), (0, 1), (0.5, 2), (5, 5)]) == [(0, 2), (3, 4)]
    assert span_length([(0, 2), (1, 3)]) == 3
    assert overlap_length([(0, 2), (3, 5)], [(1, 4)]) == 2


def test_step_timeline_splits_hidden_and_exposed():
    # step [10, 20]: a collective on the link 11-15, waited for 14-15 (1 s exposed, 3
    # hidden); another on the link 15-18, waited 15-18 (all exposed); compute elsewhere
    records = [_record("all_reduce", 10.5, 11, 15, 14, 15),
               _record("all_reduce", 12, 15, 18, 15, 18)]
    tl = step_timeline(records, 10, 20, rank=3)
    assert tl["rank"] == 3 and tl["step_s"] == 10
    assert tl["comm_s"] == pytest.approx(7) and tl["exposed_s"] == pytest.approx(4)
    assert tl["hidden_s"] == pytest.approx(3) and tl["wait_s"] == pytest.approx(4)
    assert tl["compute_s"] == pytest.approx(6)
    assert tl["compute"] == [(0, 4), (8, 10)] and tl["waits"] == [(4, 8)]
    assert [(c["hidden_s"], c["exposed_s"]) for c in tl["comm"]] == [(3, 1), (0, 3)]
    with pytest.raises(ValueError, match="end"):
        step_timeline(records, 20, 10)


def test_slowest_rank_exposed_ignores_waiting_for_a_straggler():
    # rank 0 computes 2 s then waits 8 s for rank 1, which computes 7 s: the collective
    # (link 2-10) is exposed 8 s on rank 0 but added only 10 - 7 = 3 s to the step
    fast = step_timeline([_record("all_reduce", 2, 2, 10, 2, 10)], 0, 10, rank=0)
    slow = step_timeline([_record("all_reduce", 7, 2, 10, 7, 10)], 0, 10, rank=1)
    assert fast["exposed_s"] == pytest.approx(8) and slow["exposed_s"] == pytest.approx(3)
    assert slowest_rank_exposed([fast, slow]) == pytest.approx(3)
    with pytest.raises(ValueError, match="timelines"):
        slowest_rank_exposed([])


def test_draw_overlap_colours_hidden_and_exposed_link_time():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    from companion.overlap.plot import COLORS

    records = [_record("all_reduce", 10.5, 11, 15, 14, 15),
               _record("all_reduce", 12, 15, 18, 15, 18)]
    tl = step_timeline(records, 10, 20, rank=0)
    fig, ax = plt.subplots()
    draw_overlap(ax, [tl, tl])
    bars = {}  # colour (lower-case hex) -> total width in ms, over both ranks
    for coll in ax.collections:
        colour = to_hex(coll.get_facecolor()[0])
        for path in coll.get_paths():
            xs = path.vertices[:, 0]
            bars[colour] = bars.get(colour, 0) + xs.max() - xs.min()
    plt.close(fig)
    assert bars[COLORS["hidden"].lower()] == pytest.approx(2 * 3e3)   # 3 s hidden per rank
    assert bars[COLORS["exposed"].lower()] == pytest.approx(2 * 4e3)  # 1 + 3 s exposed
    assert bars[COLORS["compute"].lower()] == pytest.approx(2 * 6e3)
    assert bars[COLORS["wait"].lower()] == pytest.approx(2 * 4e3)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["rank 0", "rank 0"]
    with pytest.raises(ValueError, match="timelines"):
        draw_overlap(ax, [{"rank": 0}])


def test_ring_bytes_and_crossover_formula():
    assert ring_bytes("all_reduce", 1000, 4) == 1500
    assert ring_bytes("all_gather", 1000, 4) == ring_bytes("reduce_scatter", 1000, 4) == 750
    # T* = (N-1)/N * b * F / (2 beta): 3/4 * 4 * 1e10 / (2 * 1e8) = 150 rows
    assert predicted_crossover(1e10, 1e8, 4) == pytest.approx(150)
    # at T*, one square layer's backward (4 T P / F) equals its all-reduce (2 (N-1)/N b P / beta)
    P, T = 512 * 512, 150
    assert 4 * T * P / 1e10 == pytest.approx(ring_bytes("all_reduce", 4 * P, 4) / 1e8)
    # 16 -> 8 -> 8 -> 16: 2 rows x (16*8 + 8*8 + 8*16) weights x 6, minus the first
    # layer's input gradient (2 x 2 x 16*8)
    assert mlp_flops(2, 8, 2) == 6 * 2 * (128 + 64 + 128) - 2 * 2 * 128


def test_crossover_batch_is_the_knee_of_the_exposure():
    # exposure = 0.2 + 0.01 * max(0, 100 - batch): falls linearly, meets its floor at 100
    batches = (35, 50, 71, 100, 141, 200)
    rows = [{"batch": b, "exposed_s": 0.2 + 0.01 * max(0, 100 - b)} for b in batches]
    assert crossover_batch(rows) == pytest.approx(100, rel=0.01)  # not quantised to a point
    knee_at_80 = [{"batch": b, "slowest_exposed_s": 0.2 + 0.01 * max(0, 80 - b)} for b in batches]
    assert crossover_batch(knee_at_80, key="slowest_exposed_s") == pytest.approx(80, rel=0.01)
    # one outlier moves the knee, not by a sweep step
    rows[4]["exposed_s"] += 0.05
    assert 85 < crossover_batch(rows) < 115
    assert crossover_batch([{"batch": b, "exposed_s": 0.3} for b in batches]) is None  # flat
    rising = [{"batch": b, "exposed_s": 0.001 * b} for b in batches]
    assert crossover_batch(rising) is None
    with pytest.raises(ValueError, match="rows"):
        crossover_batch([])
    with pytest.raises(ValueError, match="rows"):
        crossover_batch(rows[:2])


def _through_the_link():
    """DDP and FSDP (with and without prefetch) on a small MLP, direct and through the
    emulated link: returns post-step weights and what each recorded."""
    import torch.distributed as dist
    import torch.nn.functional as F

    from companion.network.delayed import DelayedComm
    from companion.models import TinyMLP

    out = {}
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(dist.get_rank()),
                    dtype=torch.float64)
    with DelayedComm(0.0, 1e9, absorb_real=True) as link:
        for name, make in (("ddp", lambda m, l: companion.DDP(m, link=l)),
                           ("fsdp", lambda m, l: companion.FSDP(m, link=l)),
                           ("fsdp-prefetch", lambda m, l: companion.FSDP(m, prefetch=True,
                                                                         link=l))):
            for via in (None, link):
                model = TinyMLP(16, 32, 16, depth=3).double()
                net = make(model, via)
                net.comm.records = []
                F.mse_loss(net(x), x).backward()
                net.finish_gradient_synchronization()
                torch.optim.SGD(net.parameters(), lr=0.1).step()
                params = (net.gather_full_params() if hasattr(net, "gather_full_params")
                          else {k: v.detach().clone() for k, v in model.named_parameters()})
                timeline = getattr(net, "timeline", [])
                out[name, via is not None] = (params, net.comm.records,
                                              [(e, u, p, t0 + getattr(net, "_t0", 0), t1 +
                                                getattr(net, "_t0", 0))
                                               for e, u, p, t0, t1 in timeline])
    return out


def test_the_link_changes_when_bytes_arrive_not_the_result():
    results = companion.launch(_through_the_link, world_size=4, timeout=120)
    for out in results:
        for name in ("ddp", "fsdp", "fsdp-prefetch"):
            direct, linked = out[name, False][0], out[name, True][0]
            for key in direct:  # the same collectives on another group: bit for bit
                assert torch.equal(direct[key], linked[key]), (name, key)
        for key in out["fsdp", False][0]:  # prefetching moves bytes earlier, adds the same
            assert torch.equal(out["fsdp", False][0][key], out["fsdp-prefetch", False][0][key])
            assert torch.equal(out["fsdp", False][0][key], out["ddp", False][0][key])

        # DDP: one all-reduce per parameter, issued from the hooks during backward (the
        # first long before the last), each charged 2 (N-1)/N of its bytes
        records = out["ddp", True][1]
        assert [r["kind"] for r in records] == ["all_reduce"] * 8
        assert records[0]["issued"] < records[-1]["issued"]
        assert records[0]["bytes"] == ring_bytes("all_reduce", 16 * 8, 4)  # last bias
        assert all(r["start"] <= r["end"] <= r["wait_end"] for r in records)

        # FSDP with prefetch: the next unit's all-gather is issued before this unit's
        # compute ends, forward and backward; without prefetch, only after it
        for name, early in (("fsdp", False), ("fsdp-prefetch", True)):
            records, events = out[name, True][1], out[name, True][2]
            gathers = [r for r in records if r["kind"] == "all_gather"]
            assert [g["tag"] for g in gathers] == [f"{u} {p}" for p in ("forward", "backward")
                                                   for u in ("0246" if p == "forward"
                                                             else "6420")]
            computes = [e for e in events if e[0] == "compute"]
            order = [f"{u} {p}" for _, u, p, *_ in computes]
            assert order == [f"{u} forward" for u in "0246"] + [f"{u} backward"
                                                                for u in "642"]
            for (_, unit, phase, _, end), nxt in zip(computes, gathers[1:]):
                if nxt["tag"].endswith(phase) and nxt["tag"] != f"{unit} {phase}":
                    assert (nxt["issued"] < end) is early, (name, unit, phase)
            reduce = [r for r in records if r["kind"] == "reduce_scatter"]
            assert [r["tag"] for r in reduce] == [f"{u} backward" for u in "6420"]


def test_measure_overlap_returns_a_plottable_timeline_per_rank():
    configs = [{"strategy": "ddp", "batch": 8}, {"strategy": "fsdp", "batch": 8}]
    results = companion.launch(measure_overlap, configs=configs, bandwidth_bytes_s=1e9,
                               hidden=32, depth=2, steps=1, warmup=0, world_size=4, timeout=120)
    for rank, rows in enumerate(results):
        assert [r["strategy"] for r in rows] == ["ddp", "fsdp"]
        for row in rows:
            assert row["comm_s"] == pytest.approx(row["hidden_s"] + row["exposed_s"])
            assert row["flops"] == mlp_flops(8, 32, 2)
            tl = row["timeline"]
            assert tl["rank"] == rank and tl["comm"]
            assert tl["compute_s"] + tl["wait_s"] == pytest.approx(tl["step_s"])
            for c in tl["comm"]:
                assert c["hidden_s"] + c["exposed_s"] == pytest.approx(c["end"] - c["start"])
    for key in ("step_s", "exposed_s", "comm_s"):  # averaged over ranks: the same everywhere
        assert len({rows[0][key] for rows in results}) == 1
