"""Delayed gradient averaging launched on real ranks: train, the toy, a sweep of runs.

Taught in notebook 08 (``notebooks/08_delayed_gradient_averaging.ipynb``): each rank
trains behind an emulated link (``network.delayed.DelayedComm``) with
:func:`.algorithms.run_worker`; :func:`train` records the timeline the notebook plots
and :func:`overlap_fraction` says how much of the messages' flight it hid.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
import torch.distributed as dist

from .. import runtime
from ..data import load_digits
from ..experiments import experiment
from ..network.delayed import DelayedComm
from ..runtime import rank, world_size
from ..validation import accepts, positive_int, positive_number, preflight, run_preflight
from .algorithms import check_config, dga_update, quadratic_grad_fn, run_worker, stale_update
from .problems import N_TRAIN, mlp_problem, side_by_side

__all__ = ["train", "toy_train", "sweep", "overlap_fraction"]


def overlap_fraction(result: dict) -> float:
    """Share of the messages' flight time (sent -> delivered) during which this rank was
    computing: 0 for synchronous SGD, close to 1 when the delay is hidden."""
    busy = [s["compute"] for s in result["steps"]]
    flight = hidden = 0.0
    for m in result["messages"]:
        a, b = m["submitted_at"], min(m["ready_at"], result["end"])
        if b <= a:
            continue
        flight += b - a
        hidden += sum(max(0.0, min(b, c1) - max(a, c0)) for c0, c1 in busy)
    return hidden / flight if flight else 0.0


def _finish(out, t0, t_end, accuracy, timeline):
    result = {"accuracy": accuracy, "losses": out["losses"],
              "seconds_per_step": (t_end - t0) / len(out["steps"])}
    if timeline:
        result["steps"] = [{"step": s["step"], "compute": tuple(t - t0 for t in s["compute"]),
                            "wait": tuple(t - t0 for t in s["wait"])} for s in out["steps"]]
        result["messages"] = [w.record(t0) for w in out["works"]]
        result["end"] = t_end - t0
        result["overlap"] = overlap_fraction(result)
    return result


def _summarize(results) -> str:
    r = results[0]
    acc = sum(x["accuracy"] for x in results) / len(results)
    from ..i18n import gettext as tr
    return tr("mean test accuracy over {ranks} ranks: {acc} %, {ms} ms per step").format(
        ranks=len(results), acc=f"{100 * acc:.2f}", ms=f"{1e3 * r['seconds_per_step']:.2f}")


def _check_train(algorithm, steps, delay, corrected, local_steps, lr, schedule, batch_size,
                 seeds, alpha_ms, bandwidth_mbps, compute_ms, hidden, update_rule,
                 world_size=1) -> None:
    rule = update_rule or (dga_update if corrected else stale_update)
    check_config(algorithm, steps, lr, delay, local_steps, rule, schedule)
    positive_int("batch_size", batch_size, "pass the global batch size, e.g. batch_size=64.")
    if batch_size > N_TRAIN:
        raise ValueError(f"batch_size={batch_size} is more than the {N_TRAIN} training digits; "
                         "use e.g. batch_size=64.")
    if batch_size % world_size:
        raise ValueError(f"batch_size={batch_size} does not split evenly over "
                         f"world_size={world_size}; use a multiple of {world_size}.")
    positive_int("hidden", hidden, "pass the hidden width, e.g. hidden=128.")
    if seeds is not None and not seeds:
        raise ValueError("seeds=[] trains no model; pass at least one seed, or seeds=None.")
    positive_number("alpha_ms", alpha_ms, "pass the link latency in ms, e.g. alpha_ms=50.",
                    zero=True)
    positive_number("bandwidth_mbps", bandwidth_mbps,
                    "pass megabits per second, or math.inf for an unlimited link.", inf=True)
    positive_number("compute_ms", compute_ms, "pass the emulated step time in ms, or 0.",
                    zero=True)


@experiment("dga_train", summarize=_summarize)
@runtime.cpu_by_design(runtime.EMULATED)  # its averages cross the emulated link's gloo group
@preflight(_check_train)
def train(*, algorithm: str = "dga", steps: int = 300, delay: int = 0, corrected: bool = True,
          local_steps: int = 10, lr: float = 0.3, schedule: str = "cosine",
          batch_size: int = 64, seed: int = 0, seeds: list[int] | None = None,
          alpha_ms: float = 0.0, bandwidth_mbps: float = math.inf, compute_ms: float = 0.0,
          hidden: int = 128, update_rule: Callable | None = None, timeline: bool = False,
          return_params: bool = False, data=None, group=None) -> dict:
    """Train TinyMLP on digits on this rank with ``algorithm`` behind an emulated link.

    ``alpha_ms``/``bandwidth_mbps`` set the link (latency, megabits per second);
    ``compute_ms`` pads each step to an emulated device time; ``data`` is
    ``load_digits()`` passed in (else loaded here). Returns this rank's test
    accuracy, losses, seconds per step and (``timeline=True``) its recorded timeline.
    ``seeds=[...]`` trains one model per seed side by side (:func:`side_by_side`);
    ``accuracy`` is then their mean and ``accuracies`` the list.
    """
    _check_train(algorithm, steps, delay, corrected, local_steps, lr, schedule, batch_size,
                 seeds, alpha_ms, bandwidth_mbps, compute_ms, hidden, update_rule, world_size())
    dev = runtime.device()
    if update_rule is None:
        update_rule = dga_update if corrected else stale_update
    problems = [mlp_problem(rank(), world_size(), batch_size=batch_size, seed=s, hidden=hidden,
                            data=data, device=dev)
                for s in (seeds if seeds is not None else [seed])]
    grad_fn, w, accuracy_fn = side_by_side(problems)
    beta = bandwidth_mbps * 1e6 / 8
    with DelayedComm(alpha_ms / 1e3, beta, group=group) as comm:
        runtime.synchronize()
        dist.barrier(group=comm.group)  # start the clocks together
        t0 = time.perf_counter()
        out = run_worker(grad_fn, w, comm, algorithm=algorithm, steps=steps, lr=lr,
                         delay=delay, local_steps=local_steps, update_rule=update_rule,
                         compute_s=compute_ms / 1e3, schedule=schedule)
        runtime.synchronize()
        t_end = time.perf_counter()
    accuracies = accuracy_fn(w)
    result = _finish(out, t0, t_end, sum(accuracies) / len(accuracies), timeline)
    result["accuracies"] = accuracies
    if return_params:
        result["w"] = w
    return result


def _check_toy(algorithm, steps, delay, lr, local_steps, corrected, dim, update_rule) -> None:
    check_config(algorithm, steps, lr, delay, local_steps,
           update_rule or (dga_update if corrected else stale_update))
    positive_int("dim", dim, "pass the number of parameters, e.g. dim=8.")


@experiment("dga_toy")
@runtime.cpu_by_design(runtime.EMULATED)  # its averages cross the emulated link's gloo group
@preflight(_check_toy)
def toy_train(*, algorithm: str = "dga", steps: int = 12, delay: int = 2, lr: float = 0.1,
              local_steps: int = 3, corrected: bool = True, dim: int = 8,
              update_rule: Callable | None = None) -> dict:
    """The quadratic toy on this rank (no latency): final ``w`` plus every g and average."""
    _check_toy(algorithm, steps, delay, lr, local_steps, corrected, dim, update_rule)
    dev = runtime.device()
    if update_rule is None:
        update_rule = dga_update if corrected else stale_update
    w = torch.zeros(dim, device=dev)
    with DelayedComm() as comm:
        out = run_worker(quadratic_grad_fn(rank(), dim, device=dev), w, comm, algorithm=algorithm,
                         steps=steps, lr=lr, delay=delay, local_steps=local_steps,
                         update_rule=update_rule, keep_history=True)
    return {"w": w, "g": torch.stack(out["history"]["g"]),
            "avg": torch.stack(out["history"]["avg"]) if out["history"]["avg"]
            else torch.zeros(0, dim, device=dev)}


def _check_sweep(runs, world_size=1) -> None:
    if not runs:
        raise ValueError("runs=[] has nothing to train; pass a list of train() keyword dicts.")
    for cfg in runs:
        accepts("runs", train, (), cfg, "each run is a dict of train()'s keywords.")
        run_preflight(train, (), cfg, world_size)


@runtime.cpu_by_design(runtime.EMULATED)
@preflight(_check_sweep)
def sweep(*, runs: list[dict], data=None) -> list[dict]:
    """Run several :func:`train` configurations in one launch (one shared process group)."""
    _check_sweep(runs, world_size())
    group = dist.new_group(backend="gloo")
    data = load_digits() if data is None else data
    return [train(group=group, data=data, **cfg) for cfg in runs]
