"""The tensor-parallel MLP that notebook 05's f/g and regather exercises run on real ranks.

Used by :mod:`companion.learning.nb05` (``notebooks/05_tensor_parallelism.ipynb``). The
MLP is the one ``companion.tensor_parallel`` splits (d_model 16, d_ff 64, float64,
seeded), so a rank's result can be compared with the single-process MLP exactly (up to
summation order). :func:`kept_for_backward` measures what an operator keeps for its
backward pass, the memory that Megatron-SP's re-gather saves.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

# Pieces of notebook 05's exercises: companion.learning.nb05 imports them; students call
# exercise("05.f-and-g").check(...), so nothing here is public API.
__all__: list[str] = []

BATCH, SEQ, D_MODEL, D_FF, SEED = 2, 8, 16, 64, 0


def _mlp_inputs(rank: int, world_size: int) -> tuple:
    gen = torch.Generator().manual_seed(SEED + 1)   # the same on every rank
    x = torch.randn(BATCH, SEQ, D_MODEL, generator=gen, dtype=torch.float64)
    dy = torch.randn(BATCH, SEQ, D_MODEL, generator=gen, dtype=torch.float64)
    return x, dy


def _full_mlp():
    from ..tensor_parallel.checks import _reference
    return _reference("mlp", D_MODEL, 4, D_FF, torch.float64, SEED)


def _shard_of_full(grads: dict, rank: int, t: int, seq_shard: bool) -> dict:
    """The single-process MLP's gradients cut the way rank ``rank`` of ``t`` holds them."""
    out = {"fc1.weight grad": grads["fc1.weight"].chunk(t, dim=0)[rank],   # column split
           "fc1.bias grad": grads["fc1.bias"].chunk(t, dim=0)[rank],
           "fc2.weight grad": grads["fc2.weight"].chunk(t, dim=1)[rank]}   # row split
    if not seq_shard:   # under SP the row bias sees only this rank's tokens (summed later)
        out["fc2.bias grad"] = grads["fc2.bias"]
    return out


def _one_process(x, dy, seq_shard: bool) -> dict:
    """Expected results: the single-process MLP, forward and backward, cut for this rank."""
    rank, t = dist.get_rank(), dist.get_world_size()
    mlp = _full_mlp()
    xr = x.clone().requires_grad_()
    y = mlp(xr)
    (y * dy).sum().backward()
    cut = (lambda z: z.chunk(t, dim=1)[rank]) if seq_shard else (lambda z: z)
    grads = {n: p.grad for n, p in mlp.named_parameters()}
    return {"output": cut(y.detach()), "input grad": cut(xr.grad),
            **_shard_of_full(grads, rank, t, seq_shard)}


def _run_tp_mlp(setup, x, dy, sequence_parallel: bool) -> dict:
    """The package's TP MLP, changed by ``setup(mlp)`` (the student's operators put in),
    forward and backward on this rank's input (a sequence shard under SP)."""
    from ..tensor_parallel.layers import ParallelMLP

    rank, t = dist.get_rank(), dist.get_world_size()
    mlp = ParallelMLP(_full_mlp(), sequence_parallel=sequence_parallel)
    setup(mlp)
    if sequence_parallel:
        x, dy = x.chunk(t, dim=1)[rank], dy.chunk(t, dim=1)[rank]
    xt = x.clone().requires_grad_()
    y = mlp(xt)
    (y * dy).sum().backward()
    grads = {"fc1.weight grad": mlp.fc1.weight.grad, "fc1.bias grad": mlp.fc1.bias.grad,
             "fc2.weight grad": mlp.fc2.weight.grad}
    if not sequence_parallel:
        grads["fc2.bias grad"] = mlp.fc2.bias.grad
    return {"output": y, "input grad": xt.grad, **grads}


def _storages(tree, seen: dict) -> None:
    """Every tensor in ``tree`` (tensors, lists, tuples, dicts), by storage."""
    if isinstance(tree, torch.Tensor):
        seen[tree.untyped_storage().data_ptr()] = tree.untyped_storage().nbytes()
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            _storages(item, seen)
    elif isinstance(tree, dict):
        for item in tree.values():
            _storages(item, seen)


def kept_for_backward(fn, x, weight, bias, group) -> tuple:
    """``fn(x, weight, bias, group)`` and the bytes it keeps for backward: what autograd
    saves while it runs plus any tensor left on a custom Function's ctx, parameters
    excluded (each storage counted once)."""
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        out = fn(x, weight, bias, group)
    seen: dict = {}
    _storages(saved, seen)
    nodes, done = [getattr(out, "grad_fn", None)], set()
    while nodes:   # the graph of fn's own ops: fc1 is the MLP's first layer
        node = nodes.pop()
        if node is None or id(node) in done:
            continue
        done.add(id(node))
        _storages(dict(getattr(node, "__dict__", {})), seen)
        nodes += [n for n, _ in node.next_functions]
    for param in (weight, bias):
        seen.pop(param.untyped_storage().data_ptr(), None)
    return out, sum(seen.values())
