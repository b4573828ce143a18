"""Checking a pipeline plan or a schedule a student wrote: first by the closed forms or
the simulator, then on real ranks.

Used by notebook 04's exercises (``notebooks/04_pipeline_parallelism.ipynb``,
registered in :mod:`companion.learning.nb04`). A schedule exercise's student writes
``fn(p, m) -> list of op lists`` (one list per stage, of :class:`~companion.pipeline.Op`).
Each exercise is a :class:`companion.learning.Exercise` built from the pieces here:

* :func:`precheck_schedule`, run in the notebook before any rank starts, simulates the
  student's schedule at a few sizes: every op once, no deadlock, a bubble no larger
  than the target schedule's closed form and no stage holding more micro-batches'
  activations than the target does. A wrong schedule is explained with the stage's own
  op list.
* :func:`run_schedule` (the exercise's adapter, on every rank) runs the schedule with
  the real executor, :func:`~companion.pipeline.run_pipeline`, and returns the
  gradients and updated parameters. The executor sums each micro-batch's gradient in
  micro-batch order, so any valid schedule gives the built-in schedule's bits exactly.
* :func:`neighbour_messages` is the communication pattern: each stage sends one
  activation downstream and one gradient upstream per micro-batch, point to point, to
  its neighbours only.
* :func:`precheck_plan` and :func:`run_plan` judge a plan ``(schedule, m)`` for the
  decision exercise: best by the closed forms at every size of ``PLAN_CASES``, then run,
  its measured peak within the budget on every rank.

A student checks a schedule with ``exercise("04.one-f-one-b").check(my_1f1b)``.
"""
from __future__ import annotations

import torch

from ..pipeline.ops import Op, Schedule
from ..pipeline.tinymlp import run_pipeline
from ..pipeline.simulate import simulate
from .feedback import reworded, say

# Pieces of notebook 04's exercises: companion.learning.nb04 imports them; students call
# exercise("04.one-f-one-b").check(...), so nothing here is public API.
__all__: list[str] = []

# The exercises' real-rank run: 4 stages (one per rank), 8 micro-batches of 4 samples.
STAGES, MICROBATCHES, BATCH_SIZE, HIDDEN = 4, 8, 32, 64


