"""Notebook 08's exercises (``notebooks/08_delayed_gradient_averaging.ipynb``): training
loops that communicate, under the lecture's latency story (L20 p.65-74).

Exercise ids are "08.<name>"; :func:`companion.learning.exercise` fetches them.

* ``08.sync-sgd`` (warm-up, implement): synchronous SGD, one blocking all-reduce per step;
* ``08.dga-loop`` (core, diagnose): repair a given DGA loop that runs but is not DGA;
* ``08.fedavg`` (stretch, implement): FedAvg that does not stop to wait: a round's
  average of the weights lands a round later, replacing the weights that were sent and
  keeping the progress made since (DGA's bookkeeping on weights; not printed above it).

Every attempt trains the same deterministic problem on 4 real ranks
(:func:`companion.dga.algorithms.quadratic_grad_fn`: each rank its own moving quadratic)
against the package's loops on torch's own non-blocking all-reduce (:class:`TorchLink`).
Besides the final weights, the checker records the *schedule* (:func:`observe`): in
which step, counted by the calls to ``grad_fn``, each all-reduce was started and waited
for. The weights alone cannot show it: a blocking all-reduce whose result is kept for D
steps gives the same weights, and hides no latency.
"""
from __future__ import annotations

import itertools
import os
import sys
import types

from unittest import mock

import torch
import torch.distributed as dist

from ..dga.algorithms import quadratic_grad_fn, run_worker
from .exercise import Exercise, register
from .patterns import all_of, counts, only

DIM = 8          # parameters of the quadratic toy
LR = 0.1
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_WORK_WAIT, _FUTURE_WAIT = dist.Work.wait, torch._C.Future.wait


# ---- the package's loop on torch's non-blocking all-reduce ---------------------------
class TorchLink:
    """The ``comm`` :func:`companion.dga.algorithms.run_worker` expects, on torch's own
    ``dist.all_reduce(..., async_op=True)``: no emulated latency, every call watched.
    Its handle's ``wait()`` returns the averaged tensor, as DelayedComm's does."""

    def all_reduce(self, tensor, op=dist.ReduceOp.SUM, tag=None):
        work = dist.all_reduce(tensor, op=op, async_op=True)
        return types.SimpleNamespace(wait=lambda: (work.wait(), tensor)[1])


def sync_reference(grad_fn, w, steps, lr):
    run_worker(grad_fn, w, TorchLink(), algorithm="sync", steps=steps, lr=lr)
    return w


def dga_reference(grad_fn, w, steps, lr, delay):
    run_worker(grad_fn, w, TorchLink(), algorithm="dga", steps=steps, lr=lr, delay=delay)
    return w


def delayed_fedavg_reference(grad_fn, w, steps, lr, local_steps):
    """FedAvg whose round average lands a round late, replacing the weights sent."""
    pending = None
    for i in range(steps):
        g, _loss = grad_fn(w, i)
        w -= lr * g
        if (i + 1) % local_steps:
            continue
        if pending is not None:
            sent, average, work = pending
            work.wait()
            w += average - sent
        sent, average = w.clone(), w.clone()
        pending = (sent, average, dist.all_reduce(average, op=dist.ReduceOp.AVG,
                                                  async_op=True))
    return w


