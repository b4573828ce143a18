"""The crossover: the per-rank batch above which DDP's (or FSDP's) communication hides
under compute, measured on real ranks and set against the roofline's ``T*``.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``, section 6c); CS336
L8 sections 3.5-3.6. The model, the link and ``T*`` are derived in
:mod:`companion.overlap.runs`.

**What is measured, and why that way.** Four ranks share this machine's 2 cores with
whatever else runs on it, so three things that a GPU cluster would not show must be
kept out of the comparison:

* a rank that got more CPU waits inside the collective for the slowest one; that wait
  is load imbalance, not communication. Exposure is therefore taken *beyond the slowest
  rank* (:func:`companion.overlap.slowest_rank_exposed`): the step's length minus the
  slowest rank's compute, per step, then the median over the timed steps;
* the CPU's FLOP rate during the steps is not the rate of one matmul measured before
  them (other jobs come and go, and the slowest rank is slower than the mean). The
  prediction uses the rate the *slowest* rank achieved during the same steps;
* the link's rate is what its messages took: the emulated ``bytes / beta``, or longer
  where the real loopback collective outlasted it. The prediction uses that effective
  bandwidth (per message, the shortest time any rank saw: the other ranks' times include
  waiting for the last one to join).

Measurement and prediction then share their inputs, so a loaded machine slows both
alike. The sweep is centred on the prediction from two probe steps; if the sweep's own
prediction lies outside its inner points, it is swept once more around that.
"""
from __future__ import annotations

import math
import statistics
import time

import torch
import torch.distributed as dist

from .. import runtime
from ..experiments import experiment
from ..i18n import gettext as tr
from ..validation import positive_int, positive_number, preflight
from .runs import _check, measure_overlap

__all__ = ["measure_crossover", "predicted_crossover", "crossover_batch"]

SWEEP = (0.35, 0.5, 0.71, 1.0, 1.41, 2.0)  # x T*, a factor sqrt(2) apart
GRID = 200  # candidate knees of crossover_batch's fit


def predicted_crossover(flops_per_s: float, bandwidth_bytes_s: float, world_size: int,
                        bytes_per_param: int = 4) -> float:
    """T* = (N - 1) / N * b * F / (2 beta): rows per rank above which DDP's all-reduce and
    FSDP's all-gather/reduce-scatter of a layer fit under its compute
    (:mod:`companion.overlap.runs`)."""
    positive_number("flops_per_s", flops_per_s, "pass the measured FLOP rate, e.g. 5e9.")
    positive_number("bandwidth_bytes_s", bandwidth_bytes_s, "pass bytes per second, e.g. 50e6.")
    positive_int("world_size", world_size, "pass the number of ranks, at least 2.", minimum=2)
    positive_int("bytes_per_param", bytes_per_param, "4 for fp32, 2 for bf16.")
    return (world_size - 1) / world_size * bytes_per_param * flops_per_s / (2 * bandwidth_bytes_s)


def crossover_batch(rows, key: str = "exposed_s"):
    """The batch where a sweep's exposure (``row[key]``) stops falling: the knee ``T_c``
    of the least-squares fit ``exposure = floor + a * max(0, T_c - batch)``, ``a > 0``.

    Below T* each layer leaves ``C - K T`` of its communication exposed (C its link time,
    K T its compute), so exposure falls linearly in the batch and meets the floor (the
    last bucket, nothing left to hide it) at T* itself: the fit estimates T*, using every
    point of the sweep rather than one threshold crossing, and is not quantised to the
    sweep's batches. Knees are tried strictly inside the sweep: one just below the
    largest batch means the exposure was still falling there (sweep further). ``None`` if
    the exposure does not fall at all."""
    if not rows or len(rows) < 3:
        raise ValueError("rows needs 3 or more sweep points (a floor, a slope and a knee): "
                         "pass the 'rows' of measure_crossover's result.")
    rows = sorted(rows, key=lambda r: r["batch"])
    xs = [float(r["batch"]) for r in rows]
    ys = [float(r[key]) for r in rows]
    best = (sum((y - sum(ys) / len(ys)) ** 2 for y in ys), None)  # flat: no knee
    lo, hi = math.log(xs[0]), math.log(xs[-1])
    for i in range(1, GRID + 1):  # knees strictly inside the sweep, even in log(batch)
        knee = math.exp(lo + (hi - lo) * i / (GRID + 1))
        hs = [max(0.0, knee - x) for x in xs]
        mh, my = sum(hs) / len(hs), sum(ys) / len(ys)
        shh = sum((h - mh) ** 2 for h in hs)
        slope = sum((h - mh) * (y - my) for h, y in zip(hs, ys)) / shh
        if slope <= 0:
            continue
        sse = sum((y - my - slope * (h - mh)) ** 2 for h, y in zip(hs, ys))
        if sse < best[0]:
            best = (sse, knee)
    return best[1]


