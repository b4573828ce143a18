"""FSDP's units: one unit's all-gather, free and reduce-scatter, and the hooks that
mark its backward. :class:`companion.data_parallel.fsdp.FSDP` (``wrapper.py``) drives them.

Taught in notebook 03 (``notebooks/03_zero_memory.ipynb``, section 5b; its prefetch in
notebook 10). The package docstring (:mod:`companion.data_parallel.fsdp`) has the schedule per unit.
"""
from __future__ import annotations

import time

import torch
import torch.nn as nn

from ..zero import pack_chunks

__all__ = ["default_units"]


def default_units(module: nn.Module) -> list[tuple[str, nn.Module]]:
    """(name, submodule) of the FSDP units: ModuleList elements, or a Sequential's layers."""
    units = [(f"{name}.{i}" if name else str(i), child)
             for name, sub in module.named_modules() if isinstance(sub, nn.ModuleList)
             for i, child in enumerate(sub)]
    if not units and isinstance(module, nn.Sequential):
        units = [(name, child) for name, child in module.named_children()
                 if any(True for _ in child.parameters())]
    return units


class _BackwardHook(torch.autograd.Function):
    """Identity in forward; its backward calls ``callback`` when the gradient passes.

    On a unit's output it fires just before the unit's backward (gather the weights
    again); on a unit's input, once the unit's backward is done (reduce-scatter)."""

    @staticmethod
    def forward(ctx, callback, x):
        ctx.callback = callback
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        ctx.callback()
        return None, grad


class _Unit:
    def __init__(self, name, module, slots, fsdp):
        self.name, self.module, self.fsdp = name, module, fsdp
        self.slots = slots              # [(owner module, attribute, index into fsdp.full)]
        self.indices = sorted({i for *_, i in slots})
        self.trainable = [i for i in self.indices if fsdp.full[i].requires_grad]
        self.grads_ready = []           # indices whose gradient autograd has produced
        self.gathered, self.in_flight = False, None

    def start_gather(self, phase):
        """Issue this unit's all-gather (asynchronously); :meth:`finish_gather` uses it."""
        fsdp = self.fsdp
        if self.gathered or self.in_flight is not None or not self.indices:
            return
        t0, by_dtype, issued = time.perf_counter(), {}, []
        for i in self.indices:
            by_dtype.setdefault(fsdp.full[i].dtype, []).append(i)
        for dtype, indices in by_dtype.items():
            # One all-gather per unit (per dtype): every rank sends its chunks side by side
            # and receives [N, C], as FSDP's flat parameters do. No arithmetic is involved,
            # so this is bit-identical to one all-gather per parameter, with fewer calls.
            local = torch.cat([fsdp.shards[i].detach().to(dtype) for i in indices])
            out = torch.empty(local.numel() * fsdp.world_size, dtype=dtype, device=local.device)
            handle = fsdp.comm.all_gather(out, local, tag=f"{self.name} {phase}")
            fsdp.ledger.record("all_gather", out.numel() * out.element_size())
            issued.append((indices, out, handle))
        self.in_flight = (phase, t0, issued)

    def gather(self, phase):
        """Make the full parameters available: wait for the all-gather (issue it if no
        prefetch did) and copy the result into the unit's full tensors."""
        fsdp = self.fsdp
        if self.gathered:
            return
        self.start_gather(phase)
        if self.in_flight is not None:
            phase, t0, issued = self.in_flight
            for indices, out, handle in issued:
                handle.wait()
                rows, offset = out.view(fsdp.world_size, -1), 0
                for i in indices:
                    full, c = fsdp.full[i], fsdp.shards[i].numel()
                    flat = rows[:, offset:offset + c].reshape(-1)[:full.numel()]
                    offset += c
                    full.untyped_storage().resize_(full.numel() * full.element_size())
                    with torch.no_grad():  # .data: refilling storage must not bump the version
                        full.data.copy_(flat.view_as(full))
            self.in_flight = None
            fsdp._event("all-gather", self.name, phase, t0)
        for owner, attr, i in self.slots:
            setattr(owner, attr, fsdp.full[i])
        self.gathered = True

    def free(self, phase):
        if self.in_flight is not None:
            self.gather(phase)  # a prefetch nobody used: finish it, then let it go
        if not self.gathered:
            return
        t0 = time.perf_counter()
        for i in self.indices:
            self.fsdp.full[i].untyped_storage().resize_(0)
        self.gathered = False
        if self.indices:
            self.fsdp._event("free", self.name, phase, t0)

    def reduce_scatter(self):
        """One reduce-scatter of the gradients produced so far (all of them, normally)."""
        fsdp, indices = self.fsdp, sorted(self.grads_ready)
        self.grads_ready = []
        if not indices:
            return
        t0 = time.perf_counter()
        grads = [fsdp.full[i].grad for i in indices]
        packed = pack_chunks(grads, fsdp.world_size).reshape(-1)  # [N, C]: row r to rank r
        out = torch.empty(packed.numel() // fsdp.world_size, dtype=packed.dtype,
                          device=packed.device)
        handle = fsdp.comm.reduce_scatter(out, packed, tag=f"{self.name} backward")
        fsdp.ledger.record("reduce_scatter", packed.numel() * packed.element_size())
        fsdp._pending.append((indices, handle, out, packed))
        for i in indices:
            fsdp.full[i].grad = None  # only the shard of the gradient survives
        fsdp._event("reduce-scatter", self.name, "backward", t0)
