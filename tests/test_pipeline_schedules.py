"""Schedules, simulator and closed forms of companion.pipeline agree (no ranks needed)."""
from __future__ import annotations

import pytest

from companion.pipeline import (Op, OpCosts, Schedule, bubble_fraction, gpipe, make_schedule,
                                one_f_one_b, peak_activations, simulate, zb_h1)

SIZES = [(p, m) for p in (1, 2, 3, 4, 8) for m in (1, 2, 3, 4, 7, 8, 16)]
COSTS = [OpCosts(), OpCosts(1, 2, 1), OpCosts(2, 1, 0.5), OpCosts(1, 1, 0.25)]


def test_lecture_numbers():
    # L19 p.78-80: 4 layers on 4 GPUs -> 25 %; 4 micro-batches -> 4/7 = 57 %.
    assert simulate("naive", 4, 1).utilization == pytest.approx(0.25)
    assert simulate("gpipe", 4, 4).utilization == pytest.approx(4 / 7)
    assert 1 - bubble_fraction(4, 4, "gpipe") == pytest.approx(4 / 7)


@pytest.mark.parametrize("name", ["naive", "gpipe", "1f1b"])
@pytest.mark.parametrize("p,m", SIZES)
def test_simulator_matches_closed_form(name, p, m):
    for costs in COSTS:
        tl = simulate(name, p, m, costs=costs)
        assert tl.bubble_fraction == pytest.approx(bubble_fraction(p, m, name), abs=1e-12)
        assert tl.utilization + tl.bubble_fraction == pytest.approx(1.0)


@pytest.mark.parametrize("p,m", [(p, m) for p in (1, 2, 3, 4) for m in (p, 2 * p, 4 * p)])
@pytest.mark.parametrize("v", [1, 2, 3])
def test_interleaved_matches_closed_form(p, m, v):
    for costs in COSTS:
        tl = simulate("interleaved", p, m, chunks=v, costs=costs)
        assert tl.bubble_fraction == pytest.approx(bubble_fraction(p, m, "interleaved", v))


@pytest.mark.parametrize("p,m", [(p, m) for p in (1, 2, 3, 4, 8) for m in range(p, 3 * p + 1)])
def test_zb_h1_matches_closed_form(p, m):
    for costs in COSTS:  # all have W <= min(F, B), where the closed form holds
        tl = simulate("zb-h1", p, m, costs=costs)
        assert tl.bubble_fraction == pytest.approx(bubble_fraction(p, m, "zb-h1", costs=costs))
    # equal costs: a third of 1F1B's idle time per stage
    assert (simulate("zb-h1", p, m).makespan - 3 * m) * 3 == pytest.approx(
        simulate("1f1b", p, m).makespan - 3 * m)


def test_zb_h1_closed_form_range_is_enforced():
    with pytest.raises(ValueError, match="microbatches >= stages"):
        bubble_fraction(4, 2, "zb-h1")
    with pytest.raises(ValueError, match="W <= min"):
        bubble_fraction(4, 8, "zb-h1", costs=OpCosts(1, 1, 2))


@pytest.mark.parametrize("p,m", SIZES)
def test_activation_memory(p, m):
    assert simulate("gpipe", p, m).peak_activations() == peak_activations(p, m, "gpipe")
    assert simulate("1f1b", p, m).peak_activations() == peak_activations(p, m, "1f1b")
    assert max(simulate("1f1b", p, m).peak_activations()) == min(p, m)
    assert simulate("naive", p, m).peak_activations() == [1] * p
    if m >= p:  # ZB-H1 keeps 1F1B's peak (p micro-batches), now on every stage
        assert simulate("zb-h1", p, m).peak_activations() == [p] * p


def test_schedules_are_complete_and_ordered():
    for name in ("naive", "gpipe", "1f1b", "zb-h1"):
        sched = make_schedule(name, 4, 8)
        kinds = "FBW" if sched.split_backward else "FB"
        assert all(len(ops) == len(kinds) * 8 for ops in sched.ops)
    assert one_f_one_b(4, 8).ops[0][:5] == (Op("F", 0), Op("F", 1), Op("F", 2), Op("F", 3),
                                            Op("B", 0))
    assert zb_h1(4, 8).ops[3][:6] == (Op("F", 0), Op("B", 0), Op("F", 1), Op("B", 1),
                                      Op("F", 2), Op("B", 2))


def test_send_latency_only_slows_down():
    fast, slow = simulate("1f1b", 4, 8), simulate("1f1b", 4, 8, send=0.5)
    assert slow.makespan > fast.makespan
    assert slow.bubble_fraction > fast.bubble_fraction


