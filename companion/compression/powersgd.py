"""PowerSGD: low-rank gradient compression that all-reduces (Vogels et al. 2019).

Taught in notebook 07 (``notebooks/07_gradient_compression.ipynb``), L20 p.52-54.

Sparse gradients densify when summed (each rank keeps different positions); PowerSGD's
factors have the same shape on every rank, so they are summed by a plain all-reduce.
For each gradient matrix ``M`` (``n x m``, error feedback added) and the previous step's
``Q`` (``m x r``, the *warm start*):

    P = M Q            -> all-reduce (mean), then orthonormalise the columns
    Q = M^T P          -> all-reduce (mean)
    approximation = P Q^T,   error = M - approximation

One power-iteration step per training step; ``n r + m r`` numbers instead of ``n m``.
Vectors (biases) are all-reduced uncompressed, as in torch's ``powerSGD_hook``, which
the notebook runs on the same model for comparison.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
from ..validation import positive_int

__all__ = ["PowerSGD", "orthonormalize", "torch_powersgd_bytes"]


def orthonormalize(p: torch.Tensor) -> torch.Tensor:
    """Orthonormal columns spanning ``p`` (reduced QR; identical on every rank since
    every rank holds the same all-reduced ``p``)."""
    return torch.linalg.qr(p, mode="reduced").Q


def _mean_all_reduce(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    world = dist.get_world_size() if dist.is_initialized() else 1
    if world == 1 or not tensors:
        return tensors
    flat = torch.cat([t.reshape(-1) for t in tensors])
    dist.all_reduce(flat)
    flat /= world
    return [c.view_as(t) for c, t in zip(flat.split([t.numel() for t in tensors]), tensors)]


class PowerSGD:
    """One rank's PowerSGD state. ``exchange`` returns the averaged low-rank gradient.

    ``rank`` is the approximation rank ``r`` (capped at ``min(n, m)`` per matrix, where it
    is exact). Every rank draws the same initial ``Q`` from ``seed``. Momentum is applied
    by the optimizer after aggregation, as in the paper.
    """

    applies_momentum = False

    def __init__(self, params_like: list[torch.Tensor], rank: int = 2, error_feedback: bool = True,
                 warm_start: bool = True, seed: int = 0):
        if rank < 1:
            raise ValueError(f"PowerSGD rank must be >= 1, got {rank}.")
        self.rank, self.error_feedback, self.warm_start = rank, error_feedback, warm_start
        self.generator = torch.Generator().manual_seed(seed)
        self.errors = [torch.zeros_like(p) if p.dim() >= 2 else None for p in params_like]
        self.qs = [self._fresh_q(p) if p.dim() >= 2 else None for p in params_like]
        self.last_bytes = 0
        self.last_density_after_sum = 1.0

    def _fresh_q(self, p: torch.Tensor) -> torch.Tensor:
        n, m = p.shape[0], p[0].numel()
        # Drawn from the CPU generator on the CPU: every rank, on any device, starts from
        # the same Q.
        q = torch.randn(m, min(self.rank, n, m), generator=self.generator, device="cpu")
        return q.to(p.device)

    def lr_scale(self, step: int) -> float:
        return 1.0

    def exchange(self, grads: list[torch.Tensor], step: int) -> list[torch.Tensor]:
        matrices = [i for i, g in enumerate(grads) if g.dim() >= 2]
        vectors = [i for i, g in enumerate(grads) if g.dim() < 2]
        out: list[torch.Tensor | None] = [None] * len(grads)
        for i, v in zip(vectors, _mean_all_reduce([grads[i].clone() for i in vectors])):
            out[i] = v
        ms = {}
        for i in matrices:
            m = grads[i].reshape(grads[i].shape[0], -1)
            if self.error_feedback:
                m = m + self.errors[i].view_as(m)
            ms[i] = m
            if not self.warm_start:
                self.qs[i] = self._fresh_q(grads[i])
        ps = _mean_all_reduce([ms[i] @ self.qs[i] for i in matrices])
        ps = [orthonormalize(p) for p in ps]
        qs = _mean_all_reduce([ms[i].T @ p for i, p in zip(matrices, ps)])
        for i, p, q in zip(matrices, ps, qs):
            approx = p @ q.T
            if self.error_feedback:
                self.errors[i].copy_((ms[i] - approx).view_as(grads[i]))
            self.qs[i] = q
            out[i] = approx.view_as(grads[i])
        self.last_bytes = 4 * (sum(grads[i].numel() for i in vectors)
                               + sum(p.numel() for p in ps) + sum(q.numel() for q in qs))
        return out


def torch_powersgd_bytes(shapes: list[tuple], rank: int, min_compression_rate: float = 0.0) -> int:
    """Bytes per step of torch's ``powerSGD_hook`` for these gradient shapes (fp32): a
    matrix it compresses costs ``(n + m) r``, anything else ``n m`` numbers."""
    positive_int("rank", rank, "pass the low-rank size, e.g. rank=2.")
    total = 0
    for shape in shapes:
        numel = int(torch.tensor(shape).prod()) if shape else 1
        if len(shape) < 2:
            total += numel
            continue
        n, m = shape[0], numel // shape[0]
        r = min(rank, n, m)
        compressed = (n + m) * r
        total += compressed if numel > compressed * min_compression_rate else numel
    return 4 * total