def _flop_rate(hidden, rows, seconds=0.15):
    """FLOP/s of this rank's ``rows x hidden @ hidden x hidden`` matmul, all ranks at once."""
    dev = runtime.device()
    a, w = torch.randn(rows, hidden, device=dev), torch.randn(hidden, hidden, device=dev)
    a @ w
    runtime.synchronize()
    dist.barrier()
    count, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ w
        count += 1
        runtime.synchronize()  # count a product once it is done, not once it is queued
    rate = torch.tensor(2.0 * rows * hidden * hidden * count / (time.perf_counter() - t0),
                        device=dev)
    dist.all_reduce(rate)
    return rate.item() / dist.get_world_size()


def _across_ranks(rows):
    """Per row: the median over timed steps of the exposure beyond the slowest rank and
    of the slowest rank's compute; and the link's effective bandwidth over the sweep."""
    mine = [[(t["step_s"], t["compute_s"], [(c["bytes"], c["end"] - c["start"])
                                              for c in t["comm"]])
             for t in row.pop("timelines")] for row in rows]
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    sent = taken = 0.0
    for j, row in enumerate(rows):
        steps = list(zip(*(rank[j] for rank in everyone)))  # per step, one entry per rank
        row["slowest_compute_s"] = statistics.median(max(c for _, c, _ in s) for s in steps)
        row["slowest_exposed_s"] = statistics.median(
            max(0.0, max(st for st, _, _ in s) - max(c for _, c, _ in s)) for s in steps)
        for s in steps:
            if len({len(links) for _, _, links in s}) != 1:
                continue  # ranks issued different collectives; cannot pair them
            for per_rank in zip(*(links for _, _, links in s)):
                sent += per_rank[0][0]
                taken += min(d for _, d in per_rank)
    return sent / taken if taken > 0 else math.nan


def _sweep(batches, config, bandwidth_bytes_s, hidden, depth, steps, warmup):
    rows = measure_overlap(configs=[{**config, "batch": b} for b in batches],
                           bandwidth_bytes_s=bandwidth_bytes_s, hidden=hidden, depth=depth,
                           steps=steps, warmup=warmup)
    link = _across_ranks(rows)
    if not math.isfinite(link):  # no collective recorded a link time (none was issued)
        link = bandwidth_bytes_s
    for row in rows:
        row["achieved_flops_per_s"] = row["flops"] / row["slowest_compute_s"]
        for key in ("strategy", "bucket_size_mb", "prefetch"):
            del row[key]
    flops = sum(r["flops"] for r in rows) / sum(r["slowest_compute_s"] for r in rows)
    return rows, flops, link


def _batches(guess):
    return tuple(sorted({max(8, 8 * round(guess * f / 8)) for f in SWEEP}))


def _summarize_crossover(results):
    r = results[0]
    head = tr("{strategy} on {ranks} ranks, link {link} MB/s ({effective} effective), slowest "
              "rank {gflops} GFLOP/s: predicted T* = {predicted} rows, measured {measured}")
    lines = [head.format(
        strategy=r["strategy"], ranks=r["world_size"], link=f"{r['bandwidth_bytes_s'] / 1e6:g}",
        effective=f"{r['effective_bandwidth_bytes_s'] / 1e6:.0f}",
        gflops=f"{r['flops_per_s'] / 1e9:.2f}", predicted=f"{r['predicted_batch']:.0f}",
        measured=r["measured_batch"])]
    row_line = tr("batch {batch}: slowest compute {compute} ms, comm {comm} ms, exposed beyond "
                  "the slowest {exposed} ms")
    lines += [row_line.format(batch=f"{row['batch']:>4}",
                              compute=f"{1e3 * row['slowest_compute_s']:7.1f}",
                              comm=f"{1e3 * row['comm_s']:6.1f}",
                              exposed=f"{1e3 * row['slowest_exposed_s']:6.1f}")
              for row in r["rows"]]
    return "\n".join(lines)


