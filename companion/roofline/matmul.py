"""The roofline of one matmul, and the bandwidth a device's collectives get.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``, section 1).

A matmul ``[B, D] x [D, F]`` does ``2 B D F`` FLOPs (one multiply and one add per
term) and, in bf16, reads ``2 (B D + D F)`` bytes and writes ``2 B F``. Its time on one
chip is at least ``max(FLOPs / C, bytes / W_hbm)``: compute-bound when the arithmetic
intensity ``FLOPs / bytes`` exceeds the chip's ``C / W_hbm``. For ``B << D, F`` the
intensity is about ``B``, so a chip needs about ``C / W_hbm`` tokens per matmul (the
scaling book's "B > 240" for a TPU v5e, https://jax-ml.github.io/scaling-book/roofline/).

The parallel rules (:mod:`.rules`) are the same argument one level up: the "memory" is
the network, ``W`` its bandwidth, and the bytes are weights (DP/FSDP) or activations
(TP, PP, EP).
"""
from __future__ import annotations

from .. import hardware
from ..validation import positive_int, positive_number

__all__ = ["matmul_flops", "matmul_bytes", "matmul_intensity", "matmul_time",
           "hbm_critical_batch", "collective_bandwidth", "fsdp_tp_bandwidths"]


def _dims(b, d, f):
    for name, v in (("b", b), ("d", d), ("f", f)):
        positive_int(name, v, f"pass the matmul's {name} dimension as a whole number >= 1.")


def matmul_flops(b: int, d: int, f: int) -> float:
    """``2 b d f``: FLOPs of ``[b, d] x [d, f]``."""
    _dims(b, d, f)
    return 2.0 * b * d * f


def matmul_bytes(b: int, d: int, f: int, bytes_per_element: int = 2) -> float:
    """Bytes a matmul must move through HBM at least once: both inputs and the output."""
    _dims(b, d, f)
    positive_int("bytes_per_element", bytes_per_element, "2 for bf16, 4 for fp32.")
    return float(bytes_per_element) * (b * d + d * f + b * f)


def matmul_intensity(b: int, d: int, f: int, bytes_per_element: int = 2) -> float:
    """FLOPs per byte of HBM traffic; about ``b`` when ``b << d, f`` (in bf16)."""
    return matmul_flops(b, d, f) / matmul_bytes(b, d, f, bytes_per_element)


def matmul_time(b: int, d: int, f: int, peak_flops: float, hbm_bandwidth: float,
                bytes_per_element: int = 2) -> dict:
    """``{"compute": s, "memory": s, "time": max, "bound": "compute" | "memory"}``:
    the roofline lower bound of one matmul on one chip."""
    positive_number("peak_flops", peak_flops, "pass the chip's FLOP/s, e.g. 989e12.")
    positive_number("hbm_bandwidth", hbm_bandwidth, "pass the chip's HBM bytes/s, e.g. 3.35e12.")
    t_c = matmul_flops(b, d, f) / peak_flops
    t_m = matmul_bytes(b, d, f, bytes_per_element) / hbm_bandwidth
    return {"compute": t_c, "memory": t_m, "time": max(t_c, t_m),
            "bound": "compute" if t_c >= t_m else "memory"}


def hbm_critical_batch(peak_flops: float, hbm_bandwidth: float,
                       bytes_per_element: int = 2) -> float:
    """Tokens a matmul needs to be compute-bound on one chip when ``b << d, f``:
    ``2 b d f / (bytes d f) > C / W_hbm`` gives ``b > bytes * C / (2 W_hbm)``
    (``C / W_hbm`` in bf16)."""
    positive_number("peak_flops", peak_flops, "pass the chip's FLOP/s, e.g. 989e12.")
    positive_number("hbm_bandwidth", hbm_bandwidth, "pass the chip's HBM bytes/s.")
    positive_int("bytes_per_element", bytes_per_element, "2 for bf16, 4 for fp32.")
    return bytes_per_element * peak_flops / (2 * hbm_bandwidth)


