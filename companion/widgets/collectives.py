"""Grids of ranks x chunks for notebook 01 (``notebooks/01_collectives.ipynb``).

:func:`collective_replay` steps through a *recorded* run (the per-rank
:class:`~companion.collectives.Traffic` returned by real ranks) with a Play button and
a slider; :func:`draw_replay_frame` draws one frame on a matplotlib axis, and
:func:`plot_rank_tensors` shows every rank's tensor (the before/after pictures).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..collectives.replay import Replay, replay
from ..plotting import rank_colors
from ._base import frame_player
from ..i18n import gettext as tr

__all__ = ["collective_replay", "draw_replay_frame", "plot_rank_tensors"]


def _label(cell: frozenset, n: int) -> str:
    if not cell:
        return "·"
    if len(cell) == n and n > 3:
        return tr("Σ all")
    return "+".join(str(r) for r in sorted(cell))


def _partial_sum(values, cell, a, b) -> str:
    if not cell:
        return ""
    total = sum(values[r].reshape(-1)[a:b] for r in sorted(cell))
    shown = ", ".join(f"{v:g}" for v in total[:2].tolist())
    return "\n" + shown + (", …" if b - a > 2 else "")


def draw_replay_frame(rp: Replay, frame: int, ax=None, title: str = "", values=None):
    """Draw frame ``frame`` of a replay: each cell names the ranks summed in it; arrows are
    the messages of the step that produced this frame (colour of the sender).

    ``values`` (each rank's flat starting buffer, optional) adds the partial sums: a cell
    holding ranks {0, 2} shows ``values[0] + values[2]`` over its element range.
    """
    if values is not None and len(values) != rp.world_size:
        raise ValueError(f"values must hold one tensor per rank ({rp.world_size}), got {len(values)}.")
    if not 0 <= frame < len(rp.frames):
        raise ValueError(f"frame must be in 0..{len(rp.frames) - 1}, got {frame}.")
    ax = ax or plt.gca()
    n, state = rp.world_size, rp.frames[frame]
    ncols = len(state[0])
    counts = np.array([[len(c) for c in row] for row in state], dtype=float)
    ax.imshow(counts, cmap="Blues", vmin=0, vmax=n * 1.6, aspect="auto")
    for r in range(n):
        for c in range(ncols):
            extra = "" if values is None else _partial_sum(values, state[r][c], rp.bounds[c],
                                                           rp.bounds[c + 1])
            ax.text(c, r, _label(state[r][c], n) + extra, ha="center", va="center", fontsize=11,
                    fontweight="bold" if len(state[r][c]) == n else "normal")
    colors = rank_colors(n)
    if frame > 0:
        for src, dst, c0, c1, kind in rp.moves[frame - 1]:
            x = (c0 + c1) / 2 + 0.3
            # a bar under the receiving cells marks the whole range the message carried
            ax.plot([c0 - 0.45, c1 + 0.45], [dst + 0.42, dst + 0.42], color=colors[src], lw=4,
                    solid_capstyle="butt")
            ax.annotate("", xy=(x, dst), xytext=(x, src),
                        arrowprops=dict(arrowstyle="-|>", color=colors[src], lw=2,
                                        linestyle="-" if kind == "reduce" else "--",
                                        connectionstyle="arc3,rad=0.25"))
    ax.set_xticks(range(ncols))
    ax.set_xticklabels([tr("chunk {c}\n[{a}:{b}]").format(c=c, a=rp.bounds[c], b=rp.bounds[c + 1])
                        for c in range(ncols)],
                       fontsize=10)
    ax.set_yticks(range(n))
    ax.set_yticklabels([f"rank {r}" for r in range(n)])
    ax.grid(False)
    if frame == 0:
        what = tr("start: each rank holds its own data")
    else:
        moves = rp.moves[frame - 1]
        what = (tr("after step {frame} of {steps}: {n} messages, {bytes} bytes") if len(moves) != 1
                else tr("after step {frame} of {steps}: {n} message, {bytes} bytes")).format(
            frame=frame, steps=len(rp.frames) - 1, n=len(moves), bytes=rp.bytes_per_step[frame - 1])
    ax.set_title(f"{title}\n{what}" if title else what, fontsize=13)
    ax.set_xlabel(tr("chunk [element range]\narrow: solid = received and added, "
                     "dashed = copied"), fontsize=10)
    return ax


def collective_replay(traffics, title: str = "", figsize=(9, 4.6), values=None):
    """Play/slider through a recorded collective; ``.slider``/``.play`` are the controls,
    ``.replay`` the frames and ``.last_title`` what the figure shows now. ``values``: as
    in :func:`draw_replay_frame`."""
    rp = traffics if isinstance(traffics, Replay) else replay(traffics)
    box = frame_player(len(rp.frames), lambda i, ax: draw_replay_frame(rp, i, ax, title, values),
                       figsize, tr("step"), 1200)
    box.replay = rp
    return box


def plot_rank_tensors(tensors, ax=None, title: str = "", fmt: str = "{:g}"):
    """One row per rank, one cell per element (flattened); ``None`` rows show as empty."""
    if not len(tensors):
        raise ValueError("tensors is empty: pass one tensor (or None) per rank.")
    ax = ax or plt.gca()
    n = len(tensors)
    width = max((t.numel() for t in tensors if t is not None), default=1)
    grid = np.full((n, width), np.nan)
    for r, t in enumerate(tensors):
        if t is not None:
            grid[r, :t.numel()] = t.reshape(-1).float().numpy()
    ax.imshow(np.nan_to_num(grid, nan=0.0), cmap="Blues", aspect="auto",
              vmin=min(0.0, np.nanmin(grid) if np.isfinite(grid).any() else 0.0),
              vmax=(np.nanmax(grid) if np.isfinite(grid).any() else 1.0) * 1.6 + 1e-9)
    for r in range(n):
        for c in range(width):
            ax.text(c, r, "" if np.isnan(grid[r, c]) else fmt.format(grid[r, c]),
                    ha="center", va="center", fontsize=10)
    ax.set_yticks(range(n))
    ax.set_yticklabels([f"rank {r}" for r in range(n)])
    ax.set_xticks(range(width))
    ax.set_xlabel(tr("element"))
    ax.grid(False)
    ax.set_title(title)
    return ax
