"""Notebook 08's exercises (``notebooks/08_delayed_gradient_averaging.ipynb``): training
loops that communicate, under the lecture's latency story (L20 p.65-74).

Exercise ids are "08.<name>"; :func:`companion.learning.exercise` fetches them.

* ``08.sync-sgd`` (warm-up): synchronous SGD, one blocking all-reduce per step;
* ``08.dga-loop`` (core): Delayed Gradient Averaging, the all-reduce started at step ``i``
  waited for at step ``i + D``, with the correction term;
* ``08.fedavg`` (stretch): FedAvg / local SGD, one average of the weights per round.

Every attempt trains the same deterministic problem on 4 real ranks
(:func:`companion.dga.algorithms.quadratic_grad_fn`: each rank its own moving quadratic) and is
compared with the package's loop, :func:`companion.dga.algorithms.run_worker`, run on torch's own
non-blocking all-reduce (:class:`TorchLink`). Besides the final weights, the checker
records the *schedule*: in which step (counted by the calls to ``grad_fn``) each
all-reduce was started, and in which step it was waited for. The trainer's
``work.wait()`` calls (or ``work.get_future().wait()``) are matched to its non-blocking
all-reduces in the order they were started; a blocking all-reduce counts as waited for
at once. This is how "the all-reduce of step i is consumed at step i + D" is checked,
which the final weights alone cannot show (a blocking all-reduce whose result is kept
for D steps gives the same weights, and hides no latency).
"""
from __future__ import annotations

import inspect
import os
import sys

import torch
import torch.distributed as dist

from ..dga.algorithms import quadratic_grad_fn, run_worker
from .exercise import Exercise, register
from .patterns import all_of, counts, only

DIM = 8          # parameters of the quadratic toy
LR = 0.1
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_ALL_REDUCE = inspect.unwrap(dist.all_reduce).__code__
_FUTURE_WAIT = torch.futures.Future.wait.__code__


# ---- the package's loop on torch's non-blocking all-reduce ---------------------------
class _Handle:
    def __init__(self, tensor, work):
        self.tensor, self.work = tensor, work

    def wait(self):
        self.work.wait()
        return self.tensor


class TorchLink:
    """The ``comm`` :func:`companion.dga.algorithms.run_worker` expects, on torch's own
    ``dist.all_reduce(..., async_op=True)``: no emulated latency, every call watched."""

    def all_reduce(self, tensor, op=dist.ReduceOp.SUM, tag=None):
        return _Handle(tensor, dist.all_reduce(tensor, op=op, async_op=True))


def sync_reference(grad_fn, w, steps, lr):
    run_worker(grad_fn, w, TorchLink(), algorithm="sync", steps=steps, lr=lr)
    return w


def dga_reference(grad_fn, w, steps, lr, delay):
    run_worker(grad_fn, w, TorchLink(), algorithm="dga", steps=steps, lr=lr, delay=delay)
    return w


def fedavg_reference(grad_fn, w, steps, lr, local_steps):
    run_worker(grad_fn, w, TorchLink(), algorithm="fedavg", steps=steps, lr=lr,
               local_steps=local_steps)
    return w