def exercise_inputs(rank: int = 0, world_size: int = STAGES, split: bool = False) -> tuple:
    """The exercises' inputs on every rank: ``(stages, microbatches, batch, split)``; the
    batch is 32 fixed random 64-feature samples with labels (no data set to load), and
    ``split`` says whether the schedule splits its backward into B and W."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH_SIZE, 64, generator=g)
    y = torch.randint(0, 10, (BATCH_SIZE,), generator=g)
    return (world_size, MICROBATCHES, (x, y), split)


def exercise_inputs_split(rank: int = 0, world_size: int = STAGES) -> tuple:
    """:func:`exercise_inputs` for a schedule with split backward (ZB-H1)."""
    return exercise_inputs(rank, world_size, split=True)


def exercise_inputs_v(rank: int = 0, world_size: int = STAGES) -> tuple:
    """:func:`exercise_inputs` for a split-backward schedule with two chunks per rank in
    the V layout (ZB-V): ``split`` is the string "v"."""
    return exercise_inputs(rank, world_size, split="v")


def _shown(ops, limit: int = 14) -> str:
    ops = list(ops)
    text = ", ".join(repr(o) for o in ops[:limit])
    return f"[{text}{', ...' if len(ops) > limit else ''}]"


def as_schedule(ops, p: int, m: int, split=False) -> Schedule:
    """The student's return value as a validated :class:`Schedule` (ValueError says what
    is wrong with it). ``split="v"``: split backward, two chunks per rank, V layout."""
    if isinstance(ops, Schedule):
        ops = ops.ops
    if isinstance(ops, (list, tuple)) and ops and all(isinstance(o, Op) for o in ops):
        raise ValueError(f"it returned one flat list of {len(ops)} ops; return one list "
                         f"per stage ({p} lists for p={p}), even when they are alike.")
    if not isinstance(ops, (list, tuple)) or not all(isinstance(o, (list, tuple)) for o in ops):
        raise ValueError(f"it returned {type(ops).__name__} {ops!r:.60}; return a list "
                         f"with one list of ops per stage ({p} lists for p={p}).")
    chunks, layout = (2, "v") if split == "v" else (1, "loop")
    return Schedule("yours", p, m, tuple(tuple(o) for o in ops), chunks, bool(split),
                    layout).validate()


def precheck_schedule(candidate, target: str, sizes, bubble, peaks, split=False) -> str | None:
    """Simulate ``candidate(p, m)`` at each ``(p, m)`` in ``sizes``; None when it is as
    good as ``target``, whose closed forms are ``bubble(p, m)`` and ``peaks(p, m)``
    (micro-batches held per stage). Runs under the exercise's watcher, so it calls no
    schedule builder of the package."""
    from .feedback import defined_at
    where = defined_at(candidate)
    for p, m in sizes:
        try:
            sched = as_schedule(candidate(p, m), p, m, split)
            timeline = simulate(sched)
        except ValueError as exc:
            return f"at p={p}, m={m} the simulator rejects your schedule: {exc}{where}"
        want_peaks, got_peaks = peaks(p, m), timeline.peak_activations()
        for s, (got, want) in enumerate(zip(got_peaks, want_peaks)):
            if got > want + 1e-9:
                return (f"at p={p}, m={m} stage {s} holds {got:g} micro-batches' activations "
                        f"at once; {target} holds at most {want:g} there. Its ops: "
                        f"{_shown(sched.ops[s])}. Free activations sooner: run each "
                        f"{'W' if split else 'backward'} as soon as it can run.{where}")
        want = bubble(p, m)
        if timeline.bubble_fraction > want + 1e-9:
            name = getattr(candidate, "__name__", "your_function")
            flag = (", chunks=2, split_backward=True, layout='v'" if split == "v" else
                    ", split_backward=True" if split else "")
            return (f"at p={p}, m={m} your schedule idles {timeline.bubble_fraction:.1%} of "
                    f"the time; {target} idles {want:.1%}. Draw it and look for the grey "
                    f"gaps: draw_timeline(plt.gca(), simulate(Schedule('mine', {p}, {m}, "
                    f"{name}({p}, {m}){flag}))).{where}")
    return None


def run_schedule(candidate, p: int, m: int, batch, split=False) -> dict:
    """The exercise's adapter, on every rank: run ``candidate(p, m)`` with the real
    executor; ``{"grads", "params"}`` of this rank's stage after one SGD step."""
    sched = as_schedule(candidate(p, m), p, m, split)
    out = run_pipeline(schedule=sched, batch=batch, batch_size=len(batch[1]), hidden=HIDDEN)
    return {"grads": out["grads"], "params": out["params"]}


