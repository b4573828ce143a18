"""Gradient sparsification: top-k with local accumulation, and Deep Gradient Compression.

Taught in notebook 07 (``notebooks/07_gradient_compression.ipynb``), following MIT
6.5940 L20 p.26-52.

* **Gradient dropping** (Aji & Heafield 2017): each rank adds its gradient to a local
  accumulator ``v``, sends only the ``k`` largest entries of ``v`` (indices + values) and
  keeps the rest for later; momentum is applied *after* aggregation.
* **Deep Gradient Compression** (Lin et al., ICLR 2018) adds, each switchable so the
  ablation of L20 p.47 can be run:

  - *momentum correction*: accumulate the velocity ``u = m u + g`` instead of ``g``, so
    that with nothing dropped the update is exactly momentum SGD;
  - *local gradient clipping*: clip each rank's gradient norm at ``clip_norm / sqrt(N)``
    before it enters the accumulator (N ranks' clipped gradients add up to about
    ``clip_norm``);
  - *momentum factor masking*: zero ``u`` where an entry was just sent, so a stale
    velocity does not keep pushing a weight that has already moved;
  - *warm-up*: the learning rate ramps up and the density falls exponentially,
    25% -> 6.25% -> 1.5625% -> 0.39% -> final (75% ... 99.9% sparsity);
  - *sampled threshold*: for large tensors, estimate the top-k threshold from a random
    sample instead of sorting everything.

Tensors with fewer than two dimensions (biases) are sent dense, as in DGC.
"""
from __future__ import annotations

import dataclasses
import math

import torch

from .wire import all_gather_payloads, index_dtype, payload_bytes
from ..validation import fraction

__all__ = ["momentum_correction", "clip_locally", "dgc_accumulate", "topk_indices", "encode_topk", "decode_topk", "density_schedule", "lr_warmup",
           "DGCConfig", "DGC", "ABLATION"]


def momentum_correction(u: torch.Tensor, v: torch.Tensor, g: torch.Tensor, momentum: float):
    """DGC's accumulation (L20 p.41-43): velocity ``u = m u + g``, then ``v = v + u``.

    Returns the new ``(u, v)``. ``v`` is what gets sparsified. One tensor; DGC calls it
    for every tensor through :func:`dgc_accumulate`.
    """
    u = momentum * u + g
    return u, v + u


def clip_locally(grads: list[torch.Tensor], clip_norm: float | None,
                 world_size: int) -> list[torch.Tensor]:
    """DGC's local gradient clipping (L20 p.44): scale this rank's gradients so that
    their joint L2 norm is at most ``clip_norm / sqrt(world_size)``.

    Local: each rank uses its own norm, with no communication. ``N`` ranks' clipped
    gradients then add up to a norm of about ``clip_norm``. ``None`` clips nothing.
    """
    if clip_norm is None:
        return list(grads)
    limit = clip_norm / math.sqrt(world_size)
    norm = torch.sqrt(sum((g.float() ** 2).sum() for g in grads))
    scale = min(1.0, limit / (float(norm) + 1e-12))  # 1e-12: a zero gradient stays zero
    return [g * scale for g in grads]


