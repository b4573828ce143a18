"""Checking a schedule a student wrote: first by the simulator, then on real ranks.

Used by the exercise in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``).
The student writes ``fn(stages, microbatches) -> list of op lists`` (one list per
stage, of :class:`~companion.pipeline.Op`). :func:`check_schedule`

1. simulates it: every op present once, no deadlock, and (for the 1F1B exercise) the
   same bubble as the closed form and no stage holding more than 1F1B's activations;
2. runs it on ``stages`` real ranks with the executor and compares gradients and
   updated parameters with the built-in schedule's, exactly (the executor sums each
   micro-batch's gradient in micro-batch order, so any valid schedule gives the same bits).

It prints a verdict and returns a bool; it never raises for wrong student code.
"""
from __future__ import annotations

import functools

from ..exercises import check
from .executor import run_pipeline
from .schedules import Schedule, make_schedule
from .simulate import bubble_fraction, simulate
from ..validation import callable_arg

__all__ = ["check_schedule"]


def _student_rank(fn, stages, microbatches, batch):
    ops = fn(stages, microbatches)
    sched = Schedule("yours", stages, microbatches, tuple(tuple(o) for o in ops))
    out = run_pipeline(schedule=sched, batch=batch, batch_size=len(batch[1]))
    return {"grads": out["grads"], "params": out["params"]}


def _reference_rank(name, stages, microbatches, batch):
    out = run_pipeline(schedule=name, microbatches=microbatches, batch=batch,
                       batch_size=len(batch[1]))
    return {"grads": out["grads"], "params": out["params"]}


def check_schedule(fn, stages: int = 4, microbatches: int = 8, target: str = "1f1b",
                   batch=None) -> bool:
    """Check ``fn(stages, microbatches)`` against the built-in ``target`` schedule."""
    # The notebook's arguments, checked before the student's code runs: a typo in the
    # target must not read as a verdict on the student's schedule.
    callable_arg("fn", fn, "pass the schedule function you wrote (no parentheses).")
    make_schedule(target, stages, microbatches)
    try:
        ops = fn(stages, microbatches)
    except NotImplementedError:
        print("… not implemented yet: replace the `raise NotImplementedError` with your code.\n"
              "Hint: stage s runs p-1-s forwards, then alternates one F and one B, then "
              "finishes the remaining Bs.")
        return False
    try:
        sched = Schedule("yours", stages, microbatches, tuple(tuple(o) for o in ops))
        timeline = simulate(sched)
    except (ValueError, TypeError) as exc:
        print(f"✗ the simulator rejects the schedule: {exc}")
        return False
    want = bubble_fraction(stages, microbatches, target)
    ref_peak = simulate(make_schedule(target, stages, microbatches)).peak_activations()
    print(f"simulated: bubble {timeline.bubble_fraction:.1%} (closed form for {target}: "
          f"{want:.1%}), peak activations per stage {timeline.peak_activations()} "
          f"({target}: {ref_peak})")
    if abs(timeline.bubble_fraction - want) > 1e-9:
        print(f"✗ the bubble differs from {target}'s; look at the timeline: "
              "simulate(Schedule('yours', p, m, ops)) and draw it.")
        return False
    if any(a > b for a, b in zip(timeline.peak_activations(), ref_peak)):
        print(f"✗ a stage holds more activations than {target} would: start the backward "
              "passes earlier.")
        return False
    if batch is None:
        from ..data import digits_batch
        batch = digits_batch(0, 32)
    print(f"running it on {stages} real ranks ...")
    # exercises.check passes the same arguments to both functions; bind them first.
    student = functools.partial(_student_rank, fn, stages, microbatches, batch)
    reference = functools.partial(_reference_rank, target, stages, microbatches, batch)
    return check(student, reference, world_size=stages,
                 hint="the simulator accepted it, so compare your op lists with "
                      f"companion.pipeline.make_schedule('{target}', p, m).ops")