# ---- the schedule: which step started each all-reduce, which step waited for it -----
def _ranges(steps: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2, 5"."""
    runs = [[x for _i, x in run] for _d, run in
            itertools.groupby(enumerate(steps), lambda pair: pair[1] - pair[0])]
    return ", ".join(f"{r[0]}" if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs) or "none"


def describe_schedule(starts: list[int], lags: list, tail: int = 0) -> str:
    """One line: the steps that started an all-reduce, and how many steps later each was
    waited for (the last ``tail`` ones, still in flight when training ends, not judged);
    a run of equal lags is named once, with the steps that started it."""
    judged = lags[:max(0, len(lags) - tail)]
    text = f"all-reduces in steps {_ranges(starts)}"
    names = ["never" if x is None else "at once" if x == 0 else f"{x} steps later"
             for x in judged]
    if len(set(names)) <= 1:
        return text + (f"; each waited for {names[0]}" if names else "")
    runs, k = [], 0
    for name, group in itertools.groupby(names):
        n = len(list(group))
        runs.append(name if n == 1 else f"{name} (steps {_ranges(starts[k:k + n])})")
        k += n
    return f"{text}; waited for: " + ", ".join(runs)


def observe(candidate, grad_fn, w, steps, *rest, tail: int = 0) -> dict:
    """Run ``candidate(grad_fn, w, steps, *rest)`` and record its schedule.

    The step is the number of ``grad_fn`` calls so far minus one. For the run, the
    process group's ``allreduce`` (which every ``dist.all_reduce`` reaches, however it
    was imported), ``Work.wait`` and ``Future.wait`` are wrapped; the profile hook is
    the checker's watcher's. A handle's ``wait()`` is matched to that handle's
    all-reduce, so waiting for the wrong message shows (a blocking all-reduce waits at
    once, inside torch); a future's ``wait()`` to the oldest one not yet waited for.
    """
    step = [-1]
    starts, waited, works = [], [], {}   # works: id(handle) -> (index, handle)
    group_type = type(dist.distributed_c10d._get_default_group())
    allreduce_of_group = group_type.allreduce

    def counted_grad_fn(w_, i):
        step[0] += 1
        return grad_fn(w_, i)

    def mark(k):
        if k is not None and waited[k] is None:
            waited[k] = step[0]

    def allreduce(group, *args, **kwargs):
        starts.append(step[0]), waited.append(None)
        work = allreduce_of_group(group, *args, **kwargs)
        works[id(work)] = (len(starts) - 1, work)
        return work

    def work_wait(work, *args, **kwargs):
        mark(works.get(id(work), (None,))[0])
        return _WORK_WAIT(work, *args, **kwargs)

    def future_wait(future, *args, **kwargs):
        if not sys._getframe(1).f_code.co_filename.startswith(_TORCH_DIR):
            mark(min((k for k, _h in works.values() if waited[k] is None), default=None))
        return _FUTURE_WAIT(future, *args, **kwargs)

    with mock.patch.object(group_type, "allreduce", allreduce), mock.patch.object(dist.Work, "wait", work_wait), \
            mock.patch.object(torch._C.Future, "wait", future_wait):
        out = candidate(counted_grad_fn, w, steps, *rest)
    for _k, work in works.values():   # messages still in flight: let them land, unjudged
        work.wait()
    lags = [None if end is None else end - start for start, end in zip(starts, waited)]
    weights = w if out is None else out
    return {"schedule": describe_schedule(starts, lags, tail), "w": weights}


def _sync_adapter(candidate, grad_fn, w, steps, lr):
    return observe(candidate, grad_fn, w, steps, lr)


def _dga_adapter(candidate, grad_fn, w, steps, lr, delay):
    return observe(candidate, grad_fn, w, steps, lr, delay, tail=delay)


def _fedavg_adapter(candidate, grad_fn, w, steps, lr, local_steps):
    # The last round's average is still in flight when training ends: not judged.
    return observe(candidate, grad_fn, w, steps, lr, local_steps, tail=1)


# ---- inputs ---------------------------------------------------------------------------
SYNC_STEPS, DGA_STEPS, DGA_DELAY, FEDAVG_STEPS, FEDAVG_K = 8, 12, 3, 12, 4


def _inputs(steps, *extra):
    """Every rank's arguments: its own quadratic, w = 0, the steps, LR and ``extra``."""
    return lambda rank, world_size: (quadratic_grad_fn(rank, DIM), torch.zeros(DIM), steps,
                                     LR, *extra)


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
    id="08.sync-sgd", level="warm-up", kind="implement",
    title="synchronous SGD, one all-reduce per step",
    student_name="my_sync_sgd",
    task="Write `my_sync_sgd(grad_fn, w, steps, lr)`: for each step `i`, compute this "
         "rank's gradient with `g, loss = grad_fn(w, i)`, average it over all ranks, and "
         "update the weights in place, `w -= lr * average`; return `w`. Every rank holds "
         "the same `w` but its own data, so every rank must end with the same weights.",
    hints=("Synchronous means every step waits until it has everyone's gradient before it "
           "updates: one collective per step, finished within that step.",
           "The collective that leaves the sum of all ranks' tensors on every rank is an "
           "all-reduce; an average is that sum divided by the number of ranks.",
           "An all-reduce works in place and, unless told otherwise, adds. Decide whether "
           "your update needs the sum or the mean, and ask `dist` how many ranks there "
           "are rather than typing their number."),
    inputs=_inputs(SYNC_STEPS), reference=sync_reference, adapter=_sync_adapter,
    forbidden={**_PACKAGE_LOOP, **_solution("sync_reference"),
               "torch.nn.parallel.DistributedDataParallel":
               "DDP would average the gradients for you"},
    pattern=all_of(only("all_reduce", why="the gradients are averaged by all-reduce"),
                   counts({"all_reduce": SYNC_STEPS}, why=f"one per step, {SYNC_STEPS} steps")),
    rtol=_RTOL, atol=_ATOL, context=_CONTEXT,
))

