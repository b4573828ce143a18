"""Our schedules against torch's own, op for op, without starting a rank.

torch 2.13's ``get_schedule_ops`` returns each schedule's IR; companion.pipeline.torch_ops
normalises it to our ops (see that module's docstring: padding and REDUCE_GRAD dropped,
OVERLAP_F_B expanded into its F then B, I = our B, a full backward in a split schedule =
our B then W, torch's virtual stage index mapped to (rank, chunk) by the layout).
"""
from __future__ import annotations

import pytest

from companion.pipeline import make_schedule
from companion.pipeline.torch_ops import (TORCH_SCHEDULES, op_differences, torch_executed_ops,
                                          torch_schedule_ops)

pytest.importorskip("torch.distributed.pipelining._schedule_visualizer")

# (stages, micro-batches) at which torch and we both build the schedule.
SHAPES = [(2, 2), (2, 4), (2, 6), (3, 6), (4, 4), (4, 8), (4, 12), (8, 16)]
MIN_M = {"dualpipev": lambda p: 2 * p}  # DualPipeV needs one micro-batch per virtual stage
EQUAL = ["gpipe", "interleaved", "looped-bfs", "interleaved-zb", "zb-v", "dualpipev"]


def _ours(name, p, m):
    return make_schedule(name, p, m, 2 if name == "interleaved" else None)


@pytest.mark.parametrize("name,p,m", [(name, p, m) for name in EQUAL for p, m in SHAPES
                                      if m >= MIN_M.get(name, lambda p: 1)(p)])
def test_equal_to_torch_op_for_op(name, p, m):
    assert op_differences(_ours(name, p, m), torch_schedule_ops(name, p, m)) == []


@pytest.mark.parametrize("p,m", [(2, 2), (2, 4), (3, 6), (4, 8), (8, 16)])
def test_1f1b_ranks_before_the_last_equal_torch_ir(p, m):
    ours, theirs = _ours("1f1b", p, m).ops, torch_schedule_ops("1f1b", p, m)
    assert [list(o) for o in ours[:-1]] == theirs[:-1]


@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (8, 16)])
def test_torch_1f1b_ir_is_off_by_one_on_the_last_rank(p, m):
    """Schedule1F1B._get_pipeline_order starts forward_mb at 0 and increments it before each
    steady-state forward; the last rank has no warm-up, so its IR reads F1 .. Fm. This pins
    the bug in torch 2.13.0. When it fails, torch has fixed it."""
    from companion.pipeline import Op

    last = torch_schedule_ops("1f1b", p, m)[-1]
    buggy = [op for k in range(m) for op in (Op("F", k + 1), Op("B", k))]
    assert last == buggy, ("torch fixed Schedule1F1B._get_pipeline_order: drop this "
                           "expected-difference test and add '1f1b' to EQUAL above")
    assert last != list(_ours("1f1b", p, m).ops[-1])


