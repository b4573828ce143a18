"""ZeRO stages 1 and 2: shard the optimizer state (1) and the gradients (2) over the
data-parallel ranks, at the communication cost of plain data parallelism.

Taught in notebook 03 (``notebooks/03_zero_memory.ipynb``); MIT 6.5940 L19 pages 69-73,
CS336 L8 section 3.4. Compared in tests with torch's ``ZeroRedundancyOptimizer``.

Sharding (the same layout FSDP uses in :mod:`companion.data_parallel.fsdp`): every parameter of Psi_i
elements is cut into N chunks of c_i = ceil(Psi_i / N) elements; rank r owns chunk r,
elements [r c_i, (r + 1) c_i) of the flattened parameter (the last chunks may be short
or empty; collectives pad them to c_i with zeros).

* Stage 1: after backward every rank holds full local gradients; ``step()`` does one
  reduce-scatter of all of them (each rank receives the summed gradient of its chunks),
  updates its chunks with the wrapped optimizer, whose state therefore exists only for
  those chunks, and all-gathers the updated chunks. reduce-scatter + all-gather moves
  the same bytes as DDP's all-reduce: the memory saving is free.
* Stage 2: a hook reduce-scatters each gradient as soon as backward produces it and
  frees the full gradient, keeping only the rank's chunk.

The wrapped optimizer sees each chunk as a view into the real parameter, so updating
it updates the model in place, and any element-wise optimizer (SGD, Adam, AdamW)
gives exactly the single-process update for the same gradient.
"""
from __future__ import annotations

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ..collectives.log import CommLog
from ..validation import nonnegative_int, positive_int

__all__ = ["ShardedOptimizer", "chunk_size", "chunk_bounds", "pack_chunks", "unpack_chunks"]


def chunk_size(numel: int, world_size: int) -> int:
    """c = ceil(numel / N): the padded size of every rank's chunk."""
    nonnegative_int("numel", numel, "pass the tensor's element count.")
    positive_int("world_size", world_size, "pass the number of ranks sharing it.")
    return math.ceil(numel / world_size)


def chunk_bounds(numel: int, world_size: int, rank: int) -> tuple[int, int]:
    """Rank ``rank``'s element range [lo, hi) of a flattened tensor of ``numel`` elements."""
    c = chunk_size(numel, world_size)
    if not 0 <= nonnegative_int("rank", rank) < world_size:
        raise ValueError(f"rank={rank} must be below world_size={world_size}.")
    return min(rank * c, numel), min((rank + 1) * c, numel)


def pack_chunks(tensors, world_size: int) -> torch.Tensor:
    """``[N, C]`` with row r = rank r's chunks of every tensor, zero-padded, side by side.

    Its flat view is the input a single reduce-scatter needs to hand each rank exactly its
    own chunks (C = sum of the c_i).
    """
    rows = []
    for t in tensors:
        c = chunk_size(t.numel(), world_size)
        rows.append(F.pad(t.reshape(-1), (0, world_size * c - t.numel())).view(world_size, c))
    return torch.cat(rows, dim=1)


def unpack_chunks(gathered: torch.Tensor, numels) -> list[torch.Tensor]:
    """Inverse of :func:`pack_chunks` for an all-gathered ``[N, C]``: flat full tensors."""
    world_size, out, offset = gathered.shape[0], [], 0
    for n in numels:
        c = chunk_size(n, world_size)
        out.append(gathered[:, offset:offset + c].reshape(-1)[:n])
        offset += c
    return out


