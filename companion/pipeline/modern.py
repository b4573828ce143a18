"""Schedules after 1F1B: looped BFS, interleaved zero bubble, ZB-V and DualPipeV.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``), section
"Schedules after 1F1B". Each builder returns a :class:`~companion.pipeline.ops.Schedule`
with two model chunks per rank (by default), so every rank holds two slices of the model:

* **looped BFS** (Lamy-Poirier, 2022, https://arxiv.org/abs/2211.05953): every forward
  of chunk 0, then every forward of chunk 1, then the backwards in reverse: GPipe over
  ``p*v`` virtual stages, the same bubble as interleaving but every micro-batch held;
* **interleaved zero bubble** (ZB1P, Qi et al., 2024, https://arxiv.org/abs/2401.10241):
  interleaved 1F1B with the backward split into B (input gradient) and W (weight
  gradient), each W postponed by ``s`` backward slots on rank ``s``;
* **ZB-V** (same paper, section 6): the V placement, rank ``s`` holds virtual stages
  ``s`` and ``2p-1-s``, so the first and the last piece of the model share rank 0, and
  W fills the warm-up and cool-down;
* **DualPipeV** (Sea AI Lab's "cut-in-half" of DualPipe, which DeepSeek-V3 trained
  with, https://arxiv.org/abs/2412.19437 §3.2.1; the deepseek-ai/DualPipe README
  credits the V to them): the same V placement; in the steady state each slot pairs one
  micro-batch's forward on one chunk with another micro-batch's full backward on the
  other chunk, which DualPipe's kernels run concurrently so that one's communication
  hides under the other's compute. DualPipe itself feeds micro-batches from both ends
  and keeps two copies of each stage's parameters; the V folds it onto half the
  devices, each holding two stages, with the same bubble and one copy.

The op orders follow torch 2.13's ``torch.distributed.pipelining`` schedules of the same
names (``ScheduleLoopedBFS``, ``ScheduleInterleavedZeroBubble``, ``ScheduleZBVZeroBubble``,
``ScheduleDualPipeV``) op for op, written as phases a student can read;
``tests/test_pipeline_torch_ops.py`` checks that at several sizes. A DualPipeV slot that
torch writes as one composite action ``OVERLAP_F_B(F, B)`` is written here as its two
ops in order, which is also how torch's runtime executes it unless a custom overlap
function is registered.
"""
from __future__ import annotations

from .ops import Op, Schedule, check_sizes, interleave, interleaved_order, schedule_from_ops

__all__ = ["looped_bfs", "interleaved_zb", "zb_v", "dualpipev"]


def _groups_of_p(name: str, stages: int, microbatches: int) -> None:
    if microbatches % stages:
        raise ValueError(f"{name} sends micro-batches in groups of stages={stages}: use a "
                         f"number of micro-batches that is a multiple of {stages} "
                         f"(got microbatches={microbatches}).")


def looped_bfs(stages: int, microbatches: int, chunks: int = 2) -> "Schedule":
    """Every forward of chunk 0, of chunk 1, ...; then the backwards, last chunk and last
    micro-batch first (torch's order)."""
    check_sizes(stages, microbatches, chunks)
    v, m = chunks, microbatches
    seq = ([Op("F", mb, c) for c in range(v) for mb in range(m)]
           + [Op("B", mb, c) for c in reversed(range(v)) for mb in reversed(range(m))])
    return schedule_from_ops("looped-bfs", stages, m, [seq] * stages, chunks=v)


def interleaved_zb(stages: int, microbatches: int, chunks: int = 2) -> "Schedule":
    """Interleaved 1F1B with split backward (ZB1P).

    Rank ``s`` runs ``(v-1)p + (p-1-s)`` warm-up forwards (interleaved 1F1B runs
    ``(v-1)p + 2(p-1-s)``: the W that follows each B keeps the upstream rank busy, so it
    needs fewer forwards in flight), then F,B pairs; the W of a B runs ``s`` B's later.
    """
    check_sizes(stages, microbatches, chunks)
    _groups_of_p("interleaved zero bubble", stages, microbatches)
    p, v, m = stages, chunks, microbatches
    op, total = interleaved_order(p, v), m * v
    ops = []
    for s in range(p):
        warmup = min((v - 1) * p + (p - 1 - s), total)
        fwd = [op("F", k) for k in range(total)]
        bwd = [op("B", k) for k in range(total)]
        ops.append(interleave(fwd, bwd, warmup, w_lag=s))
    return schedule_from_ops("interleaved-zb", stages, m, ops, chunks=v, split=True)


