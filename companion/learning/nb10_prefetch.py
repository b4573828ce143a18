"""The rank-side half of exercise ``10.prefetch-order``, taught in notebook 10
(``notebooks/10_when_parallelism_pays.ipynb``).

A toy FSDP model of ``UNITS`` tanh layers, each unit's weights sharded over the ranks;
:func:`order_problem` says what is wrong with a forward order before any rank starts,
:func:`run_fsdp_forward` runs an order with real asynchronous all-gathers, and
:func:`single_process_forward` is the value every rank must reach. The exercise itself
is registered in :mod:`.nb10`.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

# Pieces of notebook 10's exercises: companion.learning.nb10 imports them; students call
# exercise("10.prefetch-order").check(...), so nothing here is public API.
__all__: list[str] = []

UNITS, WIDTH = 4, 8
_OPS = ("gather", "compute", "free")


def _weights():
    gen = torch.Generator().manual_seed(10)
    return [torch.randn(WIDTH, WIDTH, generator=gen) / WIDTH ** 0.5 for _ in range(UNITS)]


def _input():
    return torch.randn(3, WIDTH, generator=torch.Generator().manual_seed(11))


def prefetch_order_reference(units):
    order = [("gather", 0)]
    for k in range(units):
        if k + 1 < units:
            order.append(("gather", k + 1))
        order += [("compute", k), ("free", k)]
    return order


def order_problem(order, units: int) -> str | None:
    """What is wrong with an FSDP forward order, or None (used before ranks start)."""
    if not isinstance(order, (list, tuple)) or not all(
            isinstance(op, tuple) and len(op) == 2 and op[0] in _OPS and op[1] in range(units)
            for op in order):
        return (f"return a list of (op, unit) pairs with op in {_OPS} and unit in "
                f"0..{units - 1}; got {order!r:.100}")
    held, gathered, computed, most = set(), [], [], 0
    for i, (op, k) in enumerate(order):
        if op == "gather":
            if k in gathered:
                return f"step {i}: unit {k} is gathered twice; the forward pass needs it once"
            gathered.append(k), held.add(k)
            most = max(most, len(held))
        elif op == "compute":
            if k not in held:
                return f"step {i}: unit {k} computes before its weights are gathered (or after they were freed)"
            if k != len(computed):
                return f"step {i}: unit {k} computes before unit {len(computed)}; layers run in order"
            computed.append(k)
        else:
            if k not in held or k not in computed:
                return f"step {i}: unit {k} is freed before it computed"
            held.discard(k)
    if len(computed) != units or held:
        return f"every unit must be gathered, computed and freed; computed {computed}, still held {sorted(held)}"
    if most > 2:
        return (f"{most} units' full weights are held at once; prefetching needs only the "
                "unit computing and the next one (FSDP's memory saving is the point)")
    for k in range(units - 1):
        if order.index(("gather", k + 1)) > order.index(("compute", k)):
            return (f"unit {k + 1}'s all-gather starts after unit {k} computes, so nothing "
                    f"hides it: issue it before unit {k}'s compute")
    return None


def run_fsdp_forward(order, x):
    """Runs on every rank: ``order`` executed with real asynchronous all-gathers of each
    unit's flat weight shard; returns the output of ``tanh(x W_k^T)`` over the units."""
    rank, world = dist.get_rank(), dist.get_world_size()
    shards = [w.flatten().chunk(world)[rank].contiguous() for w in _weights()]
    bufs, works = {}, {}
    for op, k in order:
        if op == "gather":
            bufs[k] = torch.empty(WIDTH * WIDTH)
            works[k] = dist.all_gather_single(bufs[k], shards[k], async_op=True)
        elif op == "compute":
            works.pop(k).wait()   # compute waits for its own gather only
            x = torch.tanh(x @ bufs[k].view(WIDTH, WIDTH).T)
        else:
            del bufs[k]
    return x


def single_process_forward(units):
    x = _input()
    for w in _weights():
        x = torch.tanh(x @ w.T)
    return x


def run_order(candidate, units):
    """The adapter: run the student's order for ``units`` units on this rank's input."""
    return run_fsdp_forward(candidate(units), _input())
