"""The cost of one pipeline stage on one sub-mesh: Alpa's intra-operator pass, small.

Taught in notebook 12 (``notebooks/12_auto_parallelism.ipynb``). ``autoparallel.stages``
asks an ``intra_op(layers, mesh, in_flight)`` callable for the best sharding of a run of
layers on a sub-mesh of :func:`submesh_shapes`; :func:`alpha_beta_intra_op` is the
default: the fastest DP x TP split under the alpha-beta model of
``companion.collectives.costmodel`` that fits in memory (Zheng et al., "Alpa", OSDI 2022,
https://arxiv.org/abs/2201.12023, section 4 does this with an integer program, as
``autoparallel.ilp`` does on a graph).
"""
from __future__ import annotations

import dataclasses

from ..data_parallel import memory
from ..planner.links import group_collective_time
from ..validation import fraction, positive_int, positive_number

__all__ = ["IntraOpChoice", "submesh_shapes", "alpha_beta_intra_op"]


@dataclasses.dataclass(frozen=True)
class IntraOpChoice:
    """What an intra-op cost function returns: seconds per micro-batch, bytes per device,
    and a label of the sharding it chose (e.g. ``"DP2xTP4"``)."""

    time: float
    memory: float
    config: str

    def __post_init__(self):
        positive_number("time", self.time, "an intra-op cost must be finite seconds >= 0.",
                        zero=True)
        positive_number("memory", self.memory, "pass bytes per device >= 0.", zero=True)


def submesh_shapes(cluster) -> list[tuple[int, int]]:
    """Alpa's sub-mesh shapes on ``cluster`` (a ``planner.ClusterSpec``): (1, 1), (1, 2),
    ..., (1, g) inside a node, then (2, g), ..., (nodes, g). Any multiset of them whose
    sizes add up to the cluster can be placed on it (Alpa's appendix), so the dynamic
    program only counts devices."""
    g = getattr(cluster, "gpus_per_node", None)
    if not isinstance(g, int) or g < 1 or g & (g - 1):
        raise ValueError(f"cluster must be a planner.ClusterSpec with a power-of-two "
                         f"gpus_per_node, got {cluster!r}.")
    return [(1, 1 << k) for k in range(g.bit_length())] + [(n, g) for n in range(2, cluster.nodes + 1)]


def alpha_beta_intra_op(cluster, microbatches: int, kernel_efficiency: float = 0.6, reserve_gb: float = 2.0):
    """The default intra-op cost: for a run of layers on a sub-mesh, the fastest
    DP x TP split (TP ranks adjacent, as Megatron places them) that fits in memory.

    Both split the compute over all p devices and the stored activations too (DP splits
    the micro-batch, TP with sequence parallelism the sequence). TP divides the weights
    and optimizer state and all-reduces activations every micro-batch; DP keeps whole
    copies and all-reduces gradients once per step; its degree must divide the layers'
    ``batch`` (sequences per micro-batch). Mixed-precision Adam (16 B per parameter).
    """
    positive_int("microbatches", microbatches, "pass the number of micro-batches B.")
    fraction("kernel_efficiency", kernel_efficiency, "pass the share of peak FLOP/s, e.g. 0.6.")
    positive_number("reserve_gb", reserve_gb, "pass the GB kept free per GPU.", zero=True)
    submesh_shapes(cluster)  # refuses a cluster the shapes cannot be built on
    achieved = cluster.peak_tflops * 1e12 * kernel_efficiency
    states_per_weight_byte = sum(memory.bytes_per_param("mixed", "adam").values()) / 2
    capacity = (cluster.gpu_memory_gb - reserve_gb) * 1e9

    def intra_op(layers, mesh, in_flight):
        p = mesh[0] * mesh[1]
        flops = sum(x.flops for x in layers)
        weights = sum(x.param_bytes for x in layers)
        saved = sum(x.saved_bytes for x in layers)
        tp_bytes, tp_calls = sum(x.tp_bytes for x in layers), sum(x.tp_calls for x in layers)
        batch = min((x.batch for x in layers if x.batch is not None), default=None)
        best = None
        for tp in (1 << k for k in range(p.bit_length()) if p % (1 << k) == 0):
            dp = p // tp
            if batch is not None and batch % dp:
                continue
            used = weights * states_per_weight_byte / tp + saved * in_flight / p
            if used > capacity:
                continue
            t = flops / (p * achieved)
            if tp > 1 and tp_calls:  # each DP replica's TP group on its share of the batch
                t += tp_calls * group_collective_time("all_reduce", tp_bytes / dp / tp_calls,
                                                      cluster, tp)
            if dp > 1:
                t += group_collective_time("all_reduce", weights / tp, cluster, dp,
                                           tp) / microbatches
            if best is None or t < best.time:
                best = IntraOpChoice(t, used, f"DP{dp}xTP{tp}")
        return best

    return intra_op