def zb_v(stages: int, microbatches: int) -> "Schedule":
    """ZB-V: two chunks per rank in a V; chunk 0 runs down the ranks, chunk 1 back up.

    Phases on rank ``r`` (``F0`` = forward of chunk 0, ``BW1`` = B then W of chunk 1):
    ``2(p-r)-1`` x F0; ``r`` x (F1, F0); ``p-r`` x (F1, BW1); steady (F0, BW0, F1, BW1)
    until every forward ran; cool-down ``r`` x (B0, B1) with their W's put off, then
    ``p-r`` x (B0, W0), then the W's still owed, chunk 1 first. Like torch, it plans at
    least ``2p-1`` micro-batches (the steady state needs that many in flight) and then
    drops the ops of micro-batches that do not exist.
    """
    check_sizes(stages, microbatches)
    p, m = stages, microbatches
    ops = []
    for r in range(p):
        seq, f, b, w = [], [0, 0], [0, 0], [0, 0]

        def F(c):
            seq.append(Op("F", f[c], c))
            f[c] += 1

        def B(c, with_w=True):
            seq.append(Op("B", b[c], c))
            b[c] += 1
            if with_w:
                W(c)

        def W(c):
            seq.append(Op("W", w[c], c))
            w[c] += 1

        planned = max(2 * p - 1, m)
        for _ in range(2 * (p - r) - 1):
            F(0)
        for _ in range(r):
            F(1), F(0)
        for _ in range(p - r):
            F(1), B(1)
        while f[1] < f[0] or f[0] < planned:
            if f[0] < planned:
                F(0)
            B(0), F(1), B(1)
        for _ in range(r):
            B(0, with_w=False), B(1, with_w=False)
        for _ in range(p - r):
            B(0, with_w=False), W(0)
        while w[1] < b[1]:
            W(1)
        while w[0] < b[0]:
            W(0)
        ops.append([o for o in seq if o.microbatch < m])
    return schedule_from_ops("zb-v", stages, m, ops, chunks=2, split=True, layout="v")


def dualpipev(stages: int, microbatches: int) -> "Schedule":
    """DualPipeV: the V placement; the steady state pairs F of one chunk with a full
    backward (B then W) of the other, on different micro-batches.

    Steps on rank ``r`` (``I`` = input-gradient B whose W waits in a queue, ``BW`` = full
    backward, ``(F0;BW1)`` = an overlapped pair):
    1. ``2(p-r-1)`` x F0;  2. ``r+1`` x (F0, F1);  3. ``p-r-1`` x (I1, a queued W, F1);
    4. ``m-2p+r+1`` x ((F0;BW1), (F1;BW0)), the last rank's first pair not overlapped;
    5. ``p-r-1`` x (BW1, (F1;BW0));  6. ``r+1`` x (chunk-1 then chunk-0 backward, full
    for the first half, I from then on);  7. ``p-r-1`` x (a queued W, chunk-0 backward);
    8. the queued W's.
    """
    check_sizes(stages, microbatches)
    p, m = stages, microbatches
    if m < 2 * p:
        raise ValueError(f"DualPipeV needs at least 2 x stages = {2 * p} micro-batches (one "
                         f"per virtual stage); got microbatches={m}.")
    ops = []
    for r in range(p):
        seq, f, b, queue = [], [0, 0], [0, 0], []

        def F(c):
            seq.append(Op("F", f[c], c))
            f[c] += 1

        def back(c, full):
            seq.append(Op("B", b[c], c))
            if full:
                seq.append(Op("W", b[c], c))
            else:
                queue.append(Op("W", b[c], c))
            b[c] += 1

        def queued_w():
            if queue:
                seq.append(queue.pop(0))

        for _ in range(2 * (p - r - 1)):
            F(0)
        for _ in range(r + 1):
            F(0), F(1)
        for _ in range(p - r - 1):
            back(1, full=False), queued_w(), F(1)
        for _ in range(m - 2 * p + r + 1):
            F(0), back(1, full=True)  # overlapped pair (not on the last rank's first step)
            F(1), back(0, full=True)  # overlapped pair
        for _ in range(p - r - 1):
            back(1, full=True)
            F(1), back(0, full=True)  # overlapped pair
        split = False
        for i in range(r + 1):
            if i == (r + 1) // 2 and r % 2 == 1:
                split = True
            back(1, full=not split)
            if i == (r + 1) // 2 and r % 2 == 0:
                split = True
            back(0, full=not split)
        for _ in range(p - r - 1):
            queued_w(), back(0, full=not split)
        for _ in range(r + 1):
            queued_w()
        ops.append(seq)
    return schedule_from_ops("dualpipev", stages, m, ops, chunks=2, split=True, layout="v")
