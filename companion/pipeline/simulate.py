"""Turn a schedule plus per-operation costs into a timeline; the closed forms beside it.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``).

The simulator is a list scheduler: each stage runs its ops in the schedule's order, and
an op starts when the stage is free *and* its input exists (the previous stage's
forward, the next stage's backward, this stage's B before its W), plus a send latency
when the input crosses ranks. A schedule whose order makes two stages wait for each
other is reported as a deadlock (ValueError), which is how a hand-written schedule is
checked.

The same :class:`Timeline` holds measured timelines from the real executor, so one
plotting function draws both and the utilisation is computed the same way.
"""
from __future__ import annotations

import dataclasses

from .ops import Op, Schedule, check_sizes
from .registry import DEFAULT_CHUNKS, make_schedule, schedule_key
from ..validation import one_of

__all__ = ["OpCosts", "Event", "Timeline", "simulate", "bubble_fraction",
           "peak_activations", "formula_text"]


@dataclasses.dataclass(frozen=True)
class OpCosts:
    """Time of one micro-batch's F, B (input gradient) and W (weight gradient) on one
    whole stage, plus the latency of one point-to-point send.

    A schedule without split backward runs B and W together as one ``B`` of time
    ``B + W``; an interleaved chunk holds ``1/v`` of a stage's layers, so its ops take
    ``1/v`` of these times. The default (1, 1, 1) is the usual "backward costs twice
    the forward".
    """

    F: float = 1.0
    B: float = 1.0
    W: float = 1.0
    send: float = 0.0

    def __post_init__(self):
        for name in ("F", "B", "W", "send"):
            value = getattr(self, name)
            if not value >= 0:
                raise ValueError(f"cost {name} must be >= 0, got {value!r}; costs are times.")
        if self.F + self.B + self.W <= 0:
            raise ValueError("at least one of the F, B, W costs must be positive.")

    def duration(self, op: Op, schedule: Schedule) -> float:
        if op.kind == "F":
            t = self.F
        elif op.kind == "W":
            t = self.W
        else:
            t = self.B if schedule.split_backward else self.B + self.W
        return t / schedule.chunks


class Event:
    """One op as it ran (or would run): stage, op, start and end time."""

    __slots__ = ("stage", "op", "start", "end")

    def __init__(self, stage: int, op: Op, start: float, end: float):
        self.stage, self.op, self.start, self.end = stage, op, start, end

    def __repr__(self) -> str:
        return f"Event(stage={self.stage}, {self.op!r}, {self.start:.4g}..{self.end:.4g})"


@dataclasses.dataclass
class Timeline:
    """Events of every stage, simulated or measured, with the numbers derived from them."""

    events: list
    stages: int
    chunks: int = 1
    split_backward: bool = False
    name: str = ""
    unit: str = "time units"

    @property
    def start(self) -> float:
        return min(e.start for e in self.events)

    @property
    def makespan(self) -> float:
        """Time from the first op's start to the last op's end."""
        return max(e.end for e in self.events) - self.start

    def busy(self) -> list[float]:
        """Time each stage spent computing."""
        out = [0.0] * self.stages
        for e in self.events:
            out[e.stage] += e.end - e.start
        return out

    @property
    def utilization(self) -> float:
        """Busy share of ``stages x makespan``."""
        return sum(self.busy()) / (self.stages * self.makespan)

    @property
    def bubble_fraction(self) -> float:
        """Idle share of ``stages x makespan`` (1 - utilisation)."""
        return 1.0 - self.utilization

    def peak_activations(self) -> list[float]:
        """Most micro-batches' activations each stage held at once, in units of one
        micro-batch through a whole stage. Held from the F's start until the last op
        that needs them (B, or W when backward is split) ends."""
        release = "W" if self.split_backward else "B"
        deltas = [[] for _ in range(self.stages)]
        for e in self.events:
            if e.op.kind == "F":
                deltas[e.stage].append((e.start, 1, 1 / self.chunks))
            elif e.op.kind == release:
                deltas[e.stage].append((e.end, 0, -1 / self.chunks))
        peaks = []
        for d in deltas:
            level = peak = 0.0
            for _, _, change in sorted(d):  # a release at time t happens before an F at t
                level += change
                peak = max(peak, level)
            peaks.append(round(peak, 9))
        return peaks


