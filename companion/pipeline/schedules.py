"""The classic pipeline schedules: naive, GPipe, 1F1B, interleaved 1F1B and ZB-H1.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``). Each builder
returns a :class:`~companion.pipeline.ops.Schedule`, for every stage the ordered list
of operations it runs (``ops.py`` explains the F/B/W kinds, chunks and layouts).
Schedules after 1F1B (looped BFS, interleaved zero bubble, ZB-V, DualPipeV) live in
``modern.py``; ``registry.py`` reaches both by name (:func:`make_schedule`).
"""
from __future__ import annotations

import dataclasses

from .ops import Op, Schedule, check_sizes, interleave, interleaved_order, schedule_from_ops

__all__ = ["naive", "gpipe", "one_f_one_b", "interleaved_1f1b", "zb_h1"]


def naive(stages: int, microbatches: int = 1) -> Schedule:
    """No pipelining: each micro-batch goes all the way forward and back before the next."""
    check_sizes(stages, microbatches)
    ops = [[op for mb in range(microbatches) for op in (Op("F", mb), Op("B", mb))]
           for _ in range(stages)]
    return schedule_from_ops("naive", stages, microbatches, ops)


def gpipe(stages: int, microbatches: int) -> Schedule:
    """GPipe (Huang et al., 2019): all forwards, then all backwards."""
    check_sizes(stages, microbatches)
    ops = [[Op("F", mb) for mb in range(microbatches)] + [Op("B", mb) for mb in range(microbatches)]
           for _ in range(stages)]
    return schedule_from_ops("gpipe", stages, microbatches, ops)


def one_f_one_b(stages: int, microbatches: int) -> Schedule:
    """1F1B (PipeDream-Flush): ``p - 1 - s`` warm-up forwards, then alternate F and B.

    Same bubble as GPipe, but stage ``s`` never holds more than ``p - s`` micro-batches'
    activations instead of all ``m``.
    """
    check_sizes(stages, microbatches)
    fwd = [Op("F", mb) for mb in range(microbatches)]
    bwd = [Op("B", mb) for mb in range(microbatches)]
    ops = [interleave(fwd, bwd, min(stages - 1 - s, microbatches)) for s in range(stages)]
    return schedule_from_ops("1f1b", stages, microbatches, ops)


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
    op = interleaved_order(p, v)
    fwd, bwd = [op("F", k) for k in range(total)], [op("B", k) for k in range(total)]
    ops = [interleave(fwd, bwd, min((p - s - 1) * 2 + (v - 1) * p, total)) for s in range(p)]
    return schedule_from_ops("interleaved", stages, microbatches, ops, chunks=chunks)


def zb_h1(stages: int, microbatches: int) -> Schedule:
    """ZB-H1 (Qi et al., 2024): 1F1B with the weight gradient W split off and postponed.

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
    return schedule_from_ops("zb-h1", stages, microbatches, ops, split=True)