def collective_bandwidth(chip: str, across_nodes: bool, members_per_node: int | None = None,
                         nodes: int | None = None) -> float:
    """``W_collective`` (bytes/s, per direction) of one device's collectives, from
    :mod:`companion.hardware`: its scale-up link inside a node (NVLink, 450 GB/s for an
    H100), or, for a group that spans nodes, what its members in one node drive
    together: each member its own NIC, so ``members_per_node`` x one NIC (default: a
    full node, 8 x 50 GB/s = 400 GB/s on a DGX H100; a group with one member per node,
    50). This is the bandwidth term of ``planner.links.layout_collective_time`` for many
    nodes, the scaling book's GPU chapter.

    ``nodes``: the number of nodes the group spans, for a group over few of them (a TP
    group of 16 over two nodes). Then the collective has two phases, as in the planner's
    ``layout_collective_time``: only ``(nodes - 1) / nodes`` of the buffer crosses the
    NICs, and the phase inside each node runs on NVLink; they pipeline, so the slower
    sets ``W``. The NVLink phase is counted as the NVLink figure above counts it, without
    the ring's ``(k - 1) / k`` (the scaling book's convention; the planner keeps that
    factor, which ``tests/test_roofline.py`` checks is the only difference). Over two full
    H100 nodes the NICs would give 800 GB/s and NVLink 450: ``W`` = 450 GB/s, NVLink's
    (the book's quiz on an AllGather over exactly two nodes: the node level is the
    bottleneck). Split 4 + 4, the NICs give 400: ``W`` = 400 GB/s.

    For a TPU the fast domain is a 3D torus: one mesh axis gets a third of the chip's
    ICI (two of its six links), 200 GB/s per direction on a v5p from Google's figure.
    The scaling book's training chapter uses its own, older per-axis figure,
    ``W_ici = 1.8e11`` B/s; its worked examples are tested on that constant."""
    a = hardware.accelerator(chip)
    if not isinstance(across_nodes, bool):
        raise TypeError(f"across_nodes must be True or False, got {across_nodes!r}.")
    if members_per_node is not None:
        positive_int("members_per_node", members_per_node,
                     f"pass how many of the group's members share a node (1 to {a.per_node}).")
        if members_per_node > a.per_node:
            raise ValueError(f"members_per_node={members_per_node}: a {a.name} node has "
                             f"{a.per_node} devices; pass 1 to {a.per_node}.")
    inside = a.scale_up.value / 3 if "torus" in a.scale_up_name else a.scale_up.value
    if nodes is not None:
        positive_int("nodes", nodes, "pass how many nodes the group spans (>= 2), or None "
                     "for many nodes.", minimum=2)
        if not across_nodes:
            raise ValueError(f"nodes={nodes} with across_nodes=False: a group inside one node "
                             "spans no nodes; pass across_nodes=True or nodes=None.")
    if not across_nodes:
        return inside
    k = members_per_node or a.per_node
    nics = a.scale_out.value * k
    if nodes is None:
        return nics
    # seconds per byte of each phase; the slower one sets the pace (one member per node
    # has no phase inside the node)
    return 1.0 / max(1.0 / inside if k > 1 else 0.0, (nodes - 1) / nodes / nics)


def fsdp_tp_bandwidths(chip: str, devices: int, tp: int) -> tuple[float, float]:
    """``(W_fsdp, W_tp)`` of ``devices`` GPUs running FSDP over ``devices / tp`` of them and
    tensor parallelism over ``tp``, placed as Megatron places them: a TP group is ``tp``
    adjacent GPUs, an FSDP group one GPU of each TP group. Each is
    :func:`collective_bandwidth` for its own placement. While the whole job fits in a
    node both ride NVLink. Across nodes, a TP group inside a node rides NVLink and an FSDP
    group has ``per_node / tp`` members in each node, each with its own NIC: ``W_fsdp =
    (per_node / tp)`` NICs. So a TP degree that divides the weight bytes each GPU gathers
    by ``tp`` divides its FSDP group's NICs by ``tp`` too, and FSDP's time across nodes
    does not change with ``tp``. A TP group of whole nodes gets their NICs and leaves each
    FSDP group one. Taught in notebook 10, section 4."""
    a = hardware.accelerator(chip)
    positive_int("devices", devices, "pass the number of GPUs N = X * Y.")
    positive_int("tp", tp, f"pass the tensor-parallel degree Y, e.g. 1 to {a.per_node}.")
    if devices % tp:
        raise ValueError(f"tp={tp} does not divide devices={devices}; pass a divisor, "
                         "e.g. powers of two for both.")
    if devices <= a.per_node:
        return collective_bandwidth(chip, False), collective_bandwidth(chip, False)
    if a.per_node % tp and tp % a.per_node:
        raise ValueError(f"tp={tp}: a TP group must fill whole {a.name} nodes or divide one "
                         f"({a.per_node} GPUs); pass a divisor or a multiple of {a.per_node}.")
    if tp > a.per_node:
        return (collective_bandwidth(chip, True, members_per_node=1),
                collective_bandwidth(chip, True, members_per_node=a.per_node))
    return (collective_bandwidth(chip, True, members_per_node=a.per_node // tp),
            collective_bandwidth(chip, False))
