"""The alpha-beta model with a topology: predicted timelines of collectives on a cluster.

Taught in notebook 11 (``notebooks/11_networks_and_topology.ipynb``).

A collective is a list of rounds; a round is the messages ``(src, dst, nbytes)`` its
ranks post together. :func:`schedule_time` plays them through the link model of
:mod:`.links` (the one the emulator runs inside the ranks) with no computation and no
loopback: each rank starts a round when its previous one is over (its messages out,
its messages in), a message pays ``alpha + bytes / beta`` of each link it crosses and
queues on shared ports. Ranks are not in lock-step: a rank whose neighbour is fast
goes on while a slow link elsewhere is still busy, so a flat ring across nodes is
*not* simply ``2 (N-1)`` times its slowest hop.

* :func:`schedule` writes down the rounds of this package's algorithms (the same
  messages a real run records; a test checks it) and :func:`predict` times them;
* :func:`simulate` times the messages a real run recorded;
* :func:`timeline` lists what a run inside :func:`~companion.topology.emulate`
  measured, message by message.

Closed forms where every hop of a phase is alike (tensor of n bytes; M nodes of k
ranks; ``c(link, m) = alpha_link + m / beta_link``), used by the tests:

* hierarchical on "nodes": ``2 (k-1) c(intra, n/k) + 2 (M-1) c(inter, n/(kM))``;
* torus all-reduce on a torus with rows, cols > 2:
  ``2 (cols-1) c(intra, n/(2 cols)) + 2 (rows-1) c(inter, n/(2 cols rows))``;
* direct all-to-all of b-byte blocks on "nodes" within one node: ``(N-1) c(intra, b)``.
"""
from __future__ import annotations

import math

from ..network.cluster import Cluster
from ..network.links import Ports

__all__ = ["schedule_time", "simulate", "timeline", "schedule", "predict", "ALGORITHMS"]

ALGORITHMS = ("ring", "hierarchical", "torus", "all_to_all", "torus_all_to_all")


def schedule_time(rounds, cluster: Cluster) -> dict:
    """Play ``rounds`` (lists of ``(src, dst, nbytes)``) through ``cluster``'s links.

    Returns ``{"seconds": when the last rank is done, "finish": per-rank end times,
    "messages": [{"step", "src", "dst", "bytes", "link", "hops", "start", "end"}]}``.
    """
    if not isinstance(cluster, Cluster):
        raise TypeError(f"cluster must be a companion.topology.Cluster, got {type(cluster).__name__}.")
    n = cluster.world_size
    clock, ports, messages = [0.0] * n, Ports(cluster), []
    for step, msgs in enumerate(rounds):
        ends = list(clock)
        departs = []
        for src, dst, nbytes in msgs:  # each sender posts its messages in this order
            depart, done = ports.depart(src, dst, nbytes, clock[src])
            ends[src] = max(ends[src], done)
            departs.append(depart)
        for i in sorted(range(len(msgs)), key=lambda i: (msgs[i][1], departs[i], msgs[i][0])):
            src, dst, nbytes = msgs[i]
            end = ports.arrive(src, dst, nbytes, departs[i])
            ends[dst] = max(ends[dst], end)
            messages.append({"step": step, "src": src, "dst": dst, "bytes": nbytes,
                             "link": "intra" if cluster.node_of(src) == cluster.node_of(dst)
                             else "inter", "hops": tuple(tuple(h) for h in cluster.route(src, dst)),
                             "start": departs[i], "end": end})
        clock = ends
    messages.sort(key=lambda m: (m["start"], m["src"], m["dst"]))
    return {"seconds": max(clock, default=0.0), "finish": clock, "messages": messages}


def _recorded_rounds(traffics) -> list:
    steps = sorted({m.step for t in traffics for m in t.log})
    by_step = {s: [] for s in steps}
    for rank, t in enumerate(traffics):
        for m in t.log:
            if m.op == "send":
                by_step[m.step].append((rank, m.peer, m.bytes))
    return [by_step[s] for s in steps]


def simulate(traffics, cluster: Cluster) -> dict:
    """:func:`schedule_time` of the messages a run recorded (one ``Traffic`` per rank, in
    rank order, as ``launch`` returns them): what the model predicts for that very run."""
    if len(traffics) != cluster.world_size:
        raise ValueError(f"got {len(traffics)} traffic records for a cluster of "
                         f"{cluster.world_size} ranks; pass one per rank, in rank order.")
    return schedule_time(_recorded_rounds(traffics), cluster)


def timeline(traffics, t0: float | None = None) -> list[dict]:
    """Every message of a run recorded inside ``emulate``, once, from its receiver's record:
    ``{"step", "src", "dst", "bytes", "link", "hops", "start", "end", "collective",
    "kind"}``, times in seconds after ``t0`` (default: the first departure), by start."""
    rows = [{"step": m.step, "src": m.peer, "dst": t.rank, "bytes": m.bytes, "link": m.link,
             "hops": m.hops, "start": m.start, "end": m.end, "collective": m.collective,
             "kind": m.kind}
            for t in traffics for m in t.log if m.op == "recv"]
    if any(math.isnan(r["start"]) for r in rows):
        raise ValueError("these messages carry no emulated times: record them inside "
                         "`with companion.topology.emulate(cluster):`.")
    if t0 is None:
        t0 = min((r["start"] for r in rows), default=0.0)
    for r in rows:
        r["start"] -= t0
        r["end"] -= t0
    return sorted(rows, key=lambda r: (r["start"], r["src"], r["dst"]))


