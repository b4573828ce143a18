"""companion.why_distribute: L19 p.6-10 recomputed, the data file, the growth plot."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from companion import why_distribute as W


def _rows():
    return {r["quantity"]: r["recomputed"] for r in W.lecture_numbers(0.5)}


def test_gpt3_flops_is_6nd_and_matches_the_paper():
    assert W.training_flops(175e9, 300e9) == 3.15e23
    assert W.training_flops(175e9, 300e9) == pytest.approx(3.14e23, rel=0.01)   # Table D.1


def test_gpu_years_by_hand():
    # 3.15e23 / (312e12 * 0.5) = 2.0192e9 s = 560,897 GPU-hours = 63.99 GPU-years.
    t = W.gpu_time(3.15e23, "A100", 0.5)
    assert t["gpu_hours"] == pytest.approx(560_897, rel=1e-5)
    assert t["gpu_years"] == pytest.approx(63.985, rel=1e-4)
    # The notes' 355 years: 3.14e23 at 28 TFLOP/s.
    assert _rows()["GPT-3 GPU-years, one GPU"] == pytest.approx(355.4, rel=1e-3)


def test_ideal_time_and_tsm_scaling():
    assert W.ideal_time(10 * 86400, 1024) / 60 == pytest.approx(14.0625)
    s = W.scaling(49 * 3600 + 50 * 60, 14 * 60, 1, 256)
    assert s["speedup"] == pytest.approx(2990 / 14) and s["ideal"] == 256
    assert s["efficiency"] == pytest.approx(2990 / 14 / 256)


def test_disagreements_are_computed_sentences():
    lines = W.disagreements()
    assert len(lines) == 4 and "V100" in lines[0] and "354 years" in lines[1]


def test_training_compute_data_and_plot():
    rows = W.load_training_compute()
    assert len(rows) >= 10 and all(r["source"].startswith("https://") for r in rows)
    llama = next(r for r in rows if r["model"] == "Llama 3 405B")
    assert llama["flop"] == 3.8e25 and W.training_flops(405e9, 15.6e12) == pytest.approx(3.8e25, rel=0.01)
    ax, dt = W.plot_compute_growth()
    assert 0 < dt["compute"] < dt["gpu"]   # compute doubles faster than one GPU's peak


def test_doubling_time():
    assert W.doubling_time_years([2000, 2001, 2002], [1, 2, 4]) == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [
    lambda: W.training_flops(0, 1e9), lambda: W.gpu_time(1e20, "A100", 1.5),
    lambda: W.gpu_time(1e20, "Z80"), lambda: W.ideal_time(1.0, 0),
    lambda: W.scaling(1.0, 0.0, 1, 2), lambda: W.doubling_time_years([1], [1]),
    lambda: W.doubling_time_years([1, 2], [2, 1]), lambda: W.lecture_numbers(0.0)])
def test_bad_input(bad):
    with pytest.raises(ValueError):
        bad()
