"""The cheat-sheet's closed forms of sections 10-12: notebook 10's recomputation (§8),
notebook 11's bytes per link class and times on nodes and on a torus, notebook 12's
context- and expert-parallel bytes; each beside the package function it must agree with (``tests/test_cheatsheet.py`` and
``tests/test_cheatsheet_sections.py`` hold them against it).

Used by ``notebooks/cheatsheet.ipynb``; see :mod:`companion.cheatsheet` for why a formula
the package implements is written out again here. The others of these sections (the
crossover ``T*``, the critical batch, Alpa's stage objective, EDP) the cheat-sheet reads
straight off the package: ``overlap.predicted_crossover``,
``batch_size.fit_critical_batch``, ``autoparallel.stages.pipeline_time``,
``planner.Mesh(...).edp``, the scaling efficiency ``why_distribute.scaling``, the bias
update ``sequence_parallel.moe_balance.update_bias`` and the rows that cross nodes
``sequence_parallel.moe_nodes.cross_node_rows``.
"""
from __future__ import annotations

import torch

from ..network.cluster import Cluster
from ..sequence_parallel.ring import attention_bytes
from ..topology import model as topology_model
from ..validation import one_of, positive_int, positive_number

__all__ = ["recompute_factor", "link_bytes", "link_bytes_closed_form", "LINK_FORMULAS",
           "hierarchical_seconds", "torus_seconds", "switch_all_to_all_seconds",
           "cp_bytes_per_layer", "ep_bytes_per_layer"]


# --- 10. Recomputation (notebook 10 section 8) -------------------------------------------
def recompute_factor(forward: float = 1.0, backward: float = 2.0) -> float:
    """Compute of a step with full recomputation over the same step without it:
    ``(2F + B) / (F + B)``, 4/3 when the backward costs twice the forward.

    Notebook 10 section 8 writes it inline, ``(2 + 4 + 2) / (2 + 4)``, and the planner
    charges it inline too (``planner.compute.compute_time``); no package function names
    it, so the cheat-sheet does, and its test holds it against the planner."""
    positive_number("forward", forward, "pass the forward's cost, e.g. forward=1.")
    positive_number("backward", backward, "pass the backward's cost, e.g. backward=2.")
    return (2 * forward + backward) / (forward + backward)


# --- 11. Bytes per link class and times (notebook 11 sections 3-5) -----------------------
LINK_FORMULAS = {  # algorithm -> (NVLink bytes per rank, NIC bytes per rank), n bytes, M x k
    "ring": ("2(N-1)/N n on the N-M ranks whose next rank shares their node",
             "2(N-1)/N n on each of the M ranks where the ring leaves a node"),
    "hierarchical": ("2(k-1)/k n on every rank", "2(M-1)/M n/k on every rank"),
}


def _cluster(cluster, layout="nodes") -> Cluster:
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a companion.topology.Cluster, got "
                         f"{type(cluster).__name__}; pass e.g. topology.Cluster(2, 2).")
    one_of("cluster.layout", cluster.layout, (layout,), f"build it with layout={layout!r}")
    return cluster


def link_bytes(algorithm: str, nbytes: int, cluster: Cluster) -> dict:
    """``{"intra", "inter"}``: bytes all ranks together send on each link class when
    ``algorithm`` ("ring" or "hierarchical") all-reduces ``nbytes`` float32 bytes on
    ``cluster``, summed over the rounds ``topology.schedule`` writes down (the messages a
    real run posts; notebook 11 counts the same on real ranks)."""
    one_of("algorithm", algorithm, tuple(LINK_FORMULAS))
    rounds = topology_model.schedule(algorithm, nbytes, _cluster(cluster))
    totals = {"intra": 0, "inter": 0}
    for message in topology_model.schedule_time(rounds, cluster)["messages"]:
        totals[message["link"]] += message["bytes"]
    return totals


def link_bytes_closed_form(algorithm: str, nbytes: float, cluster: Cluster) -> dict:
    """``LINK_FORMULAS[algorithm]`` summed over the ranks of ``cluster`` (M nodes of k
    ranks, N = M k), as :func:`link_bytes` counts them."""
    one_of("algorithm", algorithm, tuple(LINK_FORMULAS))
    positive_number("nbytes", nbytes, "pass the all-reduced bytes per rank, e.g. 1e6.")
    c = _cluster(cluster)
    m, k = c.nodes, c.ranks_per_node
    n_ranks = m * k
    if algorithm == "ring":
        sent = 2 * (n_ranks - 1) / n_ranks * nbytes
        crossing = m if m > 1 else 0
        return {"intra": (n_ranks - crossing) * sent, "inter": crossing * sent}
    return {"intra": n_ranks * 2 * (k - 1) / k * nbytes,
            "inter": n_ranks * 2 * (m - 1) / m * nbytes / k}


