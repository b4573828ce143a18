"""Notebook 11's exercises (``notebooks/11_networks_and_topology.ipynb``): networks and topology.

* ``11.swap`` (warm-up, implement): swap a tensor with the rank at the same position on
  the other node; checked by value and by the links the messages crossed (one inter-node
  message each way, nothing inside a node).
* ``11.hierarchical`` (core): the hierarchical all-reduce (reduce-scatter inside the
  node, all-reduce across nodes, all-gather inside) from process groups and
  ``torch.distributed``'s reduce-scatter/all-gather, on 3 nodes x 2 ranks; checked by
  value and by the bytes each link class carries.
* ``11.torus`` (stretch, diagnose) and ``11.placement`` (warm-up, decide): in
  :mod:`companion.learning.nb11_step`, with the real runs they check.

Ranks are numbered node by node (rank = node * ranks_per_node + local rank), as torchrun
numbers them and as :class:`companion.topology.Cluster` does.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .. import collectives as C
from ..collectives.accounting import ring_bytes
from .exercise import Exercise, register
# 11.placement and 11.torus live in nb11_step (here this module would pass 300 lines);
# importing them registers them with this notebook's other exercises.
from .nb11_step import PLACEMENT, TORUS_EX, placement_reference, torus_reference
from .patterns import all_of, only

_P2P_SEND = ("send", "isend")
_P2P_RECV = ("recv", "irecv")


def _node(rank: int, ranks_per_node: int) -> int:
    return rank // ranks_per_node


# ---- 11.swap ----------------------------------------------------------------------------
SWAP_NODES, SWAP_K = 2, 2


def swap_reference(x: torch.Tensor, ranks_per_node: int) -> torch.Tensor:
    """What the rank at this rank's local index on the other node holds."""
    n, r = dist.get_world_size(), dist.get_rank()
    peer = (r + ranks_per_node) % n
    out = torch.empty_like(x)
    ops = [dist.P2POp(dist.isend, x.contiguous(), peer), dist.P2POp(dist.irecv, out, peer)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    return out


def _swap_inputs(rank, world_size):
    return (torch.arange(6, dtype=torch.float32) + 100 * rank, SWAP_K)


def _swap_pattern(calls_per_rank, world_size):
    for rank, calls in enumerate(calls_per_rank):
        sends = [c for c in calls if c.name in _P2P_SEND]
        recvs = [c for c in calls if c.name in _P2P_RECV]
        if len(sends) != 1 or len(recvs) != 1:
            return (f"rank {rank} sent {len(sends)} and received {len(recvs)} message(s); a "
                    "swap is one message each way")
        for c in sends + recvs:
            if _node(c.peer, SWAP_K) == _node(rank, SWAP_K):
                return (f"rank {rank} exchanged a message with rank {c.peer}, on its own node "
                        f"{_node(rank, SWAP_K)}: that crosses the intra-node link; the "
                        "partner sits on the other node")
        if sends[0].bytes != 24:
            return f"rank {rank} sent {sends[0].bytes} bytes; the tensor is 24 bytes"
    return None


SWAP = register(Exercise(
    id="11.swap", level="warm-up", kind="implement",
    title="swap with your twin on the other node",
    student_name="my_swap",
    task=f"{SWAP_NODES} nodes x {SWAP_K} ranks, numbered node by node (ranks 0, 1 on node 0; "
         "2, 3 on node 1). Write `my_swap(x, ranks_per_node)` that sends `x` to the rank at "
         "the same position (local rank) on the other node and returns the tensor that rank "
         "sent you. The checker compares the values and the links your messages crossed: "
         "one inter-node message each way, nothing inside a node.",
    hints=("Your node is rank // ranks_per_node and your position in it rank % "
           "ranks_per_node. Which global rank has your position on the other node?",
           "Both partners send and both receive: if both call a blocking send first, each "
           "may wait for the other. Post the send and the receive without waiting.",
           "dist.isend and dist.irecv return a request each: post both, then wait on "
           "both. Your twin is a whole node's worth of ranks away from you; from the last "
           "node, count on around to the first."),
    inputs=_swap_inputs, reference=swap_reference,
    forbidden={"companion.learning.nb11.swap_reference":
               "it is the package's solution to this exercise",
               "torch.distributed.all_to_all": "a collective over all ranks; send one message",
               "torch.distributed.all_gather": "a collective over all ranks; send one message"},
    pattern=all_of(only("send", "recv", "isend", "irecv",
                        why="a swap is point-to-point"), _swap_pattern),
    pure=True, timeout=20.0,
    context="import torch\nimport torch.distributed as dist\nimport companion",
))


# ---- 11.hierarchical --------------------------------------------------------------------
HIER_NODES, HIER_K, HIER_NUMEL = 3, 2, 12
_RS = ("reduce_scatter_single", "reduce_scatter_tensor")
_AG = ("all_gather_single", "all_gather_into_tensor")


def _hier_inputs(rank, world_size):
    g = torch.Generator().manual_seed(rank)
    return (torch.randint(-8, 9, (HIER_NUMEL,), generator=g).float(), HIER_K)


def hierarchical_reference(x: torch.Tensor, ranks_per_node: int) -> torch.Tensor:
    """The package's hierarchical all-reduce (built from send/recv)."""
    return C.hierarchical_all_reduce(x, ranks_per_node=ranks_per_node)


# watcher name -> (ring_bytes kind, is the recorded payload one rank's piece?). ring_bytes
# takes the full buffer: a reduce_scatter_single's input is that already, an all-gather's
# input (and a list reduce_scatter's output) is 1/g of it, so it is scaled up by g below.
_RING = {**dict.fromkeys(_RS, ("reduce_scatter", False)), "all_reduce": ("all_reduce", False),
         **dict.fromkeys((*_AG, "all_gather"), ("all_gather", True)),
         "reduce_scatter": ("reduce_scatter", True)}


def link_bytes(calls, rank: int, ranks_per_node: int, nodes: int) -> dict:
    """{"intra", "inter", "other"} bytes a rank's calls put on each link class, ring
    accounting. A collective's class comes from its group's members (global ranks), not
    its size: all on this node is "intra", one per node "inter", a group whose size is
    right but whose members mix nodes is "other"; a message crosses the link to its peer.
    (``nodes`` is the cluster's node count; the members alone decide.)"""
    from .patterns import link_class
    out = {"intra": 0.0, "inter": 0.0, "other": 0.0}
    for c in calls:
        if c.peer is not None:
            if c.name in _P2P_SEND:
                out["intra" if _node(c.peer, ranks_per_node) == _node(rank, ranks_per_node)
                    else "inter"] += c.bytes
            continue
        key = {"intra": "intra", "inter": "inter"}.get(link_class(c, rank, ranks_per_node),
                                                      "other")
        if c.name not in _RING:
            out[key] += c.bytes  # not a ring collective: its payload, once
            continue
        kind, piece = _RING[c.name]
        out[key] += ring_bytes(kind, c.bytes * (c.group_size if piece else 1), c.group_size)
    return out


def _hier_pattern(calls_per_rank, world_size):
    k, m, n_bytes = HIER_K, HIER_NODES, HIER_NUMEL * 4
    want = {"intra": 2 * (k - 1) / k * n_bytes, "inter": 2 * (m - 1) / m * n_bytes / k}
    for rank, calls in enumerate(calls_per_rank):
        got = link_bytes(calls, rank, k, m)
        if got["other"]:
            return (f"rank {rank} ran a collective over a group that is neither its node "
                    f"({k} ranks) nor its column across the nodes (one rank per node): a "
                    "group that mixes ranks of one node with ranks of others sends its "
                    "messages over the slow links whatever its size")
        for link in ("inter", "intra"):
            if abs(got[link] - want[link]) > 1e-9:
                if link == "inter":
                    return (f"rank {rank} put {got[link]:g} bytes on the inter-node links (a "
                            f"ring per call); the hierarchical all-reduce of a {n_bytes}-byte "
                            f"tensor puts {want[link]:g} there: across nodes only this rank's "
                            f"1/{k} of the node's sum travels")
                return (f"rank {rank} put {got[link]:g} bytes on the intra-node links (a ring "
                        f"per call); the hierarchical all-reduce of a {n_bytes}-byte tensor "
                        f"puts {want[link]:g} there: a reduce-scatter and an all-gather of the "
                        "tensor inside the node")
    return None


HIERARCHICAL = register(Exercise(
    id="11.hierarchical", level="core", kind="implement", title="the hierarchical all-reduce",
    student_name="my_hierarchical_all_reduce",
    task=f"{HIER_NODES} nodes x {HIER_K} ranks (numbered node by node). Write "
         "`my_hierarchical_all_reduce(x, ranks_per_node)` returning the sum of every rank's "
         "`x` (1-D), in three phases: reduce-scatter inside the node, all-reduce of your "
         "chunk across the nodes (with the ranks at your position on the other nodes), "
         "all-gather inside the node. Use process groups (`dist.new_group`) and "
         "`dist.reduce_scatter_single` / `dist.all_gather_single`. The checker compares "
         "the sums and the bytes each link class carries (each call counted as a ring).",
    hints=("Draw the 6 ranks as a 3 x 2 grid: a row is a node, a column holds the ranks at "
           "one position on every node. Phase 1 and 3 work in your row, phase 2 in your "
           "column, on 1/ranks_per_node of the tensor.",
           "Creating a group is a collective over the world: every rank creates every row "
           "group and every column group, in the same order. "
           "`companion.collectives.node_groups(ranks_per_node)` lists your own two.",
           "An all-reduce is a reduce-scatter followed by an all-gather (notebook 01): in "
           "the column group, reduce-scatter your chunk into a piece, then all-gather the "
           "pieces back into the chunk.",
           "reduce_scatter_single(out, inp, group=g) needs out with inp.numel() // group "
           "size elements; all_gather_single(out, inp, group=g) the reverse."),
    inputs=_hier_inputs, reference=hierarchical_reference, world_size=HIER_NODES * HIER_K,
    forbidden={"companion.collectives.hierarchical.hierarchical_all_reduce":
               "it is the package's solution to this exercise",
               "companion.collectives.hierarchical.torus_all_reduce":
               "it is the same three phases, run as two rings",
               "companion.learning.nb11.hierarchical_reference":
               "it is the package's solution to this exercise",
               "torch.distributed.all_reduce":
               "build the all-reduce from reduce-scatter and all-gather"},
    pattern=all_of(only(*_RS, *_AG, why="the three phases are reduce-scatters and "
                        "all-gathers in groups"), _hier_pattern),
    pure=True, timeout=30.0,
    context="import torch\nimport torch.distributed as dist\nimport companion",
))