@experiment("overlap_crossover", summarize=_summarize_crossover)
@runtime.cpu_by_design(runtime.EMULATED)  # every message crosses the emulated link
@preflight(_check)
def measure_crossover(*, batches=None, strategy: str = "ddp",
                      bandwidth_bytes_s: float = 50e6, hidden: int = 512, depth: int = 5,
                      steps: int = 3, warmup: int = 1, bucket_size_mb=1.5,
                      prefetch: bool = True) -> dict:
    """Sweep the per-rank batch; the same dict on every rank::

        {"strategy", "world_size", "bandwidth_bytes_s", "bytes_per_param": 4, "hidden",
         "depth", "flops_per_s": FLOPs / the slowest rank's compute over the sweep,
         "effective_bandwidth_bytes_s": ring bytes / time on the link (module docstring),
         "matmul_flops_per_s": one layer's matmul alone, all ranks busy,
         "predicted_batch": T* from flops_per_s and the effective bandwidth,
         "predicted_batch_nominal_link": T* from flops_per_s and bandwidth_bytes_s,
         "measured_batch": crossover_batch(rows, key="slowest_exposed_s"),
         "recentred": whether the sweep was repeated around its own prediction,
         "rows": [{"batch", "flops", "achieved_flops_per_s" (slowest rank),
                   "slowest_compute_s", "slowest_exposed_s",   # medians over steps
                   "step_s", "compute_s", "wait_s", "comm_s", "hidden_s", "exposed_s",
                   # medians over steps, averaged over ranks
                   "timeline": this rank's last step}]}

    ``batches=None`` sweeps ``SWEEP`` x T* (0.35 ... 2, rounded to multiples of 8) around
    the prediction from 2 probe steps (at the batch one matmul's rate predicts), then once
    more around the sweep's own prediction if that falls outside the inner four points. A step at T* computes for
    about 9 P / beta seconds (P weights, beta the link) whatever the CPU. The defaults
    put one square layer (1 MiB of fp32 at hidden=512) in each 1.5 MiB DDP bucket.
    """
    _check(None, batches, strategy, bandwidth_bytes_s, hidden, depth, steps, warmup,
           bucket_size_mb, prefetch)
    world_size = dist.get_world_size()
    config = {"strategy": strategy, "bucket_size_mb": bucket_size_mb, "prefetch": prefetch}
    args = (config, bandwidth_bytes_s, hidden, depth, steps, warmup)
    matmul = _flop_rate(hidden, 256)
    recentred = False
    if batches is None:
        # a matmul alone runs up to 2-3x faster than the slowest rank's steps on a loaded
        # machine: centre the sweep on a short probe of the steps themselves
        probe = max(8, 8 * round(predicted_crossover(matmul, bandwidth_bytes_s, world_size) / 8))
        _, flops, link = _sweep((probe,), config, bandwidth_bytes_s, hidden, depth, 2, 1)
        batches = _batches(predicted_crossover(flops, link, world_size))
        rows, flops, link = _sweep(batches, *args)
        guess = predicted_crossover(flops, link, world_size)
        if not batches[1] <= guess <= batches[-2]:
            # under load the steps ran far from the matmul's rate: sweep around theirs
            batches, recentred = _batches(guess), True
            rows, flops, link = _sweep(batches, *args)
    else:
        rows, flops, link = _sweep(batches, *args)
    return {"strategy": strategy, "world_size": world_size,
            "bandwidth_bytes_s": bandwidth_bytes_s, "bytes_per_param": 4, "hidden": hidden,
            "depth": depth, "flops_per_s": flops, "effective_bandwidth_bytes_s": link,
            "matmul_flops_per_s": matmul,
            "predicted_batch": predicted_crossover(flops, link, world_size),
            "predicted_batch_nominal_link": predicted_crossover(flops, bandwidth_bytes_s,
                                                                world_size),
            "measured_batch": crossover_batch(rows, key="slowest_exposed_s"),
            "recentred": recentred, "rows": rows}