def _cost(link, nbytes):
    alpha, beta = link
    return alpha + nbytes / beta


def hierarchical_seconds(nbytes: float, cluster: Cluster) -> float:
    """``2(k-1) c(intra, n/k) + 2(M-1) c(inter, n/(kM))`` with ``c(link, x) = alpha +
    x / beta``: the hierarchical all-reduce on M nodes of k ranks (``topology.predict``'s
    "hierarchical", notebook 11 section 4)."""
    positive_number("nbytes", nbytes, "pass the all-reduced bytes per rank, e.g. 1e6.")
    c = _cluster(cluster)
    m, k = c.nodes, c.ranks_per_node
    return 2 * (k - 1) * _cost(c.intra, nbytes / k) + 2 * (m - 1) * _cost(c.inter, nbytes / (k * m))


def torus_seconds(nbytes: float, cluster: Cluster) -> float:
    """The 2D all-reduce on a rows x cols torus, both directions of every link busy:
    ``2(cols-1) c(intra, n/(2 cols)) + 2(rows-1) c(inter, n/(2 cols rows))``
    (``topology.predict``'s "torus", notebook 11 section 5; rows and cols > 2)."""
    positive_number("nbytes", nbytes, "pass the all-reduced bytes per rank, e.g. 1e6.")
    c = _cluster(cluster, "torus")
    rows, cols = c.nodes, c.ranks_per_node
    if rows <= 2 or cols <= 2:
        raise ValueError(f"cluster: the closed form needs rows and cols > 2, got {rows} x "
                         f"{cols}; on a side of 2 both directions reach the same neighbour.")
    return (2 * (cols - 1) * _cost(c.intra, nbytes / (2 * cols))
            + 2 * (rows - 1) * _cost(c.inter, nbytes / (2 * cols * rows)))


def switch_all_to_all_seconds(block: float, cluster: Cluster) -> float:
    """``(N-1) c(link, b)``: the direct all-to-all of ``block``-byte blocks behind one
    switch, every rank sending to every other through its one port (notebook 11 section
    5's "switch"). ``cluster`` must have one link class: one node, or one rank per node."""
    positive_number("block", block, "pass the bytes of one block, e.g. 1e5.")
    c = _cluster(cluster)
    if c.nodes > 1 and c.ranks_per_node > 1:
        raise ValueError(f"cluster: {c.nodes} x {c.ranks_per_node} mixes two link classes; "
                         "pass Cluster(N, 1) (every rank its own node) or Cluster(1, N).")
    link = c.inter if c.nodes > 1 else c.intra
    return (c.world_size - 1) * _cost(link, block)


# --- 12. Context and expert parallelism (notebook 12 section 6) --------------------------
def _forwards(recompute: str) -> int:
    one_of("recompute", recompute, ("none", "selective", "full"))
    return 2 if recompute == "full" else 1


def cp_bytes_per_layer(micro_batch: int, seq_len: int, kv_width: int, cp: int,
                       e: int = 2, recompute: str = "none") -> float:
    """Bytes one CP rank sends per layer and micro-batch, ring attention over ``cp`` ranks
    on K and V of width ``kv_width`` (the model's K/V width over TP): forward
    ``2 N (CP-1)/CP`` (twice with full recomputation), backward ``2 N (2 CP-1)/CP``, with
    ``N = b s kv_width e`` (``planner`` charges this per layer, ``planner.axes``)."""
    positive_int("cp", cp, "pass the context-parallel degree, at least 2.", minimum=2)
    forwards = _forwards(recompute)
    return (forwards * attention_bytes("ring", micro_batch, seq_len, kv_width, cp, e)
            + attention_bytes("ring", micro_batch, seq_len, kv_width, cp, e, "backward"))


def ep_bytes_per_layer(tokens: float, top_k: int, hidden: int, capacity_factor: float = 1.0,
                       e: int = 2, recompute: str = "none") -> float:
    """Bytes one EP rank dispatches per MoE layer and micro-batch: each of its ``tokens``
    goes to ``top_k`` experts, ``hidden`` values of ``e`` bytes, padded by
    ``capacity_factor``; four all-to-alls (dispatch and combine, forward and backward),
    six with full recomputation (``planner.Mesh.ep_traffic``)."""
    positive_number("tokens", tokens, "pass the tokens per rank and micro-batch.")
    positive_int("top_k", top_k, "pass the experts each token goes to, e.g. top_k=8.")
    positive_int("hidden", hidden, "pass the model's hidden size.")
    positive_number("capacity_factor", capacity_factor, "1.0 sends exactly what is routed.")
    positive_int("e", e, "pass the bytes per element, 2 in bf16.")
    calls = 4 + 2 * (_forwards(recompute) - 1)
    return calls * tokens * top_k * hidden * e * capacity_factor


# --- 12. MoE load balance (notebook 06 section 7) ----------------------------------------