def dgc_accumulate(u: list[torch.Tensor], v: list[torch.Tensor], grads: list[torch.Tensor],
                   momentum: float, clip_norm: float | None, world_size: int):
    """One rank's DGC accumulation over all its tensors: clip locally, then momentum
    correction per tensor. Returns the new lists ``(u, v)``.

    :class:`DGC` calls this (or the ``accumulate`` it is given: notebook 07's core
    exercise) before selecting the top-k of each ``v``.
    """
    pairs = [momentum_correction(ui, vi, g, momentum)
             for ui, vi, g in zip(u, v, clip_locally(grads, clip_norm, world_size))]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def topk_indices(x: torch.Tensor, k: int, sample_above: int | None = None,
                 sample_fraction: float = 0.01, generator: torch.Generator | None = None):
    """Indices of the ``k`` largest ``|x|`` (``x`` flat).

    Above ``sample_above`` elements, DGC's trick: the threshold is estimated on a random
    sample; if at least ``k`` entries pass it, the k largest all pass it, so a top-k
    among the (few) survivors is the exact answer; otherwise fall back to a full top-k.
    """
    magnitude = x.abs()
    n = magnitude.numel()
    if not 0 < k <= n:
        raise ValueError(f"k must be in 1..{n}, got {k}.")
    if sample_above is not None and n > sample_above:
        size = max(int(n * sample_fraction), 1)
        # Drawn on the CPU, where DGC's generators live, so the sample is the same on
        # every device.
        pick = torch.randint(n, (size,), generator=generator, device="cpu")
        sample = magnitude[pick.to(magnitude.device)]
        # Aim a little low (twice the density) so the sample's threshold rarely lets
        # fewer than k entries through and we rarely need the full fall-back.
        k_sample = min(size, max(1, math.ceil(2 * size * k / n)))
        threshold = sample.topk(k_sample, sorted=False).values.min()
        candidates = (magnitude >= threshold).nonzero().squeeze(1)
        if candidates.numel() >= k:
            chosen = magnitude[candidates].topk(k, sorted=False).indices
            return candidates[chosen]
    return magnitude.topk(k, sorted=False).indices


def encode_topk(x: torch.Tensor, density: float, **kwargs) -> dict:
    """Payload ``{indices: int32[k], values: float32[k]}``, ``k = ceil(density * numel)``."""
    flat = x.reshape(-1)
    k = max(1, math.ceil(density * flat.numel()))
    idx = topk_indices(flat, k, **kwargs)
    return {"indices": idx.to(index_dtype(flat.numel())), "values": flat[idx]}


def decode_topk(payload: dict, like: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(like.numel(), dtype=like.dtype, device=like.device)
    out.index_add_(0, payload["indices"].long(), payload["values"])
    return out.view_as(like)


def density_schedule(step: int, final_density: float, warmup_steps: int, stages: int = 4) -> float:
    """DGC's exponential sparsity warm-up: density 1/4, 1/16, ... per stage, then final."""
    fraction("final_density", final_density, "99.9% sparsity is final_density=0.001.")
    if warmup_steps <= 0 or step >= warmup_steps:
        return final_density
    stage = step * stages // warmup_steps
    return max(final_density, 0.25 ** (stage + 1))


def lr_warmup(step: int, warmup_steps: int) -> float:
    """Linear learning-rate warm-up factor in (0, 1]."""
    if warmup_steps <= 0 or step >= warmup_steps:
        return 1.0
    return (step + 1) / warmup_steps


@dataclasses.dataclass
class DGCConfig:
    """One row of the ablation. ``momentum_correction=False`` is gradient dropping."""

    density: float = 0.001
    momentum: float = 0.9
    momentum_correction: bool = True
    clip_norm: float | None = None
    factor_masking: bool = True
    warmup_steps: int = 0
    sample_above: int | None = 100_000
    sample_fraction: float = 0.01

    def __post_init__(self):
        if not 0 < self.density <= 1:
            raise ValueError(f"density must be in (0, 1], got {self.density}; "
                             "99.9% sparsity is density=0.001.")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum}.")
        if self.clip_norm is not None and self.clip_norm <= 0:
            raise ValueError(f"clip_norm must be positive or None, got {self.clip_norm}.")


# L20 p.47, top to bottom: each row adds one technique to the one above.
ABLATION = {
    "gradient dropping": dict(momentum_correction=False, factor_masking=False),
    "+ momentum correction": dict(momentum_correction=True, factor_masking=False),
    "+ local clipping": dict(momentum_correction=True, factor_masking=False, clip=True),
    "+ factor masking": dict(momentum_correction=True, factor_masking=True, clip=True),
    "+ warm-up": dict(momentum_correction=True, factor_masking=True, clip=True, warmup=True),
}