def neighbour_messages(microbatches: int = MICROBATCHES,
                       nbytes: int = BATCH_SIZE // MICROBATCHES * HIDDEN * 4, chunks: int = 1):
    """Pattern: stage s exchanges, per micro-batch, one activation with s+1 and one
    gradient with s-1 (a send and a recv each way, ``nbytes`` each: one micro-batch of
    float32 activations); nothing else but the executor's two barriers. With ``chunks=2``
    in a V (ZB-V) each neighbour pair carries both chunks' messages, two per micro-batch
    each way (the turn of the V on the last rank stays in memory)."""
    from .patterns import per_rank
    from .watch import P2P

    def check(rank, world_size, calls):
        other = sorted({c.name for c in calls} - P2P - {"barrier"})
        if other:
            return (f"it called {', '.join(other)}; pipeline stages talk only point to "
                    "point, to their neighbours")
        stray = sorted({c.peer for c in calls if c.name in P2P} - {rank - 1, rank + 1})
        if stray:
            return f"it exchanged messages with rank(s) {stray}, which are not its neighbours"
        for peer, what in ((rank + 1, "activations to / gradients from"),
                           (rank - 1, "gradients to / activations from")):
            want = chunks * microbatches if 0 <= peer < world_size else 0
            for names in (("send", "isend"), ("recv", "irecv")):
                got = sum(1 for c in calls if c.name in names and c.peer == peer)
                if got != want:
                    per = "micro-batch and chunk" if chunks > 1 else "micro-batch"
                    return (f"it made {got} {names[0]}s with rank {peer}; a stage exchanges "
                            f"one message per {per} ({want}) with each neighbour "
                            f"({what} rank {peer})")
        sizes = {c.bytes for c in calls if c.name in P2P}
        if sizes - {nbytes}:
            return (f"messages of {sorted(sizes)} bytes; each should carry one "
                    f"micro-batch's activation or gradient, {nbytes} bytes")
        return None
    return per_rank(check)



# ---- 04.micro-batches: a plan judged by the closed forms, then run -------------------
# (p, batch size, target bubble, activation budget per stage in samples). The first is
# also run on the ranks; together they cover each way a plan can be forced or impossible:
# memory forces more micro-batches than the bubble needs (0, 2, 5), the bubble forces
# them (1, where GPipe fits too; 4, where only 1F1B does), no divisor of the batch meets
# the target (3), or no plan fits the memory at all (6). No target sits exactly on a
# bubble value, so a closed form evaluated in floating point cannot land on the wrong
# side of it.
PLAN_CASES = ((4, 32, 0.3, 12), (4, 48, 0.15, 64), (8, 64, 0.5, 20), (4, 16, 0.05, 100),
              (2, 12, 0.23, 6), (4, 32, 0.3, 7), (4, 32, 0.9, 3))
PLAN_SCHEDULES = ("gpipe", "1f1b")


def plan_inputs(rank: int = 0, world_size: int = STAGES) -> tuple:
    """The real-rank instance: ``(p, batch size, target, budget, batch)`` (PLAN_CASES[0])."""
    p, batch_size, target, budget = PLAN_CASES[0]
    return (world_size, batch_size, target, budget, exercise_inputs(rank, world_size)[2])


def held_samples(schedule: str, p: int, batch_size: int, m: int) -> float:
    """Samples' activations the busiest stage holds at once: micro-batches times their size."""
    from ..pipeline.simulate import peak_activations
    return max(peak_activations(p, m, schedule)) * batch_size / m


def _plan_problem(plan, p, batch_size, target, budget) -> str | None:
    """What is wrong with ``plan`` at one size, judged by the closed forms only."""
    from ..pipeline.simulate import bubble_fraction

    where = f"at p={p}, batch {batch_size}, target {target:g}, budget {budget:g} samples:"
    feasible = [m for m in range(1, batch_size + 1) if batch_size % m == 0
                and bubble_fraction(p, m, "1f1b") <= target
                and held_samples("1f1b", p, batch_size, m) <= budget]
    if plan is None:
        return None if not feasible else (
            f"{where} you returned None, but a plan meets both the target and the budget. "
            "Look again at what happens to 1F1B's memory as m grows")
    if not (isinstance(plan, (tuple, list)) and len(plan) == 2 and plan[0] in PLAN_SCHEDULES
            and isinstance(plan[1], int) and not isinstance(plan[1], bool)):
        return (f"{where} it returned {plan!r:.60}; return (schedule, m) with schedule "
                f"'gpipe' or '1f1b' and m a whole number, or None when no plan fits")
    schedule, m = plan
    if m < 1 or batch_size % m:
        return (f"{where} m={m} does not cut the batch of {batch_size} into equal "
                "micro-batches")
    idle = bubble_fraction(p, m, schedule)
    if idle > target:
        return f"{where} {schedule} with m={m} idles {idle:.1%} of the time, over the target"
    held = held_samples(schedule, p, batch_size, m)
    if held > budget:
        return (f"{where} {schedule} with m={m} holds {held:g} samples' activations on its "
                f"busiest stage ({held * m / batch_size:g} micro-batches of {batch_size // m} "
                "samples), over the budget")
    if m != min(feasible):
        return (f"{where} {schedule} with m={m} fits, but fewer micro-batches also do. More "
                "micro-batches means smaller matrix products, which a GPU runs less "
                "efficiently: take the fewest that meet both")
    return None


def precheck_plan(candidate, cases=PLAN_CASES) -> str | None:
    """None when ``candidate(p, batch_size, target, budget)`` is the best plan at every
    size of ``cases``; else the first problem, with where the candidate was defined."""
    from .feedback import defined_at
    for p, batch_size, target, budget in cases:
        problem = _plan_problem(candidate(p, batch_size, target, budget), p, batch_size,
                                target, budget)
        if problem:
            return say("{problem}.{where}", problem=reworded(problem),
                       where=defined_at(candidate))
    return None


def run_plan(candidate, p, batch_size, target, budget, batch) -> dict:
    """The exercise's adapter, on every rank: run the plan for real and report whether
    this rank's measured peak fits the budget."""
    plan = candidate(p, batch_size, target, budget)
    if plan is None:
        return {"plan": "none"}
    schedule, m = plan
    out = run_pipeline(schedule=schedule, microbatches=m, batch=batch, batch_size=batch_size,
                       hidden=HIDDEN)
    held = out["peak_held"] * batch_size / m
    return {"micro-batches": m, "fits the budget on this rank (measured)": held <= budget}
