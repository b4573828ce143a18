"""How often to checkpoint a job that fails: Young's interval, Daly's refinement, goodput.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``), section 9, after
CS336 L8 section 8 (the lecture's remark, at [01:15:21], that GPUs failed 148 times while
Llama-3 405B trained) and the Llama 3 report's section 3.3.4 and Table 5
(https://arxiv.org/abs/2407.21783). Every number of that section comes from here.

The model, in one place:

* a synchronous job of N GPUs stops whenever any one of them fails. With independent
  failures at a constant rate, its mean time between interruptions is
  ``M = M_gpu / N`` (:func:`scale_mtbi`);
* every ``tau`` seconds of work it pauses ``delta`` seconds to save a checkpoint: an
  overhead of ``delta / tau`` (:func:`checkpoint_overhead`);
* an interruption loses the work since the last checkpoint, ``tau / 2`` on average, and
  the restart ``R`` (:func:`wasted_per_failure`);
* to first order the wasted fraction of the time is ``delta / tau + (tau / 2 + R) / M``,
  least at ``tau* = sqrt(2 delta M)``: J. W. Young, "A first order approximation to the
  optimum checkpoint interval", Communications of the ACM 17(9), 1974
  (https://doi.org/10.1145/361147.361115) (:func:`young_interval`);
* J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
  dumps", Future Generation Computer Systems 22(3), 2006
  (https://doi.org/10.1016/j.future.2004.11.016), keeps the failures that strike during a
  checkpoint or a restart: the expected time per unit of work is
  ``M e^(R/M) (e^((tau + delta)/M) - 1) / tau``, and his series gives its optimum
  (:func:`daly_interval`; tests/test_resilience.py checks it against his Figs. 3-5).
"""
from __future__ import annotations

import math

from ..validation import one_of, positive_number

__all__ = ["scale_mtbi", "checkpoint_overhead", "wasted_per_failure", "young_interval",
           "daly_interval", "goodput"]

MODELS = ("young", "daly")


def _seconds(name, value, zero=False):
    return positive_number(name, value, "pass a time in seconds, e.g. 30.0.", zero=zero)


def scale_mtbi(mtbi_s: float, gpus: int, to_gpus: int) -> float:
    """Mean time between interruptions of the same job on ``to_gpus`` instead of ``gpus``.

    Failures of independent GPUs add up: N GPUs fail N times as often as one, so the
    job's mean time between interruptions is ``M_gpu / N``. Taught in notebook 10, 9b.
    """
    mtbi_s = _seconds("mtbi_s", mtbi_s)
    gpus = positive_number("gpus", gpus, "pass the GPU count the MTBI was measured on.")
    to_gpus = positive_number("to_gpus", to_gpus, "pass the GPU count to scale to.")
    return mtbi_s * gpus / to_gpus


def checkpoint_overhead(save_s: float, interval_s: float) -> float:
    """Fraction of the time spent saving: ``delta / tau`` (notebook 10, 9b)."""
    return _seconds("save_s", save_s, zero=True) / _seconds("interval_s", interval_s)


def wasted_per_failure(interval_s: float, restart_s: float = 0.0) -> float:
    """Expected seconds one interruption costs: half an interval of lost work, then the
    restart (``tau / 2 + R``; a failure is equally likely anywhere in the interval).
    Notebook 10, 9b."""
    return _seconds("interval_s", interval_s) / 2 + _seconds("restart_s", restart_s, zero=True)


def young_interval(save_s: float, mtbi_s: float) -> float:
    """Young's first-order optimum ``sqrt(2 delta M)`` (notebook 10, 9b).

    It balances the two wastes: ``d/dtau (delta / tau + tau / (2 M)) = 0``. The restart
    time does not enter: every interval choice pays it once per failure.
    """
    return math.sqrt(2 * _seconds("save_s", save_s) * _seconds("mtbi_s", mtbi_s))


def daly_interval(save_s: float, mtbi_s: float) -> float:
    """Daly's higher-order optimum (2006, his eq. for ``delta < 2 M``; ``M`` beyond).

    ``sqrt(2 delta M) (1 + sqrt(delta / 2M) / 3 + delta / 18 M) - delta``: close to Young's
    while ``delta << M``, shorter once a checkpoint is a sizeable part of ``M``
    (notebook 10, 9b).
    """
    delta, m = _seconds("save_s", save_s), _seconds("mtbi_s", mtbi_s)
    if delta >= 2 * m:
        return m
    x = delta / (2 * m)
    return math.sqrt(2 * delta * m) * (1 + math.sqrt(x) / 3 + x / 9) - delta


def goodput(interval_s: float, save_s: float, mtbi_s: float, restart_s: float = 0.0,
            model: str = "young") -> float:
    """Fraction of the elapsed time that is useful training (Llama 3's "effective
    training time"), for a checkpoint every ``interval_s`` of work. Notebook 10, 9b.

    ``model="young"``: first order, ``1 - delta / tau - (tau / 2 + R) / M`` (at least 0).
    ``model="daly"``: Daly's exact expectation for Poisson failures,
    ``tau / (M e^(R/M) (e^((tau + delta)/M) - 1))``, which also counts failures during a
    save or a restart.
    """
    tau, delta = _seconds("interval_s", interval_s), _seconds("save_s", save_s, zero=True)
    m, restart = _seconds("mtbi_s", mtbi_s), _seconds("restart_s", restart_s, zero=True)
    one_of("model", model, MODELS, "use 'young' (first order) or 'daly' (exact, Poisson).")
    if model == "young":
        return max(0.0, 1 - checkpoint_overhead(delta, tau) - wasted_per_failure(tau, restart) / m)
    exponent = (tau + delta) / m
    if exponent > 700 or restart / m > 700:  # e^700 overflows a float: no work gets done
        return 0.0
    return tau / (m * math.exp(restart / m) * math.expm1(exponent))
