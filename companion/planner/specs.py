"""Models and clusters the planner reasons about, with presets from the lectures.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``). Parameter counts are
computed from the architecture, not copied: the notebook shows them next to the
published sizes.
"""
from __future__ import annotations

import dataclasses

from .. import hardware

__all__ = ["ModelSpec", "ClusterSpec", "MODELS", "CLUSTERS"]


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer, described the way papers describe them."""

    name: str
    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int
    ffn_hidden: int | None = None   # default 4 * hidden
    kv_heads: int | None = None     # grouped-query attention; default = heads
    gated_mlp: bool = False         # SwiGLU: three matrices instead of two
    tied_embeddings: bool = False
    biases: bool = False            # GPT-2-style biases in every linear layer
    layernorm: bool = False         # LayerNorm (weight and bias) instead of RMSNorm (weight)
    learned_positions: bool = False  # a position-embedding table (GPT) instead of RoPE
    published_params: float | None = None  # the size in the model's name, for comparison

    def __post_init__(self):
        for field in ("layers", "hidden", "heads", "seq_len", "vocab"):
            value = getattr(self, field)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{field} must be a positive integer, got {value!r}.")
        if self.hidden % self.heads:
            raise ValueError(f"hidden={self.hidden} must be divisible by heads={self.heads}.")

    @property
    def ffn(self) -> int:
        return self.ffn_hidden or 4 * self.hidden

    def layer_params_split(self) -> tuple[int, int]:
        """One block's weights as (split by tensor parallelism, replicated on every TP rank).

        Megatron splits the Q/K/V and MLP-input matrices by columns (their biases too)
        and the output and MLP-output matrices by rows (their biases stay whole, added
        after the all-reduce); the norms are replicated.
        """
        h = self.hidden
        kv_dim = (self.kv_heads or self.heads) * (h // self.heads)
        up = (2 if self.gated_mlp else 1) * self.ffn
        split = 2 * h * h + 2 * h * kv_dim + up * h + self.ffn * h
        replicated = 2 * self._norm()
        if self.biases:
            split += h + 2 * kv_dim + up
            replicated += 2 * h
        return split, replicated

    def _norm(self) -> int:
        return (2 if self.layernorm else 1) * self.hidden

    def layer_params(self) -> int:
        """Weights of one block (attention, MLP, two norms, optional biases)."""
        return sum(self.layer_params_split())

    def embedding_params(self) -> int:
        tables = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return tables + (self.seq_len * self.hidden if self.learned_positions else 0)

    def num_params(self) -> int:
        return self.layers * self.layer_params() + self.embedding_params() + self._norm()

    def stage_layers(self, pp: int) -> list[int]:
        """Blocks per pipeline stage: contiguous, earlier stages take the remainder."""
        base, extra = divmod(self.layers, pp)
        return [base + (k < extra) for k in range(pp)]

    def stage_params(self, stage: int, pp: int = 1, tp: int = 1, vocab_parallel: bool = True) -> int:
        """Parameters one rank of pipeline ``stage`` holds under ``tp``-way tensor parallelism.

        The first stage holds the input embedding (and position table), the last the
        final norm and output head; with tied embeddings and several stages both ends
        keep a copy (Megatron all-reduces their gradients). ``vocab_parallel`` splits the
        embedding tables over TP ranks (Megatron); without it they are replicated.
        """
        if not 0 <= stage < pp:
            raise ValueError(f"stage must be in 0..{pp - 1}, got {stage}.")
        split, replicated = self.layer_params_split()
        layers = self.stage_layers(pp)[stage]
        total = layers * (split // tp + replicated)
        table = self.vocab * self.hidden // (tp if vocab_parallel else 1)
        if stage == 0:
            total += table + (self.seq_len * self.hidden if self.learned_positions else 0)
        if stage == pp - 1:
            total += self._norm()
            if not (self.tied_embeddings and pp == 1):
                total += table
        return total

    def params_per_gpu(self, tp: int = 1, pp: int = 1, vocab_parallel: bool = True) -> int:
        """Parameters on the busiest GPU (the largest pipeline stage)."""
        return max(self.stage_params(s, pp, tp, vocab_parallel) for s in range(pp))

    def flops_per_token(self) -> float:
        """Training FLOPs per token, forward and backward: 6N plus attention's
        6 * layers * seq_len * hidden (Kaplan et al. 2020, with the 3x for backward)."""
        return 6.0 * self.num_params() + 6.0 * self.layers * self.seq_len * self.hidden


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
        a = hardware.accelerator(chip)
        fields = dict(gpus_per_node=a.per_node, nodes=nodes, gpu_memory_gb=a.hbm.value / 1e9,
                      peak_tflops=a.flops / 1e12, intra_bw_gbps=a.scale_up.value / 1e9,
                      inter_bw_gbps=a.scale_out.value / 1e9)
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


MODELS = {m.name: m for m in [
    ModelSpec("GPT-3 175B", layers=96, hidden=12288, heads=96, seq_len=2048, vocab=50257,
              tied_embeddings=True, published_params=175e9),
    ModelSpec("Llama-3 8B", layers=32, hidden=4096, heads=32, seq_len=8192, vocab=128256,
              ffn_hidden=14336, kv_heads=8, gated_mlp=True, published_params=8e9),
    ModelSpec("Llama-3 70B", layers=80, hidden=8192, heads=64, seq_len=8192, vocab=128256,
              ffn_hidden=28672, kv_heads=8, gated_mlp=True, published_params=70e9),
    ModelSpec("Llama-3 405B", layers=126, hidden=16384, heads=128, seq_len=8192, vocab=128256,
              ffn_hidden=53248, kv_heads=8, gated_mlp=True, published_params=405e9),
    ModelSpec("7B (Llama-2 shape)", layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000,
              ffn_hidden=11008, gated_mlp=True, published_params=7e9),
]}

# Figures from companion.hardware (peak, per direction): H100 SXM 989 TFLOP/s dense bf16,
# NVLink 4 at 450 GB/s, one 400 Gb/s (50 GB/s) NIC per GPU; A100 SXM 312 TFLOP/s,
# NVLink 3 at 300 GB/s, one 200 Gb/s (25 GB/s) NIC per GPU. Memory budgets as the
# datasheets state them (80 "GB", which NVIDIA means as GiB: the budget errs safe).
CLUSTERS = {c.name: c for c in [
    ClusterSpec.of("1 node, 8x H100", "H100", 1),
    ClusterSpec.of("16 nodes, 128x H100", "H100", 16),
    ClusterSpec.of("Llama-3 scale: 16,384x H100", "H100", 2048),
    ClusterSpec.of("128 nodes, 1,024x A100", "A100", 128),
]}
