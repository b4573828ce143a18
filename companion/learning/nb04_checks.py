"""Checking a schedule a student wrote: first by the simulator, then on real ranks.

Used by notebook 04's exercises (``notebooks/04_pipeline_parallelism.ipynb``,
registered in :mod:`companion.learning.nb04`). The student writes
``fn(p, m) -> list of op lists`` (one list per stage, of :class:`~companion.pipeline.Op`).
Each exercise is a :class:`companion.learning.Exercise` built from the pieces here:

* :func:`precheck_schedule`, run in the notebook before any rank starts, simulates the
  student's schedule at a few sizes: every op once, no deadlock, a bubble no larger
  than the target schedule's closed form and no stage holding more micro-batches'
  activations than the target does (and for GPipe: all forwards before any backward).
  A wrong schedule is explained with the stage's own op list.
* :func:`run_schedule` (the exercise's adapter, on every rank) runs the schedule with
  the real executor, :func:`~companion.pipeline.run_pipeline`, and returns the
  gradients and updated parameters. The executor sums each micro-batch's gradient in
  micro-batch order, so any valid schedule gives the built-in schedule's bits exactly.
* :func:`neighbour_messages` is the communication pattern: each stage sends one
  activation downstream and one gradient upstream per micro-batch, point to point, to
  its neighbours only.

A student checks a schedule with ``exercise("04.one-f-one-b").check(my_1f1b)``.
"""
from __future__ import annotations

import torch

from ..pipeline.ops import Op, Schedule
from ..pipeline.tinymlp import run_pipeline
from ..pipeline.simulate import simulate

# Pieces of notebook 04's exercises: companion.learning.nb04 imports them; students call
# exercise("04.gpipe").check(...), so nothing here is public API.
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


def precheck_schedule(candidate, target: str, sizes, bubble, peaks, split=False,
                      forwards_first: bool = False) -> str | None:
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
        if forwards_first:
            for s, ops in enumerate(sched.ops):
                kinds = "".join(op.kind for op in ops)
                if "BF" in kinds:
                    return (f"at p={p}, m={m} stage {s} runs a backward before its last "
                            f"forward: {_shown(ops)}. GPipe runs every forward first, then "
                            f"the backwards.{where}")
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
                    per = "micro-batch" + (" and chunk" if chunks > 1 else "")
                    return (f"it made {got} {names[0]}s with rank {peer}; a stage exchanges "
                            f"one message per {per} ({want}) with each neighbour "
                            f"({what} rank {peer})")
        sizes = {c.bytes for c in calls if c.name in P2P}
        if sizes - {nbytes}:
            return (f"messages of {sorted(sizes)} bytes; each should carry one "
                    f"micro-batch's activation or gradient, {nbytes} bytes")
        return None
    return per_rank(check)

