"""DDP and FSDP training steps on real ranks behind an emulated link: how much of the
communication the compute hides, and the per-rank batch at which it hides all of it.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``); CS336 L8 sections
3.5-3.6 and the Ultra-Scale Playbook's appendix on overlap.

The model is ``TinyMLP(in_features=16, hidden, out_features=16, depth)``: ``depth - 1``
square layers of ``hidden^2`` weights between two thin ones. Every rank trains on
``batch`` rows of its own (a row is one token: ``2 * params`` FLOPs forward). Every
collective goes through :class:`companion.latency.DelayedComm` with no latency and a
bandwidth of ``bandwidth_bytes_s`` per rank and direction, charged for the bytes a ring
sends (:mod:`companion.overlap.comm`).

**The crossover.** A square layer of P = hidden^2 weights takes ``4 T P / F`` seconds of
backward on T rows at F FLOP/s, while DDP all-reduces its gradient of ``b P`` bytes
(b = 4 in fp32) in ``2 (N - 1) / N * b P / beta``. FSDP all-gathers the layer while the
previous one computes forward (``2 T P / F`` against ``(N - 1) / N * b P / beta``) and in
backward moves twice that under twice the compute. Both hide their traffic once

    T >= T* = (N - 1) / N * b * F / (2 * beta)          (:func:`predicted_crossover`)

the per-device form of the roofline rule "tokens per device >= F / beta" for bf16
(b = 2) and large N. Below T*, each layer leaves ``(N - 1) / N * b P / beta - 2 T P / F``
of its traffic exposed. Even above it, the last gradient (DDP) or the first and last
square layers (FSDP: a thin layer's compute hides nothing) stay exposed: nothing is
left to compute under them. :func:`crossover_batch` therefore measures exposure above
that floor.

Times are medians over the timed steps on each rank, then averaged over the ranks; the
ranks share this machine's cores, so ``flops_per_s`` is measured with all ranks busy at
once, as they are during the step.
"""
from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ..experiments import experiment
from ..validation import one_of, positive_int, positive_number, preflight
from .timeline import step_timeline

__all__ = ["measure_overlap", "measure_crossover", "predicted_crossover", "crossover_batch",
           "mlp_flops"]

NICENESS = 5  # of the computing thread; see _yield_to_communication
SCALARS = ("step_s", "compute_s", "wait_s", "comm_s", "hidden_s", "exposed_s")
IN_FEATURES = 16


def mlp_flops(batch: int, hidden: int, depth: int) -> int:
    """FLOPs of one training step of the overlap model on ``batch`` rows (matmuls only):
    2 per weight and row forward, 4 backward, except that the first layer computes no
    gradient for its input."""
    for name, value in (("batch", batch), ("hidden", hidden), ("depth", depth)):
        positive_int(name, value, f"pass a whole number >= 1 for {name}.")
    dims = [IN_FEATURES] + [hidden] * depth + [IN_FEATURES]
    weights = [a * b for a, b in zip(dims, dims[1:])]
    return 6 * batch * sum(weights) - 2 * batch * weights[0]


def predicted_crossover(flops_per_s: float, bandwidth_bytes_s: float, world_size: int,
                        bytes_per_param: int = 4) -> float:
    """T* = (N - 1) / N * b * F / (2 beta): rows per rank above which DDP's all-reduce and
    FSDP's all-gather/reduce-scatter of a layer fit under its compute (module docstring)."""
    positive_number("flops_per_s", flops_per_s, "pass the measured FLOP rate, e.g. 5e9.")
    positive_number("bandwidth_bytes_s", bandwidth_bytes_s, "pass bytes per second, e.g. 50e6.")
    positive_int("world_size", world_size, "pass the number of ranks, at least 2.", minimum=2)
    positive_int("bytes_per_param", bytes_per_param, "4 for fp32, 2 for bf16.")
    return (world_size - 1) / world_size * bytes_per_param * flops_per_s / (2 * bandwidth_bytes_s)


def crossover_batch(rows, tolerance: float = 0.1):
    """The smallest batch of a sweep (rows of :func:`measure_crossover`) whose exposed
    communication is within ``tolerance`` x its total communication of the floor, the
    exposure at the sweep's largest batch; ``None`` if only the largest batch is."""
    if not rows:
        raise ValueError("rows is empty: pass the 'rows' of measure_crossover's result.")
    positive_number("tolerance", tolerance, "pass a fraction such as 0.1.")
    rows = sorted(rows, key=lambda r: r["batch"])
    floor = rows[-1]["exposed_s"]
    for row in rows[:-1]:
        if row["exposed_s"] <= floor + tolerance * row["comm_s"]:
            return row["batch"]
    return None


