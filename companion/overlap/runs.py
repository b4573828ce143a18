"""DDP and FSDP training steps on real ranks behind an emulated link: how much of the
communication the compute hides, and the per-rank batch at which it hides all of it.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``); CS336 L8 sections
3.5-3.6 and the Ultra-Scale Playbook's appendix on overlap.

The model is ``TinyMLP(in_features=16, hidden, out_features=16, depth)``: ``depth - 1``
square layers of ``hidden^2`` weights between two thin ones. Every rank trains on
``batch`` rows of its own (a row is one token: ``2 * params`` FLOPs forward). Every
collective goes through :class:`companion.network.delayed.DelayedComm` with no latency and a
bandwidth of ``bandwidth_bytes_s`` per rank and direction, charged for the bytes a ring
sends (:mod:`companion.data_parallel.comm`).

**The crossover.** A square layer of P = hidden^2 weights takes ``4 T P / F`` seconds of
backward on T rows at F FLOP/s, while DDP all-reduces its gradient of ``b P`` bytes
(b = 4 in fp32) in ``2 (N - 1) / N * b P / beta``. FSDP all-gathers the layer while the
previous one computes forward (``2 T P / F`` against ``(N - 1) / N * b P / beta``) and in
backward moves twice that under twice the compute. Both hide their traffic once

    T >= T* = (N - 1) / N * b * F / (2 * beta)    (:func:`.crossover.predicted_crossover`)

the per-device form of the roofline rule "tokens per device >= F / beta" for bf16
(b = 2) and large N. Below T*, each layer leaves ``(N - 1) / N * b P / beta - 2 T P / F``
of its traffic exposed. Even above it, the last gradient (DDP) or the first and last
square layers (FSDP: a thin layer's compute hides nothing) stay exposed: nothing is
left to compute under them. :func:`.crossover.crossover_batch` therefore measures
exposure above that floor; the sweep itself is :mod:`companion.overlap.crossover`.

Times are medians over the timed steps on each rank, then averaged over the ranks.
"""
from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from .. import runtime
from ..experiments import experiment
from ..i18n import gettext as tr
from ..validation import one_of, positive_int, positive_number, preflight
from .timeline import step_timeline

__all__ = ["measure_overlap", "mlp_flops", "torch_ddp_buckets"]

NICENESS = 5  # of the computing thread; see _yield_to_communication
SCALARS = ("step_s", "compute_s", "wait_s", "comm_s", "hidden_s", "exposed_s",
           "all_gather_s", "all_gather_hidden_s")
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
    """Train one configuration; return this rank's medians and its timed steps' timelines."""
    from ..data_parallel.ddp import DDP
    from ..data_parallel.fsdp import FSDP
    from ..models import TinyMLP

    dev = runtime.device()
    batch = config.get("batch", 64)
    model = TinyMLP(IN_FEATURES, hidden, IN_FEATURES, depth, seed=0).to(dev)
    if config.get("strategy", "ddp") == "ddp":
        net = DDP(model, bucket_size_mb=config.get("bucket_size_mb"), link=link)
    else:
        net = FSDP(model, prefetch=config.get("prefetch", True), link=link)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(dist.get_rank())
    timelines = []
    for step in range(warmup + steps):
        # Drawn from a CPU generator, on the CPU: the same rows on every device.
        x = torch.randn(batch, IN_FEATURES, generator=gen, device="cpu").to(dev)
        net.comm.records = []
        runtime.synchronize()  # the clock starts with the last step's update done
        dist.barrier()  # every rank starts the step together, the link idle
        t0 = time.perf_counter()
        F.mse_loss(net(x), x).backward()
        net.finish_gradient_synchronization()
        runtime.synchronize()
        t1 = time.perf_counter()
        opt.step()
        opt.zero_grad()
        if step >= warmup:
            timeline = step_timeline(net.comm.records, t0, t1, dist.get_rank())
            timelines.append({**timeline, **_all_gathers(timeline)})
    net.comm.records = None
    row = {k: statistics.median(t[k] for t in timelines) for k in SCALARS}
    return {**row, "timeline": timelines[-1], "timelines": timelines}


def _all_gathers(timeline):
    """The link time of a step's all-gathers, and the part of it that ran under compute.

    What prefetch changes, and nothing else does: the step's total exposure also holds
    the reduce-scatters and every stall of a rank that other jobs descheduled, which on
    a loaded machine can outweigh the difference prefetch makes (notebook 10, 6b)."""
    gathers = [c for c in timeline["comm"] if c["kind"] == "all_gather"]
    return {"all_gather_s": sum(c["hidden_s"] + c["exposed_s"] for c in gathers),
            "all_gather_hidden_s": sum(c["hidden_s"] for c in gathers)}


