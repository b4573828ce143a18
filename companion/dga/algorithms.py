"""Synchronous SGD, Delayed Gradient Averaging (with and without its correction) and
local SGD / FedAvg, on real ranks behind an emulated high-latency link.

Taught in notebook 08 (``notebooks/08_delayed_gradient_averaging.ipynb``), after L20
p.65-74 and Zhu et al., "Delayed Gradient Averaging" (NeurIPS 2021). The lecture's
pseudocode, and where each line lives below (:func:`run_worker`)::

    for i in range(steps):
        g = grad(net, data)                  # g = grad_fn(w, i)
        send(g, id=i)                        # comm.all_reduce(g.clone(), AVG): returns at once
        G[i] = g                             # in_flight.append((g, work))
        avg_g = recv(id=i - D)               # work_then.wait(): blocks only if not yet arrived
        W = W - lr * (g - G[i - D] + avg_g)  # dga_update(g, g_then, avg_then)

Before step ``D`` nothing has arrived; the pseudocode's missing ``G[i - D]`` and
``avg_g`` are zeros, so corrected DGA takes local steps and uncorrected ("stale")
averaging does not move. With ``D = 0`` the message is awaited at once and
``(g - g) + avg == avg`` exactly, so DGA is bit-for-bit synchronous SGD.

The parameters are one flat vector ``w`` (one message per step, like DDP's buckets
merged into one); :func:`simulate` is the single-process reference that plays all
workers in one loop, and :func:`quadratic_grad_fn` the toy problem both are checked on.
The digits problem they train is :mod:`.problems`; the launched runs, :mod:`.runs`.
"""
from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

import torch
import torch.distributed as dist

from .. import runtime
from ..network.delayed import DelayedComm
from ..validation import callable_arg, nonnegative_int, one_of, positive_int, positive_number
from ..compression.lr import SCHEDULES, lr_at

__all__ = ["ALGORITHMS", "dga_update", "stale_update", "run_worker", "simulate",
           "quadratic_grad_fn"]

ALGORITHMS = ("sync", "dga", "fedavg")


def dga_update(g_now: torch.Tensor, g_then: torch.Tensor, avg_then: torch.Tensor) -> torch.Tensor:
    """DGA's corrected update direction: ``g_i - g_{i-D} + avg_{i-D}`` (L20 p.72).

    Swapping this worker's stale local gradient for its fresh one keeps the step close
    to the synchronous ``avg_i`` (the terms differ only by how the *other* workers'
    gradients changed in D steps). Evaluated left to right: ``(g - g) + avg`` is exactly
    ``avg`` when D = 0.
    """
    return (g_now - g_then) + avg_then


def stale_update(g_now, g_then, avg_then):
    """Plain stale averaging: apply the average from D steps ago as it is."""
    return avg_then


def check_config(algorithm, steps, lr, delay, local_steps, update_rule=dga_update,
           schedule="constant"):
    one_of("algorithm", algorithm, ALGORITHMS)
    positive_int("steps", steps, "pass the number of steps, e.g. steps=300.")
    nonnegative_int("delay", delay, "delay D counts steps; 0 is synchronous SGD.")
    positive_int("local_steps", local_steps,
                 "local_steps K is the number of local steps between averages, e.g. 10.")
    positive_number("lr", lr, "pass a learning rate such as lr=0.1.")
    callable_arg("update_rule", update_rule,
                 "pass a function (g_now, g_then, avg_then) -> update, e.g. dga_update.")
    one_of("schedule", schedule, SCHEDULES)


