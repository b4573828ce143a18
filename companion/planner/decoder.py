"""A decoder-only transformer at a :class:`~companion.planner.specs.ModelSpec`'s real shape.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``, "Will it fit?"): the
planner's memory model is checked against torch running this module at the published
size, built under ``FakeTensorMode`` so no byte is allocated
(:mod:`companion.planner.torch_memory`). It is the package's transformer grown to what
Llama and GPT-3 are: grouped-query attention (``kv_heads``), a SwiGLU or GELU MLP,
RMSNorm or LayerNorm, biases or none, tied or separate embedding and output matrices.

Like every model of the package it knows nothing about parallelism: tensor parallelism,
FSDP and pipeline stages are applied from outside, as torchtitan does. Attention is
torch's fused ``scaled_dot_product_attention`` (it keeps the log-sum-exp, not the
s x s scores, for backward), as real runs use; ``recompute="selective"`` recomputes it
in backward too (Korthikanti et al. 2022's selective recomputation keeps the inputs of
the attention core only), ``"full"`` recomputes each block from its input.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from .specs import ModelSpec

__all__ = ["Decoder", "RECOMPUTE"]

RECOMPUTE = ("none", "selective", "full")


def _norm(spec: ModelSpec) -> nn.Module:
    return nn.LayerNorm(spec.hidden) if spec.layernorm else RMSNorm(spec.hidden)


class _RMSNormFunction(torch.autograd.Function):
    """RMSNorm that saves its input and the reciprocal RMS only, as the fused GPU kernels
    do (torch's CUDA kernel, Apex's and Megatron's). torch's CPU path decomposes the norm
    and keeps two fp32 copies of the input as well, which no GPU run holds."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))
        rstd = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        return (x32 * rstd).to(x.dtype) * weight

    @staticmethod
    def backward(ctx, grad):
        x, weight, rstd = ctx.saved_tensors
        xhat = x.to(rstd.dtype) * rstd
        g = grad.to(rstd.dtype) * weight.to(rstd.dtype)
        grad_x = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
        grad_w = (grad.to(rstd.dtype) * xhat).reshape(-1, x.shape[-1]).sum(0)
        return grad_x.to(x.dtype), grad_w.to(weight.dtype), None


class RMSNorm(nn.Module):
    """``x / rms(x) * weight`` (Zhang and Sennrich 2019), Llama's norm."""

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim={dim!r}: pass the width to normalise, e.g. 4096.")
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _RMSNormFunction.apply(x, self.weight, self.eps)


class Attention(nn.Module):
    """Q, K, V and output projections; K and V have ``kv_heads`` heads (GQA)."""

    def __init__(self, spec: ModelSpec, recompute: str):
        super().__init__()
        h, self.heads = spec.hidden, spec.heads
        self.head_dim = spec.head_width
        kv, width = spec.kv_dim, spec.attention_dim   # width: hidden unless head_dim is set
        bias = spec.biases
        self.q = nn.Linear(h, width, bias=bias)
        self.k = nn.Linear(h, kv, bias=bias)
        self.v = nn.Linear(h, kv, bias=bias)
        self.o = nn.Linear(width, h, bias=bias)
        self.recompute = recompute

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        # -1 heads: under tensor parallelism each rank holds a slice of the heads
        q, k, v = (t.view(b, s, -1, self.head_dim).transpose(1, 2)
                   for t in (self.q(x), self.k(x), self.v(x)))
        if self.recompute == "selective":
            y = checkpoint(_core, q, k, v, use_reentrant=False)
        else:
            y = _core(q, k, v)
        return self.o(y.transpose(1, 2).reshape(b, s, -1))


def _core(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                          enable_gqa=q.shape[1] != k.shape[1])


class FeedForward(nn.Module):
    """SwiGLU (``w2(silu(w1 x) * w3 x)``) when the spec is gated, else ``w2(gelu(w1 x))``."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        h, f, bias = spec.hidden, spec.ffn, spec.biases
        self.w1 = nn.Linear(h, f, bias=bias)
        self.w3 = nn.Linear(h, f, bias=bias) if spec.gated_mlp else None
        self.w2 = nn.Linear(f, h, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.w3 is None:
            return self.w2(F.gelu(self.w1(x)))
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderBlock(nn.Module):
    """Pre-norm block: ``x + attn(norm1(x))``, then ``x + mlp(norm2(x))``."""

    def __init__(self, spec: ModelSpec, recompute: str):
        super().__init__()
        self.norm1, self.attn = _norm(spec), Attention(spec, recompute)
        self.norm2, self.mlp = _norm(spec), FeedForward(spec)
        self.full = recompute == "full"

    def _forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.full:
            return checkpoint(self._forward, x, use_reentrant=False)
        return self._forward(x)


class Decoder(nn.Module):
    """``layers`` blocks of ``spec`` (all of them, or one pipeline stage's), with the
    token embedding when ``first`` and the final norm and output head when ``last``
    (``vocab`` entries, the spec's unless given).

    ``forward(ids or hidden states) -> logits (last stage) or hidden states``.
    """

    def __init__(self, spec: ModelSpec, layers: int | None = None, first: bool = True,
                 last: bool = True, recompute: str = "none", vocab: int | None = None):
        super().__init__()
        if recompute not in RECOMPUTE:
            raise ValueError(f"recompute={recompute!r}: use one of {RECOMPUTE}.")
        if spec.is_moe or spec.mla:
            raise ValueError(f"{spec.name}: the decoder builds dense GQA models only "
                             "(no experts, no MLA); pick a dense model.")
        layers = spec.layers if layers is None else layers
        vocab = vocab or spec.vocab   # padded, when TP splits it
        self.embed = nn.Embedding(vocab, spec.hidden) if first else None
        self.pos = (nn.Embedding(spec.seq_len, spec.hidden)
                    if first and spec.learned_positions else None)
        self.blocks = nn.ModuleList(DecoderBlock(spec, recompute) for _ in range(layers))
        self.norm = _norm(spec) if last else None
        self.head = nn.Linear(spec.hidden, vocab, bias=False) if last else None
        if first and last and spec.tied_embeddings:
            self.head.weight = self.embed.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.embed is not None:
            ids = x
            x = self.embed(ids)
            if self.pos is not None:
                x = x + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        if self.head is not None:
            x = self.head(self.norm(x))
        return x
