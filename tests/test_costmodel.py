"""The alpha-beta cost model (companion.collectives.costmodel): fit, formulas, and their tie to the
messages the algorithms really send."""
from __future__ import annotations

import math

import pytest
import torch

import companion
from companion import collectives as C
from companion.collectives import costmodel as M


def test_fit_recovers_alpha_and_beta():
    alpha, beta = 5e-5, 2e9
    sizes = [1e3, 1e4, 1e5, 1e6, 1e7]
    a, b = M.fit_alpha_beta(sizes, [alpha + n / beta for n in sizes])
    assert math.isclose(a, alpha, rel_tol=1e-9) and math.isclose(b, beta, rel_tol=1e-9)


def test_fit_rejects_bad_input():
    with pytest.raises(ValueError, match="two different message sizes"):
        M.fit_alpha_beta([1e3, 1e3], [1e-4, 1e-4])
    with pytest.raises(ValueError, match="larger messages"):
        M.fit_alpha_beta([1e3, 1e6], [1e-3, 1e-4])
    with pytest.raises(ValueError, match=">= 0 bytes"):
        M.fit_alpha_beta([-1, 1e6], [1e-3, 1e-2])


def test_textbook_formulas():
    a, b = 1e-5, 1e9
    n = 4e6
    assert M.predict_time("ring", n, 8, a, b) == pytest.approx(14 * a + 2 * 7 / 8 * n / b)
    assert M.predict_time("recursive_halving_doubling", n, 8, a, b) == pytest.approx(
        6 * a + 2 * 7 / 8 * n / b)
    assert M.predict_time("parameter_server", n, 8, a, b) == pytest.approx(14 * a + 14 * n / b)
    assert M.predict_time("tree", n, 1, a, b) == 0.0
    # small messages: fewer rounds win; large messages: fewer bytes win
    assert M.predict_time("tree", 1e2, 8, a, b) < M.predict_time("ring", 1e2, 8, a, b)
    assert M.predict_time("tree", 1e8, 8, a, b) > M.predict_time("ring", 1e8, 8, a, b)
    x = M.crossover_bytes("tree", "ring", 8, a, b)
    assert M.predict_time("tree", x, 8, a, b) == pytest.approx(M.predict_time("ring", x, 8, a, b))
    assert M.crossover_bytes("ring", "reduce_scatter+all_gather", 8, a, b) is None
    with pytest.raises(ValueError, match="choose one of"):
        M.predict_time("butterfly", n, 8, a, b)
    with pytest.raises(ValueError, match="world_size"):
        M.coefficients("ring", 0)


def test_recursive_doubling_against_rabenseifner():
    """log N rounds of whole vectors against 2 log N rounds of 2(N-1)/N: they cross at
    n* = log N alpha beta / (log N - 2(N-1)/N), MPICH's reason to switch by size."""
    a, b = 1e-5, 1e9
    assert M.coefficients("recursive_doubling", 8) == (3.0, 3.0)
    assert M.coefficients("recursive_doubling", 5) == (4.0, 4.0)  # 2 rounds + fold in/out
    for n in (4, 5, 8, 16, 64):
        p = 1 << (n.bit_length() - 1)
        log = math.log2(p)
        x = M.rd_rhd_crossover_bytes(n, a, b)
        assert x == pytest.approx(log * a * b / (log - 2 * (p - 1) / p))
        assert x == pytest.approx(M.crossover_bytes("recursive_doubling",
                                                    "recursive_halving_doubling", n, a, b))
        t = lambda name, size: M.predict_time(name, size, n, a, b)  # noqa: E731
        assert t("recursive_doubling", x) == pytest.approx(t("recursive_halving_doubling", x))
        assert t("recursive_doubling", x / 2) < t("recursive_halving_doubling", x / 2)
        assert t("recursive_doubling", 2 * x) > t("recursive_halving_doubling", 2 * x)
    assert M.rd_rhd_crossover_bytes(4, a, b) == pytest.approx(4 * a * b)
    # N = 2 (and 3, folded onto 2): the same bytes in fewer rounds, never slower
    assert M.rd_rhd_crossover_bytes(2, a, b) is None and M.rd_rhd_crossover_bytes(3, a, b) is None
    with pytest.raises(ValueError, match="world_size"):
        M.rd_rhd_crossover_bytes(0, a, b)