def _mean_over_ranks(rows):
    """Average each row's scalars over the ranks (one all-reduce for the whole sweep)."""
    values = torch.tensor([[row[k] for k in SCALARS] for row in rows], dtype=torch.float64,
                          device=runtime.device())
    dist.all_reduce(values)
    values /= dist.get_world_size()
    for row, mean in zip(rows, values.tolist()):
        row.update(dict(zip(SCALARS, mean)))
    return rows


def _summarize_overlap(results):
    line = tr("{strategy} batch {batch} bucket {bucket} prefetch {prefetch}: comm {comm} ms, "
              "exposed {exposed} ms, compute {compute} ms")
    return "\n".join(line.format(strategy=f"{r['strategy']:>4}", batch=f"{r['batch']:>4}",
                                 bucket=r["bucket_size_mb"], prefetch=r["prefetch"],
                                 comm=f"{1e3 * r['comm_s']:.1f}",
                                 exposed=f"{1e3 * r['exposed_s']:.1f}",
                                 compute=f"{1e3 * r['compute_s']:.1f}")
                     for r in results[0])


@experiment("overlap_steps", summarize=_summarize_overlap)
@runtime.cpu_by_design(runtime.EMULATED)  # every message crosses the emulated link
@preflight(_check)
def measure_overlap(*, configs=({"strategy": "ddp"}, {"strategy": "fsdp", "prefetch": False},
                                {"strategy": "fsdp", "prefetch": True}),
                    bandwidth_bytes_s: float = 50e6, hidden: int = 512, depth: int = 5,
                    steps: int = 2, warmup: int = 1) -> list[dict]:
    """One row per configuration (a dict: ``strategy`` "ddp" or "fsdp", ``batch`` rows per
    rank (64), DDP's ``bucket_size_mb`` (None: per tensor), FSDP's ``prefetch`` (True)):

        {"strategy", "batch", "bucket_size_mb", "prefetch", "flops",
         "step_s", "compute_s", "wait_s", "comm_s", "hidden_s", "exposed_s",  # rank mean
         "all_gather_s", "all_gather_hidden_s",  # FSDP's all-gathers on the link, hidden
         "timeline": this rank's last step, companion.overlap.step_timeline's dict}
    """
    from ..network.delayed import DelayedComm

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


def _check_buckets(hidden=512, depth=5, steps=3) -> None:
    for name, value in (("hidden", hidden), ("depth", depth), ("steps", steps)):
        positive_int(name, value, f"pass a whole number >= 1 for {name}.")


@preflight(_check_buckets)
def torch_ddp_buckets(hidden: int = 512, depth: int = 5, steps: int = 3) -> dict:
    """Run inside ranks: torch's own ``DistributedDataParallel`` with its default buckets
    on the overlap model, ``steps`` backward passes; the bucket sizes (bytes) of its
    first step and after it rebuilt them, and the parameters of each rebuilt bucket.
    Notebook 10 (section 6b) sets them beside this package's DDP.

    The sizes come from DDP's logging data (``_get_ddp_logging_data``, private but the
    only place torch reports its buckets); torch rebuilds the buckets once, in the order
    the gradients became ready, after its first step."""
    from torch.nn.parallel import DistributedDataParallel

    from ..models import TinyMLP

    _check_buckets(hidden, depth, steps)
    dev = runtime.device()
    torch.manual_seed(0)
    model = TinyMLP(IN_FEATURES, hidden, IN_FEATURES, depth=depth).to(dev)
    names = [n for n, _ in model.named_parameters()]
    ddp = DistributedDataParallel(model)
    first = None
    for _ in range(steps):
        ddp(torch.randn(8, IN_FEATURES, device=dev)).sum().backward()
        data = ddp._get_ddp_logging_data()
        first = first or [int(b) for b in str(data["bucket_sizes"]).split(",")]
    rebuilt = data.get("rebuilt_bucket_sizes")
    groups = str(data.get("rebuilt_per_bucket_param_indices", "")).split(",")
    return {"first_step": first,
            "rebuilt": [int(b) for b in str(rebuilt).split(",")] if rebuilt else None,
            "rebuilt_params": [[names[int(i)] for i in g.split()] for g in groups if g.strip()]}

