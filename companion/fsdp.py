"""FSDP (ZeRO stage 3): parameters, gradients and optimizer state all sharded; each
layer's parameters are all-gathered just before it runs, forward and backward, and
freed right after.

Taught in notebook 03 (``notebooks/03_zero_memory.ipynb``); CS336 L8 section 3.5 and
MIT 6.5940 L19 page 73. Compared in tests with torch's FSDP2 (``fully_shard``).

Units: every element of an ``nn.ModuleList`` inside the model (a transformer block), or
every child of an ``nn.Sequential`` model, is one unit; the root unit holds the other
parameters (embeddings, final norm, a tied head). Per unit and step:

    forward:  all-gather -> compute -> free           (root: kept until backward ends)
    backward: all-gather -> compute -> reduce-scatter each gradient -> free

so each parameter byte is communicated three times (two all-gathers, one
reduce-scatter): 3x against DDP's 2x. The shards use :mod:`companion.zero`'s layout.

Freeing uses the trick of torch's FSDP: a full parameter is one tensor object that
autograd saves for backward; its *storage* is resized to zero after forward and
refilled by the backward all-gather, so the saved tensor sees the data again.

``compute_dtype`` (e.g. ``torch.bfloat16``) all-gathers, computes and reduce-scatters in
that dtype while the shards (master weights) and their gradients stay fp32.

A unit's gradients are reduce-scattered together, in one collective, once autograd has
produced all of them (as torch's FSDP does with its flat parameters): one call per unit
instead of one per tensor, the same bytes.

``prefetch=True`` issues unit k+1's all-gather asynchronously while unit k computes, in
forward, and unit k-1's while unit k computes in backward (units in reverse order), so
the transfer hides under compute (CS336 L8 section 3.5; notebook 10 measures it). The
price is memory: two units are unsharded at once instead of one. It is off by default so
that notebook 03's just-in-time timeline shows one gathered unit at a time; torch's FSDP2
prefetches by default. The arithmetic is the same either way, bit for bit: prefetching
changes when the bytes travel, not which bytes are added.

``link=DelayedComm(alpha, beta)`` (:mod:`companion.latency`) sends every collective of the
training step through an emulated link; ``fsdp.comm.records = []`` times each of them
(:mod:`companion.overlap`).
"""
from __future__ import annotations

import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from .memory import CommLedger
from .overlap.comm import Collectives
from .zero import chunk_size, pack_chunks

__all__ = ["FSDP", "default_units"]


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
        self.ledger = CommLedger(self.world_size)
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
