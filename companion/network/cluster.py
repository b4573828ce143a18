"""A cluster with a topology: which ranks share a node, and which links a message crosses.

Taught in notebook 11 (``notebooks/11_networks_and_topology.ipynb``); CS336 L8 §1
(GPU nodes behind a fat-tree against TPU pods on a torus) and the hierarchical
all-reduce of notebook 11 section 4 (L19's all-reduce pages, p.57-66, cover the flat
ring and recursive halving, not this two-level scheme).

A :class:`Cluster` only *describes* the machine; :func:`companion.topology.emulate` puts
it between real ranks. Ranks are numbered node by node (rank = node * ranks_per_node +
local rank), as torchrun numbers them. Two link classes, each ``(alpha_s,
beta_bytes_per_s)`` with the bandwidth **per direction**:

* ``"intra"``: inside a node (NVLink-like);
* ``"inter"``: between nodes (InfiniBand-like).

Three layouts:

* ``"nodes"`` (GPU clusters): inside a node every pair of GPUs is connected by the fast
  link (an NVSwitch); across nodes every GPU has its own NIC into a non-blocking switch
  (a fat-tree with full bisection bandwidth). Every pair of ranks is one hop apart.
  Each rank owns one port per link class and direction (it can push ``beta`` bytes/s
  out over "intra" and, at the same time, ``beta`` over "inter", and take in as much).
* ``"ring"``: only neighbour links, rank r to r +- 1 (mod N); a hop between two ranks
  of one node is "intra", a hop that leaves a node is "inter".
* ``"torus"`` (TPU-like): a 2-D torus of ``rows x cols = nodes x ranks_per_node``;
  rank ``r`` sits at ``(r // cols, r % cols)`` and has links to its four wrap-around
  neighbours. A row plays the part of a node: hops along a row are "intra", hops along a
  column are "inter" (pass equal parameters for a uniform torus). A dimension of size 2
  has one link pair between its two ranks, not two.

On a ring or torus a message to a non-neighbour is routed hop by hop along the
shortest way (dimension-ordered on the torus: first along the row, then along the
column; a tie goes the positive way): :meth:`Cluster.route`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

from ..validation import one_of, positive_int, positive_number

__all__ = ["Cluster", "Hop", "LAYOUTS", "LINK_CLASSES"]

LAYOUTS = ("nodes", "ring", "torus")
LINK_CLASSES = ("intra", "inter")


class Hop(NamedTuple):
    """One link a message crosses: from rank ``src`` to rank ``dst``, of class ``link``."""

    src: int
    dst: int
    link: str


def _check_link(name: str, value) -> tuple[float, float]:
    fix = (f"pass {name}=(alpha_s, beta_bytes_per_s), e.g. {name}=(1e-3, 100e6) for 1 ms "
           "and 100 MB/s per direction.")
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{name} must be a pair (alpha_s, beta_bytes_per_s), got {value!r}; {fix}")
    alpha = positive_number(f"{name} alpha", value[0], fix, zero=True)
    beta = positive_number(f"{name} beta", value[1], fix, inf=True)
    return alpha, beta


@dataclasses.dataclass(frozen=True)
class Cluster:
    """``nodes`` x ``ranks_per_node`` ranks joined by "intra" and "inter" links.

    ``intra`` and ``inter`` are ``(alpha_s, beta_bytes_per_s)``, beta per direction. The
    defaults are a GPU cluster slowed down about 2,000 times: 0.2 ms and 200 MB/s inside a
    node, 1 ms and 20 MB/s between nodes (NVLink 4's 450 GB/s per direction against one
    400 Gb/s NIC's 50 GB/s: the 9-10x bandwidth edge is kept). Slow enough that a real
    loopback transfer (about 1 GB/s on a loaded 2-core machine) finishes well before the
    emulated one, so the emulated links, not this machine, set the times.
    """

    nodes: int
    ranks_per_node: int
    intra: tuple = (2e-4, 200e6)
    inter: tuple = (1e-3, 20e6)
    layout: str = "nodes"

    def __post_init__(self):
        positive_int("nodes", self.nodes, "pass the number of nodes, e.g. Cluster(2, 2).")
        positive_int("ranks_per_node", self.ranks_per_node,
                     "pass the ranks (GPUs) per node, e.g. Cluster(2, 2).")
        object.__setattr__(self, "intra", _check_link("intra", self.intra))
        object.__setattr__(self, "inter", _check_link("inter", self.inter))
        one_of("layout", self.layout, LAYOUTS,
               "'nodes' for GPU nodes behind a switch, 'ring' or 'torus' for neighbour links.")

    # -- shape ------------------------------------------------------------------------
    @property
    def world_size(self) -> int:
        return self.nodes * self.ranks_per_node

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, cols)``: nodes x ranks per node (the torus's grid)."""
        return self.nodes, self.ranks_per_node

    def _check_rank(self, name: str, rank) -> int:
        rank = positive_int(name, rank, "ranks are numbered from 0.", minimum=0)
        if rank >= self.world_size:
            raise ValueError(f"{name}={rank} is not a rank of this {self.nodes} x "
                             f"{self.ranks_per_node} cluster; pass 0..{self.world_size - 1}.")
        return rank

    def node_of(self, rank: int) -> int:
        """The node (torus: the row) that ``rank`` belongs to."""
        return self._check_rank("rank", rank) // self.ranks_per_node

    def local_rank_of(self, rank: int) -> int:
        """``rank``'s index inside its node (torus: its column)."""
        return self._check_rank("rank", rank) % self.ranks_per_node

    def node_ranks(self, node: int) -> list[int]:
        """The ranks of ``node``, in order."""
        k = self.ranks_per_node
        return list(range(node * k, (node + 1) * k))

    def params(self, link: str) -> tuple[float, float]:
        """``(alpha_s, beta_bytes_per_s)`` of a link class."""
        one_of("link", link, LINK_CLASSES)
        return self.intra if link == "intra" else self.inter

    # -- links and routes -------------------------------------------------------------
    def _class(self, a: int, b: int) -> str:
        return "intra" if a // self.ranks_per_node == b // self.ranks_per_node else "inter"

    def neighbours(self, rank: int) -> list[int]:
        """Ranks one hop away (every other rank in the "nodes" layout)."""
        rank = self._check_rank("rank", rank)
        n = self.world_size
        if self.layout == "nodes":
            return [j for j in range(n) if j != rank]
        if self.layout == "ring":
            return sorted({(rank + 1) % n, (rank - 1) % n} - {rank})
        rows, cols = self.shape
        i, j = divmod(rank, cols)
        out = {i * cols + (j + 1) % cols, i * cols + (j - 1) % cols,
               ((i + 1) % rows) * cols + j, ((i - 1) % rows) * cols + j}
        return sorted(out - {rank})

    def links(self) -> list[Hop]:
        """Every directed link of the cluster (each direction has its own bandwidth)."""
        return [Hop(a, b, self.link(a, b)) for a in range(self.world_size)
                for b in self.neighbours(a)]

    def link(self, src: int, dst: int) -> str:
        """The class of the direct link from ``src`` to ``dst`` ("intra" or "inter").

        On a ring or torus only neighbours have a direct link; :meth:`route` gives the
        hops to any other rank."""
        src, dst = self._check_rank("src", src), self._check_rank("dst", dst)
        if src == dst:
            raise ValueError(f"src and dst are both rank {src}; a rank needs no link to itself.")
        if dst not in self.neighbours(src):
            raise ValueError(f"ranks {src} and {dst} are not neighbours on this {self.layout}; "
                             f"use route({src}, {dst}) for the hops between them.")
        return self._class(src, dst)  # torus: a row is a "node"

    def route(self, src: int, dst: int) -> tuple[Hop, ...]:
        """The hops a message from ``src`` to ``dst`` crosses (one in the "nodes" layout)."""
        src, dst = self._check_rank("src", src), self._check_rank("dst", dst)
        if src == dst:
            return ()
        if self.layout == "nodes":
            return (Hop(src, dst, self._class(src, dst)),)
        if self.layout == "ring":
            path = [src + s for s in _steps(src, dst, self.world_size)]
            ranks = [src] + [p % self.world_size for p in path]
            return tuple(Hop(a, b, self._class(a, b)) for a, b in zip(ranks, ranks[1:]))
        rows, cols = self.shape
        (i, j), (ti, tj) = divmod(src, cols), divmod(dst, cols)
        cells = [(i, j)]
        for s in _steps(j, tj, cols):  # along the row first: the "intra" links
            cells.append((i, (j + s) % cols))
        for s in _steps(i, ti, rows):
            cells.append(((i + s) % rows, tj))
        ranks = [a * cols + b for a, b in cells]
        return tuple(Hop(a, b, self._class(a, b)) for a, b in zip(ranks, ranks[1:]))

    def hop_time(self, nbytes: float, src: int, dst: int) -> float:
        """Seconds for ``nbytes`` from ``src`` to ``dst`` on idle links: the hops' alphas
        plus the bytes over the slowest hop's beta (cut-through routing)."""
        hops = self.route(src, dst)
        if not hops:
            return 0.0
        alpha = sum(self.params(h.link)[0] for h in hops)
        beta = min(self.params(h.link)[1] for h in hops)
        return alpha + (nbytes / beta if math.isfinite(beta) else 0.0)

    def describe(self) -> str:
        """One line for a notebook: shape, layout and the two links."""
        from ..i18n import gettext as tr
        from ..units import fmt_bytes, fmt_seconds

        def fmt(link):
            a, b = self.params(link)
            bw = tr("unlimited") if math.isinf(b) else f"{fmt_bytes(b)}/s"
            return tr("{link}: alpha {alpha}, beta {beta} per direction").format(
                link=link, alpha=fmt_seconds(a), beta=bw)

        return tr("{nodes} x {per_node} ranks, layout {layout}; {intra}; {inter}").format(
            nodes=self.nodes, per_node=self.ranks_per_node, layout=repr(self.layout),
            intra=fmt("intra"), inter=fmt("inter"))


def _steps(a: int, b: int, n: int) -> list[int]:
    """Offsets +-1, +-2, ... walking the shortest way round a cycle of n from a to b."""
    forward = (b - a) % n
    if forward == 0:
        return []
    if forward <= n - forward:  # a tie goes the positive way
        return list(range(1, forward + 1))
    return [-s for s in range(1, n - forward + 1)]