def simulate(schedule, stages: int | None = None, microbatches: int | None = None,
             chunks: int | None = None, costs: OpCosts | None = None, **cost_kwargs) -> Timeline:
    """Simulate ``schedule`` (a name or a :class:`Schedule`) and return its :class:`Timeline`.

    ``costs`` (or keywords ``F=, B=, W=, send=``) give the op times; see :class:`OpCosts`.
    """
    if isinstance(schedule, Schedule):
        sched = schedule.validate()
    else:
        if stages is None or microbatches is None:
            raise ValueError("simulate(name, stages, microbatches): give stages and "
                             "microbatches when the schedule is a name.")
        sched = make_schedule(schedule, stages, microbatches, chunks)
    if costs is None:
        costs = OpCosts(**cost_kwargs)
    elif cost_kwargs:
        raise ValueError("pass either costs=OpCosts(...) or F=/B=/W=/send= keywords, not both.")
    p, last = sched.stages, sched.virtual_stages - 1
    end = {}  # (kind, virtual stage, micro-batch) -> end time
    free = [0.0] * p
    pos = [0] * p
    events = []

    def input_ready(s, op):
        """Time the op's input is available on stage s, or None if not produced yet."""
        vs = sched.virtual_stage(s, op.chunk)
        if op.kind == "F":
            if vs == 0:
                return 0.0
            dep, src = ("F", vs - 1, op.microbatch), vs - 1
        elif op.kind == "B":
            if vs == last:
                dep, src = ("F", vs, op.microbatch), vs
            else:
                dep, src = ("B", vs + 1, op.microbatch), vs + 1
        else:
            dep, src = ("B", vs, op.microbatch), vs
        if dep not in end:
            return None
        crosses = sched.placement(src)[0] != s
        return end[dep] + (costs.send if crosses else 0.0)

    remaining = sum(len(o) for o in sched.ops)
    while remaining:
        progressed = False
        for s in range(p):
            while pos[s] < len(sched.ops[s]):
                op = sched.ops[s][pos[s]]
                ready = input_ready(s, op)
                if ready is None:
                    break
                start = max(free[s], ready)
                finish = start + costs.duration(op, sched)
                end[(op.kind, sched.virtual_stage(s, op.chunk), op.microbatch)] = finish
                events.append(Event(s, op, start, finish))
                free[s] = finish
                pos[s] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            waits = ", ".join(f"stage {s} at {sched.ops[s][pos[s]]!r}" for s in range(p)
                              if pos[s] < len(sched.ops[s]))
            raise ValueError(f"schedule {sched.name!r} deadlocks: {waits} each wait for an "
                             "input that is never produced. Reorder so every stage's next op "
                             "can eventually get its input.")
    return Timeline(events, p, sched.chunks, sched.split_backward, sched.name)


