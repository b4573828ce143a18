"""Replay recorded traffic as a rank x chunk grid of partial sums, step by step.

Used by the grid animations of notebook 01 (``companion.widgets.collective_replay``).
Nothing here is drawn by hand: the frames are recomputed from the messages every rank
logged during a real run (:func:`companion.collectives.traffic`), so if an algorithm
sends the wrong chunk, the picture shows it.
"""
from __future__ import annotations

import dataclasses

__all__ = ["replay", "Replay"]


@dataclasses.dataclass
class Replay:
    """``frames[k][rank][col]``: the set of ranks whose data is summed in that cell
    after step k (frame 0 is the start); ``moves[k]``: the messages of step k as
    ``(src, dst, first_col, last_col, kind)``; ``bounds``: element offsets of the columns."""

    bounds: list
    frames: list
    moves: list
    bytes_per_step: list

    @property
    def world_size(self) -> int:
        return len(self.frames[0])

    def complete(self, frame: int = -1) -> bool:
        """True when every cell of ``frame`` holds the contributions of all ranks."""
        everyone = frozenset(range(self.world_size))
        return all(cell == everyone for row in self.frames[frame] for cell in row)


def replay(traffics) -> Replay:
    """Rebuild the grid frames from the per-rank :class:`Traffic` records of one run."""
    n = len(traffics)
    sends = [(r, m) for r, t in enumerate(traffics) for m in t.log
             if m.op == "send" and m.kind != "meta"]
    ends = {0}
    for t in traffics:
        for a, k in (t.initial or []):
            ends.update((a, a + k))
    for _, m in sends:
        ends.update((m.offset, m.offset + m.numel))
    bounds = sorted(ends)
    if len(bounds) < 2:
        raise ValueError("nothing to replay: record a collective inside `with traffic()` first.")
    ncols = len(bounds) - 1

    def cols(a, k):
        return [c for c in range(ncols) if bounds[c] >= a and bounds[c + 1] <= a + k]

    state = [[frozenset() for _ in range(ncols)] for _ in range(n)]
    for r, t in enumerate(traffics):
        for a, k in (t.initial or []):
            for c in cols(a, k):
                state[r][c] = frozenset({r})
    frames, moves, per_step = [[row[:] for row in state]], [], []
    for step in sorted({m.step for _, m in sends}):
        now = [(r, m) for r, m in sends if m.step == step]
        new = [row[:] for row in state]  # every send of a round reads the state before it
        moved = []
        for src, m in now:
            dst = m.peer
            cs = cols(m.offset, m.numel)
            for c in cs:
                new[dst][c] = new[dst][c] | state[src][c] if m.kind == "reduce" else state[src][c]
            moved.append((src, dst, cs[0], cs[-1], m.kind))
        state = new
        frames.append([row[:] for row in state])
        moves.append(moved)
        per_step.append(sum(m.bytes for _, m in now))
    return Replay(bounds, frames, moves, per_step)
