"""Draw a cluster's topology and replay a recorded collective on it, message by message.

Used by notebook 11 (``notebooks/11_networks_and_topology.ipynb``). Three layouts, the
three the lectures contrast (CS336 L8 section 1):

* ``"nodes"``: GPU nodes behind a switch (a fat-tree, drawn as one box). Inside a node
  every GPU reaches every other over the fast link (NVLink through an NVSwitch); each
  GPU has its own NIC into the switch, so a message between nodes goes GPU -> switch
  -> GPU;
* ``"ring"``: ranks on a circle, links only to the two neighbours;
* ``"torus"``: a ``rows x cols`` grid with wrap-around links (a TPU pod's slice).

Nothing is drawn from a model: :func:`topology_player` takes the messages a real run
recorded (``companion.topology.timeline(traffics)``: each with its source, destination,
link class, bytes, the hops of its route and its emulated send and arrival times) and
shows, at each moment, which messages are on which link. On a ring or torus a message
to a rank that is not a neighbour is drawn hop by hop along its recorded route, each hop
in the colour of its link class.
"""
from __future__ import annotations

import math

from ..plotting import OKABE_ITO
from ..units import fmt_bytes, fmt_seconds
from ._base import frame_player
from ..i18n import gettext as tr

__all__ = ["topology_player", "draw_topology"]

LINK_COLORS = {"intra": OKABE_ITO[0], "inter": OKABE_ITO[3]}
_OTHER = OKABE_ITO[2]
_REQUIRED = ("src", "dst", "link", "bytes", "start", "end")


def _field(message, name):
    return message[name] if isinstance(message, dict) else getattr(message, name)


def _shape(cluster) -> tuple[str, int, int]:
    """(layout, rows, cols) of a Cluster-like object."""
    if not all(hasattr(cluster, a) for a in ("nodes", "ranks_per_node")):
        raise ValueError(f"cluster={cluster!r} has no nodes/ranks_per_node: pass the "
                         "companion.topology.Cluster the run was recorded on.")
    layout = getattr(cluster, "layout", "nodes")
    shape = getattr(cluster, "shape", None)
    if shape:
        rows, cols = shape
    else:
        rows, cols = cluster.nodes, cluster.ranks_per_node
    return layout, rows, cols