class DGC:
    """One rank's DGC state; :meth:`exchange` turns local gradients into the update.

    With momentum correction the returned tensors are the averaged sparse velocity (use
    an optimizer *without* momentum: ``applies_momentum`` is True); without it they are
    the averaged sparse gradient and the optimizer applies momentum (gradient dropping).
    """

    def __init__(self, params_like: list[torch.Tensor], config: DGCConfig, seed: int = 0,
                 world_size: int = 1, rank: int = 0, accumulate=None):
        self.config, self.world_size = config, world_size
        # accumulate(u, v, grads, momentum, clip_norm, world_size) -> (u, v), lists of
        # tensors; notebook 07's core exercise swaps in the student's own.
        self.accumulate = accumulate or dgc_accumulate
        self.u = [torch.zeros_like(p) for p in params_like]  # velocity (momentum correction)
        self.v = [torch.zeros_like(p) for p in params_like]  # accumulated, not yet sent
        self.generator = torch.Generator().manual_seed(seed * 7919 + rank)
        self.applies_momentum = config.momentum_correction
        self.last_bytes = 0
        self.last_density_after_sum = 0.0

    def lr_scale(self, step: int) -> float:
        return lr_warmup(step, self.config.warmup_steps)

    def density(self, step: int) -> float:
        return density_schedule(step, self.config.density, self.config.warmup_steps)

    def encode(self, grads: list[torch.Tensor], step: int) -> list[dict]:
        """Local part: accumulate, select, clear what was sent. Returns the payloads."""
        c = self.config
        density = self.density(step)
        if c.momentum_correction:
            u, v = self.accumulate(self.u, self.v, list(grads), c.momentum, c.clip_norm,
                                   self.world_size)
            self.u, self.v = list(u), list(v)
            if len(self.v) != len(grads) or len(self.u) != len(grads):
                raise ValueError(f"accumulate returned {len(self.u)} velocities and "
                                 f"{len(self.v)} accumulators for {len(grads)} tensors")
        else:  # gradient dropping: accumulate the (clipped) gradient itself
            self.v = [v + g for v, g in
                      zip(self.v, clip_locally(grads, c.clip_norm, self.world_size))]
        payloads = []
        for u, v in zip(self.u, self.v):
            if v.dim() < 2:  # biases: sent dense, every step
                payloads.append({"values": v.reshape(-1).clone()})
                v.zero_()  # nothing is dropped, so no mask: plain momentum SGD
                continue
            p = encode_topk(v, density, sample_above=c.sample_above,
                            sample_fraction=c.sample_fraction, generator=self.generator)
            sent = p["indices"].long()
            v.view(-1)[sent] = 0
            if c.factor_masking:
                u.view(-1)[sent] = 0
            payloads.append(p)
        return payloads

    @staticmethod
    def decode(payload: dict, like: torch.Tensor) -> torch.Tensor:
        if "indices" not in payload:
            return payload["values"].view_as(like).clone()
        return decode_topk(payload, like)

    equal_sizes = True  # k follows from the step and the shapes, the same on every rank

    def exchange(self, grads: list[torch.Tensor], step: int) -> list[torch.Tensor]:
        """Encode, all-gather (indices, values) from every rank, decode and average."""
        payloads = self.encode(grads, step)
        self.last_bytes = payload_bytes(payloads)
        return self.combine(all_gather_payloads(payloads, equal_sizes=True), grads)

    def combine(self, gathered: list[list[dict]], grads: list[torch.Tensor]) -> list[torch.Tensor]:
        """Every rank's payloads (rank order) -> the averaged dense update."""
        out = [torch.zeros_like(g) for g in grads]
        for rank_payloads in gathered:
            for o, p in zip(out, rank_payloads):
                o += self.decode(p, o)
        nonzero = sum(int((o != 0).sum()) for o, g in zip(out, grads) if g.dim() >= 2)
        total = sum(g.numel() for g in grads if g.dim() >= 2)
        self.last_density_after_sum = nonzero / max(total, 1)
        return [o / len(gathered) for o in out]
