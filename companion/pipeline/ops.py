"""The vocabulary of a pipeline schedule: :class:`Op`, :class:`Schedule`, the layouts, and
the helpers every schedule builder shares.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``).

A schedule says nothing about time. It is ``ops[stage]``, a list of :class:`Op`
(kind, micro-batch, chunk); the simulator (``simulate.py``) and the real executor
(``executor.py``) both take that list and run it, so a schedule a student writes is
checked by the same code that checks the built-in ones.

Kinds follow the zero-bubble paper (Qi et al., ICLR 2024, arXiv:2401.10241):

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

The builders live in ``schedules.py`` (naive to ZB-H1) and ``modern.py`` (looped BFS,
interleaved zero bubble, ZB-V, DualPipeV); ``registry.py`` finds them by name.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

from ..validation import positive_int

# interleave, interleaved_order and schedule_from_ops are the builders' shared pieces,
# not entry points of their own.
__all__ = ["Op", "Schedule", "LAYOUTS", "check_sizes"]


LAYOUTS = ("loop", "v")


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

    def sends(self, src: int, dst: int) -> list[tuple[str, int, int]]:
        """What stage ``src`` sends stage ``dst``, ``(kind, micro-batch, virtual stage
        sending)``, in the order of ``src``'s ops: each F's output to the next virtual
        stage, each B's input gradient to the previous one (none where they share a rank)."""
        out = []
        for op in self.ops[src] if src != dst else ():
            vs = self.virtual_stage(src, op.chunk)
            if op.kind == "F" and vs < self.virtual_stages - 1:
                to = vs + 1
            elif op.kind == "B" and vs > 0:
                to = vs - 1
            else:
                continue
            if self.placement(to)[0] == dst:
                out.append((op.kind, op.microbatch, vs))
        return out

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
                more = " ..." if len(missing) > 4 else ""
                raise ValueError(f"stage {s} never runs {missing[:4]}{more}; every "
                                 "micro-batch needs its forward and backward on every stage.")
        return self



def check_sizes(stages: int, microbatches: int, chunks: int = 1) -> None:
    """TypeError/ValueError naming the fix for impossible sizes."""
    for name, value in (("stages", stages), ("microbatches", microbatches), ("chunks", chunks)):
        positive_int(name, value, f"pass a whole number such as {name}=4.")


def schedule_from_ops(name, stages, microbatches, ops, chunks=1, split=False,
                      layout="loop") -> Schedule:
    """A :class:`Schedule` from one op list per stage (each frozen into a tuple)."""
    return Schedule(name, stages, microbatches, tuple(tuple(o) for o in ops), chunks, split,
                    layout)


def interleave(fwd: list, bwd: list, warmup: int, w_lag: int | None = None) -> list:
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


def interleaved_order(p: int, v: int):
    """Megatron's interleaved order on one rank: micro-batches in groups of ``p``, each
    group through chunk 0, then chunk 1, ...; backwards the same with chunks reversed."""
    def op(kind: str, k: int) -> Op:
        chunk = (k % (p * v)) // p
        return Op(kind, (k // (p * v)) * p + k % p, chunk if kind == "F" else v - 1 - chunk)
    return op
