"""Pictures and widgets for notebooks 05 (tensor parallelism) and 06 (sequence parallelism).

* :func:`tp_split_explorer`: which rank owns which part of a weight matrix (column
  split, row split, the fused q|k|v projection split by heads) for a chosen TP size.
* :func:`grid_player`: Play/slider through frames recorded on real ranks
  (:func:`ring_frames` turns ring-attention traces into frames, :func:`ulysses_frames`
  the layouts measured around Ulysses' all-to-all).

Notebook 05's activation-memory calculator is :mod:`companion.widgets.activations`
(shared with notebook 03).
"""
from __future__ import annotations

import ipywidgets as W
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

from ..plotting import rank_colors
from ._base import frame_player, guarded, showing
from ..validation import positive_int
from ..i18n import gettext as tr

__all__ = ["draw_fg_dataflow", "draw_split", "tp_split_explorer", "ring_frames", "ulysses_frames", "draw_grid",
           "grid_player"]


def _box(ax, x, y, text, color="#FFFFFF", w=1.5, h=0.7, fontsize=11, alpha=0.9):
    ax.add_patch(plt.Rectangle((x - w / 2, y - h / 2), w, h, facecolor=color, edgecolor="black",
                               lw=1.5, alpha=alpha))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, x0, y0, x1, y1, color="black"):
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                arrowprops=dict(arrowstyle="-|>", color=color, lw=1.5))


def draw_fg_dataflow(tp: int = 2, sequence_parallel: bool = False, ax=None):
    """The Megatron MLP as a dataflow diagram: ``f`` -> per-rank ``GeLU(X A_i) B_i`` ->
    ``g``, with what each operator does in forward and in backward (with sequence
    parallelism: all-gather / reduce-scatter and the LayerNorm on sequence shards)."""
    if not 1 <= tp <= 4:
        raise ValueError(f"draw_fg_dataflow draws 1-4 ranks, got tp={tp}.")
    ax = ax or plt.gca()
    colors = rank_colors(tp)
    lanes = np.linspace(tp - 1, 0, tp) * 1.2 if tp > 1 else np.array([0.0])
    mid = lanes.mean()
    if sequence_parallel:
        _box(ax, 0.0, mid, tr("LayerNorm\non X[s/t]\n(per rank)"), "#EEEEEE", h=1.2)
    # Korthikanti et al. (Megatron-SP) reuse the letters: their g is the all-gather that
    # takes the place of Megatron-LM's f, their g-bar the reduce-scatter in place of g.
    # The boxes say so, so that "g" never silently means two different operators.
    f_text = (tr("g (Megatron-SP)\nin place of f\nfwd: all-gather\nbwd: reduce-scatter")
              if sequence_parallel else tr("f\nfwd: identity\nbwd: all-reduce"))
    g_text = (tr("ḡ (Megatron-SP)\nin place of g\nfwd: reduce-scatter\nbwd: all-gather")
              if sequence_parallel else tr("g\nfwd: all-reduce\nbwd: identity"))
    tall, size = (1.7, 8.5) if sequence_parallel else (1.3, 9.5)
    _box(ax, 2.0, mid, f_text, "#FFE9B0", w=1.9, h=tall, fontsize=size)
    _box(ax, 10.0, mid, g_text, "#FFE9B0", w=2.1, h=tall, fontsize=size)
    if sequence_parallel:
        _arrow(ax, 0.75, mid, 1.05, mid)
    for r, y in enumerate(lanes):
        _box(ax, 4.6, y, f"$Y_{r} = $GeLU$(X A_{r})$", colors[r], w=2.4, alpha=0.45)
        _box(ax, 7.6, y, f"$Z_{r} = Y_{r} B_{r}$", colors[r], w=1.9, alpha=0.45)
        _arrow(ax, 2.95, mid, 3.4, y)
        _arrow(ax, 5.8, y, 6.65, y)
        _arrow(ax, 8.55, y, 8.95, mid)
        ax.text(4.6, y - 0.5, tr("rank {r}: column shard $A_{r}$").format(r=r), ha="center",
                fontsize=9)
        ax.text(7.6, y - 0.5, tr("row shard $B_{r}$").format(r=r), ha="center", fontsize=9)
    ax.text(11.3, mid, "Z" if not sequence_parallel else "Z[s/t]", ha="left", va="center",
            fontsize=14)
    _arrow(ax, 11.05, mid, 11.3, mid)
    ax.text(6.1, lanes.max() + 0.9, tr("no communication between the two linears"), ha="center",
            fontsize=11, style="italic")
    ax.set_xlim(-1.0, 12.2)
    ax.set_ylim(lanes.min() - 1.0, lanes.max() + 1.3)
    ax.axis("off")
    ax.set_title(tr("{name} MLP on t={tp} ranks: collectives only at the region's edges").format(
        name="Megatron-SP" if sequence_parallel else "Megatron", tp=tp))
    return ax