def run_worker(grad_fn: Callable, w: torch.Tensor, comm: DelayedComm, *, algorithm: str,
               steps: int, lr: float, delay: int = 0, local_steps: int = 1,
               update_rule: Callable = dga_update, compute_s: float = 0.0,
               schedule: str = "constant", keep_history: bool = False) -> dict:
    """Train this rank's flat parameters ``w`` (updated in place) for ``steps`` steps.

    ``grad_fn(w, step) -> (gradient, loss)``. ``compute_s`` pads each step's compute to
    at least that many seconds with a sleep: an emulated accelerator step, so that a
    timing experiment is not at the mercy of 4 ranks sharing 2 cores (the notebook
    labels it). Returns the step timeline (``perf_counter`` seconds), the messages'
    timestamps, the losses and, with ``keep_history``, every gradient and average.
    """
    check_config(algorithm, steps, lr, delay, local_steps, update_rule, schedule)
    in_flight: deque = deque()
    zeros = torch.zeros_like(w)
    steps_log, works, losses = [], [], []
    history = {"g": [], "avg": []}
    for i in range(steps):
        runtime.synchronize()
        t_compute = time.perf_counter()
        g, loss = grad_fn(w, i)
        runtime.synchronize()
        if compute_s > 0:
            time.sleep(max(0.0, t_compute + compute_s - time.perf_counter()))
        t_sent = time.perf_counter()
        if algorithm == "sync":
            work = comm.all_reduce(g.clone(), op=dist.ReduceOp.AVG, tag=i)
            works.append(work)
            update = work.wait()
            history["avg"].append(update)
        elif algorithm == "dga":
            work = comm.all_reduce(g.clone(), op=dist.ReduceOp.AVG, tag=i)
            works.append(work)
            in_flight.append((g, work))
            if i >= delay:
                g_then, work_then = in_flight.popleft()
                avg_then = work_then.wait()
                history["avg"].append(avg_then)
                update = update_rule(g, g_then, avg_then)
            else:
                update = update_rule(g, zeros, zeros)
        else:
            update = g
        w.add_(update, alpha=-lr_at(lr, i, steps, schedule))
        if algorithm == "fedavg" and (i + 1) % local_steps == 0:
            work = comm.all_reduce(w.clone(), op=dist.ReduceOp.AVG, tag=i)
            works.append(work)
            w.copy_(work.wait())
        runtime.synchronize()
        steps_log.append({"step": i, "compute": (t_compute, t_sent),
                          "wait": (t_sent, time.perf_counter())})
        losses.append(loss)
        if keep_history:
            history["g"].append(g)
    out = {"steps": steps_log, "works": works, "losses": losses}
    if keep_history:
        out["history"] = history
    return out


def simulate(grad_fns: list, w0: torch.Tensor, *, algorithm: str, steps: int, lr: float,
             delay: int = 0, local_steps: int = 1, update_rule: Callable = dga_update,
             schedule: str = "constant") -> list[torch.Tensor]:
    """Single-process reference: every worker in one loop, averages by ``stack().mean()``.

    ``grad_fns[r](w, step) -> (gradient, loss)`` is worker r's gradient. Returns each
    worker's final parameters.
    """
    check_config(algorithm, steps, lr, delay, local_steps, update_rule, schedule)
    for r, fn in enumerate(grad_fns):
        callable_arg(f"grad_fns[{r}]", fn,
                     "pass one function (w, step) -> (gradient, loss) per worker.")
    n = len(grad_fns)
    ws = [w0.clone() for _ in range(n)]
    gs_hist, avg_hist = [], []
    for i in range(steps):
        gs = [grad_fns[r](ws[r], i)[0] for r in range(n)]
        avg = torch.stack(gs).mean(0)
        gs_hist.append(gs)
        avg_hist.append(avg)
        for r in range(n):
            if algorithm == "sync":
                update = avg
            elif algorithm == "dga":
                if i >= delay:
                    update = update_rule(gs[r], gs_hist[i - delay][r], avg_hist[i - delay])
                else:
                    update = update_rule(gs[r], torch.zeros_like(avg), torch.zeros_like(avg))
            else:
                update = gs[r]
            ws[r].add_(update, alpha=-lr_at(lr, i, steps, schedule))
        if algorithm == "fedavg" and (i + 1) % local_steps == 0:
            mean = torch.stack(ws).mean(0)
            ws = [mean.clone() for _ in range(n)]
    return ws


def quadratic_grad_fn(rank_: int, dim: int = 8, device="cpu"):
    """A deterministic toy: worker r minimises ``0.5 * sum(a_r * (w - c_r(step))**2)``.

    ``device`` is where ``w`` lives: the CPU by default, as for notebook 08's exercises
    and the single-process :func:`simulate`; :func:`~companion.dga.toy_train` passes the
    rank's device."""
    nonnegative_int("rank_", rank_, "pass the worker's rank, e.g. 0.")
    positive_int("dim", dim, "pass the number of parameters, e.g. dim=8.")
    gen = torch.Generator().manual_seed(1234 + rank_)
    # Drawn from the CPU generator on the CPU, so the toy is the same on every device.
    a = (torch.rand(dim, generator=gen, device="cpu") + 0.5).to(device)
    c = torch.randn(dim, generator=gen, device="cpu").to(device)

    def grad_fn(w, step):
        target = c * math.cos(0.3 * step)  # a moving target, so stale gradients matter
        return a * (w - target), float(0.5 * (a * (w - target) ** 2).sum())

    return grad_fn
