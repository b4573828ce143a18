"""companion.resilience: the checkpoint-interval formulas, Llama 3's published record, and a
real job that loses a rank and resumes equal bit for bit (notebook 10, section 9).

Bit-exact, not a tolerance: the resumed job repeats the uninterrupted one's operations in
the same order on the same inputs (same world size, same reduction order, one thread per
rank), and the single-process reference sums the two ranks' gradients as the 2-rank
all-reduce does (one addition per element, which rounds the same in either order).
"""
import math
import os

import pytest

import companion
from companion import resilience
from companion.resilience import cost as G, restart as R

MIN = 60.0


def test_young_is_the_minimum_of_the_first_order_waste():
    delta, m = 30.0, 3 * 3600.0
    tau = G.young_interval(delta, m)
    assert tau == pytest.approx(math.sqrt(2 * delta * m), rel=1e-15)
    best = G.goodput(tau, delta, m)
    assert best == pytest.approx(1 - math.sqrt(2 * delta / m), rel=1e-12)
    assert all(G.goodput(tau * f, delta, m) < best for f in (0.5, 0.9, 1.1, 2.0))
    # the restart costs R / M whatever the interval, and does not move the optimum
    assert G.goodput(tau, delta, m, restart_s=600) == pytest.approx(best - 600 / m, rel=1e-12)
    assert G.checkpoint_overhead(delta, tau) + G.wasted_per_failure(tau) / m == \
        pytest.approx(1 - best, rel=1e-12)


@pytest.mark.parametrize("mtbi_min, expected_min", [(24 * 60, 117), (6 * 60, 57), (15, 9.1)])
def test_daly_reproduces_his_figures(mtbi_min, expected_min):
    """Daly 2006, Figs. 3-5: delta = 5 min, R = 10 min; "the new model predicts" 117, 57
    and 9.1 min. His series, and the maximum of his exact model, agree with the caption."""
    delta, m = 5 * MIN, mtbi_min * MIN
    series = G.daly_interval(delta, m) / MIN
    assert series == pytest.approx(expected_min, abs=0.5 if expected_min > 10 else 0.05)
    grid = [t * MIN for t in (expected_min * (0.5 + i / 1000) for i in range(1001))]
    exact = max(grid, key=lambda t: G.goodput(t, delta, m, restart_s=10 * MIN, model="daly"))
    assert exact / MIN == pytest.approx(series, rel=0.01)
    assert G.daly_interval(3 * m, m) == m   # a save longer than 2 M: save every M


def test_daly_approaches_young_near_the_optimum():
    delta, m = 30.0, 3 * 3600.0
    daly, young = G.daly_interval(delta, m), G.young_interval(delta, m)
    assert young * 0.95 < daly < young   # shorter: it also pays for failures during a save
    # first order counts a save as delta / tau of the time, Daly as delta / (tau + delta):
    # far apart at tau ~ delta, within 0.3 points at the optimum
    assert abs(G.goodput(young, delta, m, model="daly") - G.goodput(young, delta, m)) < 3e-3
    assert G.goodput(delta, delta, m, model="daly") > G.goodput(delta, delta, m) + 0.4


def test_mtbi_scales_inversely_with_the_gpus():
    assert G.scale_mtbi(3600.0, 16_384, 1) == 3600.0 * 16_384
    assert G.scale_mtbi(3600.0, 1000, 10_000) == pytest.approx(360.0)


def test_llama3_record_adds_up_and_its_one_inconsistency_shows():
    s = resilience.interruption_summary()
    assert sum(r["count"] for r in s["rows"]) == 419
    assert s["mtbi_s"] == pytest.approx(54 * 24 * 3600 / 466)
    assert s["unexpected_mtbi_s"] / 3600 == pytest.approx(3.09, abs=0.01)
    faulty = s["rows"][0]
    assert faulty["count"] == 148 and faulty["computed_pct"] == pytest.approx(35.3, abs=0.05)
    mismatched = [r["component"] for r in s["rows"]
                  if abs(r["computed_pct"] - r["printed_pct"]) > 0.06]
    assert mismatched == ["Faulty GPU"]
    assert s["gpu_category"] == 268 and s["gpu_share_printed"] == pytest.approx(0.587)
    assert s["max_loss_per_interruption_s"] == pytest.approx(0.1 * 54 * 86_400 / 466)


def test_an_incomplete_checkpoint_is_never_the_latest(tmp_path):
    assert R.latest_checkpoint(tmp_path / "absent") is None
    for step, complete in ((4, True), (8, True), (12, False)):
        folder = tmp_path / f"step_{step:06d}"
        folder.mkdir()
        (folder / "__0_0.distcp").write_bytes(b"")
        if complete:
            (folder / ".metadata").write_bytes(b"")
    assert R.latest_checkpoint(tmp_path) == 8
    assert R.latest_checkpoint(str(tmp_path)) == 8


def test_a_killed_rank_is_detected_and_the_resumed_job_is_bit_exact():
    result = resilience.kill_and_resume(steps=12, every=4, kill_rank=1, kill_step=6,
                                        world_size=2, timeout=120)
    failure = result["failure"]
    # The launcher names the rank it noticed first: the killed one (SIGKILL), or, if the
    # parent was descheduled long enough, its peer, whose all-reduce lost its partner.
    assert (failure["rank"], failure["exitcode"]) in ((1, -9), (0, 1)), failure
    assert failure["killed_rank"] == 1 and failure["detection_s"] >= 0
    assert result["resume_from"] == result["started_at"] == 4
    assert result["steps_recomputed"] == 2
    assert result["ranks_agree"] and result["bit_exact"] and result["max_abs_diff"] == 0.0
    assert result["reference_bit_exact"], "one process summing both ranks' gradients"
    assert len(result["save_s"]) == 3 and all(s > 0 for s in result["save_s"])
    assert result["load_s"] > 0 and result["restart_s"] > 0


def test_three_ranks_resume_bit_exact_against_the_uninterrupted_run():
    result = resilience.kill_and_resume(steps=6, every=2, kill_rank=2, kill_step=3,
                                        world_size=3, batch_size=60, timeout=120)
    assert result["resume_from"] == 2 and result["bit_exact"] and result["ranks_agree"]
    assert result["reference_bit_exact"] is None   # gloo's 3-rank ring sums in its own order


def test_an_uninterrupted_job_equals_the_single_process_reference(tmp_path):
    ranks = companion.launch(R.train_with_checkpoints, str(tmp_path / "job"), steps=5, every=2,
                             world_size=2, backend="gloo", timeout=120)
    reference = R.reference_run(steps=5, world_size=2)
    for name, value in reference["params"].items():
        assert all(r["params"][name].equal(value) for r in ranks), name
    assert sorted(os.listdir(tmp_path / "job")) == ["step_000002", "step_000004", "step_000005"]