DGA = register(Exercise(
    id="08.dga-loop", level="core", kind="diagnose",
    title="repair a DGA loop that runs but is not DGA",
    student_name="my_dga",
    task="The notebook defines `broken_dga(grad_fn, w, steps, lr, delay)`, a colleague's "
         "Delayed Gradient Averaging loop. It runs without an error, yet it is not DGA. "
         "Check it, find what is wrong, and write `my_dga` with the same arguments, the "
         "repaired loop. It must do what the lecture's pseudocode (L20 p.72) says: at "
         "step `i`, `g, loss = grad_fn(w, i)`, then start a non-blocking average of this "
         "gradient and do not wait for it; from step `delay` on, wait for the average "
         "started at step `i - delay` and step along `g_i - g_{i-D} + avg_{i-D}`; before "
         "that, the missing terms are zeros. Return `w`. The checker compares the final "
         "weights on 4 real ranks and the schedule: in which step each all-reduce was "
         "started and in which step it was waited for.",
    hints=("Check the broken loop as it is, `dga_loop.check(broken_dga)`, and read the "
           "schedule it reports: which step waits for which message, and which messages "
           "are never waited for? Compare with `recv(id=i - D)`.",
           "Step i must receive the message that has been in flight for D steps: the oldest "
           "one in the queue. Which one does broken_dga take?",
           "Follow one gradient through the loop: once its all-reduce has completed, what "
           "do the tensors stored with it hold? The correction needs this rank's own "
           "g_{i-D} as well as the average.",
           "Before step D nothing has arrived. Compare what broken_dga does in those steps "
           "with what the lecture's update does when its missing terms are zeros."),
    inputs=_inputs(DGA_STEPS, DGA_DELAY), reference=dga_reference, adapter=_dga_adapter,
    forbidden={**_PACKAGE_LOOP, **_solution("dga_reference"),
               "companion.dga.algorithms.dga_update": "it is the package's correction term: write the "
               "three terms yourself"},
    pattern=all_of(only("all_reduce", why="the gradients are averaged by all-reduce"),
                   counts({"all_reduce": DGA_STEPS},
                          why=f"one per step, {DGA_STEPS} steps, each waited for later")),
    rtol=_RTOL, atol=_ATOL, context=_CONTEXT,
))

FEDAVG = register(Exercise(
    id="08.fedavg", level="stretch", kind="implement",
    title="FedAvg that does not stop to wait",
    student_name="my_fedavg",
    task="FedAvg still stops once per round to wait for the average of the weights. Write "
         "`my_fedavg(grad_fn, w, steps, lr, local_steps)` that never stops. Every step is "
         "a local SGD step, `w -= lr * g` with `g, loss = grad_fn(w, i)`. At the end of "
         "each round of K = `local_steps` steps (steps K-1, 2K-1, ...): first, if a "
         "previous round started an average, wait for it now, one round after it was "
         "started, and fold it in: it replaces the weights this rank sent then, while the "
         "progress this rank made since is kept. Then start a non-blocking average of "
         "the weights as they are now and go on without waiting. Every round ends by "
         "starting one, the last included (it lands after training ends and is never "
         "applied). Return `w`. The checker compares the final weights on 4 real ranks "
         "and the schedule of the all-reduces.",
    hints=("Plain FedAvg waits because the next round starts from the average. Here the "
           "next round starts from this rank's own weights, and the average catches up "
           "one round later. What must you keep so that it can?",
           "DGA's correction term swaps this rank's stale contribution for the global one "
           "when the message lands. Here the contribution is the weights this rank sent: "
           "keep a copy of them beside the buffer being averaged.",
           "Between sending and receiving, the weights moved by one round of local steps. "
           "Write the weights at the landing as (what was sent) + (that movement), then "
           "swap only the first term.",
           f"With {FEDAVG_STEPS} steps and K = {FEDAVG_K}, all-reduces start in steps "
           f"{_ranges(list(range(FEDAVG_K - 1, FEDAVG_STEPS, FEDAVG_K)))}; each but the last "
           f"is waited for {FEDAVG_K} steps later, and the last lands after training ends."),
    inputs=_inputs(FEDAVG_STEPS, FEDAVG_K), reference=delayed_fedavg_reference, adapter=_fedavg_adapter,
    forbidden={**_PACKAGE_LOOP, **_solution("delayed_fedavg_reference"),
               "torch.distributed.algorithms.model_averaging.utils.average_parameters":
               "it is torch's model averaging, which does the round's average for you",
               "torch.distributed.algorithms.model_averaging.averagers."
               "PeriodicModelAverager": "it is torch's FedAvg / local SGD averager"},
    pattern=all_of(only("all_reduce", why="the weights are averaged by all-reduce"),
                   counts({"all_reduce": FEDAVG_STEPS // FEDAVG_K},
                          why=f"one per round of {FEDAVG_K} steps, not one per step")),
    rtol=_RTOL, atol=_ATOL, context=_CONTEXT,
))