def positions(cluster) -> dict:
    """Where each rank (and, for ``nodes``, the switch ``"switch"``) is drawn."""
    layout, rows, cols = _shape(cluster)
    n = rows * cols
    if layout == "ring":
        return {r: (math.cos(math.pi / 2 - 2 * math.pi * r / n),
                    math.sin(math.pi / 2 - 2 * math.pi * r / n)) for r in range(n)}
    if layout == "torus":
        return {r: (r % cols, -(r // cols)) for r in range(n)}
    pos = {r: ((r // cols) * (cols + 1) + r % cols, 0.0) for r in range(n)}
    pos["switch"] = ((rows * (cols + 1) - 2) / 2, 2.2)
    return pos


def _links(cluster, pos):
    """Line segments of the physical links, with their class."""
    layout, rows, cols = _shape(cluster)
    n = rows * cols
    segs = []
    if layout == "ring":
        # A hop between ranks of one node is "intra", one that leaves the node "inter".
        segs = [(pos[r], pos[(r + 1) % n], _hop_class(r, (r + 1) % n, cols))
                for r in range(n) if n > 1]
    elif layout == "torus":
        for r in range(n):
            i, j = divmod(r, cols)
            right, down = i * cols + (j + 1) % cols, ((i + 1) % rows) * cols + j
            # A wrap-around link is drawn as an arc so that it does not hide the row.
            if cols > 1 and (j + 1 < cols or cols > 2):
                segs.append((pos[r], pos[right], "wrap-intra" if j + 1 == cols else "intra"))
            if rows > 1 and (i + 1 < rows or rows > 2):
                segs.append((pos[r], pos[down], "wrap-inter" if i + 1 == rows else "inter"))
    else:
        for node in range(rows):
            first, last = pos[node * cols], pos[node * cols + cols - 1]
            segs.append(((first[0], -0.45), (last[0], -0.45), "intra"))
            for r in range(node * cols, node * cols + cols):
                segs.append(((pos[r][0], -0.45), pos[r], "intra"))
                segs.append((pos[r], pos["switch"], "inter"))
    return segs


def _hop_class(a: int, b: int, cols: int) -> str:
    return "intra" if a // cols == b // cols else "inter"


def _hops(message, cols: int) -> list[tuple[int, int, str]]:
    """The recorded route ``[(src, dst, link), ...]``; one hop when none was recorded."""
    hops = message.get("hops") if isinstance(message, dict) else getattr(message, "hops", None)
    if hops:
        return [(int(h[0]), int(h[1]), str(h[2])) for h in hops]
    src, dst = _field(message, "src"), _field(message, "dst")
    return [(src, dst, _field(message, "link") or _hop_class(src, dst, cols))]


def _segments(cluster, pos, message):
    """``[(points, link class), ...]``: the lines that draw one message, hop by hop.

    In the "nodes" layout a hop between nodes goes GPU -> switch -> GPU."""
    layout, _, cols = _shape(cluster)
    out = []
    for a, b, link in _hops(message, cols):
        if layout == "nodes" and a // cols != b // cols:
            out.append(([pos[a], pos["switch"], pos[b]], link))
        else:
            out.append(([pos[a], pos[b]], link))
    return out


def draw_topology(cluster, messages=(), at: float | None = None, ax=None, title: str = ""):
    """Draw ``cluster`` and the ``messages`` in flight at time ``at`` (seconds since the
    first message left). Returns ``{"in_flight": k, "delivered": {link: bytes}}``."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    ax = ax or plt.gca()
    layout, rows, cols = _shape(cluster)
    pos = positions(cluster)
    for a, b, kind in _links(cluster, pos):
        if kind.startswith("wrap"):
            ax.annotate("", xy=b, xytext=a, zorder=1, arrowprops=dict(
                arrowstyle="-", color=LINK_COLORS.get(kind[5:], "0.6"), lw=1.2, alpha=0.45,
                connectionstyle="arc3,rad=0.35"))
        else:
            ax.plot([a[0], b[0]], [a[1], b[1]], color=LINK_COLORS.get(kind, "0.6"), lw=1.2,
                    alpha=0.35 if kind in LINK_COLORS else 0.6, zorder=1)
    if layout == "nodes":
        for node in range(rows):
            x0 = pos[node * cols][0]
            ax.add_patch(FancyBboxPatch((x0 - 0.45, -0.7), cols - 0.1, 1.15,
                                        boxstyle="round,pad=0.05", fc="none", ec="0.5"))
            ax.text(x0 - 0.4, -0.95, tr("node {node}").format(node=node), fontsize=9, color="0.3")
        sx, sy = pos["switch"]
        ax.add_patch(FancyBboxPatch((sx - 0.8, sy - 0.25), 1.6, 0.5, boxstyle="round,pad=0.05",
                                    fc="0.92", ec="0.4", zorder=2))
        ax.text(sx, sy, tr("switch"), ha="center", va="center", fontsize=9, zorder=3)
    for r in range(rows * cols):
        x, y = pos[r]
        ax.add_patch(plt.Circle((x, y), 0.3, fc="white", ec="0.2", zorder=4))
        ax.text(x, y, str(r), ha="center", va="center", fontsize=10, zorder=5)
    t0 = min((_field(m, "start") for m in messages), default=0.0)
    delivered, flying = {}, 0
    for m in messages:
        start, end = _field(m, "start") - t0, _field(m, "end") - t0
        link = _field(m, "link")
        if at is not None and end <= at:
            delivered[link] = delivered.get(link, 0) + _field(m, "bytes")
            continue
        if at is None or not start <= at < end:
            continue
        flying += 1
        for pts, hop_link in _segments(cluster, pos, m):
            color = LINK_COLORS.get(hop_link, _OTHER)
            # Inside a node the arrow bows below the GPUs, away from the NIC lines above.
            bend = -0.5 if layout == "nodes" and len(pts) == 2 else 0.15
            for (x0, y0), (x1, y1) in zip(pts[:-1], pts[1:]):
                ax.annotate("", xy=(x1, y1), xytext=(x0, y0), zorder=3,
                            arrowprops=dict(arrowstyle="-|>", color=color, lw=2.2, shrinkA=10,
                                            shrinkB=10, connectionstyle=f"arc3,rad={bend}"))
    ax.set_aspect("equal")
    ax.axis("off")
    ax.margins(0.12)
    if title:
        ax.set_title(title)
    return {"in_flight": flying, "delivered": delivered}


def topology_player(cluster, messages, frames: int = 24, title: str = "", figsize=(8, 4)):
    """A Play button and a slider replaying recorded ``messages`` on ``cluster``.

    ``messages``: records with ``src``, ``dst``, ``link``, ``bytes``, ``start`` and
    ``end`` (seconds) and optionally ``hops`` (the route, ``((src, dst, link), ...)``),
    attributes or dict keys: what ``companion.topology.timeline(traffics)`` returns for
    a run on the emulated cluster. The frame title says the time and the bytes
    delivered per link class.
    """
    messages = list(messages)
    if not messages:
        raise ValueError("messages is empty: record a run on the emulated cluster first "
                         "and pass the messages it logged.")
    for i, m in enumerate(messages):
        missing = [k for k in _REQUIRED if not (k in m if isinstance(m, dict) else hasattr(m, k))]
        if missing:
            raise ValueError(f"messages[{i}] has no {', '.join(missing)}: pass the records of "
                             "companion.topology.timeline(traffics) for a run inside "
                             "companion.topology.emulate(cluster).")
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 2:
        raise ValueError(f"frames must be an integer >= 2, got {frames!r}.")
    t0 = min(_field(m, "start") for m in messages)
    span = max(_field(m, "end") for m in messages) - t0

    def draw(k, ax):
        at = span * k / (frames - 1)
        shown = draw_topology(cluster, messages, at=at if k < frames - 1 else span + 1, ax=ax)
        done = ", ".join(f"{link} {fmt_bytes(b)}" for link, b in sorted(shown["delivered"].items()))
        status = (tr("t = {t}, {n} in flight; delivered: {done}") if done else
                  tr("t = {t}, {n} in flight; delivered: nothing yet")).format(
            t=fmt_seconds(at), n=shown["in_flight"], done=done)
        ax.set_title(f"{title + ': ' if title else ''}{status}", fontsize=10)

    return frame_player(frames, draw, figsize=figsize, description=tr("time"))