def _owner_grid(kind: str, tp: int, d_model: int, d_ff: int, n_heads: int):
    """(owner rank per weight element, title) in nn.Linear's [out, in] layout."""
    if tp < 1:
        raise ValueError(f"tensor-parallel size tp must be >= 1, got tp={tp}.")
    if kind == "column":
        if d_ff % tp:
            raise ValueError(f"d_ff={d_ff} is not divisible by t={tp}; pick t dividing {d_ff}.")
        grid = np.repeat(np.arange(tp), d_ff // tp)[:, None].repeat(d_model, axis=1)
        return grid, tr("fc1 [{d_ff} x {d_model}], column-parallel: rank i keeps {rows} output "
                         "rows").format(d_ff=d_ff, d_model=d_model, rows=d_ff // tp)
    if kind == "row":
        if d_ff % tp:
            raise ValueError(f"d_ff={d_ff} is not divisible by t={tp}; pick t dividing {d_ff}.")
        grid = np.repeat(np.arange(tp), d_ff // tp)[None, :].repeat(d_model, axis=0)
        return grid, tr("fc2 [{d_model} x {d_ff}], row-parallel: rank i keeps {columns} input "
                         "columns").format(d_ff=d_ff, d_model=d_model, columns=d_ff // tp)
    if kind == "qkv":
        if n_heads % tp:
            raise ValueError(f"n_heads={n_heads} is not divisible by t={tp}; pick t dividing {n_heads}.")
        rows = d_model // tp
        block = np.repeat(np.arange(tp), rows)
        grid = np.concatenate([block] * 3)[:, None].repeat(d_model, axis=1)
        return grid, tr("qkv [3*{d_model} x {d_model}] split by heads: rank i keeps {heads} "
                        "head(s) of q, of k and of v").format(d_model=d_model, heads=n_heads // tp)
    raise ValueError(f"kind must be 'column', 'row' or 'qkv', got {kind!r}.")


def draw_split(kind: str, tp: int, ax=None, d_model: int = 8, d_ff: int = 16, n_heads: int = 4):
    """Colour every element of the weight by the rank that stores it."""
    grid, title = _owner_grid(kind, tp, d_model, d_ff, n_heads)
    ax = ax or plt.gca()
    ax.imshow(grid, cmap=ListedColormap(rank_colors(tp)), vmin=-0.5, vmax=tp - 0.5,
              aspect="equal")
    if kind == "qkv":
        for i, name in enumerate("qkv"):
            ax.axhline((i + 1) * d_model - 0.5, color="black", lw=2)
            ax.text(d_model / 2 - 0.5, i * d_model + d_model / 2 - 0.5, name, ha="center",
                    va="center", fontsize=14, bbox=dict(facecolor="white", alpha=0.8))
    ax.set_title(title, fontsize=12)
    ax.set_xlabel(tr("input feature"))
    ax.set_ylabel(tr("output feature"))
    ax.grid(False)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in rank_colors(tp)]
    ax.legend(handles, [f"rank {r}" for r in range(tp)], loc="upper left",
              bbox_to_anchor=(1.02, 1), fontsize=10)
    return ax


def tp_split_explorer():
    """Dropdown (column / row / qkv) and a slider for the TP size t; ``.kind``,
    ``.tp`` are the controls and ``.last_title`` what is drawn now."""
    kind = W.Dropdown(options=[(tr("fc1: column split"), "column"), (tr("fc2: row split"), "row"),
                               (tr("fused qkv: split by heads"), "qkv")], value="column",
                      description=tr("layer"))
    tp = W.IntSlider(value=2, min=1, max=8, description=tr("t (TP size)"))
    out = W.Output()
    box = W.VBox([W.HBox([kind, tp]), out])

    @guarded(out)
    def redraw(change=None):
        with showing(out):
            fig, ax = plt.subplots(figsize=(8, 5))
            draw_split(kind.value, tp.value, ax)
            box.last_title = ax.get_title()
            plt.show()
            plt.close(fig)

    kind.observe(redraw, names="value")
    tp.observe(redraw, names="value")
    box.kind, box.tp, box.output, box.last_title = kind, tp, out, ""
    redraw()
    return box


def ring_frames(traces: list[list[dict]]) -> list[dict]:
    """Frames from per-rank ring-attention traces (``compare_attention(...)["trace"]``):
    cell (query block i, K/V block j) holds the step at which rank i used block j,
    -2 if the causal mask skipped it, -1 if not reached yet."""
    n = len(traces)
    frames = []
    grid = np.full((n, n), -1)
    for step in range(n):
        for rank, trace in enumerate(traces):
            rec = trace[step]
            grid[rank, rec["kv_block"]] = step if rec["computed"] else -2
        holds = ", ".join(f"r{r}:{traces[r][step]['kv_block']}" for r in range(n))
        frames.append({"grid": grid.copy(), "title": tr("ring step {step}: K/V block held {holds}").format(
                           step=step, holds=holds),
                       "xlabel": "K/V block", "ylabel": "query block (= rank)", "kind": "steps"})
    return frames


def ulysses_frames(layouts: list[dict], heads: int, seq: int) -> list[dict]:
    """Frames (owner rank of each head x token block) before Ulysses' all-to-all, after
    it (measured: ``compare_attention(method="ulysses")["layout"]`` per rank), and after
    the inverse all-to-all."""
    positive_int("heads", heads, "pass the attention heads of the recorded run.")
    positive_int("seq", seq, "pass the sequence length of the recorded run.")
    n = len(layouts)
    before = np.repeat(np.arange(n), seq // n)[None, :].repeat(heads, axis=0)
    after = np.full((heads, seq), -1)
    for rank, lay in enumerate(layouts):
        for h in lay["heads"].tolist():
            after[h, lay["tokens"].tolist()] = rank
    common = {"xlabel": "token position", "ylabel": "head", "kind": "owner"}
    return [dict(grid=before, title="before: rank r holds tokens of shard r, all heads", **common),
            dict(grid=after, title="after all-to-all: rank r holds all tokens of its heads "
                 "(attention runs locally)", **common),
            dict(grid=before, title="after the inverse all-to-all: back to sequence shards", **common)]


def draw_grid(frame: dict, n_ranks: int, ax=None):
    """Draw one frame: ``kind="owner"`` colours cells by rank, ``"steps"`` writes the step."""
    ax = ax or plt.gca()
    grid = frame["grid"]
    colors = ["#FFFFFF"] + rank_colors(n_ranks)
    if frame["kind"] == "owner":
        ax.imshow(grid + 1, cmap=ListedColormap(colors), vmin=-0.5, vmax=n_ranks + 0.5, aspect="auto")
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in rank_colors(n_ranks)]
        ax.legend(handles, [f"rank {r}" for r in range(n_ranks)], loc="upper left",
                  bbox_to_anchor=(1.02, 1), fontsize=10)
    else:
        shade = np.where(grid >= 0, 1.0, np.where(grid == -2, 0.25, 0.0))
        ax.imshow(shade, cmap="Blues", vmin=0, vmax=1.6, aspect="auto")
        for (i, j), v in np.ndenumerate(grid):
            ax.text(j, i, {-1: "", -2: tr("masked")}.get(int(v), tr("step {v}").format(v=v)), ha="center",
                    va="center", fontsize=10)
        ax.set_xticks(range(grid.shape[1]))
        ax.set_yticks(range(grid.shape[0]))
    ax.set_title(tr(frame["title"]), fontsize=12)   # frames are data; translated when drawn
    ax.set_xlabel(tr(frame["xlabel"]))
    ax.set_ylabel(tr(frame["ylabel"]))
    ax.grid(False)
    return ax


def grid_player(frames: list[dict], n_ranks: int, figsize=(8, 4)):
    """Play/slider through recorded frames; ``.slider``, ``.play`` and ``.last_title``."""
    if not frames:
        raise ValueError("grid_player needs at least one frame (record a run first).")
    return frame_player(len(frames), lambda i, ax: draw_grid(frames[i], n_ranks, ax), figsize,
                        "frame", 1500)
