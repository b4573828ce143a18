"""Pipeline schedules as data: for every stage, the ordered list of operations it runs.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``).

A schedule says nothing about time. It is ``ops[stage]``, a list of :class:`Op`
(kind, micro-batch, chunk); the simulator (``simulate.py``) and the real executor
(``executor.py``) both take that list and run it, so a schedule a student writes is
checked by the same code that checks the built-in ones.

Kinds follow the zero-bubble paper (Qi et al., 2023):

* ``F``: forward of one micro-batch through one chunk of layers;
* ``B``: backward. In a schedule with ``split_backward=False`` it computes both the
  input gradient (sent upstream) and the weight gradient; with ``split_backward=True``
  it computes only the input gradient, and
* ``W``: the weight gradient, which nothing downstream waits for, so it may be
  postponed to fill idle time.

With ``chunks = v > 1`` (interleaved 1F1B, Narayanan et al., 2021) rank ``s`` holds
``v`` model chunks ("virtual stages"), and micro-batch activations visit every rank ``v``
times. Where they sit is the schedule's ``layout``:

* ``"loop"`` (Megatron's interleaving): rank ``s`` holds virtual stages ``s, s+p, s+2p, ...``;
* ``"v"`` (ZB-V, DualPipeV): chunk 0 runs down the ranks and chunk 1 back up, so rank
  ``s`` holds ``s`` and ``2p-1-s``; the turn at the bottom (virtual stages ``p-1`` and
  ``p``) stays on the last rank and the loss is computed on rank 0, next to the input.

Schedules after 1F1B (looped BFS, interleaved zero bubble, ZB-V, DualPipeV) live in
``modern.py`` and are reachable by name through :func:`make_schedule`.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

from ..validation import positive_int

__all__ = ["Op", "Schedule", "SCHEDULES", "make_schedule", "naive", "gpipe", "one_f_one_b",
           "interleaved_1f1b", "zb_h1", "check_sizes", "schedule_key"]


class Op(NamedTuple):
    """One operation on one stage: ``kind`` in F/B/W, a micro-batch, a model chunk."""

    kind: str
    microbatch: int
    chunk: int = 0

    def __repr__(self) -> str:
        return f"{self.kind}{self.microbatch}" + (f".{self.chunk}" if self.chunk else "")


@dataclasses.dataclass(frozen=True)
class Schedule:
    """``ops[s]`` is the order in which stage (rank) ``s`` runs its operations."""

    name: str
    stages: int
    microbatches: int
    ops: tuple
    chunks: int = 1
    split_backward: bool = False
    layout: str = "loop"

    def __post_init__(self):
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout={self.layout!r} is not a placement; use 'loop' (Megatron's "
                             "interleaving) or 'v' (ZB-V, DualPipeV).")

    def virtual_stage(self, stage: int, chunk: int) -> int:
        """Position in the model of ``chunk`` on ``stage`` (see the module docstring)."""
        if self.layout == "v" and chunk % 2:
            return chunk * self.stages + self.stages - 1 - stage
        return chunk * self.stages + stage

    def placement(self, virtual_stage: int) -> tuple[int, int]:
        """Inverse of :meth:`virtual_stage`: ``(stage, chunk)``."""
        chunk, offset = divmod(virtual_stage, self.stages)
        if self.layout == "v" and chunk % 2:
            return self.stages - 1 - offset, chunk
        return offset, chunk

    @property
    def virtual_stages(self) -> int:
        return self.stages * self.chunks

    def validate(self) -> "Schedule":
        """Every stage runs each needed (kind, micro-batch, chunk) exactly once, or ValueError."""
        kinds = ("F", "B", "W") if self.split_backward else ("F", "B")
        if len(self.ops) != self.stages:
            raise ValueError(f"schedule {self.name!r} has {len(self.ops)} op lists but "
                             f"{self.stages} stages; give one list per stage.")
        for s, ops in enumerate(self.ops):
            wanted = {Op(k, mb, c) for k in kinds for mb in range(self.microbatches)
                      for c in range(self.chunks)}
            seen = set()
            for op in ops:
                if not isinstance(op, Op):
                    raise ValueError(f"stage {s}: {op!r} is not an Op; write Op('F', mb, chunk).")
                if op not in wanted:
                    raise ValueError(
                        f"stage {s}: {op!r} is not part of this schedule (kinds {kinds}, "
                        f"micro-batches 0..{self.microbatches - 1}, chunks 0..{self.chunks - 1}).")
                if op in seen:
                    raise ValueError(f"stage {s} runs {op!r} twice; each op runs once.")
                seen.add(op)
            missing = sorted(wanted - seen)
            if missing:
                raise ValueError(f"stage {s} never runs {missing[:4]}{' ...' if len(missing) > 4 else ''}; "
                                 "every micro-batch needs its forward and backward on every stage.")
        return self


LAYOUTS = ("loop", "v")


def check_sizes(stages: int, microbatches: int, chunks: int = 1) -> None:
    """TypeError/ValueError naming the fix for impossible sizes."""
    for name, value in (("stages", stages), ("microbatches", microbatches), ("chunks", chunks)):
        positive_int(name, value, f"pass a whole number such as {name}=4.")


def _schedule(name, stages, microbatches, ops, chunks=1, split=False, layout="loop") -> Schedule:
    return Schedule(name, stages, microbatches, tuple(tuple(o) for o in ops), chunks, split,
                    layout)


def _interleave(fwd: list, bwd: list, warmup: int, w_lag: int | None = None) -> list:
    """The 1F1B pattern over one rank's forwards ``fwd`` and backwards ``bwd`` (in order):
    ``warmup`` forwards, then F,B pairs, then the remaining B's.

    With ``w_lag`` (split backward), the W of the ``j``-th B runs right after B number
    ``j + w_lag``; the W's still owed at the end follow in order.
    """
    seq, done = list(fwd[:warmup]), 0
    for j, b in enumerate(bwd):
        if warmup + j < len(fwd):
            seq.append(fwd[warmup + j])
        seq.append(b)
        if w_lag is not None and j >= w_lag:
            seq.append(Op("W", bwd[done].microbatch, bwd[done].chunk))
            done += 1
    if w_lag is not None:
        seq += [Op("W", b.microbatch, b.chunk) for b in bwd[done:]]
    return seq


def naive(stages: int, microbatches: int = 1) -> Schedule:
    """No pipelining: each micro-batch goes all the way forward and back before the next."""
    check_sizes(stages, microbatches)
    ops = [[op for mb in range(microbatches) for op in (Op("F", mb), Op("B", mb))]
           for _ in range(stages)]
    return _schedule("naive", stages, microbatches, ops)


def gpipe(stages: int, microbatches: int) -> Schedule:
    """GPipe (Huang et al., 2019): all forwards, then all backwards."""
    check_sizes(stages, microbatches)
    ops = [[Op("F", mb) for mb in range(microbatches)] + [Op("B", mb) for mb in range(microbatches)]
           for _ in range(stages)]
    return _schedule("gpipe", stages, microbatches, ops)


def one_f_one_b(stages: int, microbatches: int) -> Schedule:
    """1F1B (PipeDream-Flush): ``p - 1 - s`` warm-up forwards, then alternate F and B.

    Same bubble as GPipe, but stage ``s`` never holds more than ``p - s`` micro-batches'
    activations instead of all ``m``.
    """
    check_sizes(stages, microbatches)
    fwd = [Op("F", mb) for mb in range(microbatches)]
    bwd = [Op("B", mb) for mb in range(microbatches)]
    ops = [_interleave(fwd, bwd, min(stages - 1 - s, microbatches)) for s in range(stages)]
    return _schedule("1f1b", stages, microbatches, ops)


def _interleaved_order(p: int, v: int):
    """Megatron's interleaved order on one rank: micro-batches in groups of ``p``, each
    group through chunk 0, then chunk 1, ...; backwards the same with chunks reversed."""
    def op(kind: str, k: int) -> Op:
        chunk = (k % (p * v)) // p
        return Op(kind, (k // (p * v)) * p + k % p, chunk if kind == "F" else v - 1 - chunk)
    return op


def interleaved_1f1b(stages: int, microbatches: int, chunks: int = 2) -> Schedule:
    """Megatron-LM's interleaved 1F1B with ``chunks`` model chunks per rank.

    Micro-batches move in groups of ``p``; that is why ``m`` must be a multiple of ``p``.
    """
    check_sizes(stages, microbatches, chunks)
    if chunks == 1:
        return dataclasses.replace(one_f_one_b(stages, microbatches), name="interleaved")
    if microbatches % stages:
        raise ValueError(f"interleaved 1F1B sends micro-batches in groups of stages={stages}: "
                         f"use a number of micro-batches that is a multiple of {stages} "
                         f"(got microbatches={microbatches}).")
    p, v, total = stages, chunks, microbatches * chunks
    op = _interleaved_order(p, v)
    fwd, bwd = [op("F", k) for k in range(total)], [op("B", k) for k in range(total)]
    ops = [_interleave(fwd, bwd, min((p - s - 1) * 2 + (v - 1) * p, total)) for s in range(p)]
    return _schedule("interleaved", stages, microbatches, ops, chunks=chunks)


def zb_h1(stages: int, microbatches: int) -> Schedule:
    """ZB-H1 (Qi et al., 2023): 1F1B with the weight gradient W split off and postponed.

    In the steady state stage ``s`` repeats the triple ``(F_x, B_{x-(p-1-s)}, W_{x-(p-1)})``
    for ``x = 0, 1, ..., m+p-2``, skipping indices outside ``0..m-1``. B keeps 1F1B's
    place (the stage upstream waits for it); each W runs ``s`` slots later than its B
    would in 1F1B, which fills the warm-up and cool-down gaps, while stage ``s`` still
    holds at most ``p`` micro-batches, the peak of 1F1B's first stage.
    """
    check_sizes(stages, microbatches)
    p, m = stages, microbatches
    ops = []
    for s in range(p):
        seq = []
        for x in range(m + p - 1):
            for kind, mb in (("F", x), ("B", x - (p - 1 - s)), ("W", x - (p - 1))):
                if 0 <= mb < m:
                    seq.append(Op(kind, mb))
        ops.append(seq)
    return _schedule("zb-h1", stages, microbatches, ops, split=True)


# The later schedules build on Op, _schedule and _interleave above.
from .modern import dualpipev, interleaved_zb, looped_bfs, zb_v  # noqa: E402

SCHEDULES = {"naive": naive, "gpipe": gpipe, "1f1b": one_f_one_b,
             "interleaved": interleaved_1f1b, "zb-h1": zb_h1, "looped-bfs": looped_bfs,
             "interleaved-zb": interleaved_zb, "zb-v": zb_v, "dualpipev": dualpipev}
# Chunks per rank when make_schedule is given none; zb-v and dualpipev allow only 2.
DEFAULT_CHUNKS = {"interleaved": 1, "looped-bfs": 2, "interleaved-zb": 2, "zb-v": 2,
                  "dualpipev": 2}
ALIASES = {"one-f-one-b": "1f1b", "interleaved-1f1b": "interleaved", "zbh1": "zb-h1",
           "zbv": "zb-v", "zb-v-zero-bubble": "zb-v", "dualpipe-v": "dualpipev",
           "loopedbfs": "looped-bfs", "interleaved-zero-bubble": "interleaved-zb"}


def schedule_key(name) -> str:
    """The registry key of a schedule name ("ZBV" -> "zb-v"), or ValueError."""
    key = str(name).lower().replace("_", "-")
    key = ALIASES.get(key, key)
    if key not in SCHEDULES:
        raise ValueError(f"unknown schedule {name!r}; choose one of {sorted(SCHEDULES)}.")
    return key


def make_schedule(name, stages: int, microbatches: int, chunks: int | None = None) -> Schedule:
    """A built-in schedule by name (see ``SCHEDULES``), or a :class:`Schedule` passed through.

    ``chunks`` (model chunks per rank) defaults to the schedule's own: 1, or 2 for
    looped-bfs, interleaved-zb, zb-v and dualpipev.
    """
    if isinstance(name, Schedule):
        return name.validate()
    key = schedule_key(name)
    default = DEFAULT_CHUNKS.get(key, 1)
    chunks = default if chunks is None else chunks
    check_sizes(stages, microbatches, chunks)
    if key in ("interleaved", "looped-bfs", "interleaved-zb"):
        return SCHEDULES[key](stages, microbatches, chunks).validate()
    if chunks != default:
        hint = ("use chunks=2 (its V holds two chunks per rank)" if default == 2 else
                "use chunks=1 or schedule='interleaved'")
        raise ValueError(f"schedule {key!r} puts {default} model chunk(s) on each stage; {hint}.")
    return SCHEDULES[key](stages, microbatches).validate()