# ---- the schedule: which step started each all-reduce, which step waited for it -----
def _ranges(steps: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2, 5"."""
    out, k = [], 0
    while k < len(steps):
        j = k
        while j + 1 < len(steps) and steps[j + 1] == steps[j] + 1:
            j += 1
        out.append(f"{steps[k]}" if j == k else f"{steps[k]}-{steps[j]}")
        k = j + 1
    return ", ".join(out) if out else "none"


def describe_schedule(starts: list[int], lags: list, tail: int = 0) -> str:
    """One line: the steps that started an all-reduce, and how many steps later each was
    waited for (the last ``tail`` ones, still in flight when training ends, not judged)."""
    judged = lags[:max(0, len(lags) - tail)]
    text = f"all-reduces in steps {_ranges(starts)}"
    if not judged:
        return text
    names = ["never" if x is None else "at once" if x == 0 else f"{x} steps later"
             for x in judged]
    if len(set(names)) == 1:
        return f"{text}; each waited for {names[0]}"
    return f"{text}; waited for: " + ", ".join(names)


def observe(candidate, grad_fn, w, steps, *rest, tail: int = 0) -> dict:
    """Run ``candidate(grad_fn, w, steps, *rest)`` and record its schedule.

    The step is the number of ``grad_fn`` calls so far minus one. The profile hook is
    chained in front of the checker's watcher, which keeps recording as before.
    """
    step = [-1]
    starts, asynchronous, waits, works = [], [], [], []

    def counted_grad_fn(w_, i):
        step[0] += 1
        return grad_fn(w_, i)

    watcher = sys.getprofile()

    def hook(frame, event, arg):
        if frame.f_code is _ALL_REDUCE:
            if event == "call":
                starts.append(step[0])
            elif event == "return":
                asynchronous.append(arg is not None)
                if arg is not None:
                    works.append(arg)
        elif (event == "c_call" and getattr(arg, "__name__", "") == "wait"
              and not frame.f_code.co_filename.startswith(_TORCH_DIR)):
            waits.append(step[0])   # a Work's wait(), called by the trainer itself
        elif (event == "call" and frame.f_code is _FUTURE_WAIT and frame.f_back is not None
              and not frame.f_back.f_code.co_filename.startswith(_TORCH_DIR)):
            waits.append(step[0])   # work.get_future().wait()
        if watcher is not None:
            watcher(frame, event, arg)

    sys.setprofile(hook)
    try:
        out = candidate(counted_grad_fn, w, steps, *rest)
    finally:
        sys.setprofile(watcher)
    for work in works:          # messages still in flight: let them land, unjudged
        work.wait()
    lags, k = [], 0
    for start, is_async in zip(starts, asynchronous):
        if not is_async:
            lags.append(0)
        else:
            lags.append(waits[k] - start if k < len(waits) else None)
            k += 1
    weights = w if out is None else out
    return {"schedule": describe_schedule(starts, lags, tail), "w": weights}


def _sync_adapter(candidate, grad_fn, w, steps, lr):
    return observe(candidate, grad_fn, w, steps, lr)


def _dga_adapter(candidate, grad_fn, w, steps, lr, delay):
    return observe(candidate, grad_fn, w, steps, lr, delay, tail=delay)


def _fedavg_adapter(candidate, grad_fn, w, steps, lr, local_steps):
    return observe(candidate, grad_fn, w, steps, lr, local_steps)


# ---- inputs ---------------------------------------------------------------------------
SYNC_STEPS, DGA_STEPS, DGA_DELAY, FEDAVG_STEPS, FEDAVG_K = 8, 12, 3, 12, 4


def _sync_inputs(rank, world_size):
    return (quadratic_grad_fn(rank, DIM), torch.zeros(DIM), SYNC_STEPS, LR)


def _dga_inputs(rank, world_size):
    return (quadratic_grad_fn(rank, DIM), torch.zeros(DIM), DGA_STEPS, LR, DGA_DELAY)


def _fedavg_inputs(rank, world_size):
    return (quadratic_grad_fn(rank, DIM), torch.zeros(DIM), FEDAVG_STEPS, LR, FEDAVG_K)


_PACKAGE_LOOP = {
    "companion.dga.algorithms.run_worker": "it is the package's training loop, which does this for you",
    "companion.dga.algorithms.simulate": "it is the package's single-process version of these loops",
}


def _solution(name: str) -> dict:
    return {f"companion.learning.nb08.{name}": "it is the package's solution to this exercise"}

_CONTEXT = "import collections\nimport torch\nimport torch.distributed as dist\nimport companion"
# Float32 rounding only: a student may add the same three terms in another order.
_RTOL, _ATOL = 1e-5, 1e-6

SYNC_SGD = register(Exercise(
    id="08.sync-sgd", level="warm-up", title="synchronous SGD, one all-reduce per step",
    student_name="my_sync_sgd",
    task="Write `my_sync_sgd(grad_fn, w, steps, lr)`: for each step `i`, compute this "
         "rank's gradient with `g, loss = grad_fn(w, i)`, average it over all ranks, and "
         "update the weights in place, `w -= lr * average`; return `w`. Every rank holds "
         "the same `w` but its own data, so every rank must end with the same weights.",
    hints=("Synchronous means every step waits until it has everyone's gradient before it "
           "updates: one collective per step, finished within that step.",
           "The collective that leaves the sum of all ranks' tensors on every rank is an "
           "all-reduce; an average is that sum divided by the number of ranks.",
           "`dist.all_reduce(t, op=dist.ReduceOp.AVG)` averages `t` in place on every "
           "rank (or use the default SUM and divide by `dist.get_world_size()`)."),
    inputs=_sync_inputs, reference=sync_reference, adapter=_sync_adapter,
    forbidden={**_PACKAGE_LOOP, **_solution("sync_reference"),
               "torch.nn.parallel.DistributedDataParallel":
               "DDP would average the gradients for you"},
    pattern=all_of(only("all_reduce", why="the gradients are averaged by all-reduce"),
                   counts({"all_reduce": SYNC_STEPS}, why=f"one per step, {SYNC_STEPS} steps")),
    rtol=_RTOL, atol=_ATOL, context=_CONTEXT,
))

DGA = register(Exercise(
    id="08.dga-loop", level="core", title="Delayed Gradient Averaging on real ranks",
    student_name="my_dga",
    task="Write `my_dga(grad_fn, w, steps, lr, delay)`, the lecture's DGA loop (L20 p.72): "
         "at step `i` compute `g, loss = grad_fn(w, i)`, **start** a non-blocking "
         "all-reduce (average) of a copy of `g`, and do not wait for it. Once `i >= delay`, "
         "wait for the all-reduce started at step `i - delay` and update "
         "`w -= lr * (g_i - g_{i-D} + avg_{i-D})`; before that, nothing has arrived and the "
         "update is the local `w -= lr * g_i`. Return `w`. Messages still in flight at the "
         "end are never applied.",
    hints=("Each step sends one message and (from step D on) receives one that was sent D "
           "steps earlier: keep the messages in flight in a first-in, first-out queue, with "
           "the local gradient each one was made from.",
           "torch's collectives start without waiting when called with `async_op=True`; "
           "they return a handle whose `wait()` blocks until the result is in the tensor.",
           "All-reduce a clone of the gradient, not the gradient itself: the correction "
           "needs this rank's own g_{i-D}, and an in-place all-reduce overwrites it with "
           "the average.",
           "Before step D the pseudocode's missing G[i-D] and avg_g are zeros, so the update "
           "is just the local gradient; with D = 0 your loop must be synchronous SGD."),
    inputs=_dga_inputs, reference=dga_reference, adapter=_dga_adapter,
    forbidden={**_PACKAGE_LOOP, **_solution("dga_reference"),
               "companion.dga.algorithms.dga_update": "it is the package's correction term: write the "
               "three terms yourself"},
    pattern=all_of(only("all_reduce", why="the gradients are averaged by all-reduce"),
                   counts({"all_reduce": DGA_STEPS},
                          why=f"one per step, {DGA_STEPS} steps, each waited for later")),
    rtol=_RTOL, atol=_ATOL, context=_CONTEXT,
))

FEDAVG = register(Exercise(
    id="08.fedavg", level="stretch", title="local steps, then one average of the weights per round",
    student_name="my_fedavg",
    task="Write `my_fedavg(grad_fn, w, steps, lr, local_steps)`: every step takes a purely "
         "local SGD step `w -= lr * g` with `g, loss = grad_fn(w, i)`; after every "
         "`local_steps`-th step (steps K-1, 2K-1, ...) the ranks replace their weights by "
         "the average of all ranks' weights. Return `w`. One round of K steps costs one "
         "all-reduce, not K.",
    hints=("Between averages the ranks do not talk at all; what is averaged is the model, "
           "not a gradient.",
           "Count the steps from 0: the first average comes after K local steps, that is "
           "at the end of step K - 1.",
           "Average the weights in place with one all-reduce (op AVG), or all-reduce a copy "
           "and copy it back into `w`."),
    inputs=_fedavg_inputs, reference=fedavg_reference, adapter=_fedavg_adapter,
    forbidden={**_PACKAGE_LOOP, **_solution("fedavg_reference"),
               "torch.distributed.algorithms.model_averaging.utils.average_parameters":
               "it is torch's model averaging, which does the round's average for you",
               "torch.distributed.algorithms.model_averaging.averagers."
               "PeriodicModelAverager": "it is torch's FedAvg / local SGD averager"},
    pattern=all_of(only("all_reduce", why="the weights are averaged by all-reduce"),
                   counts({"all_reduce": FEDAVG_STEPS // FEDAVG_K},
                          why=f"one per round of {FEDAVG_K} steps, not one per step")),
    rtol=_RTOL, atol=_ATOL, context=_CONTEXT,
))
