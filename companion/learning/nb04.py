"""Notebook 04's exercises (``notebooks/04_pipeline_parallelism.ipynb``): choose a
pipeline, fix one, write two.

* ``04.micro-batches`` (warm-up, decide): choose GPipe or 1F1B and the fewest
  micro-batches that meet a bubble target within an activation budget; judged by the
  closed forms at seven sizes, then run on 4 real ranks, where the measured peak must fit.
* ``04.one-f-one-b`` (core, diagnose): a given 1F1B deadlocks; the fix is simulated and
  run on 4 real ranks.
* ``04.zb-h1`` and ``04.zb-v`` (stretch, implement): the zero-bubble schedules.

A schedule is data, one list of ops per stage; each is simulated in the notebook first
(every op once, no deadlock, the target's bubble and activation memory, at several
sizes), then run on 4 real ranks by the executor, whose gradients and updated
parameters must equal the built-in schedule's exactly, with one activation and one
gradient per micro-batch between neighbouring stages. The pieces live in
:mod:`companion.learning.nb04_checks`. Exercise ids are "04.<name>".
"""
from __future__ import annotations

import functools

from .nb04_checks import (PLAN_CASES, exercise_inputs, exercise_inputs_split, exercise_inputs_v,
                          held_samples, neighbour_messages, plan_inputs, precheck_plan,
                          precheck_schedule, run_plan, run_schedule)
from ..pipeline.modern import zb_v
from ..pipeline.schedules import one_f_one_b, zb_h1
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
           f"it returns the package's schedules, {target} included; write the op lists yourself",
           "companion.pipeline.ops.interleave": "it lays out 1F1B's warm-up, steady state and "
                                                "cool-down for you; write the op lists yourself",
           "companion.pipeline.ops.interleaved_order": "it is the package's interleaved order "
                                                       "of ops; write the op lists yourself"}
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


def plan_reference(p: int, batch_size: int, target: float, budget: float):
    """1F1B holds min(p, m) micro-batches and GPipe all m, at the same bubble, so 1F1B
    with the fewest micro-batches that divide the batch and meet both limits, or None."""
    for m in range(1, batch_size + 1):
        if (batch_size % m == 0 and bubble_fraction(p, m, "1f1b") <= target
                and held_samples("1f1b", p, batch_size, m) <= budget):
            return ("1f1b", m)
    return None


MICRO_BATCHES = register(Exercise(
    id="04.micro-batches", level="warm-up", kind="decide",
    title="GPipe or 1F1B, and how many micro-batches?", student_name="my_plan",
    task="Write `my_plan(p, batch_size, target, budget)`: the plan for one step of a "
         "p-stage pipeline over a batch of `batch_size` samples. Return `(schedule, m)`, "
         "with schedule `\"gpipe\"` or `\"1f1b\"` and m micro-batches of equal size, such "
         "that the pipeline idles at most `target` of the time and no stage holds the "
         "activations of more than `budget` samples at once; of the plans that do, the one "
         "with the **fewest** micro-batches (bigger micro-batches keep a GPU efficient). "
         "Return None when no plan meets both. The checker judges your plans at "
         f"{len(PLAN_CASES)} sizes with the closed forms, then runs your plan for p=4 on 4 "
         "real ranks and measures each stage's peak.",
    hints=("Two limits pull on m. The bubble shrinks as m grows. What does a stage hold at "
           "its peak, in micro-batches under each schedule, and how many samples is one "
           "micro-batch?",
           "GPipe holds all m micro-batches of batch_size/m samples each: the whole batch, "
           "whatever m is. 1F1B holds at most min(p, m) of them, so its memory in samples "
           "falls as m grows, and its bubble is GPipe's.",
           "Only m that divide the batch size are candidates, and there are few of them: "
           "try them from the smallest up, and stop at the first that meets both limits. "
           "Which schedule can ever be the only one that fits?"),
    inputs=plan_inputs, reference=plan_reference, adapter=run_plan,
    forbidden={"companion.learning.nb04.plan_reference":
               "it is the package's solution to this exercise",
               "companion.pipeline.simulate.simulate":
               "the closed forms decide this; simulating every candidate is a search"},
    precheck=precheck_plan, timeout=60.0, context=CONTEXT,
))