def bubble_fraction(stages: int, microbatches: int, schedule: str = "gpipe",
                    chunks: int | None = None, costs: OpCosts | None = None) -> float:
    """Closed-form idle share of total time (uniform stages, no send latency).

    Every stage does the same work ``m(F+B+W)``, so the bubble is ``idle/(m(F+B+W)+idle)``
    with ``idle`` the time each stage waits:

    * naive: ``(p-1)/p`` (one stage works at a time);
    * GPipe and 1F1B: ``idle = (p-1)(F+B+W)``, so ``(p-1)/(m+p-1)``;
    * interleaved 1F1B and looped BFS with ``v`` chunks: ``idle = (p-1)(F+B+W)/v``, so
      ``(p-1)/(v*m+p-1)`` (each op is a ``1/v`` slice of a stage);
    * ZB-H1: ``idle = (p-1)(F+B-W)``; interleaved zero bubble: ``(p-1)(F+B-W)/v``: the
      W's fill what remains. Both hold for ``m >= p`` and ``W <= min(F, B)``;
    * ZB-V: ``idle = (p-1) max(B-W, F/2)`` for ``m >= 2p`` and ``W <= F <= B``;
    * DualPipeV: ``idle = (p-1)(F+B-W)/2`` for ``m >= 2p``, ``F = B`` and ``W <= F``.

    With equal costs the last four all give ``(p-1)/(6m+p-1)`` (ZB-H1: ``(p-1)/(3m+p-1)``).
    Outside the stated range the idle time depends on ``p`` in a less tidy way, and this
    raises ValueError pointing at ``simulate(...).bubble_fraction``.
    """
    key = schedule_key(schedule.name if isinstance(schedule, Schedule) else schedule)
    v = DEFAULT_CHUNKS.get(key, 1) if chunks is None else chunks
    check_sizes(stages, microbatches, v)
    p, m, c = stages, microbatches, costs or OpCosts()
    if v != DEFAULT_CHUNKS.get(key, 1) and key not in ("interleaved", "looped-bfs",
                                                       "interleaved-zb"):
        raise ValueError(f"chunks={v} does not apply to schedule={key!r}; leave chunks out.")
    if key == "naive":
        return (p - 1) / p
    if key in ("interleaved", "interleaved-zb") and m % p:
        raise ValueError(f"{key} needs microbatches to be a multiple of stages={p} (got {m}).")

    def outside(rule):
        return ValueError(f"the {key} closed form holds for {rule}; outside that, use "
                          f"simulate({key!r}, ...).bubble_fraction.")

    if key in ("gpipe", "1f1b", "interleaved", "looped-bfs"):
        idle = (p - 1) * (c.F + c.B + c.W) / v
    elif key in ("zb-h1", "interleaved-zb"):
        if m < p or c.W > min(c.F, c.B):
            raise outside("microbatches >= stages and W <= min(F, B) (each W fits a gap)")
        idle = (p - 1) * (c.F + c.B - c.W) / v
    elif key == "zb-v":
        if m < 2 * p or not c.W <= c.F <= c.B:
            raise outside("microbatches >= 2 x stages and W <= F <= B")
        idle = (p - 1) * max(c.B - c.W, c.F / 2)
    else:  # dualpipev
        if m < 2 * p or c.F != c.B or c.W > c.F:
            raise outside("microbatches >= 2 x stages, F = B and W <= F")
        idle = (p - 1) * (c.F + c.B - c.W) / 2
    return idle / (m * (c.F + c.B + c.W) + idle)


def peak_activations(stages: int, microbatches: int, schedule: str = "gpipe") -> list:
    """Closed form of micro-batches' activations held per stage (in whole-stage units):

    * naive 1; GPipe and looped BFS ``m`` (every forward before any backward);
    * 1F1B ``min(p - s, m)`` on stage ``s`` (so at most ``p``);
    * ZB-H1 and interleaved zero bubble ``p`` on every stage (``m >= p``), ZB-V ``p``
      (``m >= 2p``): the W's put off keep activations longer on the later stages;
    * DualPipeV ``p + 1/2`` (``m >= 2p``): half a micro-batch more than ZB-V, the price
      of starting the second chunk's forwards earlier.
    """
    check_sizes(stages, microbatches)
    p, m = stages, microbatches
    key = schedule_key(schedule)
    if key == "naive":
        return [1] * p
    if key in ("gpipe", "looped-bfs"):
        return [m] * p
    if key == "1f1b":
        return [min(p - s, m) for s in range(p)]
    floor = {"zb-h1": p, "interleaved-zb": p, "zb-v": 2 * p, "dualpipev": 2 * p}
    if key in floor and m >= floor[key]:
        return [p + 0.5] * p if key == "dualpipev" else [p] * p
    raise ValueError(f"no closed form for {schedule!r} at microbatches={m} (naive, gpipe, "
                     "1f1b, looped-bfs always; zb-h1, interleaved-zb for m >= p; zb-v, "
                     "dualpipev for m >= 2p); simulate(...).peak_activations() covers "
                     "every schedule.")


def formula_text(schedule: str) -> str:
    """The bubble formula as text, for plot legends."""
    formulas = {"naive": "(p-1)/p", "gpipe": "(p-1)/(m+p-1)", "1f1b": "(p-1)/(m+p-1)",
                "interleaved": "(p-1)/(vm+p-1)", "looped-bfs": "(p-1)/(vm+p-1)",
                "zb-h1": "(p-1)(F+B-W)/(m(F+B+W)+(p-1)(F+B-W))",
                "interleaved-zb": "idle (p-1)(F+B-W)/v", "zb-v": "idle (p-1)max(B-W, F/2)",
                "dualpipev": "idle (p-1)(F+B-W)/2"}
    return formulas[one_of("schedule", str(schedule).lower(), formulas)]
