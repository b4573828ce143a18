"""torch's own pipeline schedules as op lists, for an op-for-op comparison with ours.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``), section "Checked
against torch, op for op". No rank starts: torch 2.13's
``torch.distributed.pipelining._schedule_visualizer.get_schedule_ops`` builds a schedule
around mocked stages and returns its ``pipeline_order``, the schedule IR that torch
generates with ``_get_pipeline_order()`` (single-stage schedules) or
``_calculate_single_rank_operations()`` (multi-stage ones). Multi-stage schedules also
execute that IR; the single-stage ``ScheduleGPipe`` and ``Schedule1F1B`` execute their
own loops in ``_step_microbatches`` instead, so :func:`torch_executed_ops` records what
those loops really run, again with a mocked stage and no rank.

**Normalisation** (so that each torch action becomes our ops, one for one):

* ``None`` (torch's padding for idle slots) and the final ``REDUCE_GRAD`` are dropped;
* a composite ``OVERLAP_F_B`` (DualPipeV) becomes its sub-actions in order, F then B,
  which is also how torch's runtime runs it when no overlap function is registered;
* ``F`` is our F; ``I`` (BACKWARD_INPUT) is our B in a split schedule; ``W`` is our W;
  torch's ``B`` (FULL_BACKWARD) is our B in a schedule without split, and our B
  immediately followed by its W in a split one (DualPipeV mixes both);
* torch's stage index is the *virtual* stage; :meth:`Schedule.placement` with the
  schedule's layout ("loop" or "v") turns it into (rank, chunk), and an action placed
  on another rank than the list it is in is reported as a difference.

**A bug found this way** (torch 2.13.0): ``Schedule1F1B._get_pipeline_order`` sets
``forward_mb = 0`` before the warm-up loop and increments it before each steady-state
forward. On the last rank the warm-up is empty, so its list starts at F1 and ends at
F8 of 8 micro-batches (``0..7``). What ``Schedule1F1B`` executes is right (its
``_step_microbatches`` keeps its own counters); only the IR that the visualizer and
tools read is off by one. ``tests/test_pipeline_torch_ops.py`` pins it.

**Timing** (:func:`torch_runtime_timeline`): the same IR timed the way torch's runtime
sends, which differs from ``simulate`` only for DualPipeV: torch sends both outputs of
an ``OVERLAP_F_B`` pair after the whole pair, our executor each half's as it ends.
"""
from __future__ import annotations

from unittest import mock

from .ops import Op, Schedule
from .registry import schedule_key
from ..validation import one_of, positive_int

__all__ = ["TORCH_SCHEDULES", "torch_schedule_ops", "torch_executed_ops", "op_differences"]

# our name -> (torch's name, chunks per rank, layout, split backward)
TORCH_SCHEDULES = {
    "gpipe": ("GPipe", 1, "loop", False),
    "1f1b": ("1F1B", 1, "loop", False),
    "interleaved": ("Interleaved1F1B", 2, "loop", False),
    "looped-bfs": ("LoopedBFS", 2, "loop", False),
    "interleaved-zb": ("InterleavedZeroBubble", 2, "loop", True),
    "zb-v": ("ZBVZeroBubble", 2, "v", True),
    "dualpipev": ("DualPipeV", 2, "v", True),
}


def _torch_key(name) -> str:
    key = schedule_key(name)
    if key not in TORCH_SCHEDULES:
        raise ValueError(f"torch ships no schedule for {name!r}; compare one of "
                         f"{sorted(TORCH_SCHEDULES)}.")
    return key


def _layout(key: str, stages: int, microbatches: int) -> Schedule:
    """An empty schedule that only carries the placement, to map torch's stage indices."""
    _, chunks, layout, split = TORCH_SCHEDULES[key]
    return Schedule(key, stages, microbatches, ((),) * stages, chunks, split, layout)


def _torch_actions(key: str, stages: int, microbatches: int) -> list[list[list]]:
    """torch's IR for our ``key``: per rank, one entry per torch action (a composite
    ``OVERLAP_F_B`` is one entry), each the list of ``(op, its rank, virtual stage)`` it
    becomes in our ops, in order."""
    from torch.distributed.pipelining import _schedule_visualizer as vis
    from torch.distributed.pipelining.schedules import _ComputationType as T

    positive_int("stages", stages, "pass a whole number such as stages=4.")
    positive_int("microbatches", microbatches, "pass a whole number such as microbatches=8.")
    layout = _layout(key, stages, microbatches)
    kinds = {T.FORWARD: ("F",), T.BACKWARD_INPUT: ("B",), T.BACKWARD_WEIGHT: ("W",),
             T.FULL_BACKWARD: ("B", "W") if layout.split_backward else ("B",)}
    out = []
    for actions in vis.get_schedule_ops(TORCH_SCHEDULES[key][0], stages, microbatches):
        entries = []
        for action in actions:
            if action is None or action.computation_type == T.REDUCE_GRAD:
                continue
            subs = (action.sub_actions if action.computation_type == T.OVERLAP_F_B
                    else (action,))
            entry = []
            for sub in subs:
                where, chunk = layout.placement(sub.stage_index)
                entry += [(Op(kind, sub.microbatch_index, chunk), where, sub.stage_index)
                          for kind in kinds[sub.computation_type]]
            entries.append(entry)
        out.append(entries)
    return out


def torch_schedule_ops(name, stages: int, microbatches: int) -> list[list]:
    """torch's schedule IR for ``name`` (our name), normalised to our :class:`Op` lists.

    An action that belongs to another rank is kept as the tuple ``("elsewhere", op,
    virtual stage)`` so that :func:`op_differences` can report it.
    """
    key = _torch_key(name)
    return [[op if where == rank else ("elsewhere", op, vs)
             for entry in entries for op, where, vs in entry]
            for rank, entries in enumerate(_torch_actions(key, stages, microbatches))]