@pytest.mark.parametrize("name", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p,m", [(2, 2), (2, 4), (3, 5), (4, 8), (8, 16)])
def test_what_torch_executes_equals_ours(name, p, m):
    """The loops that Schedule1F1B/ScheduleGPipe really run (recorded with a mocked stage)
    follow our order on every rank, the last one included: the bug is in the IR only."""
    assert op_differences(_ours(name, p, m), torch_executed_ops(name, p, m)) == []


def test_v_layout_puts_both_ends_of_the_model_on_rank_0():
    s = make_schedule("zb-v", 4, 8)
    assert s.layout == "v" and [s.virtual_stage(0, c) for c in (0, 1)] == [0, 7]
    assert [s.placement(vs) for vs in (3, 4)] == [(3, 0), (3, 1)]  # the turn stays on rank 3
    loop = make_schedule("interleaved-zb", 4, 8)
    assert [loop.virtual_stage(0, c) for c in (0, 1)] == [0, 4]
    for sched in (s, loop):
        for vs in range(8):
            assert sched.virtual_stage(*sched.placement(vs)) == vs


def test_normalisation_of_dualpipev_composites():
    """DualPipeV's OVERLAP_F_B (0F7;7B3) on rank 0 at p=4, m=8 becomes F7 of chunk 0, then
    the full backward of micro-batch 3 on chunk 1 (our B then W)."""
    from companion.pipeline import Op

    ops = torch_schedule_ops("dualpipev", 4, 8)[0]
    i = ops.index(Op("F", 7, 0))
    assert ops[i:i + 3] == [Op("F", 7, 0), Op("B", 3, 1), Op("W", 3, 1)]


def test_every_torch_schedule_is_compared():
    assert set(EQUAL) | {"1f1b"} == set(TORCH_SCHEDULES)


@pytest.mark.parametrize("name", ["gpipe", "interleaved", "looped-bfs", "interleaved-zb", "zb-v"])
@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (8, 16)])
def test_torch_runtime_timing_equals_ours_without_composites(name, p, m):
    """Without OVERLAP_F_B every op sends when it ends, in torch's runtime as in ours."""
    from companion.pipeline import OpCosts, simulate
    from companion.pipeline.torch_ops import torch_runtime_timeline

    for costs in (OpCosts(), OpCosts(F=1, B=1.5, W=0.75, send=0.25)):
        ours = simulate(_ours(name, p, m), costs=costs).makespan
        assert torch_runtime_timeline(name, p, m, costs).makespan == pytest.approx(ours)


@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (4, 12), (8, 16)])
@pytest.mark.parametrize("w", [1.0, 0.5])
def test_dualpipev_sent_after_each_pair_idles_as_the_readme_row(p, m, w):
    """DualPipe's README: idle (PP/2-1)(F&B+B-3W) for PP stages (2p chunks of half a stage)
    with B a full backward. With the pair's outputs sent after both halves, as torch's
    runtime sends them, and no overlap (F&B = F + B), DualPipeV idles exactly that at F = B;
    our executor, which sends each half's output at once, idles less (half at F = B = W)."""
    from companion.pipeline import OpCosts, simulate
    from companion.pipeline.torch_ops import torch_runtime_timeline

    costs = OpCosts(F=1.0, B=1.0, W=w)
    work = m * (costs.F + costs.B + costs.W)
    f, b, wc = costs.F / 2, (costs.B + costs.W) / 2, costs.W / 2
    readme = (p - 1) * ((f + b) + b - 3 * wc)
    held = torch_runtime_timeline("dualpipev", p, m, costs).makespan - work
    ours = simulate("dualpipev", p, m, costs=costs).makespan - work
    assert held == pytest.approx(readme)
    assert ours < held
    if w == 1.0:
        assert held == pytest.approx(2 * ours)
        assert ours == pytest.approx((p - 1) * (b + b - 3 * wc))  # the row with F&B = B


def test_torch_runtime_timeline_refuses_the_1f1b_ir():
    """torch 2.13's 1F1B IR names micro-batch m on the last rank: it could never finish."""
    from companion.pipeline.torch_ops import torch_runtime_timeline

    with pytest.raises(ValueError, match="is not one of"):
        torch_runtime_timeline("1f1b", 4, 8)


def test_torch_interleaved_relaxes_megatrons_multiple_of_p():
    """Notebook 04 §6: torch 2.13's ScheduleInterleaved1F1B needs m to be a multiple of
    max(1, m // p) rounds, not of p as Megatron-LM (and our builder) does."""
    from torch.distributed.pipelining import _schedule_visualizer as vis

    assert len(vis.get_schedule_ops("Interleaved1F1B", 4, 6)) == 4
    with pytest.raises(ValueError, match="multiple of the number of rounds"):
        vis.get_schedule_ops("Interleaved1F1B", 4, 9)
    with pytest.raises(ValueError, match="multiple of 4"):
        make_schedule("interleaved", 4, 6, 2)