def _record(numel):
    x = torch.ones(numel)
    out = {}
    for name in M.ALGORITHMS:
        with C.traffic() as t:
            C.ALL_REDUCE_ALGORITHMS[name](x)
        out[name] = t
    return out


@pytest.mark.parametrize("n", [3, 4, 5])
def test_formulas_equal_recorded_traffic(n):
    numel = 840  # divisible by n, so the textbook fractions are exact
    runs = companion.launch(_record, numel, world_size=n)
    for name in M.ALGORITHMS:
        from_log = M.predict_from_traffic([r[name] for r in runs], 1e-5, 1e9)
        assert from_log == pytest.approx(M.predict_time(name, numel * 4, n, 1e-5, 1e9)), name


def test_measurements_run():
    pp = companion.launch(M.ping_pong, sizes=(1024, 65536), repeats=2, world_size=2)[0]
    assert [n for n, _ in pp] == [1024, 65536] and all(t > 0 for _, t in pp)
    times = companion.launch(M.time_all_reduce, algorithms=("ring",), sizes=(4096,), repeats=1,
                             world_size=2)
    assert times[0] == times[1] and set(times[0]) == {("ring", 4096), ("torch", 4096)}


def test_fit_from_collectives_recovers_alpha_and_beta():
    alpha, beta = 2e-4, 5e8
    seconds = {(name, n): M.predict_time(name, n, 4, alpha, beta)
               for name in ("tree", "ring", "naive") for n in (1e3, 1e5, 1e7)}
    seconds[("torch", 1e3)] = 123.0  # not one of ours: ignored
    a, b = M.fit_from_collectives(seconds, 4)
    assert math.isclose(a, alpha, rel_tol=1e-9) and math.isclose(b, beta, rel_tol=1e-9)


def test_measured_crossover_interpolates_on_log_axes():
    sizes = [1e3, 1e4, 1e5]
    x = M.measured_crossover(sizes, [1.0, 1.0, 1.0], [4.0, 0.25, 0.1])
    assert x == pytest.approx(10 ** 3.5)
    assert M.measured_crossover(sizes, [1.0, 1.0, 1.0], [0.5, 0.5, 0.5]) is None
    # a noisy dip at the smallest size: the first switch is there, the lasting one later
    sizes = [1e3, 1e4, 1e5, 1e6]
    first, second = [1.0] * 4, [2.0, 0.5, 4.0, 0.25]
    assert M.measured_crossover(sizes, first, second) == pytest.approx(10 ** 3.5)
    assert M.measured_crossover(sizes, first, second, stays=True) == pytest.approx(10 ** 5.5)
    assert M.measured_crossover(sizes, first, [0.5, 0.5, 0.5, 2.0], stays=True) is None


def test_topology_model_reduces_to_the_single_link_model():
    """On one node every link is alike and nothing queues: the cluster model's flat ring
    is predict_time's ring, and the hierarchical all-reduce on uniform links sends the
    ring's bytes in fewer rounds."""
    from companion.topology import Cluster, predict

    alpha, beta, n = 1e-4, 1e9, 8_400_000
    for k in (2, 3, 4, 6):
        one_node = Cluster(1, k, intra=(alpha, beta))
        assert predict("ring", n, one_node) == pytest.approx(
            M.predict_time("ring", n, k, alpha, beta))
    uniform = Cluster(2, 3, intra=(alpha, beta), inter=(alpha, beta))
    hier = predict("hierarchical", n, uniform)
    assert hier == pytest.approx(4 * (alpha + n / 3 / beta) + 2 * (alpha + n / 6 / beta))
    assert hier - 6 * alpha == pytest.approx(M.predict_time("ring", n, 6, alpha, beta) - 10 * alpha)
