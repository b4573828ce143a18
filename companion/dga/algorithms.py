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
workers in one loop.
"""
from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from ..data import digits_batch, load_digits
from ..experiments import experiment
from ..network.delayed import DelayedComm
from ..models import TinyMLP
from ..runtime import rank, world_size
from .lr import SCHEDULES, lr_at
from ..validation import (accepts, callable_arg, nonnegative_int, one_of, positive_int,
                         positive_number, preflight, run_preflight)

__all__ = ["ALGORITHMS", "dga_update", "stale_update", "run_worker", "simulate",
           "digits_split", "mlp_problem", "side_by_side", "quadratic_grad_fn", "train",
           "toy_train", "sweep", "overlap_fraction"]

ALGORITHMS = ("sync", "dga", "fedavg")
N_TRAIN = 1440  # divisible by common batch sizes; the other 357 digits are held out


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


def _check(algorithm, steps, lr, delay, local_steps, update_rule=dga_update,
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
    _check(algorithm, steps, lr, delay, local_steps, update_rule, schedule)
    in_flight: deque = deque()
    zeros = torch.zeros_like(w)
    steps_log, works, losses = [], [], []
    history = {"g": [], "avg": []}
    for i in range(steps):
        t_compute = time.perf_counter()
        g, loss = grad_fn(w, i)
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
    _check(algorithm, steps, lr, delay, local_steps, update_rule, schedule)
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


def digits_split(data=None):
    """``(train, test)`` digits tensors: 1440 training samples, 357 held out.

    ``data`` is ``load_digits()``'s result; pass it from the notebook so that the ranks
    need not import scikit-learn (seconds per rank on a busy 2-core machine).

    The split is a fixed random permutation: the file is ordered by writer, so its last
    rows would make a test set of unseen writers rather than unseen digits.
    """
    x, y = load_digits() if data is None else data
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    train, test = perm[:N_TRAIN], perm[N_TRAIN:]
    return (x[train], y[train]), (x[test], y[test])


def mlp_problem(rank_: int, world_size_: int, *, batch_size: int = 64, seed: int = 0,
                hidden: int = 128, data=None):
    """``(grad_fn, w0, accuracy_fn)`` for TinyMLP on this rank's shard of the digits batches."""
    positive_int("batch_size", batch_size, "pass the global batch size, e.g. batch_size=64.")
    positive_int("hidden", hidden, "pass the hidden width, e.g. hidden=128.")
    train_data, (x_test, y_test) = digits_split(data)
    model = TinyMLP(hidden=hidden, seed=seed)
    params = list(model.parameters())

    def grad_fn(w, step):
        vector_to_parameters(w, params)
        x, y = digits_batch(step, batch_size, rank_, world_size_, seed=seed, data=train_data)
        loss = F.cross_entropy(model(x), y)
        return parameters_to_vector(torch.autograd.grad(loss, params)), loss.item()

    def accuracy_fn(w):
        vector_to_parameters(w, params)
        with torch.no_grad():
            return (model(x_test).argmax(1) == y_test).float().mean().item()

    return grad_fn, parameters_to_vector(params).detach().clone(), accuracy_fn


def side_by_side(problems: list):
    """Several ``(grad_fn, w0, accuracy_fn)`` problems as one, on the concatenated vector.

    Every algorithm here updates elementwise (the all-reduce averages elementwise too),
    so this is exactly independent runs that share each message: the notebook trains
    its seeds this way, paying one all-reduce per step instead of one per seed.
    """
    sizes = [w0.numel() for _, w0, _ in problems]

    def grad_fn(w, step):
        outs = [fn(part, step) for (fn, _, _), part in zip(problems, w.split(sizes))]
        return torch.cat([g for g, _ in outs]), sum(loss for _, loss in outs) / len(outs)

    def accuracy_fn(w):
        return [acc(part) for (_, _, acc), part in zip(problems, w.split(sizes))]

    return grad_fn, torch.cat([w0 for _, w0, _ in problems]), accuracy_fn


