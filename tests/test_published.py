"""The planner against published, measured runs (planner.published, notebook 12).

One set of constants for every row (kernel efficiency 0.6, the links and HBM of
companion.hardware); the goal is every row within 1.25x of its measured step time.
Where the planner's memory model disagrees with a run the paper reports, the test pins
the disagreement and its size instead of tuning the model.
"""
from __future__ import annotations

import pytest

from companion.planner import evaluate, published
from companion.planner.published import RUNS, megatron_flops, predict

RATIO_GOAL = 1.25


@pytest.mark.parametrize("run", RUNS, ids=[r.label for r in RUNS])
def test_each_published_run_is_predicted_within_the_goal(run):
    plan, _fits = predict(run)
    ratio = plan.step_time / run.measured_s
    assert 1 / RATIO_GOAL <= ratio <= RATIO_GOAL, \
        f"{run.label}: predicted {plan.step_time:.2f} s, measured {run.measured_s:.2f} s"


def test_recomputation_moves_the_time_as_korthikanti_measured():
    # Their Table 5: full recomputation costs 29-32 % more time than selective with
    # sequence parallelism. The planner must move by the same factor, within 5 %.
    rows = [r for r in RUNS if r.source.startswith("Korthikanti")]
    by_model = {}
    for run in rows:
        by_model.setdefault(run.model.name, {})[run.recompute[0]] = (run, predict(run)[0])
    assert len(by_model) == 4
    for name, pair in by_model.items():
        measured = pair["full"][0].measured_s / pair["selective"][0].measured_s
        predicted = pair["full"][1].step_time / pair["selective"][1].step_time
        assert predicted == pytest.approx(measured, rel=0.05), name


def test_megatron_sizes_and_flops_are_the_papers():
    # The parameter count from the architecture is the paper's Eq. 2 (which leaves out
    # the final norm) and rounds to Table 1's one decimal; Eq. 3 over the step time
    # gives back the table's aggregate PFLOP/s.
    rows = [r for r in RUNS if r.source.startswith("Megatron")]
    assert len(rows) == 10
    for run in rows:
        m = run.model
        l, h, v, s = m.layers, m.hidden, m.vocab, m.seq_len
        eq2 = 12 * l * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * l * h))
        assert m.num_params() == pytest.approx(eq2, rel=1e-5)
        assert abs(m.num_params() - m.published_params) <= 0.05e9
    one_t = rows[-1]
    aggregate = megatron_flops(one_t.model, one_t.global_batch) / one_t.measured_s
    assert aggregate == pytest.approx(502.0e15, rel=0.01)


def test_materialized_scores_are_what_makes_small_gpt_slow():
    # Without the s x s scores' HBM traffic the 1.7B model (24 heads of 96) would be
    # predicted 30 % fast; the 1T model (160 heads of 160) barely moves.
    small, big = RUNS[0], RUNS[9]

    def fused(run):
        plan, _ = predict(run)
        return evaluate(run.model, run.cluster, run.global_batch, run.dp, run.tp, run.pp,
                        run.zero, plan.micro_batch, plan.recompute, plan.chunks,
                        enforce_memory=False).step_time

    assert fused(small) / small.measured_s < 0.8
    assert fused(big) / predict(big)[0].step_time > 0.95


def test_llama3_8k_runs_without_recomputation_where_the_memory_model_says_it_cannot():
    # §3.3.2: pre-trained at 8K "without activation checkpointing". The memory model
    # puts the published layout 10-20 % over its 80e9-byte budget: it accumulates whole
    # bf16 gradients (ZeRO-1) where Llama's FSDP shards them, and keeps a 2 GB reserve.
    # Without those two, the layout fits the H100's real 80 GiB, with under 5 % spare.
    for run in (r for r in RUNS if r.label.startswith("Llama-3 405B,") and "128K" not in r.label):
        plan, fits = predict(run)
        m = plan.memory
        assert plan.recompute == "none" and plan.chunks > 1 and not fits
        assert 80e9 < m["total"] < 1.2 * 80e9
        lean = m["total"] - m["grads"] * (1 - 1 / run.dp) - m["reserve"]
        assert 0.95 * 80 * 2 ** 30 < lean < 80 * 2 ** 30
        assert evaluate(run.model, run.cluster, run.global_batch, run.dp, run.tp, run.pp,
                        run.zero, plan.micro_batch, "none", plan.chunks,
                        stage_split="llama3").reason.startswith("out of memory")


def test_table_has_one_row_per_run():
    rows = published.table()
    assert [r["run"] for r in rows] == [r.label for r in RUNS]
    assert all(r["predicted_s"] > 0 and r["measured_s"] > 0 for r in rows)


def test_bad_arguments_are_refused_before_anything_runs():
    with pytest.raises(TypeError, match="run"):
        predict("Llama 3")
    run = RUNS[0]
    with pytest.raises(ValueError, match="attention"):
        evaluate(run.model, run.cluster, run.global_batch, run.dp, run.tp, run.pp,
                 attention="flash")
