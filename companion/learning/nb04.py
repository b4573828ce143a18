"""Notebook 04's exercises (``notebooks/04_pipeline_parallelism.ipynb``): write a
pipeline schedule.

A ladder: GPipe (warm-up), 1F1B (core), ZB-H1 (stretch), ZB-V (stretch, two chunks
per rank in a V). The student returns the
schedule as data, one list of ops per stage; each is simulated in the notebook first
(every op once, no deadlock, the target's bubble and activation memory, at several
sizes), then run on 4 real ranks by the executor, whose gradients and updated
parameters must equal the built-in schedule's exactly, with one activation and one
gradient per micro-batch between neighbouring stages. The pieces live in
:mod:`companion.learning.nb04_checks`. Exercise ids are "04.<name>".
"""
from __future__ import annotations

import functools

from .nb04_checks import (exercise_inputs, exercise_inputs_split, exercise_inputs_v,
                                 neighbour_messages, precheck_schedule, run_schedule)
from ..pipeline.modern import zb_v
from ..pipeline.schedules import gpipe, one_f_one_b, zb_h1
from ..pipeline.simulate import bubble_fraction, peak_activations
from .exercise import Exercise, register

_BUILDERS = "companion.pipeline.schedules."
CONTEXT = "from companion.pipeline import Op\nimport companion"


def _forbidden(target: str) -> dict:
    """make_schedule and every schedule builder: one builder's ops reordered give another's."""
    names = {"naive": "naive", "gpipe": "GPipe", "one_f_one_b": "1F1B",
             "interleaved_1f1b": "interleaved 1F1B", "zb_h1": "ZB-H1"}
    later = {"looped_bfs": "looped BFS", "interleaved_zb": "interleaved zero bubble",
             "zb_v": "ZB-V", "dualpipev": "DualPipeV"}
    out = {"companion.pipeline.registry.make_schedule":
           f"it returns the package's schedules, {target} included; write the op lists yourself"}
    for module, table in ((_BUILDERS, names), ("companion.pipeline.modern.", later)):
        for fn, label in table.items():
            out[module + fn] = (f"it is the package's {target} schedule" if label == target
                                else f"it builds {label}; reordering a built-in schedule's "
                                "ops skips the exercise")
    return out


def _zb_h1_peaks(p: int, m: int) -> list:
    # ZB-H1 keeps 1F1B's largest peak, min(p, m) micro-batches, now on every stage
    # (a micro-batch is freed by its W, which runs later than 1F1B's backward).
    return [min(p, m)] * p


GPIPE = register(Exercise(
    id="04.gpipe", level="warm-up", title="write the GPipe schedule", student_name="my_gpipe",
    task="Write `my_gpipe(p, m)`: return one list per stage of `Op(\"F\", mb)` and "
         "`Op(\"B\", mb)` in the order that stage runs them, for GPipe: every stage runs "
         "the forwards of all m micro-batches, then their backwards. The checker simulates "
         "it at three sizes (every op once, no deadlock, all forwards first, bubble "
         "(p-1)/(m+p-1)), then runs it on 4 real ranks.",
    hints=("A schedule is only data: stage s's list is the order in which it runs its "
           "forwards and backwards. In GPipe every stage has the same order.",
           "Build one list, the m forwards in micro-batch order followed by the m "
           "backwards, and give each of the p stages its own copy.",
           "`Op(\"F\", mb)` for mb in range(m), then `Op(\"B\", mb)` for mb in range(m); "
           "return a list of p such lists."),
    inputs=exercise_inputs, reference=gpipe, adapter=run_schedule,
    forbidden=_forbidden("GPipe"), pattern=neighbour_messages(),
    precheck=functools.partial(
        precheck_schedule, target="GPipe", sizes=((4, 8), (3, 5), (4, 2)),
        bubble=functools.partial(bubble_fraction, schedule="gpipe"),
        peaks=functools.partial(peak_activations, schedule="gpipe"), forwards_first=True),
    timeout=60.0, context=CONTEXT,
))

ONE_F_ONE_B = register(Exercise(
    id="04.one-f-one-b", level="core", title="write the 1F1B schedule", student_name="my_1f1b",
    task="Write `my_1f1b(p, m)`: one list of `Op(\"F\", mb)` / `Op(\"B\", mb)` per stage "
         "for 1F1B (PipeDream-Flush). Stage s runs a few warm-up forwards, then alternates "
         "one forward and one backward, then finishes the remaining backwards. The "
         "checker simulates it at three sizes (every op once, no deadlock, GPipe's bubble, "
         "and no stage holding more micro-batches' activations than 1F1B's p - s), then "
         "runs it on 4 real ranks.",
    hints=("Stage s cannot run its first backward before micro-batch 0 has gone through "
           "every later stage and its gradient has come back. How many forwards fit "
           "before that moment?",
           "Stage s runs p-1-s warm-up forwards (never more than m), then pairs: the next "
           "forward, then the backward of the oldest micro-batch it holds; the backwards "
           "still owed come last.",
           "With w = min(p-1-s, m): F0..F(w-1); then for k in range(m - w): F(w+k), B(k); "
           "then B(m-w)..B(m-1)."),
    inputs=exercise_inputs, reference=one_f_one_b, adapter=run_schedule,
    forbidden=_forbidden("1F1B"), pattern=neighbour_messages(),
    precheck=functools.partial(
        precheck_schedule, target="1F1B", sizes=((4, 8), (3, 5), (4, 2)),
        bubble=functools.partial(bubble_fraction, schedule="1f1b"),
        peaks=functools.partial(peak_activations, schedule="1f1b")),
    timeout=60.0, context=CONTEXT,
))

