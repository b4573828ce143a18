"""What goes on the wire: payloads, their exact size, bit packing, and the exchange.

Taught in notebook 07 (``notebooks/07_gradient_compression.ipynb``).

A compressor turns one gradient tensor into a *payload*: a dict of 1-D tensors (indices,
values, packed sign bits, scales...). :func:`payload_bytes` counts those tensors' bytes,
so every compression ratio in the notebook is measured from what a rank actually
sends, indices and scales included, never assumed from the sparsity.

:func:`all_gather_payloads` exchanges payloads between ranks. Sparse payloads cannot be
summed by an all-reduce (each rank holds different positions), so each rank sends its
payload to everyone and every rank decodes and sums all of them: an all-gather. gloo's
all-gather needs equal sizes, so ranks first swap the lengths of their pieces and pad
to the longest; the padding and the lengths are transport bookkeeping, not payload.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .. import runtime

__all__ = ["payload_bytes", "pack_bits", "unpack_bits", "all_gather_payloads",
           "all_reduce_mean", "index_dtype"]


def payload_bytes(payloads) -> int:
    """Exact bytes of one payload dict, or of a list of them."""
    if isinstance(payloads, dict):
        payloads = [payloads]
    return sum(t.numel() * t.element_size() for p in payloads for t in p.values())


def index_dtype(numel: int) -> torch.dtype:
    """int32 indices: enough for any tensor below 2**31 elements (what we send)."""
    if numel >= 2**31:
        raise ValueError(f"a tensor of {numel} elements needs 64-bit indices; split it.")
    return torch.int32


def pack_bits(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack integer codes in ``[0, 2**bits)`` into bytes, ``8 // bits`` codes per byte."""
    if bits not in (1, 2, 4, 8):
        raise ValueError(f"bits must be 1, 2, 4 or 8, got {bits}.")
    per_byte = 8 // bits
    flat = codes.reshape(-1).to(torch.uint8)
    flat = torch.nn.functional.pad(flat, (0, (-flat.numel()) % per_byte))
    shifts = torch.arange(per_byte, dtype=torch.uint8, device=flat.device) * bits
    # Disjoint bit fields, so the sum is a bitwise OR.
    return (flat.view(-1, per_byte) << shifts).sum(1).to(torch.uint8)


def unpack_bits(packed: torch.Tensor, bits: int, numel: int) -> torch.Tensor:
    """Inverse of :func:`pack_bits`: the first ``numel`` codes as int64."""
    per_byte = 8 // bits
    shifts = torch.arange(per_byte, dtype=torch.uint8, device=packed.device) * bits
    codes = (packed.view(-1, 1) >> shifts) & ((1 << bits) - 1)
    return codes.reshape(-1)[:numel].long()


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().reshape(-1).view(torch.uint8)


def all_gather_payloads(payloads: list[dict], equal_sizes: bool = False) -> list[list[dict]]:
    """Every rank's list of payloads, in rank order.

    All ranks must pass payloads with the same keys and dtypes in the same order.
    Piece lengths may differ between ranks (threshold quantisation's do): then a first
    all-gather swaps the lengths. ``equal_sizes=True`` (top-k, 1-bit, TernGrad: sizes
    follow from the shapes) skips it, leaving one all-gather per step.
    """
    world = dist.get_world_size() if dist.is_initialized() else 1
    if world == 1:
        return [payloads]
    pieces = [(i, key, t) for i, p in enumerate(payloads) for key, t in p.items()]
    # Byte counts are bookkeeping read back on the host (tolist), and gloo serves CPU
    # tensors beside NCCL in the same group: they stay on the CPU.
    lengths = torch.tensor([t.numel() * t.element_size() for _, _, t in pieces],
                           dtype=torch.int64, device="cpu")
    if equal_sizes:
        all_lengths = [lengths] * world
    else:
        all_lengths = [torch.empty_like(lengths) for _ in range(world)]
        dist.all_gather(all_lengths, lengths)
    totals = [int(n.sum()) for n in all_lengths]
    longest = max(totals)
    buffer = torch.zeros(longest, dtype=torch.uint8, device=runtime.device())
    if pieces:
        local = torch.cat([_as_bytes(t) for _, _, t in pieces])
        buffer[:local.numel()] = local
    gathered = [torch.empty_like(buffer) for _ in range(world)]
    dist.all_gather(gathered, buffer)
    out = []
    for r in range(world):
        rank_payloads = [dict() for _ in payloads]
        offset = 0
        for (i, key, t), n in zip(pieces, all_lengths[r].tolist()):
            # clone() so the dtype view starts at an aligned address.
            rank_payloads[i][key] = gathered[r][offset:offset + n].clone().view(t.dtype)
            offset += n
        out.append(rank_payloads)
    return out


def all_reduce_mean(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Dense baseline: one all-reduce of the concatenation, divided by the world size."""
    world = dist.get_world_size() if dist.is_initialized() else 1
    if world == 1 or not tensors:
        return [t.clone() for t in tensors]
    flat = torch.cat([t.reshape(-1) for t in tensors])
    dist.all_reduce(flat)
    flat /= world
    return [chunk.view_as(t) for chunk, t in zip(flat.split([t.numel() for t in tensors]), tensors)]