def torch_runtime_timeline(name, stages: int, microbatches: int, costs=None) -> "Timeline":
    """Time torch's IR the way its runtime sends: a :class:`Timeline` like ``simulate``'s.

    Each op starts when its rank is free and its input is there, as in ``simulate``. The
    difference is a composite ``OVERLAP_F_B`` (DualPipeV): without a custom overlap
    function torch runs its halves one after the other, and ``_add_send_recv`` puts both
    halves' sends after the composite, so a neighbour gets either output only when the
    whole pair is done (DualPipe's own ``_forward_backward_chunk`` also sends after both);
    likewise a full backward sends its input gradient after its weight gradient. ``simulate``
    and our executor send each op's output as soon as it ends. Notebook 04 §8 times
    DualPipeV both ways. Not for ``"1f1b"``: torch 2.13's IR names a micro-batch that
    does not exist on its last rank (see the module docstring), so it never finishes.
    """
    from .simulate import Event, OpCosts, Timeline

    key = one_of("name", _torch_key(name), [k for k in TORCH_SCHEDULES if k != "1f1b"])
    costs = costs or OpCosts()
    layout, ranks = _layout(key, stages, microbatches), _torch_actions(key, stages, microbatches)
    last = layout.virtual_stages - 1
    done = {}  # (kind, virtual stage, micro-batch) -> (end, when it leaves for another rank)
    free, pos, events = [0.0] * stages, [0] * stages, []

    def needs(kind, vs, mb):
        if kind == "F":
            return None if vs == 0 else ("F", vs - 1, mb)
        return ("F", vs, mb) if kind == "B" and vs == last else (
            ("B", vs + 1, mb) if kind == "B" else ("B", vs, mb))

    while any(pos[r] < len(ranks[r]) for r in range(stages)):
        progressed = False
        for r in range(stages):
            while pos[r] < len(ranks[r]):
                entry, t, ends = ranks[r][pos[r]], free[r], {}
                for op, _, vs in entry:
                    dep = needs(op.kind, vs, op.microbatch)
                    if dep is not None and dep not in done and dep not in ends:
                        break
                    if dep in ends:
                        ready = ends[dep]
                    elif dep is None:
                        ready = 0.0
                    else:
                        end, leaves = done[dep]
                        crosses = layout.placement(dep[1])[0] != r
                        ready = leaves + costs.send if crosses else end
                    start = max(t, ready)
                    t = start + costs.duration(op, layout)
                    ends[(op.kind, vs, op.microbatch)] = t
                    events.append(Event(r, op, start, t))
                else:
                    for k, end in ends.items():
                        done[k] = (end, t)  # every output of the entry leaves at its end
                    free[r], pos[r], progressed = t, pos[r] + 1, True
                    continue
                del events[len(events) - len(ends):]
                break
        if not progressed:  # cannot happen: each IR here equals a schedule simulate() runs
            raise RuntimeError(f"torch's {key!r} IR stalled at stages={stages}, "
                               f"microbatches={microbatches}")
    return Timeline(events, stages, layout.chunks, layout.split_backward, key)


def torch_executed_ops(name, stages: int, microbatches: int) -> list[list[Op]]:
    """The order ``ScheduleGPipe`` / ``Schedule1F1B`` really run, per rank: their
    ``_step_microbatches`` driven with a mocked stage that records each forward and
    backward and sends nothing."""
    from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe
    from torch.distributed.pipelining.stage import PipelineStage

    key = _torch_key(name)
    classes = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}
    if key not in classes:
        raise ValueError(f"torch executes {name!r} from its IR (torch_schedule_ops); "
                         "torch_executed_ops records 'gpipe' and '1f1b'.")
    positive_int("stages", stages, "pass a whole number such as stages=4.")
    positive_int("microbatches", microbatches, "pass a whole number such as microbatches=8.")
    out = []
    for rank in range(stages):
        log = []
        stage = mock.create_autospec(PipelineStage, instance=True)
        stage.group_rank, stage.group_size, stage.num_stages = rank, stages, stages
        stage.stage_index, stage.submod, stage.device = rank, None, "cpu"
        stage.is_first, stage.is_last = rank == 0, rank == stages - 1
        for comm in ("get_fwd_recv_ops", "get_fwd_send_ops", "get_bwd_recv_ops",
                     "get_bwd_send_ops"):
            getattr(stage, comm).return_value = []  # nothing to send: no rank runs
        stage.forward_one_chunk.side_effect = lambda mb, *a, **k: log.append(Op("F", mb))
        stage.backward_one_chunk.side_effect = lambda mb, *a, **k: log.append(Op("B", mb))
        schedule = classes[key](stage, microbatches)
        schedule._step_microbatches([() for _ in range(microbatches)],
                                    [{} for _ in range(microbatches)])
        out.append(log)
    return out


def op_differences(ours, theirs) -> list[str]:
    """Where two per-rank op lists differ, one line per rank: the first differing
    position and the ops there. Empty when they are equal op for op."""
    ours = ours.ops if isinstance(ours, Schedule) else ours
    lines = []
    if len(ours) != len(theirs):
        raise ValueError(f"ours has {len(ours)} ranks and theirs {len(theirs)}; compare "
                         "schedules built for the same number of stages.")
    for rank, (a, b) in enumerate(zip(ours, theirs)):
        a, b = list(a), list(b)
        if a == b:
            continue
        i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        lines.append(f"rank {rank}: from op {i}, ours {a[i:i + 4]} vs torch's {b[i:i + 4]}"
                     f" ({len(a)} vs {len(b)} ops)")
    return lines
