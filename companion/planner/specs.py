"""The models the planner reasons about: dense and MoE transformers, MLA attention.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``; MoE and MLA in
notebook 12). Parameter counts are computed from the architecture, not copied: the
notebook shows them next to the published sizes. The clusters are
``planner.cluster_spec``; the lectures' presets of both, ``planner.presets``.
"""
from __future__ import annotations

import dataclasses

from ..validation import positive_int

__all__ = ["ModelSpec", "MLA"]


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
    head_dim: int | None = None     # per-head width; default hidden // heads (Gemma 2, Qwen 3 differ)
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
        if self.head_dim is not None and not (isinstance(self.head_dim, int) and self.head_dim >= 1):
            raise ValueError(f"head_dim must be a positive integer or None (hidden // heads), "
                             f"got {self.head_dim!r}.")
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
    def head_width(self) -> int:
        """One head's query/key/value width: ``head_dim``, else hidden // heads."""
        return self.head_dim or self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V) as sent by context parallelism: GQA's kv heads x head
        dim; MLA sends its compressed latent and shared RoPE key instead (one tensor)."""
        if self.mla:
            return (self.mla.kv_lora_rank + self.mla.qk_rope_dim) // 2
        return (self.kv_heads or self.heads) * self.head_width

    @property
    def attention_dim(self) -> int:
        """heads x (query/key dim + value dim) / 2: ``hidden`` for standard attention
        whose heads split the hidden size, heads x ``head_dim`` otherwise."""
        if self.mla:
            return self.heads * (self.mla.qk_nope_dim + self.mla.qk_rope_dim + self.mla.v_dim) // 2
        return self.heads * self.head_dim if self.head_dim else self.hidden

    def _mlp(self, ffn: int) -> int:
        return (3 if self.gated_mlp else 2) * ffn * self.hidden

    def _attention(self) -> int:
        if self.mla:
            return self.mla.params(self.hidden, self.heads)
        # Q and the output projection are hidden x (heads x head dim), K and V hidden x kv_dim
        return 2 * self.hidden * self.attention_dim + 2 * self.hidden * self.kv_dim

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
        h, kv_dim = self.hidden, self.kv_dim
        up = (2 if self.gated_mlp else 1) * self.ffn
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

    def stage_moe_layers(self, stage: int, pp: int = 1, split: str | None = None) -> int:
        """MoE blocks on pipeline ``stage`` (the first ``dense_layers`` blocks are dense)."""
        if not self.is_moe:
            return 0
        counts = self.stage_layers(pp, split)
        first = sum(counts[:stage])
        return max(0, first + counts[stage] - max(first, self.dense_layers))

    def stage_param_parts(self, stage: int, pp: int = 1, tp: int = 1, vocab_parallel: bool = True,
                          ep: int = 1, etp: int = 1, split: str | None = None) -> tuple[int, int]:
        """``(non-expert, expert)`` parameters one rank of pipeline ``stage`` holds: the
        non-expert ones split by attention TP ``tp``; each MoE layer's routed experts
        spread over ``ep`` ranks and split by expert TP ``etp`` (notebook 12)."""
        for name, value in (("pp", pp), ("tp", tp), ("ep", ep), ("etp", etp)):
            positive_int(name, value, f"pass a whole number >= 1 for {name}.")
        if not 0 <= stage < pp:
            raise ValueError(f"stage must be in 0..{pp - 1}, got {stage}.")
        if self.is_moe and (self.experts % ep or self.expert_ffn % etp):
            # Each of the EP ranks holds experts / ep whole experts, each split by columns
            # over ETP ranks: a remainder would be a rank holding part of an expert.
            raise ValueError(f"ep={ep} must divide the {self.experts} experts and etp={etp} "
                             f"the expert FFN ({self.expert_ffn}); pick divisors of both.")
        counts = self.stage_layers(pp, split)
        moe = self.stage_moe_layers(stage, pp, split)
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
        return 6.0 * self.num_params() + 6.0 * self.layers * self.seq_len * self.attention_dim