def _check(configs=None, batches=(64,), strategy="ddp", bandwidth_bytes_s=1.0, hidden=1,
           depth=1, steps=1, warmup=0, bucket_size_mb=None, prefetch=True) -> None:
    positive_number("bandwidth_bytes_s", bandwidth_bytes_s,
                    "pass the emulated link's bytes per second per direction, e.g. 50e6.")
    for name, value in (("hidden", hidden), ("depth", depth), ("steps", steps)):
        positive_int(name, value, f"pass a whole number >= 1 for {name}.")
    positive_int("warmup", warmup, "pass 0 or more warm-up steps.", minimum=0)
    for config in configs if configs is not None else [dict(strategy=strategy)]:
        if not isinstance(config, dict) or set(config) - {"strategy", "batch",
                                                          "bucket_size_mb", "prefetch"}:
            raise ValueError(f"each entry of configs is a dict with keys strategy, batch, "
                             f"bucket_size_mb, prefetch; got {config!r}.")
        one_of("strategy", config.get("strategy", "ddp"), ("ddp", "fsdp"))
        positive_int("batch", config.get("batch", 64), "rows per rank, e.g. 64.")
        if config.get("bucket_size_mb") is not None:
            positive_number("bucket_size_mb", config["bucket_size_mb"], "MiB, or None.")
    if batches is not None and not batches:
        raise ValueError("batches is empty: pass rows per rank, e.g. (16, 32, 64, 128), or "
                         "None to sweep around the prediction.")
    for batch in batches or ():
        positive_int("batches", batch, "each batch is rows per rank, e.g. (16, 32, 64).")


def _step_rows(config, link, hidden, depth, steps, warmup):
    """Train one configuration; return this rank's medians and its last step's timeline."""
    from ..ddp import DDP
    from ..fsdp import FSDP
    from ..models import TinyMLP

    batch = config.get("batch", 64)
    model = TinyMLP(IN_FEATURES, hidden, IN_FEATURES, depth, seed=0)
    if config.get("strategy", "ddp") == "ddp":
        net = DDP(model, bucket_size_mb=config.get("bucket_size_mb"), link=link)
    else:
        net = FSDP(model, prefetch=config.get("prefetch", True), link=link)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(dist.get_rank())
    timelines = []
    for step in range(warmup + steps):
        x = torch.randn(batch, IN_FEATURES, generator=gen)
        net.comm.records = []
        dist.barrier()  # every rank starts the step together, the link idle
        t0 = time.perf_counter()
        F.mse_loss(net(x), x).backward()
        net.finish_gradient_synchronization()
        t1 = time.perf_counter()
        opt.step()
        opt.zero_grad()
        if step >= warmup:
            timelines.append(step_timeline(net.comm.records, t0, t1, dist.get_rank()))
    net.comm.records = None
    row = {k: statistics.median(t[k] for t in timelines) for k in SCALARS}
    return {**row, "timeline": timelines[-1]}


def _mean_over_ranks(rows):
    """Average each row's scalars over the ranks (one all-reduce for the whole sweep)."""
    values = torch.tensor([[row[k] for k in SCALARS] for row in rows], dtype=torch.float64)
    dist.all_reduce(values)
    values /= dist.get_world_size()
    for row, mean in zip(rows, values.tolist()):
        row.update(dict(zip(SCALARS, mean)))
    return rows


def _summarize_overlap(results):
    return "\n".join(f"{r['strategy']:>4} batch {r['batch']:>4} bucket {r['bucket_size_mb']} "
                     f"prefetch {r['prefetch']}: comm {1e3 * r['comm_s']:.1f} ms, exposed "
                     f"{1e3 * r['exposed_s']:.1f} ms, compute {1e3 * r['compute_s']:.1f} ms"
                     for r in results[0])


@experiment("overlap_steps", summarize=_summarize_overlap)
@preflight(_check)
def measure_overlap(*, configs=({"strategy": "ddp"}, {"strategy": "fsdp", "prefetch": False},
                                {"strategy": "fsdp", "prefetch": True}),
                    bandwidth_bytes_s: float = 50e6, hidden: int = 512, depth: int = 5,
                    steps: int = 2, warmup: int = 1) -> list[dict]:
    """One row per configuration (a dict: ``strategy`` "ddp" or "fsdp", ``batch`` rows per
    rank (64), DDP's ``bucket_size_mb`` (None: per tensor), FSDP's ``prefetch`` (True)):

        {"strategy", "batch", "bucket_size_mb", "prefetch", "flops",
         "step_s", "compute_s", "wait_s", "comm_s", "hidden_s", "exposed_s",  # rank mean
         "timeline": this rank's last step, companion.overlap.step_timeline's dict}
    """
    from ..latency import DelayedComm

    _check(configs, bandwidth_bytes_s=bandwidth_bytes_s, hidden=hidden, depth=depth,
           steps=steps, warmup=warmup)
    rows = []
    with DelayedComm(0.0, bandwidth_bytes_s, absorb_real=True) as link:
        _yield_to_communication()
        for config in configs:
            batch = config.get("batch", 64)
            rows.append({"strategy": config.get("strategy", "ddp"), "batch": batch,
                         "bucket_size_mb": config.get("bucket_size_mb"),
                         "prefetch": config.get("prefetch", True),
                         "flops": mlp_flops(batch, hidden, depth),
                         **_step_rows(config, link, hidden, depth, steps, warmup)})
    return _mean_over_ranks(rows)