ZB_H1 = register(Exercise(
    id="04.zb-h1", level="stretch", title="write the ZB-H1 zero-bubble schedule",
    student_name="my_zb_h1",
    task="Write `my_zb_h1(p, m)` with the backward split in two: `Op(\"B\", mb)` computes "
         "only the input gradient (the previous stage waits for it) and `Op(\"W\", mb)` "
         "the weight gradient (nobody waits for it; it frees the micro-batch's "
         "activations). With F = B = W, ZB-H1 idles (p-1)/(3m+p-1) of the time, a third "
         "of 1F1B's idle time, while no stage holds more than p micro-batches. The "
         "checker simulates yours at three sizes with m >= p (every op once, no "
         "deadlock, a W after its B, that bubble and that memory), then runs it on 4 "
         "real ranks.",
    hints=("Keep B where 1F1B runs its backward: the stage upstream is waiting for it. "
           "W can wait; use the W's to fill the moments where a 1F1B stage sits idle.",
           "Think in rounds x = 0, 1, ..., m+p-2. In round x stage s runs the forward of "
           "micro-batch x, the B that 1F1B would run there, and one W, each only if its "
           "micro-batch exists (0 <= mb < m).",
           "Round x on stage s: F(x), then B(x-(p-1-s)), then W(x-(p-1)); skip the ones "
           "whose micro-batch is outside 0..m-1."),
    inputs=exercise_inputs_split, reference=zb_h1, adapter=run_schedule,
    forbidden=_forbidden("ZB-H1"), pattern=neighbour_messages(),
    precheck=functools.partial(
        precheck_schedule, target="ZB-H1", sizes=((4, 8), (3, 5), (4, 4)), split=True,
        bubble=functools.partial(bubble_fraction, schedule="zb-h1"), peaks=_zb_h1_peaks),
    timeout=60.0, context=CONTEXT,
))

ZB_V = register(Exercise(
    id="04.zb-v", level="stretch", title="write the ZB-V schedule (two chunks in a V)",
    student_name="my_zb_v",
    task="Write `my_zb_v(p, m)` for m >= 2p. Each rank now holds two model chunks in a V: "
         "chunk 0 of rank r is virtual stage r (going down the ranks), chunk 1 is virtual "
         "stage 2p-1-r (coming back up), so rank 0 holds both the first and the last "
         "piece of the model. Ops carry their chunk: `Op(\"F\", mb, 0)`, "
         "`Op(\"B\", mb, 1)`, `Op(\"W\", mb, 1)`, ... With F = B = W, ZB-V idles "
         "(p-1)/(6m+p-1) of the time while no rank holds more than p micro-batches "
         "(two chunks of half a stage each count one half). The checker simulates yours at "
         "three sizes (every op once, no deadlock, that bubble and that memory), then runs "
         "it on 4 real ranks.",
    hints=("Follow micro-batch 0: it goes down the ranks through chunk 0 and comes back up "
           "through chunk 1, so the rank at the bottom of the V (the last one) starts its "
           "chunk-1 work first, and rank 0 must keep chunk 0 busy for longest before its "
           "first chunk-1 input arrives.",
           "Think in phases on rank r: chunk-0 forwards alone; then chunk-1 and chunk-0 "
           "forwards alternating as chunk-1 inputs arrive; then chunk-1 forwards each "
           "followed at once by its B and W; a steady state that repeats F, B, W on chunk 0 "
           "and then on chunk 1; a cool-down where some W's wait.",
           "Counts on rank r: 2(p-r)-1 chunk-0 forwards; r x (F chunk 1, F chunk 0); p-r x "
           "(F, B, W on chunk 1); steady (F0 if any left, B0, W0, F1, B1, W1) until every "
           "forward ran; cool-down r x (B0, B1), then p-r x (B0, W0), then the W's still "
           "owed, chunk 1 first."),
    inputs=exercise_inputs_v, reference=zb_v, adapter=run_schedule,
    forbidden=_forbidden("ZB-V"), pattern=neighbour_messages(chunks=2),
    precheck=functools.partial(
        precheck_schedule, target="ZB-V", sizes=((4, 8), (3, 6), (2, 4)), split="v",
        bubble=functools.partial(bubble_fraction, schedule="zb-v"),
        peaks=functools.partial(peak_activations, schedule="zb-v")),
    timeout=60.0, context=CONTEXT,
))
