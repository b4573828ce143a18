"""Where a process group sits on the cluster, and the bandwidth its collectives really get.

Taught in notebook 09 (section 3, "what each group's collectives cost"). Placement is
Llama 3's (arXiv 2407.21783 §3.3.2; Megatron-LM's default puts DP inside the pipeline
instead): tensor-parallel ranks adjacent, pipeline stages next, data-parallel replicas
outermost, so a TP group is ``tp`` consecutive ranks (stride 1) and a DP group is ``dp``
ranks spaced ``tp * pp`` apart.

``collective_time`` is notebook 02's flat ring on one given link (alpha, beta).
A group that fits in one node runs that ring on NVLink. A group that spans
nodes reduces hierarchically (NCCL's multi-channel rings drive the same NICs and come
close to its bytes at scale; notebook 11 section 4): inside
each node its members share the work over NVLink, and across nodes each member drives
its **own** NIC. With ``k`` members per node, a group spanning ``M`` nodes therefore has
``k`` NICs per node, ``k * beta_nic`` bytes/s of node egress, and one all-gather or
reduce-scatter of ``n`` bytes costs (the scaling book's GPU chapter,
https://jax-ml.github.io/scaling-book/gpus/ , "Cross-node collectives")::

    T = (k-1) alpha_nvlink + (M-1) alpha_ib
        + max[ (k-1)/k * n / beta_nvlink ,  (M-1)/M * n / (k * beta_nic) ]

The two levels' rings pipeline, so the slower level sets the bandwidth term (the book's
``bytes * max_i (D_i - 1) / (D_i W_i)``); latencies add. An all-reduce is twice this.
With ``k = 1`` (TP x PP >= GPUs per node) it is exactly the flat ring over the nodes, at
one NIC per GPU. With TP x PP = 1 on 8-GPU nodes, ``k = 8``: the node's eight NICs carry
the buffer and cross-node data parallelism is ~8x faster than a one-NIC ring would say.

Link figures are **peak, per direction** (``companion.hardware``), as in the book's
rooflines; measured bus bandwidth is lower (an 8 x H100 all-reduce reaches ~370 of
450 GB/s, ``hardware.NVLINK_H100_MEASURED``). The planner does not derate: it ranks
configurations, and a common factor on every link would not change the ranking much.
"""
from __future__ import annotations

from ..collectives import costmodel
from ..validation import one_of, positive_int, positive_number

__all__ = ["collective_time", "group_layout", "group_collective_time", "layout_collective_time",
           "pp_link"]

_KINDS = ("all_reduce", "all_gather", "reduce_scatter")


def collective_time(kind: str, nbytes: float, ranks: int, alpha: float, beta: float) -> float:
    """Alpha-beta time of a ring collective on a ``nbytes`` buffer over ``ranks`` ranks.

    The all-reduce is notebook 02's ring, ``costmodel.predict_time("ring", ...)``:
    2(p-1) alpha + 2(p-1)/p n/beta. All-gather and reduce-scatter are each half of it
    (all-reduce = reduce-scatter + all-gather); point-to-point is alpha + n/beta.
    """
    if kind == "p2p":
        return alpha + nbytes / beta
    full = costmodel.predict_time("ring", nbytes, ranks, alpha, beta)
    if kind == "all_reduce":
        return full
    if kind in ("all_gather", "reduce_scatter"):
        return full / 2
    raise ValueError(f"unknown collective {kind!r}; use all_reduce, all_gather, reduce_scatter or p2p.")


def group_layout(gpus_per_node: int, size: int, stride: int = 1) -> tuple[int, int]:
    """``(members per node, nodes spanned)`` of a group of ``size`` ranks spaced
    ``stride`` apart (rank = start + i * stride), nodes of ``gpus_per_node`` GPUs."""
    for name, value in (("gpus_per_node", gpus_per_node), ("size", size), ("stride", stride)):
        positive_int(name, value, f"pass a whole number >= 1 for {name}.")
    if size * stride <= gpus_per_node:
        return size, 1
    per_node = max(1, gpus_per_node // stride)
    if size % per_node:
        raise ValueError(f"size={size} ranks with stride {stride} do not fill nodes of "
                         f"{gpus_per_node} evenly; use powers of two.")
    return per_node, size // per_node


def group_collective_time(kind: str, nbytes: float, cluster, size: int,
                          stride: int = 1) -> float:
    """Seconds for a ring collective (``all_reduce``, ``all_gather``, ``reduce_scatter``)
    of ``nbytes`` per rank over a group of ``size`` ranks spaced ``stride`` apart on
    ``cluster`` (a ``ClusterSpec``): NVLink when the group fits in a node, the
    hierarchical formula in the module docstring when it spans nodes."""
    one_of("kind", kind, _KINDS)
    positive_number("nbytes", nbytes, "pass the buffer size in bytes.", zero=True)
    per_node, nodes = group_layout(cluster.gpus_per_node, size, stride)
    return layout_collective_time(kind, nbytes, cluster, per_node, nodes)


def layout_collective_time(kind: str, nbytes: float, cluster, per_node: int,
                           nodes: int) -> float:
    """:func:`group_collective_time` for a group given by its layout: ``per_node``
    members in each of ``nodes`` nodes (``axes.axis_layout`` gives it for groups made of
    several parallel axes, such as DP x CP)."""
    one_of("kind", kind, _KINDS)
    positive_number("nbytes", nbytes, "pass the buffer size in bytes.", zero=True)
    halves = 2 if kind == "all_reduce" else 1
    a_nv, b_nv = cluster.link(False)
    if nodes == 1:
        return costmodel.predict_time("ring", nbytes, per_node, a_nv, b_nv) * halves / 2
    a_ib, b_nic = cluster.link(True)
    latency = (per_node - 1) * a_nv + (nodes - 1) * a_ib
    inside = (per_node - 1) / per_node * nbytes / b_nv
    across = (nodes - 1) / nodes * nbytes / (per_node * b_nic)
    return halves * (latency + max(inside, across))


def pp_link(cluster, tp: int, pp: int) -> tuple[float, float, bool]:
    """``(alpha, beta, crosses nodes)`` of the slowest pipeline boundary.

    Stage s's TP rank t sends to stage s+1's TP rank t, ``tp`` ranks further on. When
    all of a replica's ``tp * pp`` GPUs share a node every boundary is NVLink; otherwise
    at least one boundary crosses nodes, and the 1F1B schedule runs at the pace of its
    slowest boundary. Each of the ``tp`` senders uses its own NIC (one per GPU).
    """
    positive_int("tp", tp, "pass the tensor-parallel degree.")
    positive_int("pp", pp, "pass the number of pipeline stages.")
    inter = tp * pp > cluster.gpus_per_node
    return (*cluster.link(inter), inter)