ONE_F_ONE_B = register(Exercise(
    id="04.one-f-one-b", level="core", kind="diagnose",
    title="fix a 1F1B schedule that deadlocks", student_name="my_1f1b",
    task="A colleague's `broken_1f1b(p, m)` (in the notebook) is meant to be 1F1B "
         "(PipeDream-Flush): warm-up forwards, then one forward and one backward at a time, "
         "then the remaining backwards. On 4 real ranks it hangs. Find out why, and write "
         "the fixed schedule as `my_1f1b(p, m)`: one list of `Op(\"F\", mb)` / "
         "`Op(\"B\", mb)` per stage. The checker simulates it at three sizes, one of them "
         "with fewer micro-batches than stages (every op once, no deadlock, GPipe's bubble, "
         "no stage holding more micro-batches than 1F1B's p - s), then runs it on 4 real "
         "ranks.",
    hints=("Run the check on `broken_1f1b` and read the simulator's verdict: which stage "
           "waits for which input, and which stage would have to produce it?",
           "Stage 0 waits for the gradient of micro-batch 0, which exists only after "
           "micro-batch 0 has gone through every later stage; meanwhile stage 1 waits for an "
           "activation that stage 0 will send only after that gradient. How many forwards "
           "must stage s run before its first backward, so that the wait can end?",
           "The right count depends on how many stages come after s, not before it. Once "
           "the deadlock is gone, the check's size with m < p shows the second mistake: a "
           "stage cannot run more forwards than there are micro-batches."),
    inputs=exercise_inputs, reference=one_f_one_b, adapter=run_schedule,
    forbidden=_forbidden("1F1B"), pattern=neighbour_messages(),
    precheck=functools.partial(
        precheck_schedule, target="1F1B", sizes=((4, 8), (3, 5), (4, 2)),
        bubble=functools.partial(bubble_fraction, schedule="1f1b"),
        peaks=functools.partial(peak_activations, schedule="1f1b")),
    timeout=60.0, context=CONTEXT,
))

ZB_H1 = register(Exercise(
    id="04.zb-h1", level="stretch", kind="implement",
    title="write the ZB-H1 zero-bubble schedule",
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
           "Think in rounds x = 0, 1, ..., m+p-2. In each round a stage runs at most one F, "
           "one B and one W, each only for a micro-batch that exists. The F of round x is "
           "micro-batch x, the B the one 1F1B would run there. Which W?",
           "The W's set the memory: a micro-batch is held from its F to its W. If every "
           "stage runs each W a fixed number of rounds after that micro-batch's F, how many "
           "micro-batches does a stage hold, and how large may the lag be with at most p "
           "held? It must also put every W after its B, on stage 0 too."),
    inputs=exercise_inputs_split, reference=zb_h1, adapter=run_schedule,
    forbidden=_forbidden("ZB-H1"), pattern=neighbour_messages(),
    precheck=functools.partial(
        precheck_schedule, target="ZB-H1", sizes=((4, 8), (3, 5), (4, 4)), split=True,
        bubble=functools.partial(bubble_fraction, schedule="zb-h1"), peaks=_zb_h1_peaks),
    timeout=60.0, context=CONTEXT,
))

ZB_V = register(Exercise(
    id="04.zb-v", level="stretch", kind="implement",
    title="write the ZB-V schedule (two chunks in a V)",
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
           "Rank r can run one chunk-0 forward for every virtual stage that micro-batch 0 "
           "still has to cross before it reaches rank r's chunk 1, its own chunk 0 "
           "included. In the cool-down, run each B as soon as it can run (the rank upstream "
           "waits for it) and push the W's later, into the gaps the draining pipeline "
           "leaves; drawing the timeline shows which W is still in the way."),
    inputs=exercise_inputs_v, reference=zb_v, adapter=run_schedule,
    forbidden=_forbidden("ZB-V"), pattern=neighbour_messages(chunks=2),
    precheck=functools.partial(
        precheck_schedule, target="ZB-V", sizes=((4, 8), (3, 6), (2, 4)), split="v",
        bubble=functools.partial(bubble_fraction, schedule="zb-v"),
        peaks=functools.partial(peak_activations, schedule="zb-v")),
    timeout=60.0, context=CONTEXT,
))