# -- the rounds of this package's algorithms, written down without running them -------
def _sizes(numel: int, parts: int) -> list[int]:
    # Imported here: companion.collectives imports this package (its emulator) first.
    from ..collectives.traffic import chunk_sizes
    return chunk_sizes(numel, parts)


def _offsets(numel: int, parts: int) -> list[int]:
    from ..collectives.traffic import chunk_offsets
    return chunk_offsets(numel, parts)


def _ring_rounds(rings, phase: str, itemsize: int) -> list:
    """rings: per rank, a list of (numel, members); all of one length. The rounds of
    ``_reduce_scatter`` ("rs") or ``_all_gather`` ("ag") of collectives/hierarchical.py."""
    length = len(next(iter(rings.values()))[0][1])
    rounds = []
    for s in range(length - 1):
        msgs = []
        for r in sorted(rings):
            for numel, members in rings[r]:
                p = members.index(r)
                c = (p - s - 1) % length if phase == "rs" else (p - s) % length
                size = _sizes(numel, length)[c]
                if size:
                    msgs.append((r, members[(p + 1) % length], size * itemsize))
        rounds.append(msgs)
    return rounds


def _two_level_rounds(numel, n, cols, directions, itemsize) -> list:
    row_rings, col_rings = {}, {}
    halves = _offsets(numel, len(directions))
    for r in range(n):
        row, col = divmod(r, cols)
        in_row = [row * cols + j for j in range(cols)]
        in_col = list(range(col, n, cols))
        row_rings[r], col_rings[r] = [], []
        for h, d in enumerate(directions):
            members = in_row if d > 0 else in_row[::-1]
            size = halves[h + 1] - halves[h]
            row_rings[r].append((size, members))
            piece = _sizes(size, cols)[members.index(r)]
            col_rings[r].append((piece, in_col if d > 0 else in_col[::-1]))
    return (_ring_rounds(row_rings, "rs", itemsize) + _ring_rounds(col_rings, "rs", itemsize)
            + _ring_rounds(col_rings, "ag", itemsize) + _ring_rounds(row_rings, "ag", itemsize))


def _forward_rounds(n, cols, block, rows) -> list:
    """Rounds of the store-and-forward all-to-all (collectives/forwarding.py)."""
    rounds = []
    for length, items, ring_of in ((cols, rows, lambda r: [r // cols * cols + j for j in range(cols)]),
                                   (rows, cols, lambda r: list(range(r % cols, n, cols)))):
        cw, ccw = length // 2, (length - 1) // 2
        for s in range(1, cw + 1):
            msgs = []
            for r in range(n):
                members = ring_of(r)
                p = members.index(r)
                if cw - s + 1 > 0:
                    msgs.append((r, members[(p + 1) % length], (cw - s + 1) * items * block))
                if ccw - s + 1 > 0:
                    msgs.append((r, members[(p - 1) % length], (ccw - s + 1) * items * block))
            rounds.append(msgs)
    return rounds


def schedule(algorithm: str, nbytes: int, cluster: Cluster, itemsize: int = 4) -> list:
    """The rounds ``algorithm`` posts on ``cluster`` for ``nbytes`` per rank (all-to-all:
    per block, one to every rank); elements of ``itemsize`` bytes (float32: 4).

    "ring": ``ring_all_reduce``; "hierarchical": ``hierarchical_all_reduce`` with the
    cluster's ranks per node; "torus": ``torus_all_reduce`` with rows = nodes;
    "all_to_all": ``all_to_all`` given ``output_shapes`` (no shape round);
    "torus_all_to_all": the store-and-forward all-to-all on rows = nodes.
    """
    from ..validation import one_of, positive_int

    one_of("algorithm", algorithm, ALGORITHMS)
    positive_int("itemsize", itemsize, "pass the bytes per element, 4 for float32.")
    positive_int("nbytes", nbytes, f"pass bytes, a multiple of itemsize={itemsize}.")
    if nbytes % itemsize:
        raise ValueError(f"nbytes={nbytes} is not a whole number of {itemsize}-byte elements; "
                         f"pass a multiple of {itemsize}.")
    n, numel = cluster.world_size, nbytes // itemsize
    if algorithm == "ring":
        return _two_level_rounds(numel, n, n, (1,), itemsize)
    if algorithm == "hierarchical":
        return _two_level_rounds(numel, n, cluster.ranks_per_node, (1,), itemsize)
    if algorithm == "torus":
        return _two_level_rounds(numel, n, cluster.ranks_per_node, (1, -1), itemsize)
    if algorithm == "all_to_all":
        return [[(r, (r + s) % n, nbytes) for r in range(n)] for s in range(1, n)]
    return _forward_rounds(n, cluster.ranks_per_node, nbytes, cluster.nodes)


def predict(algorithm: str, nbytes: int, cluster: Cluster, itemsize: int = 4) -> float:
    """Predicted seconds of ``algorithm`` on ``cluster`` (see :func:`schedule`)."""
    return schedule_time(schedule(algorithm, nbytes, cluster, itemsize), cluster)["seconds"]