class ShardedOptimizer(torch.optim.Optimizer):
    """ZeRO-1 (``stage=1``, default) or ZeRO-2 (``stage=2``) around ``optimizer_cls``.

    ``ShardedOptimizer(model.parameters(), torch.optim.AdamW, lr=1e-3)`` is a drop-in
    optimizer: ``step()``, ``zero_grad()``, ``add_param_group()``, and ``param_groups``
    whose hyperparameters (e.g. a scheduler's ``lr``) are forwarded to the wrapped
    optimizer at every step. Every rank must build it from the same parameters in the
    same order, with parameters already equal across ranks (e.g. after broadcasting).
    Frozen parameters (``requires_grad=False``) are left alone.
    """

    def __init__(self, params, optimizer_cls, stage: int = 1, **kwargs):
        if stage not in (1, 2):
            raise ValueError(f"ShardedOptimizer implements ZeRO stages 1 and 2, got stage={stage}; "
                             "use companion.DDP for stage 0 and companion.FSDP for stage 3.")
        if not (isinstance(optimizer_cls, type) and issubclass(optimizer_cls, torch.optim.Optimizer)):
            raise TypeError(f"optimizer_cls must be a torch.optim.Optimizer class, got "
                            f"{optimizer_cls!r}; pass e.g. torch.optim.AdamW (not an instance).")
        self.stage = stage
        self.world_size, self.rank = dist.get_world_size(), dist.get_rank()
        self.ledger = CommLog(self.world_size)
        self.optimizer = None
        self._layouts = []        # per outer group: [(param, lo, hi, chunk view)]
        self._pending_inner = []  # inner groups created before the wrapped optimizer exists
        self._reduced = {}        # stage 2: id(param) -> [(work, output chunk, input)]
        super().__init__(params, kwargs)
        self.optimizer = optimizer_cls(self._pending_inner, **kwargs)
        self._pending_inner = None

    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        layout = []
        for p in group["params"]:
            if not p.requires_grad:
                continue
            lo, hi = chunk_bounds(p.numel(), self.world_size, self.rank)
            layout.append((p, lo, hi, p.detach().view(-1)[lo:hi]))
            if self.stage == 2:
                p.register_post_accumulate_grad_hook(self._reduce_scatter_now)
        self._layouts.append(layout)
        inner = {k: v for k, v in group.items() if k != "params"}
        inner["params"] = [view for *_, view in layout]
        if not inner["params"]:
            return  # a group of frozen parameters: nothing to optimise on any rank
        if self.optimizer is None:
            self._pending_inner.append(inner)
        else:
            self.optimizer.add_param_group(inner)

    # -- stage 2: reduce-scatter during backward -------------------------------------
    def _reduce_scatter_now(self, p: torch.Tensor) -> None:
        packed = pack_chunks([p.grad], self.world_size).reshape(-1)
        out = torch.empty(packed.numel() // self.world_size, dtype=packed.dtype,
                          device=packed.device)
        work = dist.reduce_scatter_single(out, packed, async_op=True)
        self.ledger.record("reduce_scatter", packed.numel() * packed.element_size())
        self._reduced.setdefault(id(p), []).append((work, out, packed))
        p.grad = None  # the point of stage 2: the full gradient is gone after backward

    def _stage2_gradients(self, layout):
        for p, lo, hi, view in layout:
            pieces = self._reduced.pop(id(p), [])
            if not pieces:
                view.grad = None  # no gradient this step: the optimizer skips it
                continue
            total = None
            for work, out, _ in pieces:
                work.wait()
                total = out if total is None else total + out
            view.grad = total[:hi - lo].div_(self.world_size)

    # -- stage 1: one reduce-scatter of all full gradients -------------------------------
    def _stage1_gradients(self, layout):
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p, *_ in layout]
        packed = pack_chunks(grads, self.world_size).reshape(-1)
        out = torch.empty(packed.numel() // self.world_size, dtype=packed.dtype,
                          device=packed.device)
        dist.reduce_scatter_single(out, packed)
        self.ledger.record("reduce_scatter", packed.numel() * packed.element_size())
        out.div_(self.world_size)
        offset = 0
        for p, lo, hi, view in layout:
            view.grad = out[offset:offset + hi - lo]
            offset += chunk_size(p.numel(), self.world_size)

    def _all_gather_params(self, layout):
        chunks = []
        for p, lo, hi, view in layout:
            c = chunk_size(p.numel(), self.world_size)
            chunks.append(F.pad(view.detach(), (0, c - (hi - lo))))
        local = torch.cat(chunks)
        gathered = torch.empty(self.world_size * local.numel(), dtype=local.dtype,
                               device=local.device)
        dist.all_gather_single(gathered, local)
        self.ledger.record("all_gather", gathered.numel() * gathered.element_size())
        full = unpack_chunks(gathered.view(self.world_size, -1), [p.numel() for p, *_ in layout])
        for (p, *_), flat in zip(layout, full):
            p.detach().copy_(flat.view_as(p))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        active = [layout for layout in self._layouts if layout]
        for layout in active:
            (self._stage1_gradients if self.stage == 1 else self._stage2_gradients)(layout)
        inner_groups = iter(self.optimizer.param_groups)
        for group, layout in zip(self.param_groups, self._layouts):
            if layout:  # forward hyperparameters changed on the outer groups (schedulers)
                inner = next(inner_groups)
                inner.update({k: v for k, v in group.items() if k != "params"})
        self.optimizer.step()
        for layout in active:
            self._all_gather_params(layout)
            if self.stage == 1:
                for *_, view in layout:
                    view.grad = None  # stage 1 keeps the full gradients, not a second copy
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        super().zero_grad(set_to_none)
        self.optimizer.zero_grad(set_to_none)

    def state_tensors(self):
        """Tensors of the optimizer state this rank holds (only its chunks')."""
        for state in self.optimizer.state.values():
            yield from (v for v in state.values() if isinstance(v, torch.Tensor))

    def gradient_tensors(self):
        """Gradients this rank holds: full ones (stage 1) or its chunks (stage 2)."""
        for layout in self._layouts:
            for p, _, _, view in layout:
                yield p.grad
                yield view.grad
