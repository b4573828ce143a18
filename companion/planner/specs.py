"""Models and clusters the planner reasons about, with presets from the lectures.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``). Parameter counts are
computed from the architecture, not copied: the notebook shows them next to the
published sizes.
"""
from __future__ import annotations

import dataclasses

from .. import hardware

__all__ = ["ModelSpec", "ClusterSpec", "MLA", "MODELS", "CLUSTERS"]


@dataclasses.dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values pass through
    low-rank bottlenecks; each head's query/key has a ``qk_nope_dim`` part and a shared
    RoPE part of ``qk_rope_dim``; values have ``v_dim`` per head."""

    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_dim: int
    qk_rope_dim: int
    v_dim: int

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{field.name} must be a positive integer, got {value!r}.")

    def params(self, hidden: int, heads: int) -> int:
        """W_DQ, W_UQ (with the RoPE part), W_DKV (with the shared RoPE key), W_UK, W_UV,
        W_O and the two bottleneck RMSNorms (arXiv 2412.19437 §2.1.1)."""
        qk = self.qk_nope_dim + self.qk_rope_dim
        return (hidden * self.q_lora_rank + self.q_lora_rank * heads * qk
                + hidden * (self.kv_lora_rank + self.qk_rope_dim)
                + self.kv_lora_rank * heads * (self.qk_nope_dim + self.v_dim)
                + heads * self.v_dim * hidden + self.q_lora_rank + self.kv_lora_rank)


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
    # Mixture of experts (0 experts: a dense model). Layers after the first
    # ``dense_layers`` replace the MLP by ``experts`` routed experts (``top_k`` per token)
    # of ``expert_ffn`` hidden units plus ``shared_experts`` every token uses; a router of
    # hidden x experts. ``capacity_factor`` pads each expert's buffer (1.0: dropless and
    # balanced). ``max_route_nodes`` limits the nodes a token is sent to (DeepSeek-V3: 4).
    experts: int = 0
    top_k: int = 0
    expert_ffn: int | None = None
    shared_experts: int = 0
    dense_layers: int = 0
    capacity_factor: float = 1.0
    max_route_nodes: int | None = None
    mla: MLA | None = None
    published_active: float | None = None

    def __post_init__(self):
        for field in ("layers", "hidden", "heads", "seq_len", "vocab"):
            value = getattr(self, field)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{field} must be a positive integer, got {value!r}.")
        if self.hidden % self.heads:
            raise ValueError(f"hidden={self.hidden} must be divisible by heads={self.heads}.")
        if self.experts:
            if not (isinstance(self.top_k, int) and 1 <= self.top_k <= self.experts):
                raise ValueError(f"top_k must be in 1..experts={self.experts}, got {self.top_k!r}.")
            if not 0 <= self.dense_layers < self.layers:
                raise ValueError(f"dense_layers must be in 0..{self.layers - 1}, got "
                                 f"{self.dense_layers!r}.")
            if not self.capacity_factor >= 1.0:
                raise ValueError(f"capacity_factor must be >= 1.0 (1.0 = dropless), got "
                                 f"{self.capacity_factor!r}.")

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V) as sent by context parallelism: GQA's kv heads x head
        dim; MLA sends its compressed latent and shared RoPE key instead (one tensor)."""
        if self.mla:
            return (self.mla.kv_lora_rank + self.mla.qk_rope_dim) // 2
        return (self.kv_heads or self.heads) * (self.hidden // self.heads)

    @property
    def attention_dim(self) -> int:
        """heads x (query/key dim + value dim) / 2: ``hidden`` for standard attention."""
        if self.mla:
            return self.heads * (self.mla.qk_nope_dim + self.mla.qk_rope_dim + self.mla.v_dim) // 2
        return self.hidden

    def _mlp(self, ffn: int) -> int:
        return (3 if self.gated_mlp else 2) * ffn * self.hidden

    def _attention(self) -> int:
        if self.mla:
            return self.mla.params(self.hidden, self.heads)
        kv_dim = (self.kv_heads or self.heads) * (self.hidden // self.heads)
        return 2 * self.hidden * self.hidden + 2 * self.hidden * kv_dim

    def moe_layer_params(self) -> tuple[int, int, int]:
        """One MoE block as (split by attention TP, replicated, all routed experts):
        attention and shared experts are TP-split, norms and router replicated."""
        split = self._attention() + self.shared_experts * self._mlp(self.expert_ffn)
        replicated = 2 * self._norm() + self.hidden * self.experts
        return split, replicated, self.experts * self._mlp(self.expert_ffn)

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.is_moe else 0

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
        if self.mla:
            split = self._attention() + up * h + self.ffn * h
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
        if self.is_moe:
            dense = self.dense_layers * self.layer_params()
            return (dense + self.moe_layers * sum(self.moe_layer_params())
                    + self.embedding_params() + self._norm())
        return self.layers * self.layer_params() + self.embedding_params() + self._norm()

    def active_params(self) -> int:
        """Parameters one token uses: all of a dense model; for a MoE, its ``top_k`` of
        the routed experts (DeepSeek-V3's "37B activated")."""
        if not self.is_moe:
            return self.num_params()
        unused = (self.experts - self.top_k) * self._mlp(self.expert_ffn)
        return self.num_params() - self.moe_layers * unused

    def stage_layers(self, pp: int, split: str | None = None) -> list[int]:
        """Blocks per pipeline stage. ``None``: contiguous, earlier stages take the
        remainder (notebook 09). ``"llama3"``: the first and last stages get one block
        fewer, because they also hold the embedding and the output head (Llama 3 paper,
        arXiv 2407.21783 §3.3.2); the other stages share the rest, extras in the middle."""
        if split is None or pp == 1:
            base, extra = divmod(self.layers, pp)
            return [base + (k < extra) for k in range(pp)]
        if split != "llama3":
            raise ValueError(f"split must be None or 'llama3', got {split!r}.")
        base, extra = divmod(self.layers + 2, pp)
        counts = [base] * pp
        order = list(range(1, pp - 1)) + [0, pp - 1]
        for k in order[:extra]:
            counts[k] += 1
        counts[0] -= 1
        counts[-1] -= 1
        return counts

    def stage_param_parts(self, stage: int, pp: int = 1, tp: int = 1, vocab_parallel: bool = True,
                          ep: int = 1, etp: int = 1, split: str | None = None) -> tuple[int, int]:
        """``(non-expert, expert)`` parameters one rank of pipeline ``stage`` holds: the
        non-expert ones split by attention TP ``tp``; each MoE layer's routed experts
        spread over ``ep`` ranks and split by expert TP ``etp`` (notebook 12)."""
        if not 0 <= stage < pp:
            raise ValueError(f"stage must be in 0..{pp - 1}, got {stage}.")
        counts = self.stage_layers(pp, split)
        first = sum(counts[:stage])
        moe = max(0, first + counts[stage] - max(first, self.dense_layers)) if self.is_moe else 0
        split_p, replicated = self.layer_params_split()
        total = (counts[stage] - moe) * (split_p // tp + replicated)
        experts = 0
        if moe:
            m_split, m_rep, routed = self.moe_layer_params()
            total += moe * (m_split // tp + m_rep)
            experts = moe * routed // (ep * etp)
        table = self.vocab * self.hidden // (tp if vocab_parallel else 1)
        if stage == 0:
            total += table + (self.seq_len * self.hidden if self.learned_positions else 0)
        if stage == pp - 1:
            total += self._norm()
            if not (self.tied_embeddings and pp == 1):
                total += table
        return total, experts

    def stage_params(self, stage: int, pp: int = 1, tp: int = 1, vocab_parallel: bool = True,
                     ep: int = 1, etp: int = 1, split: str | None = None) -> int:
        """Parameters one rank of pipeline ``stage`` holds under ``tp``-way tensor parallelism.

        The first stage holds the input embedding (and position table), the last the
        final norm and output head; with tied embeddings and several stages both ends
        keep a copy (Megatron all-reduces their gradients). ``vocab_parallel`` splits the
        embedding tables over TP ranks (Megatron); without it they are replicated. For a
        MoE, ``ep`` and ``etp`` spread the routed experts (:meth:`stage_param_parts`).
        """
        return sum(self.stage_param_parts(stage, pp, tp, vocab_parallel, ep, etp, split))

    def params_per_gpu(self, tp: int = 1, pp: int = 1, vocab_parallel: bool = True,
                       ep: int = 1, etp: int = 1, split: str | None = None) -> int:
        """Parameters on the busiest GPU (the largest pipeline stage)."""
        return max(self.stage_params(s, pp, tp, vocab_parallel, ep, etp, split)
                   for s in range(pp))

    def flops_per_token(self) -> float:
        """Training FLOPs per token, forward and backward: 6N plus attention's
        6 * layers * seq_len * hidden (Kaplan et al. 2020, with the 3x for backward)."""
        if self.is_moe or self.mla:
            return (6.0 * self.active_params()
                    + 6.0 * self.layers * self.seq_len * self.attention_dim)
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
        a = hardware.H800 if chip == "H800" else hardware.accelerator(chip)
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
    # arXiv 2412.19437 §4.2: 61 layers, hidden 7168, 128 heads, MLA (ranks 1536 / 512,
    # head dims 128 + 64 RoPE, values 128), first 3 layers dense (FFN 18432), then 1
    # shared + 256 routed experts of 2048, top-8, each token to at most 4 nodes; 4K
    # sequences; vocabulary 129,280 (its config.json). The MTP module is not counted,
    # as the paper's 671B does not count it.
    ModelSpec("DeepSeek-V3 671B", layers=61, hidden=7168, heads=128, seq_len=4096, vocab=129280,
              ffn_hidden=18432, gated_mlp=True, experts=256, top_k=8, expert_ffn=2048,
              shared_experts=1, dense_layers=3, max_route_nodes=4,
              mla=MLA(1536, 512, 128, 64, 128), published_params=671e9, published_active=37e9),
    # Mixtral 8x7B (arXiv 2401.04088): Mistral 7B's shape with 8 experts, top-2.
    ModelSpec("Mixtral 8x7B", layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000,
              ffn_hidden=14336, kv_heads=8, gated_mlp=True, experts=8, top_k=2,
              expert_ffn=14336, published_params=46.7e9, published_active=12.9e9),
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
    ClusterSpec.of("DeepSeek-V3: 2,048x H800", "H800", 256),
]}