def test_handwritten_schedule_is_checked():
    p, m = 2, 2
    ok = Schedule("mine", p, m, (gpipe(p, m).ops[0], one_f_one_b(p, m).ops[1]))
    assert simulate(ok).makespan > 0
    deadlock = Schedule("bad", p, m, ((Op("F", 0), Op("B", 0), Op("F", 1), Op("B", 1)),
                                      (Op("F", 1), Op("F", 0), Op("B", 0), Op("B", 1))))
    with pytest.raises(ValueError, match="deadlocks"):
        simulate(deadlock)
    missing = Schedule("bad", p, m, ((Op("F", 0), Op("B", 0)), gpipe(p, m).ops[1]))
    with pytest.raises(ValueError, match="never runs"):
        simulate(missing)
    twice = Schedule("bad", p, m, (gpipe(p, m).ops[0] + (Op("F", 0),), gpipe(p, m).ops[1]))
    with pytest.raises(ValueError, match="twice"):
        simulate(twice)


@pytest.mark.parametrize("call, match", [
    (lambda: make_schedule("pipedream", 4, 8), "unknown schedule"),
    (lambda: make_schedule("gpipe", 0, 8), "stages must be"),
    (lambda: make_schedule("1f1b", 4, -1), "microbatches must be"),
    (lambda: make_schedule("gpipe", 4, 8, chunks=2), "interleaved"),
    (lambda: make_schedule("interleaved", 4, 6, chunks=2), "multiple of 4"),
    (lambda: bubble_fraction(4, 6, "interleaved", 2), "multiple of stages"),
    (lambda: bubble_fraction(4, 8, "gpipe", chunks=2), "chunks"),
    (lambda: simulate("gpipe", 4, 8, F=-1), "must be >= 0"),
    (lambda: simulate("gpipe"), "give stages"),
])
def test_bad_input_raises_value_error_naming_the_fix(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- notebook 04's exercises: the simulation half of the checker (no ranks needed) ---------
EXERCISES = {"1f1b": ("04.one-f-one-b", one_f_one_b), "zb-h1": ("04.zb-h1", zb_h1)}


def _ops_of(builder):
    return lambda p, m: [list(ops) for ops in builder(p, m).ops]


@pytest.mark.parametrize("target", sorted(EXERCISES))
def test_exercise_precheck_accepts_exactly_its_own_schedule(target):
    from companion.learning import exercise

    ex = exercise(EXERCISES[target][0])
    for other, (_, builder) in EXERCISES.items():
        problem = ex.precheck(_ops_of(builder))
        assert (problem is None) == (other == target), (target, other, problem)


def test_exercise_precheck_explains_a_wrong_schedule():
    from companion.learning import exercise

    def warmup_one_too_many(p, m):  # p - s warm-up forwards instead of p - 1 - s
        out = []
        for s in range(p):
            w = min(p - s, m)
            ops = [Op("F", mb) for mb in range(w)]
            for k in range(m - w):
                ops += [Op("F", w + k), Op("B", k)]
            out.append(ops + [Op("B", mb) for mb in range(m - w, m)])
        return out

    problem = exercise("04.one-f-one-b").precheck(warmup_one_too_many)
    assert "stage 0 holds 5" in problem and "at most 4" in problem
    assert "warmup_one_too_many" in problem and "line" in problem  # names the student's code
    fix = exercise("04.one-f-one-b")
    assert "one list per stage" in fix.precheck(lambda p, m: [Op("F", 0)] * 3)
    assert "returned NoneType" in fix.precheck(lambda p, m: None)
    assert "deadlocks" in fix.precheck(lambda p, m: [list(o) for o in reversed(one_f_one_b(p, m).ops)])
    plan = exercise("04.micro-batches")
    assert "over the budget" in plan.precheck(lambda p, b, target, budget: ("gpipe", 8))
    assert plan.precheck(plan.reference) is None
    # every W at the end of 1F1B: valid, but every stage holds all m micro-batches
    late_w = lambda p, m: [list(o) + [Op("W", mb) for mb in range(m)] for o in one_f_one_b(p, m).ops]
    assert "holds 8 micro-batches" in exercise("04.zb-h1").precheck(late_w)


def test_neighbour_pattern():
    from companion.learning.watch import Call
    from companion.learning.nb04_checks import neighbour_messages

    def calls(rank, p=4, m=8, nbytes=1024):
        out = [Call("barrier", "forward", 0, None, p)]
        for peer in (rank - 1, rank + 1):
            if 0 <= peer < p:
                out += [Call("isend", "forward", nbytes, peer, p),
                        Call("recv", "forward", nbytes, peer, p)] * m
        return out

    pattern = neighbour_messages(8, 1024)
    good = [calls(r) for r in range(4)]
    assert pattern(good, 4) is None
    skipping = [list(c) for c in good]
    skipping[1][1] = Call("isend", "forward", 1024, 3, 4)
    assert "not its neighbours" in pattern(skipping, 4)
    extra = [c + [Call("all_reduce", "forward", 4, None, 4)] for c in good]
    assert "all_reduce" in pattern(extra, 4)
    assert "one message per micro-batch" in pattern([calls(r, m=7) for r in range(4)], 4)


def test_a_broken_schedule_is_refused_before_ranks_start():
    from companion.learning import exercise

    verdict = exercise("04.one-f-one-b").check(lambda p, m: [Op("F", 0)])  # refused before ranks
    assert verdict.kind == "precheck" and not verdict
    with pytest.raises(ValueError, match="exercise_id"):
        exercise("04.2f2b")


# --- schedules after 1F1B (notebook 04, "Schedules after 1F1B") ---------------------------
NEW = ["looped-bfs", "interleaved-zb", "zb-v", "dualpipev"]


@pytest.mark.parametrize("p,m", [(p, m) for p in (1, 2, 3, 4, 8) for m in (p, 2 * p, 3 * p, 4 * p)])
@pytest.mark.parametrize("v", [2, 3])
def test_looped_bfs_and_interleaved_zb_match_closed_form(p, m, v):
    for costs in COSTS:  # all have W <= min(F, B)
        for name in ("looped-bfs", "interleaved-zb"):
            tl = simulate(name, p, m, chunks=v, costs=costs)
            assert tl.bubble_fraction == pytest.approx(
                bubble_fraction(p, m, name, v, costs=costs), abs=1e-12), (name, costs)
    assert simulate("looped-bfs", p, m, chunks=v).peak_activations() == peak_activations(
        p, m, "looped-bfs")
    assert simulate("interleaved-zb", p, m, chunks=v).peak_activations() == peak_activations(
        p, m, "interleaved-zb")


V_COSTS = [OpCosts(), OpCosts(1, 2, 1), OpCosts(1, 1, 0.5), OpCosts(1, 1, 0.25),
           OpCosts(1, 3, 0.5), OpCosts(1, 1, 2), OpCosts(0.5, 1, 1)]


@pytest.mark.parametrize("p", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("k", [2, 3, 4])
def test_zb_v_and_dualpipev_match_closed_form(p, k):
    m = k * p  # both need m >= 2p for their closed form
    for costs in V_COSTS:
        if costs.W <= costs.F <= costs.B:  # the ZB-V range
            assert simulate("zb-v", p, m, costs=costs).bubble_fraction == pytest.approx(
                bubble_fraction(p, m, "zb-v", costs=costs), abs=1e-12), costs
        if costs.F == costs.B and costs.W <= costs.F:  # the DualPipeV range
            assert simulate("dualpipev", p, m, costs=costs).bubble_fraction == pytest.approx(
                bubble_fraction(p, m, "dualpipev", costs=costs), abs=1e-12), costs
    for name in ("zb-v", "dualpipev"):
        assert simulate(name, p, m).peak_activations() == peak_activations(p, m, name)


@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (4, 16), (8, 16)])
def test_equal_costs_the_zero_bubble_family_shares_one_bubble(p, m):
    # F = B = W: idle (p-1)/2 per stage for interleaved-zb, zb-v and dualpipev, a third of
    # ZB-H1's (p-1)(F+B-W) = p-1 halved again by the two chunks
    for name in ("interleaved-zb", "zb-v", "dualpipev"):
        assert bubble_fraction(p, m, name) == pytest.approx((p - 1) / (6 * m + p - 1))
    # the price: DualPipeV holds half a micro-batch more than ZB-V; looped BFS holds all m
    assert max(peak_activations(p, m, "dualpipev")) - max(peak_activations(p, m, "zb-v")) == 0.5
    assert max(peak_activations(p, m, "looped-bfs")) == m


