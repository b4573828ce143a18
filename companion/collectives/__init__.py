"""Collectives built from point-to-point messages, and a recorder of their traffic.

Taught in notebooks 01 (``01_collectives.ipynb``) and 02
(``02_parameter_server_vs_allreduce.ipynb``). Call these inside ranks, like the
``torch.distributed`` collectives they re-implement::

    from companion import collectives as C
    with C.traffic() as t:
        y = C.ring_all_reduce(x, op="avg")
    t.bytes_sent, t.steps, t.log

Topology-aware collectives (notebook 11: ``11_networks_and_topology.ipynb``):
``hierarchical_all_reduce``, ``torus_all_reduce`` and ``torus_all_to_all``; inside
``companion.topology.emulate(cluster)`` every message also records the link it crossed.

``ring_bytes(kind, nbytes, world_size)`` is the one formula for the bytes a rank sends in
a ring collective, which every later chapter's accounting calls.
"""
from .accounting import ring_bytes
from .all_reduce import (ALL_REDUCE_ALGORITHMS, naive_all_reduce, parameter_server_all_reduce,
                         recursive_doubling_all_reduce, recursive_halving_doubling_all_reduce,
                         reduce_scatter_all_gather_all_reduce, ring_all_reduce, tree_all_reduce)
from .primitives import (all_gather, all_to_all, broadcast, gather, reduce, reduce_scatter,
                         scatter)
from .hierarchical import hierarchical_all_reduce, node_groups, torus_all_reduce
from .forwarding import torus_all_to_all
from . import demos
from .replay import replay
from .traffic import Message, Traffic, chunk_offsets, chunk_sizes, traffic

__all__ = [
    "broadcast", "reduce", "scatter", "gather", "all_gather", "reduce_scatter", "all_to_all",
    "parameter_server_all_reduce", "naive_all_reduce", "tree_all_reduce", "ring_all_reduce",
    "recursive_doubling_all_reduce", "recursive_halving_doubling_all_reduce",
    "reduce_scatter_all_gather_all_reduce",
    "ALL_REDUCE_ALGORITHMS", "traffic", "Traffic", "Message", "replay", "chunk_sizes",
    "chunk_offsets", "hierarchical_all_reduce", "torus_all_reduce", "torus_all_to_all",
    "node_groups", "ring_bytes",
]