def quadratic_grad_fn(rank_: int, dim: int = 8):
    """A deterministic toy: worker r minimises ``0.5 * sum(a_r * (w - c_r(step))**2)``."""
    nonnegative_int("rank_", rank_, "pass the worker's rank, e.g. 0.")
    positive_int("dim", dim, "pass the number of parameters, e.g. dim=8.")
    gen = torch.Generator().manual_seed(1234 + rank_)
    a = torch.rand(dim, generator=gen) + 0.5
    c = torch.randn(dim, generator=gen)

    def grad_fn(w, step):
        target = c * math.cos(0.3 * step)  # a moving target, so stale gradients matter
        return a * (w - target), float(0.5 * (a * (w - target) ** 2).sum())

    return grad_fn


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
    return (f"mean test accuracy over {len(results)} ranks: {100 * acc:.2f} %, "
            f"{1e3 * r['seconds_per_step']:.2f} ms per step")


def _check_train(algorithm, steps, delay, corrected, local_steps, lr, schedule, batch_size,
                 seeds, alpha_ms, bandwidth_mbps, compute_ms, hidden, update_rule,
                 world_size=1) -> None:
    rule = update_rule or (dga_update if corrected else stale_update)
    _check(algorithm, steps, lr, delay, local_steps, rule, schedule)
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
    if update_rule is None:
        update_rule = dga_update if corrected else stale_update
    problems = [mlp_problem(rank(), world_size(), batch_size=batch_size, seed=s, hidden=hidden,
                            data=data) for s in (seeds if seeds is not None else [seed])]
    grad_fn, w, accuracy_fn = side_by_side(problems)
    beta = bandwidth_mbps * 1e6 / 8
    with DelayedComm(alpha_ms / 1e3, beta, group=group) as comm:
        dist.barrier(group=comm.group)  # start the clocks together
        t0 = time.perf_counter()
        out = run_worker(grad_fn, w, comm, algorithm=algorithm, steps=steps, lr=lr,
                         delay=delay, local_steps=local_steps, update_rule=update_rule,
                         compute_s=compute_ms / 1e3, schedule=schedule)
        t_end = time.perf_counter()
    accuracies = accuracy_fn(w)
    result = _finish(out, t0, t_end, sum(accuracies) / len(accuracies), timeline)
    result["accuracies"] = accuracies
    if return_params:
        result["w"] = w
    return result


def _check_toy(algorithm, steps, delay, lr, local_steps, corrected, dim, update_rule) -> None:
    _check(algorithm, steps, lr, delay, local_steps,
           update_rule or (dga_update if corrected else stale_update))
    positive_int("dim", dim, "pass the number of parameters, e.g. dim=8.")


@experiment("dga_toy")
@preflight(_check_toy)
def toy_train(*, algorithm: str = "dga", steps: int = 12, delay: int = 2, lr: float = 0.1,
              local_steps: int = 3, corrected: bool = True, dim: int = 8,
              update_rule: Callable | None = None) -> dict:
    """The quadratic toy on this rank (no latency): final ``w`` plus every g and average."""
    _check_toy(algorithm, steps, delay, lr, local_steps, corrected, dim, update_rule)
    if update_rule is None:
        update_rule = dga_update if corrected else stale_update
    w = torch.zeros(dim)
    with DelayedComm() as comm:
        out = run_worker(quadratic_grad_fn(rank(), dim), w, comm, algorithm=algorithm,
                         steps=steps, lr=lr, delay=delay, local_steps=local_steps,
                         update_rule=update_rule, keep_history=True)
    return {"w": w, "g": torch.stack(out["history"]["g"]),
            "avg": torch.stack(out["history"]["avg"]) if out["history"]["avg"]
            else torch.zeros(0, dim)}


def _check_sweep(runs, world_size=1) -> None:
    if not runs:
        raise ValueError("runs=[] has nothing to train; pass a list of train() keyword dicts.")
    for cfg in runs:
        accepts("runs", train, (), cfg, "each run is a dict of train()'s keywords.")
        run_preflight(train, (), cfg, world_size)


@preflight(_check_sweep)
def sweep(*, runs: list[dict], data=None) -> list[dict]:
    """Run several :func:`train` configurations in one launch (one shared process group)."""
    _check_sweep(runs, world_size())
    group = dist.new_group(backend="gloo")
    data = load_digits() if data is None else data
    return [train(group=group, data=data, **cfg) for cfg in runs]