def _yield_to_communication():
    """Lower this (main, computing) thread's CPU priority below the communication threads'.

    On a GPU, collectives run on their own engines and never queue for a core; here 4
    ranks share 2 cores, and a ring collective needs every rank's communication thread
    to get a core 2 (N - 1) times in a row. Without this, those threads wait behind
    compute and a 1 MB all-reduce takes tens of milliseconds that are not the link's.
    Threads started earlier (gloo's, the link's) keep their priority; Linux only."""
    import os
    import threading

    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        pass


def _flop_rate(hidden, rows, seconds=0.15):
    """FLOP/s of this rank's ``rows x hidden @ hidden x hidden`` matmul, all ranks at once."""
    a, w = torch.randn(rows, hidden), torch.randn(hidden, hidden)
    a @ w
    dist.barrier()
    count, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ w
        count += 1
    rate = torch.tensor(2.0 * rows * hidden * hidden * count / (time.perf_counter() - t0))
    dist.all_reduce(rate)
    return rate.item() / dist.get_world_size()


def _summarize_crossover(results):
    r = results[0]
    lines = [f"{r['strategy']} on {r['world_size']} ranks, link {r['bandwidth_bytes_s'] / 1e6:g} "
             f"MB/s, CPU {r['flops_per_s'] / 1e9:.2f} GFLOP/s per rank: predicted T* = "
             f"{r['predicted_batch']:.0f} rows, measured {r['measured_batch']}"]
    lines += [f"batch {row['batch']:>4}: compute {1e3 * row['compute_s']:7.1f} ms, comm "
              f"{1e3 * row['comm_s']:6.1f} ms, exposed {1e3 * row['exposed_s']:6.1f} ms"
              for row in r["rows"]]
    return "\n".join(lines)


@experiment("overlap_crossover", summarize=_summarize_crossover)
@preflight(_check)
def measure_crossover(*, batches=None, strategy: str = "ddp",
                      bandwidth_bytes_s: float = 50e6, hidden: int = 512, depth: int = 5,
                      steps: int = 2, warmup: int = 1, bucket_size_mb=1.5,
                      prefetch: bool = True) -> dict:
    """Sweep the per-rank batch; the same dict on every rank (times averaged over ranks)::

        {"strategy", "world_size", "bandwidth_bytes_s", "bytes_per_param": 4, "hidden",
         "depth", "flops_per_s": FLOPs / compute time of the sweep's steps, per rank,
         "matmul_flops_per_s": one layer's matmul alone, all ranks busy (the CPU's "peak"),
         "predicted_batch": T* from flops_per_s, "measured_batch": crossover_batch(rows),
         "rows": [{"batch", "flops", "achieved_flops_per_s", "step_s", "compute_s",
                   "wait_s", "comm_s", "hidden_s", "exposed_s", "timeline"}]}

    ``batches=None`` sweeps around the prediction from one layer's matmul rate, T*/4,
    T*/2, T* and 2 T* (rounded to multiples of 8), so that the sweep brackets the
    crossover whatever this CPU's speed; a step at T* computes for about 9 P / beta
    seconds (P weights, beta the link) whatever the CPU. The defaults put one square
    layer (1 MiB of fp32 weights at hidden=512) in each 1.5 MiB DDP bucket, and take a
    few seconds on 2 cores.
    """
    _check(None, batches, strategy, bandwidth_bytes_s, hidden, depth, steps, warmup,
           bucket_size_mb, prefetch)
    if batches is None:
        guess = predicted_crossover(_flop_rate(hidden, 256), bandwidth_bytes_s,
                                    dist.get_world_size())
        batches = tuple(max(8, 8 * round(guess * f / 8)) for f in (0.25, 0.5, 1, 2))
    config = {"strategy": strategy, "bucket_size_mb": bucket_size_mb, "prefetch": prefetch}
    rows = measure_overlap(configs=[{**config, "batch": b} for b in batches],
                           bandwidth_bytes_s=bandwidth_bytes_s, hidden=hidden, depth=depth,
                           steps=steps, warmup=warmup)
    for row in rows:
        row["achieved_flops_per_s"] = row["flops"] / row["compute_s"]
        for key in ("strategy", "bucket_size_mb", "prefetch"):
            del row[key]
    flops_per_s = sum(r["flops"] for r in rows) / sum(r["compute_s"] for r in rows)
    world_size = dist.get_world_size()
    return {"strategy": strategy, "world_size": world_size,
            "bandwidth_bytes_s": bandwidth_bytes_s, "bytes_per_param": 4, "hidden": hidden,
            "depth": depth, "flops_per_s": flops_per_s,
            "matmul_flops_per_s": _flop_rate(hidden, max(batches)),
            "predicted_batch": predicted_crossover(flops_per_s, bandwidth_bytes_s, world_size),
            "measured_batch": crossover_batch(rows), "rows": rows}
