"""Small models for the experiments. They know nothing about parallelism.

Used from notebook 02 on (data parallelism trains ``TinyMLP`` on digits; the pipeline,
tensor- and sequence-parallel notebooks split ``TinyTransformer``). Parallel code wraps
or slices these modules from the outside, the way torchtitan's ``parallelize`` step
does, so the single-process model is always the reference.

Both are deterministic given ``seed`` and have no dropout, so a parallel run can be
compared with the single-process one exactly.
"""
from __future__ import annotations

import contextlib
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .validation import positive_int

__all__ = ["seeded", "TinyMLP", "TinyTransformer", "Block", "CausalSelfAttention", "MLP",
           "count_parameters"]


@contextlib.contextmanager
def seeded(seed: int):
    """Draw from the CPU generator seeded with ``seed``, then put its old state back, so
    building a model never moves anyone else's random stream.

    Only the CPU generator: models are built on the CPU, and forking the CUDA generators
    too (``fork_rng``'s default) initialises CUDA in every process that builds a model,
    gloo ranks and the notebook included, and fails outright where CUDA cannot start.
    Every model of the package, and every reference a parallel run is compared with, is
    built under it.
    """
    with torch.random.fork_rng(devices=[]):
        torch.random.default_generator.manual_seed(seed)
        yield


def count_parameters(model: nn.Module) -> int:
    """Distinct parameters (a tied weight counts once)."""
    return sum(p.numel() for p in model.parameters())


class TinyMLP(nn.Sequential):
    """``depth`` hidden layers of ``Linear -> ReLU``, then a linear classifier.

    An ``nn.Sequential``, so a pipeline can cut it into stages by slicing.
    Defaults fit scikit-learn's 8x8 digits (64 inputs, 10 classes).
    """

    def __init__(self, in_features: int = 64, hidden: int = 128, out_features: int = 10,
                 depth: int = 2, seed: int = 0):
        for name, value in (("in_features", in_features), ("hidden", hidden),
                            ("out_features", out_features), ("depth", depth)):
            positive_int(name, value, f"TinyMLP sizes and depth must all be >= 1, e.g. {name}=2.")
        with seeded(seed):
            layers: list[nn.Module] = []
            width = in_features
            for _ in range(depth):
                layers += [nn.Linear(width, hidden), nn.ReLU()]
                width = hidden
            layers.append(nn.Linear(width, out_features))
            super().__init__(*layers)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a fused QKV projection (GPT-2 layout)."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}.")
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.qkv(x).split(self.n_heads * self.head_dim, dim=-1)
        q, k, v = (t.view(b, s, -1, self.head_dim).transpose(1, 2) for t in (q, k, v))
        y = attention(q, k, v, causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, s, -1))


def attention(q, k, v, causal: bool = True) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v written out, so parallel versions can be checked
    against the textbook formula rather than a fused kernel."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        s_q, s_k = scores.shape[-2:]
        mask = torch.ones(s_q, s_k, dtype=torch.bool, device=q.device).tril(s_k - s_q)
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1) @ v


class MLP(nn.Module):
    """The transformer's feed-forward block: fc1 -> GELU -> fc2 (Megatron splits fc1 by
    columns and fc2 by rows)."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        positive_int("d_model", d_model, "pass the model width, e.g. d_model=16.")
        positive_int("d_ff", d_ff, "pass the feed-forward width, e.g. d_ff=64.")
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model, d_ff)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyTransformer(nn.Module):
    """A GPT-style decoder: token + position embeddings, ``n_layers`` blocks, LM head.

    ``tie_weights=True`` shares the embedding and output matrices (a tied parameter,
    which data-parallel wrappers must count once).
    """

    def __init__(self, vocab_size: int = 64, d_model: int = 64, n_heads: int = 4,
                 n_layers: int = 2, max_seq_len: int = 64, d_ff: int | None = None,
                 tie_weights: bool = True, seed: int = 0):
        super().__init__()
        if min(vocab_size, d_model, n_heads, n_layers, max_seq_len) < 1:
            raise ValueError("TinyTransformer sizes must all be >= 1.")
        d_ff = d_ff or 4 * d_model
        with seeded(seed):
            self.tok_emb = nn.Embedding(vocab_size, d_model)
            self.pos_emb = nn.Embedding(max_seq_len, d_model)
            self.blocks = nn.ModuleList(Block(d_model, n_heads, d_ff) for _ in range(n_layers))
            self.ln_f = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, vocab_size, bias=False)
            if tie_weights:
                self.head.weight = self.tok_emb.weight
        self.max_seq_len = max_seq_len

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Token ids ``[batch, seq]`` -> logits ``[batch, seq, vocab]``."""
        seq = idx.shape[1]
        if seq > self.max_seq_len:
            raise ValueError(f"sequence length {seq} exceeds max_seq_len={self.max_seq_len}.")
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(seq, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))
