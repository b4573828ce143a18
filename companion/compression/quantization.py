"""Gradient quantisation: 1-bit SGD, threshold quantisation and TernGrad.

Taught in notebook 07 (``notebooks/07_gradient_compression.ipynb``), L20 p.57-60.

* **1-bit SGD** (Seide et al. 2014): send one sign bit per entry plus, per column, two
  reconstruction values (the mean of the column's non-negative entries and the mean of
  its negative ones); the quantisation error is fed back into the next step.
* **Threshold quantisation** (Strom 2015): send only entries with ``|x| > tau``, each as
  one 32-bit word (31-bit index and a sign bit) reconstructed as ``+-tau``; error
  feedback keeps the rest. ``tau`` must be picked by hand.
* **TernGrad** (Wen et al. 2017): ``s * sign(g) * b`` with ``s = max|g|`` and
  ``b ~ Bernoulli(|g| / s)``: 2 bits per entry plus one scale, unbiased
  (``E[q] = g``), so no error feedback.

Each codec has ``encode(x) -> payload`` and ``decode(payload, like)``;
:class:`QuantizedExchange` adds error feedback and the all-gather.
"""
from __future__ import annotations

import torch

from .wire import all_gather_payloads, pack_bits, payload_bytes, unpack_bits
from ..validation import fraction, positive_number

__all__ = ["OneBit", "Threshold", "TernGrad", "TopKNoFeedback", "QuantizedExchange"]


def _columns(x: torch.Tensor) -> torch.Tensor:
    """A weight ``[out, in, ...]`` as a matrix whose columns are scaled separately."""
    return x.reshape(x.shape[0], -1) if x.dim() >= 2 else x.reshape(-1, 1)


class OneBit:
    """1-bit SGD codec: sign bits + per-column means of the two signs."""

    error_feedback = True
    fixed_size = True

    def encode(self, x: torch.Tensor) -> dict:
        m = _columns(x)
        positive = m >= 0
        n_pos = positive.sum(0)
        n_neg = m.shape[0] - n_pos
        pos_sum = torch.where(positive, m, 0).sum(0)
        neg_sum = m.sum(0) - pos_sum
        return {"signs": pack_bits(positive, 1),
                "pos": pos_sum / n_pos.clamp(min=1), "neg": neg_sum / n_neg.clamp(min=1)}

    def decode(self, payload: dict, like: torch.Tensor) -> torch.Tensor:
        rows, cols = _columns(like).shape
        positive = unpack_bits(payload["signs"], 1, rows * cols).view(rows, cols).bool()
        return torch.where(positive, payload["pos"], payload["neg"]).view_as(like)


class Threshold:
    """Strom's threshold quantisation with threshold ``tau``."""

    error_feedback = True
    fixed_size = False  # how many entries pass the threshold differs by rank and step

    def __init__(self, tau: float):
        positive_number("tau", tau, "pass the threshold, e.g. tau=0.01.")
        self.tau = tau

    def encode(self, x: torch.Tensor) -> dict:
        flat = x.reshape(-1)
        if flat.numel() >= 2**31:
            raise ValueError("Strom's 32-bit word holds a 31-bit index; split the tensor.")
        idx = (flat.abs() > self.tau).nonzero().squeeze(1)
        words = idx * 2 + (flat[idx] < 0)  # the low bit is the sign
        return {"words": words.to(torch.int32)}

    def decode(self, payload: dict, like: torch.Tensor) -> torch.Tensor:
        words = payload["words"].long()
        out = torch.zeros(like.numel(), dtype=like.dtype, device=like.device)
        out[words >> 1] = self.tau * (1 - 2 * (words & 1)).to(like.dtype)
        return out.view_as(like)


class TernGrad:
    """TernGrad codec: stochastic ternary levels ``{-s, 0, +s}``, 2 bits each."""

    error_feedback = False
    fixed_size = True

    def __init__(self, generator: torch.Generator | None = None):
        self.generator = generator

    def encode(self, x: torch.Tensor) -> dict:
        flat = x.reshape(-1)
        scale = flat.abs().max()
        if scale == 0:
            return {"codes": pack_bits(torch.ones_like(flat, dtype=torch.uint8), 2),
                    "scale": scale.reshape(1)}
        # Drawn from the CPU generator on the CPU, so the codes are the same on every device.
        draw = torch.rand(flat.shape, generator=self.generator, device="cpu").to(flat.device)
        keep = draw < flat.abs() / scale
        ternary = torch.sign(flat) * keep  # in {-1, 0, 1}
        return {"codes": pack_bits(ternary + 1, 2), "scale": scale.reshape(1)}

    def decode(self, payload: dict, like: torch.Tensor) -> torch.Tensor:
        ternary = unpack_bits(payload["codes"], 2, like.numel()) - 1
        return (ternary.to(like.dtype) * payload["scale"]).view_as(like)


class TopKNoFeedback:
    """Top-k that simply drops the rest (no accumulation): the strawman of L20 p.26."""

    error_feedback = False
    fixed_size = True

    def __init__(self, density: float):
        from .sparse import decode_topk, encode_topk
        fraction("density", density, "99.9% sparsity is density=0.001.")
        self.density, self._encode, self._decode = density, encode_topk, decode_topk

    def encode(self, x):
        return self._encode(x, self.density)

    def decode(self, payload, like):
        return self._decode(payload, like)


class QuantizedExchange:
    """Codec + error feedback + all-gather: local gradients in, averaged gradient out.

    Error feedback keeps ``e = x - decode(encode(x))`` with ``x = g + e_prev``, so over
    any number of steps ``sum(sent) + e = sum(g)``: no gradient mass is ever lost.
    The optimizer applies momentum after aggregation (``applies_momentum`` is False).
    """

    applies_momentum = False

    def __init__(self, params_like: list[torch.Tensor], codec, error_feedback: bool | None = None):
        self.codec = codec
        self.error_feedback = codec.error_feedback if error_feedback is None else error_feedback
        self.errors = [torch.zeros_like(p) for p in params_like]
        self.last_bytes = 0
        self.last_density_after_sum = 0.0

    def lr_scale(self, step: int) -> float:
        return 1.0

    @property
    def equal_sizes(self) -> bool:
        return self.codec.fixed_size

    def encode(self, grads: list[torch.Tensor], step: int = 0) -> list[dict]:
        payloads = []
        for g, e in zip(grads, self.errors):
            x = g + e if self.error_feedback else g
            p = self.codec.encode(x)
            if self.error_feedback:
                e.copy_(x - self.codec.decode(p, x))
            payloads.append(p)
        return payloads

    def exchange(self, grads: list[torch.Tensor], step: int) -> list[torch.Tensor]:
        payloads = self.encode(grads, step)
        self.last_bytes = payload_bytes(payloads)
        return self.combine(all_gather_payloads(payloads, equal_sizes=self.equal_sizes), grads)

    def combine(self, gathered: list[list[dict]], grads: list[torch.Tensor]) -> list[torch.Tensor]:
        """Every rank's payloads (rank order) -> the averaged update."""
        out = [torch.zeros_like(g) for g in grads]
        for rank_payloads in gathered:
            for o, p in zip(out, rank_payloads):
                o += self.codec.decode(p, o)
        self.last_density_after_sum = (sum(int((o != 0).sum()) for o in out)
                                       / sum(o.numel() for o in out))
        return [o / len(gathered) for o in out]
