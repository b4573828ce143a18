"""One training step's timeline on one rank: compute, and each collective hidden or exposed.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``).

The rank's main thread is, at every instant of a step, either computing or blocked in
``wait()`` for a collective (the records of :class:`companion.data_parallel.comm.Collectives`).
Communication occupies the emulated link from ``start`` to ``end``. Then, per step:

    compute  = the step minus the waits
    comm     = the time the link is busy (union of the collectives' spans)
    exposed  = the part of ``comm`` during which the rank waited: it added to the step
    hidden   = comm - exposed: it ran under compute and cost nothing

and the same split per collective. ``wait`` (time blocked) can exceed ``exposed`` by the
real loopback collective and by waiting for a slower rank to join it.
"""
from __future__ import annotations

import math

__all__ = ["merge_spans", "span_length", "overlap_length", "step_timeline"]


def merge_spans(spans) -> list[tuple[float, float]]:
    """The union of ``(start, end)`` spans as sorted, disjoint spans (empty ones dropped)."""
    out = []
    for a, b in sorted((a, b) for a, b in spans if b > a):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def span_length(spans) -> float:
    """Total length of the union of ``spans``."""
    return sum(b - a for a, b in merge_spans(spans))


def overlap_length(spans, others) -> float:
    """Length of (union of ``spans``) intersected with (union of ``others``)."""
    total, theirs = 0.0, merge_spans(others)
    for a, b in merge_spans(spans):
        for c, d in theirs:
            total += max(0.0, min(b, d) - max(a, c))
    return total


def step_timeline(records, start: float, end: float, rank: int = 0) -> dict:
    """Split the step ``[start, end]`` (``perf_counter`` seconds) of one rank.

    ``records``: the collectives the rank issued in the step. Returns times in seconds
    since ``start``::

        {"rank", "step_s", "compute_s", "wait_s", "comm_s", "hidden_s", "exposed_s",
         "compute": [(t0, t1)], "waits": [(t0, t1)],
         "comm": [{"kind", "tag", "bytes", "issued", "start", "end", "real_end",
                   "wait_start", "wait_end", "hidden_s", "exposed_s"}]}

    A collective sent without an emulated link has no link span; its span is then taken
    from issue to the end of its wait, an upper bound.
    """
    if not end >= start:
        raise ValueError(f"end={end!r} must not be before start={start!r}.")

    def rel(t):
        return t - start

    waits = merge_spans((max(r["wait_start"], start), min(r["wait_end"], end)) for r in records
                        if not math.isnan(r["wait_start"]))
    compute, t = [], start
    for a, b in waits:
        compute.append((t, a))
        t = b
    compute.append((t, end))
    compute = [(a, b) for a, b in compute if b > a]
    comm = []
    for r in records:
        a, b = r["start"], r["end"]
        if math.isnan(a):
            a, b = r["issued"], r["wait_end"]
        exposed = overlap_length([(a, b)], waits)
        comm.append({**{k: r[k] for k in ("kind", "tag", "bytes")},
                     **{k: rel(r.get(k, math.nan)) for k in ("issued", "wait_start",
                                                               "wait_end", "real_end")},
                     "start": rel(a), "end": rel(b), "exposed_s": exposed,
                     "hidden_s": max(0.0, (b - a) - exposed)})
    spans = [(c["start"] + start, c["end"] + start) for c in comm]
    comm_s = span_length(spans)
    exposed_s = overlap_length(spans, waits)
    wait_s = span_length(waits)
    return {"rank": rank, "step_s": end - start, "compute_s": (end - start) - wait_s,
            "wait_s": wait_s, "comm_s": comm_s, "hidden_s": comm_s - exposed_s,
            "exposed_s": exposed_s, "compute": [(rel(a), rel(b)) for a, b in compute],
            "waits": [(rel(a), rel(b)) for a, b in waits], "comm": comm}
