"""The clusters the planner reasons about: GPUs in nodes, NVLink inside, NICs between.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``). The figures come
from ``companion.hardware``; the lectures' clusters are ``planner.presets.CLUSTERS``.
"""
from __future__ import annotations

import dataclasses

from .. import hardware

__all__ = ["ClusterSpec"]


@dataclasses.dataclass(frozen=True)
class ClusterSpec:
    """GPUs in nodes: fast links inside a node, slower ones between nodes.

    Bandwidths are per GPU and per direction, in GB/s: ``intra_bw_gbps`` is one GPU's
    NVLink, ``inter_bw_gbps`` one GPU's NIC (each GPU has its own, so a node has
    ``gpus_per_node`` of them; ``planner.links`` says which a group uses). Latencies in
    microseconds. :meth:`of` builds one from ``companion.hardware``'s figures.
    """

    name: str
    gpus_per_node: int
    nodes: int
    gpu_memory_gb: float
    peak_tflops: float          # dense 16-bit tensor-core peak
    intra_bw_gbps: float        # NVLink
    inter_bw_gbps: float        # InfiniBand / RoCE, per GPU
    intra_latency_us: float = 3.0
    inter_latency_us: float = 10.0
    hbm_gbps: float | None = None   # HBM bandwidth; only attention="materialized" needs it

    def __post_init__(self):
        for field in ("gpus_per_node", "nodes"):
            if not isinstance(getattr(self, field), int) or getattr(self, field) < 1:
                raise ValueError(f"{field} must be a positive integer, got {getattr(self, field)!r}.")
        for field in ("gpu_memory_gb", "peak_tflops", "intra_bw_gbps", "inter_bw_gbps"):
            if not getattr(self, field) > 0:
                raise ValueError(f"{field} must be positive, got {getattr(self, field)!r}.")

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @classmethod
    def of(cls, name: str, chip: str, nodes: int, **overrides) -> "ClusterSpec":
        """A cluster of ``nodes`` reference nodes (DGX) of ``chip`` from
        ``companion.hardware``: its GPUs per node, memory, dense bf16 peak, NVLink and
        NIC bandwidth per direction."""
        a = hardware.H800 if chip == "H800" else hardware.accelerator(chip)
        fields = dict(gpus_per_node=a.per_node, nodes=nodes, gpu_memory_gb=a.hbm.value / 1e9,
                      peak_tflops=a.flops / 1e12, intra_bw_gbps=a.scale_up.value / 1e9,
                      inter_bw_gbps=a.scale_out.value / 1e9,
                      hbm_gbps=a.hbm_bandwidth.value / 1e9)
        return cls(name, **{**fields, **overrides})

    @property
    def node_egress_gbps(self) -> float:
        """All of a node's NICs together, per direction (400 GB/s for a DGX H100)."""
        return self.gpus_per_node * self.inter_bw_gbps

    def link(self, inter_node: bool) -> tuple[float, float]:
        """(alpha seconds, beta bytes/second) of one GPU's NVLink or one GPU's NIC."""
        if inter_node:
            return self.inter_latency_us * 1e-6, self.inter_bw_gbps * 1e9
        return self.intra_latency_us * 1e-6, self.intra_bw_gbps * 1e9
