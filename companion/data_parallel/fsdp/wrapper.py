"""The FSDP wrapper: shards the parameters, builds the units (:mod:`.units`) and runs
them from forward and backward hooks, with or without prefetch.

Taught in notebook 03 (``notebooks/03_zero_memory.ipynb``) and notebook 10 (prefetch
measured); the package docstring (:mod:`companion.data_parallel.fsdp`) describes the schedule,
``compute_dtype``, ``prefetch`` and ``link``. Compared in tests with torch's FSDP2.
"""
from __future__ import annotations

import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from ...collectives.log import CommLog
from ..comm import Collectives
from ..zero import chunk_size
from .units import _BackwardHook, _Unit, default_units

__all__ = ["FSDP"]


class FSDP(nn.Module):
    """Fully sharded data parallelism for ``module`` (a minimal ZeRO-3).

    ``fsdp(x)`` runs the model; ``fsdp.parameters()`` are this rank's shards (in the
    parameters' own dtype, fp32 master weights when ``compute_dtype`` is lower), which
    any torch optimizer can step; ``finish_gradient_synchronization()`` waits for the
    gradient reduce-scatters (also done automatically at the end of backward);
    ``gather_full_params()`` returns ``{name: full tensor}`` with the wrapped module's own
    parameter names (a collective: every rank must call it). ``timeline`` records
    (event, unit, phase, start s, end s) for the notebook's plot; an all-gather's span
    runs from its issue to its data in place. ``prefetch`` and ``link``: module docstring.
    """

    def __init__(self, module: nn.Module, compute_dtype: torch.dtype | None = None,
                 units=None, prefetch: bool = False, link=None):
        super().__init__()
        if not isinstance(module, nn.Module):
            raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}; "
                            "wrap the model itself, e.g. FSDP(model).")
        if compute_dtype is not None and not isinstance(compute_dtype, torch.dtype):
            raise TypeError(f"compute_dtype must be a torch.dtype or None, got {compute_dtype!r}; "
                            "pass e.g. torch.bfloat16.")
        if not isinstance(prefetch, bool):
            raise TypeError(f"prefetch must be True or False, got {prefetch!r}.")
        self.world_size, self.rank = dist.get_world_size(), dist.get_rank()
        self.comm = Collectives(None, link)
        if self.comm.world_size != self.world_size:
            raise ValueError("link must span every rank: build it with DelayedComm(alpha, beta) "
                             "on the default group.")
        self.compute_dtype, self.prefetch = compute_dtype, prefetch
        self.ledger = CommLog(self.world_size)
        self.timeline, self._t0 = [], time.perf_counter()
        names = dict(module.named_parameters())  # a tied parameter appears once
        index = {id(p): i for i, p in enumerate(names.values())}
        self.param_names = list(names)
        self.shards = nn.ParameterList()
        self.full = []
        for p in names.values():
            with torch.no_grad():
                dist.broadcast(p, src=0)  # start equal on every rank, as DDP does
                c = chunk_size(p.numel(), self.world_size)
                flat = F.pad(p.reshape(-1), (0, c * self.world_size - p.numel()))
                shard = flat[self.rank * c:(self.rank + 1) * c].clone()
            self.shards.append(nn.Parameter(shard, requires_grad=p.requires_grad))
            full = torch.zeros(p.shape, dtype=compute_dtype or p.dtype, device=p.device)
            full.requires_grad_(p.requires_grad)
            full.untyped_storage().resize_(0)
            self.full.append(full)
        units = default_units(module) if units is None else units
        slots, owner_of = {}, {}
        for mod_name, mod in module.named_modules(remove_duplicate=False):
            for attr, p in list(mod._parameters.items()):
                if p is not None:
                    slots.setdefault(id(mod), []).append((mod, attr, index[id(p)]))
        unit_modules = {id(m) for _, m in units}
        for unit_name, unit_mod in units:
            for sub in unit_mod.modules():
                owner_of[id(sub)] = unit_name
        for name, mod in module.named_modules():
            if id(mod) not in owner_of and id(mod) not in unit_modules:
                owner_of[id(mod)] = "root"
        per_unit = {}
        for mod_slots in slots.values():
            for mod, attr, i in mod_slots:
                per_unit.setdefault(owner_of[id(mod)], []).append((mod, attr, i))
                del mod._parameters[attr]  # the module now reads a plain tensor attribute
        users = {}
        for unit_name, unit_slots in per_unit.items():
            for *_, i in unit_slots:
                users.setdefault(i, set()).add(unit_name)
        shared = [self.param_names[i] for i, u in users.items() if len(u) > 1]
        if shared:
            raise ValueError(f"parameters {shared} are shared by several FSDP units; pass "
                             "units= so that every tied parameter's users are in one unit "
                             "(or in the root).")
        self.module = module
        self.root = _Unit("root", module, per_unit.get("root", []), self)
        self.units = [_Unit(n, m, per_unit.get(n, []), self) for n, m in units]
        for unit in [self.root] + self.units:
            for i in unit.trainable:
                self.full[i].register_post_accumulate_grad_hook(self._make_grad_hook(unit, i))
        self._order, self._last_order = [], list(self.units)  # units in forward order
        self._pending = []
        for unit in self.units:
            unit.module.register_forward_pre_hook(self._make_pre_forward(unit))
            unit.module.register_forward_hook(self._make_post_forward(unit))

    # -- timeline -------------------------------------------------------------------
    def _event(self, kind, unit, phase, t0):
        if self.full and self.full[0].is_cuda:
            # Under NCCL a wait() returns before the GPU is done: the timeline (notebook
            # 03) must show when the data was there, so the host waits for the device.
            torch.cuda.synchronize(self.full[0].device)
        self.timeline.append((kind, unit, phase, t0 - self._t0, time.perf_counter() - self._t0))

    # -- forward ----------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        if self.compute_dtype is not None:
            args = tuple(a.to(self.compute_dtype) if torch.is_floating_point(a) else a
                         for a in args)
        self.root.gather("forward")
        if self.prefetch and self._last_order:
            self._last_order[0].start_gather("forward")
        self._order = []
        out = self.module(*args, **kwargs)
        self._last_order = self._order
        # The root is resharded too (ZeRO-3's accounting: every parameter all-gathered in
        # forward and again in backward); torch's FSDP2 keeps the root gathered instead.
        self.root.free("forward")
        if torch.is_grad_enabled() and out.requires_grad:
            out = _BackwardHook.apply(self._root_pre_backward, out)
        return out

    def _make_pre_forward(self, unit):
        def hook(module, args):
            unit.gather("forward")
            self._order.append(unit)
            if self.prefetch:
                self._prefetch_after(unit, self._last_order, "forward")
            unit._t_compute = time.perf_counter()
            if torch.is_grad_enabled():
                args = tuple(_BackwardHook.apply(lambda: self._post_backward(unit), a)
                             if isinstance(a, torch.Tensor) and a.requires_grad else a
                             for a in args)
            return args
        return hook

    def _make_post_forward(self, unit):
        def hook(module, args, out):
            self._event("compute", unit.name, "forward", unit._t_compute)
            unit.free("forward")
            if torch.is_grad_enabled() and isinstance(out, torch.Tensor) and out.requires_grad:
                return _BackwardHook.apply(lambda: self._pre_backward(unit), out)
            return out
        return hook

    def _prefetch_after(self, unit, order, phase):
        """Issue the all-gather of the unit that follows ``unit`` in ``order``."""
        if unit in order and order.index(unit) + 1 < len(order):
            order[order.index(unit) + 1].start_gather(phase)

    # -- backward ---------------------------------------------------------------------
    def _root_pre_backward(self):
        self.root.gather("backward")
        if self.prefetch and self._last_order:
            self._last_order[-1].start_gather("backward")
        torch.autograd.Variable._execution_engine.queue_callback(self._end_of_backward)

    def _pre_backward(self, unit):
        unit.gather("backward")
        if self.prefetch:
            self._prefetch_after(unit, self._last_order[::-1], "backward")
        unit._t_compute = time.perf_counter()

    def _post_backward(self, unit):
        if unit.gathered:
            self._event("compute", unit.name, "backward", unit._t_compute)
            unit.free("backward")

    def _make_grad_hook(self, unit, i):
        def hook(full):
            unit.grads_ready.append(i)
            if len(unit.grads_ready) == len(unit.trainable):
                unit.reduce_scatter()
        return hook

    def _end_of_backward(self):
        for unit in self.units + [self.root]:
            unit.reduce_scatter()  # gradients of a unit some parameters of which got none
            unit.free("backward")  # units whose inputs needed no gradient, and the root
        self.finish_gradient_synchronization()

    def finish_gradient_synchronization(self) -> None:
        """Wait for the gradient reduce-scatters; shards' ``.grad`` = mean gradient (fp32)."""
        for indices, handle, out, _ in self._pending:
            handle.wait()
            offset = 0
            for i in indices:  # out holds this rank's chunk of each gradient, side by side
                shard = self.shards[i]
                c = shard.numel()
                grad = out[offset:offset + c].to(shard.dtype).div_(self.world_size)
                offset += c
                shard.grad = grad if shard.grad is None else shard.grad + grad
        self._pending.clear()

    @torch.no_grad()
    def gather_full_params(self) -> dict:
        """``{name: full tensor}`` in the wrapped module's names (all ranks call it)."""
        result = {}
        for name, shard, full in zip(self.param_names, self.shards, self.full):
            out = torch.empty(shard.numel() * self.world_size, dtype=shard.dtype,
                              device=shard.device)
            dist.all_gather_single(out, shard.detach())
            result[name] = out[:full.numel()].view(full.shape).clone()
        return result

    def held_tensors(self):
        """(parameter tensors, gradient tensors) this rank holds right now."""
        params = list(self.shards) + self.full
        grads = [s.grad for s in self.shards] + [f.grad for f in self.full]
        return params, grads