def test_new_closed_form_ranges_are_enforced():
    with pytest.raises(ValueError, match="W <= F <= B"):
        bubble_fraction(4, 8, "zb-v", costs=OpCosts(2, 1, 1))
    with pytest.raises(ValueError, match="F = B"):
        bubble_fraction(4, 8, "dualpipev", costs=OpCosts(1, 2, 1))
    with pytest.raises(ValueError, match="2 x stages"):
        bubble_fraction(4, 6, "zb-v")
    with pytest.raises(ValueError, match="no closed form"):
        peak_activations(4, 6, "dualpipev")
    with pytest.raises(ValueError, match="chunks=2"):
        make_schedule("dualpipev", 4, 8, chunks=1)


@pytest.mark.parametrize("name", NEW)
def test_new_schedules_complete_and_deadlock_free(name):
    for p in (1, 2, 3, 4):
        for m in (2 * p, 2 * p + 1, 4 * p):
            if name == "interleaved-zb" and m % p:
                continue
            s = make_schedule(name, p, m)  # validate(): every op exactly once
            assert s.chunks == 2
            tl = simulate(s, send=0.3)  # the list scheduler finds no deadlock
            assert len(tl.events) == sum(len(o) for o in s.ops)


def test_send_latency_hurts_dualpipev_least_among_low_memory_schedules():
    # with a send latency of a quarter of F, at p=4, m=16
    grown = {name: simulate(name, 4, 16, send=0.25).makespan - simulate(name, 4, 16).makespan
             for name in ("1f1b", "zb-h1", "interleaved-zb", "zb-v", "dualpipev")}
    assert min(grown, key=grown.get) == "dualpipev"
