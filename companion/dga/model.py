"""How long a step takes when a link is long: the closed-form schedules of notebook 08.

Taught in notebook 08 (``notebooks/08_delayed_gradient_averaging.ipynb``, L20 p.62-72).
:func:`modeled_step_times` puts theory beside the measurement that
:class:`companion.network.delayed.DelayedComm` makes: compute ``C`` per step, one message
of latency ``L`` per step. :func:`great_circle_km` and the fibre constants give the
physical floor of ``L`` between two sites (light in glass, no routing).
"""
from __future__ import annotations

import math

from ..validation import in_range

__all__ = ["modeled_step_times", "great_circle_km", "SPEED_OF_LIGHT_KM_S", "FIBRE_INDEX",
           "EARTH_RADIUS_KM"]

SPEED_OF_LIGHT_KM_S = 299_792.458
FIBRE_INDEX = 1.468  # group index of standard single-mode fibre at 1550 nm (ITU G.652)
EARTH_RADIUS_KM = 6371.0  # mean radius; the great-circle error is below 0.5 %


def great_circle_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Haversine distance in km between two (latitude, longitude) points in degrees."""
    # Swapped or radian coordinates give a plausible-looking but wrong distance.
    fix = "pass (latitude, longitude) in degrees, latitude first."
    for name, value, limit in (("lat1", lat1, 90), ("lon1", lon1, 180), ("lat2", lat2, 90),
                               ("lon2", lon2, 180)):
        in_range(name, value, -limit, limit, fix)
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(a))


def modeled_step_times(algorithm: str, steps: int, compute_s: float, latency_s: float,
                       delay: int = 0, local_steps: int = 1) -> list[tuple[float, float, float]]:
    """Closed-form schedule of one worker: ``(compute_start, compute_end, update_at)`` per step.

    Every step computes for ``compute_s``; a message takes ``latency_s`` to arrive.

    * ``"sync"``: send, wait for the average, update (step time ``C + L``);
    * ``"dga"``: the average of step ``i`` is applied at step ``i + delay``; step ``i``
      updates when both its compute and message ``i - delay`` are done (steady state
      ``max(C, (C + L) / (delay + 1))``);
    * ``"fedavg"``: ``local_steps`` local updates, then a blocking model average
      (``C + L / K`` per step).
    """
    if steps < 1 or compute_s < 0 or latency_s < 0 or delay < 0 or local_steps < 1:
        raise ValueError("need steps >= 1, compute_s >= 0, latency_s >= 0, delay >= 0 and "
                         "local_steps >= 1.")
    if algorithm not in ("sync", "dga", "fedavg"):
        raise ValueError(f"algorithm must be 'sync', 'dga' or 'fedavg', got {algorithm!r}.")
    out, t, sent = [], 0.0, []
    for i in range(steps):
        end = t + compute_s
        if algorithm == "sync":
            update = end + latency_s
        elif algorithm == "fedavg":
            update = end + (latency_s if (i + 1) % local_steps == 0 else 0.0)
        else:
            sent.append(end)
            update = max(end, sent[i - delay] + latency_s) if i >= delay else end
        out.append((t, end, update))
        t = update
    return out
