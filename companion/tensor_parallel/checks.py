"""Rank functions that check the tensor-parallel layers against the single-process ones.

Taught in notebook 05 (``notebooks/05_tensor_parallelism.ipynb``); the tests use them too.
Each runs inside a rank and returns plain numbers (largest differences, collective
counts, bytes), so the notebook and the tests only compare and print.
"""
from __future__ import annotations

import copy

import torch
import torch.distributed as dist

from .. import runtime
from ..collectives import log as comm_log
from ..experiments import experiment
from .layers import (_MISTAKES, ParallelAttention, ParallelBlock, ParallelMLP, _require_divisible,
                     allreduce_sequence_parallel_grads, group_rank_size, shard_like)
from ..models import seeded
from ..validation import (accepts, callable_arg, one_of, positive_int, preflight,
                          run_preflight)

__all__ = ["compare_with_reference", "dtensor_mlp_compare", "run_mlp",
           "activation_bytes"]


def _max_diff(a, b) -> float:
    return (a.detach().double() - b.detach().double()).abs().max().item()


def _diff_summary(results: list) -> str:
    r = results[0]
    worst = {k: max(x[k] for x in results) for k in ("out", "x_grad", "w_grad", "param")}
    from ..i18n import gettext as tr
    return tr("max |diff| vs single process over {ranks} rank(s): {diffs}\ncollectives per "
              "rank: forward {forward}, backward {backward}").format(
        ranks=len(results), diffs=", ".join(f"{k} {v:.1e}" for k, v in worst.items()),
        forward=r["forward"], backward=r["backward"])


def _reference(kind, d_model, n_heads, d_ff, dtype, seed, device=None):
    # device None: left on the CPU, for callers that move it themselves.
    from ..models import Block

    with seeded(seed):
        block = Block(d_model, n_heads, d_ff).to(dtype)
    if device is not None:
        block.to(device)
    return {"mlp": block.mlp, "attention": block.attn, "block": block}[kind]


def _randn(*shape, generator, dtype, device):
    # Drawn on the CPU from the CPU generator, then moved: the same numbers on every device.
    return torch.randn(*shape, generator=generator, dtype=dtype, device="cpu").to(device)


def _check(dtype, **sizes) -> None:
    # Before group_rank_size(): the same message in the notebook and in every rank.
    one_of("dtype", dtype, ("float64", "float32", "bfloat16", "float16"))
    for name, value in sizes.items():
        positive_int(name, value, f"pass a whole number such as {name}=16.")


def _check_split(world_size, **sizes) -> None:
    # In the parent (preflight) these name the size to change; inside a rank the layers
    # themselves refuse the same shapes. Pass seq only when it is split (SP).
    for what, n in sizes.items():
        _require_divisible(n, world_size, what)


def _check_compare(kind, sequence_parallel, mistake, batch, seq, d_model, n_heads, d_ff, dtype,
                   world_size=1) -> None:
    one_of("kind", kind, ("mlp", "attention", "block"))
    _check(dtype, batch=batch, seq=seq, d_model=d_model, n_heads=n_heads, d_ff=d_ff)
    one_of("mistake", mistake, list(_MISTAKES))
    if mistake is not None and kind != "mlp":
        raise ValueError("the f/g mistake demo is built on the MLP only (kind='mlp').")
    split = {"n_heads": n_heads} if kind != "mlp" else {}
    if kind != "attention":
        split["d_ff"] = d_ff
    if sequence_parallel:
        split["seq"] = seq
    _check_split(world_size, **split)


def _parallelize(ref, kind, group, sequence_parallel, mistake, regather=False):
    if kind == "mlp":
        return ParallelMLP(ref, group, sequence_parallel, mistake=mistake, regather=regather)
    if mistake is not None:
        raise ValueError("the f/g mistake demo is built on the MLP only (kind='mlp').")
    cls = ParallelAttention if kind == "attention" else ParallelBlock
    return cls(ref, group, sequence_parallel, regather)


@experiment("tp_compare", summarize=_diff_summary)
@preflight(_check_compare)
def compare_with_reference(kind: str = "block", sequence_parallel: bool = False,
                           mistake: str | None = None, batch: int = 2, seq: int = 8,
                           d_model: int = 16, n_heads: int = 4, d_ff: int = 64,
                           dtype: str = "float64", seed: int = 0, lr: float = 0.1,
                           regather: bool = False) -> dict:
    """Run one forward/backward/SGD step of the TP (or TP+SP) ``kind`` on this rank and
    of the full single-process module, from the same weights and inputs.

    Returns the largest differences (outputs, input gradient, weight gradients,
    post-step weights), the collectives issued per phase, and ``activation_bytes``, the
    size of one full ``[batch, seq, d_model]`` activation (what one all-reduce carries).
    """
    dev = runtime.device()
    _check_compare(kind, sequence_parallel, mistake, batch, seq, d_model, n_heads, d_ff, dtype)
    dt = getattr(torch, dtype)
    rank, size = group_rank_size()
    if sequence_parallel:
        _require_divisible(seq, size, "seq")
    ref = _reference(kind, d_model, n_heads, d_ff, dt, seed, dev)
    tp = _parallelize(copy.deepcopy(ref), kind, None, sequence_parallel, mistake,
                      regather).to(dev)
    gen = torch.Generator().manual_seed(seed + 1)
    x = _randn(batch, seq, d_model, generator=gen, dtype=dt, device=dev)
    dy = _randn(batch, seq, d_model, generator=gen, dtype=dt, device=dev)  # generic upstream grad

    xr = x.clone().requires_grad_()
    yr = ref(xr)
    (yr * dy).sum().backward()

    local = (lambda t: t.chunk(size, dim=1)[rank]) if sequence_parallel else (lambda t: t)
    xt = local(x).clone().requires_grad_()
    with comm_log.recording() as log:
        yt = tp(xt)
        (yt * local(dy)).sum().backward()
    with comm_log.recording() as sp_log:
        allreduce_sequence_parallel_grads(tp)

    refp = dict(ref.named_parameters())
    grad_diff = max(_max_diff(p.grad, shard_like(p, refp[n].grad)) for n, p in tp.named_parameters())
    for module in (ref, tp):
        with torch.no_grad():
            for p in module.parameters():
                p -= lr * p.grad
    param_diff = max(_max_diff(p, shard_like(p, refp[n])) for n, p in tp.named_parameters())
    return {"out": _max_diff(yt, local(yr)), "x_grad": _max_diff(xt.grad, local(xr.grad)),
            "w_grad": grad_diff, "param": param_diff,
            "forward": log.counts("forward"), "backward": log.counts("backward"),
            "forward_bytes": log.bytes("forward"), "backward_bytes": log.bytes("backward"),
            "sp_param_grads": sp_log.counts(),
            # one full [batch, seq, d_model] activation: the size of each TP all-reduce
            "activation_bytes": x.numel() * x.element_size()}


def _check_dtensor(d_model, d_ff, batch, seq, sequence_parallel, world_size=1) -> None:
    _check("float64", d_model=d_model, d_ff=d_ff, batch=batch, seq=seq)
    _check_split(world_size, d_ff=d_ff, **({"seq": seq} if sequence_parallel else {}))


@experiment("tp_dtensor_compare", summarize=lambda rs: str(rs[0]))
@preflight(_check_dtensor)
def dtensor_mlp_compare(d_model: int = 16, d_ff: int = 64, batch: int = 2, seq: int = 8,
                        seed: int = 0, sequence_parallel: bool = False) -> dict:
    """The same MLP parallelised by ``torch.distributed.tensor.parallel``
    (ColwiseParallel on fc1, RowwiseParallel on fc2, a mesh of the ranks' devices; with
    ``sequence_parallel`` their input/output laid out as ``Shard(1)``, torch's form of
    Megatron-SP) and by :class:`ParallelMLP`: largest differences in output, input
    grad and weight grads."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)

    dev = runtime.device()
    _check_dtensor(d_model, d_ff, batch, seq, sequence_parallel)
    rank, size = group_rank_size()
    ref = _reference("mlp", d_model, 4, d_ff, torch.float32, seed, dev)
    ours = ParallelMLP(copy.deepcopy(ref), sequence_parallel=sequence_parallel).to(dev)
    mesh = init_device_mesh(dev.type, (size,))
    plan = ({"fc1": ColwiseParallel(input_layouts=Shard(1)),
             "fc2": RowwiseParallel(output_layouts=Shard(1))} if sequence_parallel
            else {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    theirs = parallelize_module(copy.deepcopy(ref).to(dev), mesh, plan)
    x = _randn(batch, seq, d_model, generator=torch.Generator().manual_seed(seed + 1),
               dtype=torch.float32, device=dev)
    if sequence_parallel:
        x = x.chunk(size, dim=1)[rank].clone()
    results = []
    for module in (ours, theirs):
        xi = x.clone().requires_grad_()
        y = module(xi)
        y.pow(2).sum().backward()
        grads = {n: (p.grad.to_local() if hasattr(p.grad, "to_local") else p.grad)
                 for n, p in module.named_parameters()}
        results.append((y, xi.grad, grads))
    if sequence_parallel:  # our row bias saw only this rank's tokens; torch sums it already
        results[0][2]["fc2.bias"] = comm_log.all_reduce(results[0][2]["fc2.bias"])
    (y0, gx0, w0), (y1, gx1, w1) = results
    return {"out": _max_diff(y0, y1), "x_grad": _max_diff(gx0, gx1),
            "w_grad": max(_max_diff(w0[n], w1[n]) for n in w0),
            "dtensor_types": sorted({type(p).__name__ for p in theirs.parameters()})}


def run_mlp(enter=None, leave=None, d_model: int = 16, d_ff: int = 64, seed: int = 0) -> dict:
    """Forward and backward of a TP MLP whose region edges are ``enter``/``leave``
    (``None``: the package's f and g). For exercises: pass your own g as ``leave``;
    each is called as ``fn(x, group)``."""
    dev = runtime.device()
    ref = _reference("mlp", d_model, 4, d_ff, torch.float64, seed, dev)
    mlp = ParallelMLP(ref).to(dev)
    if enter is not None:
        mlp.fc1.enter = enter
    if leave is not None:
        mlp.fc2.leave = leave
    gen = torch.Generator().manual_seed(seed + 1)
    x = _randn(2, 8, d_model, generator=gen, dtype=torch.float64, device=dev).requires_grad_()
    y = mlp(x)
    (y * _randn(*y.shape, generator=gen, dtype=y.dtype, device=dev)).sum().backward()
    return {"out": y.detach(), "x_grad": x.grad, "fc1_grad": mlp.fc1.weight.grad,
            "fc2_grad": mlp.fc2.weight.grad}


def _saved_summary(results) -> str:
    from ..i18n import gettext as tr
    return tr("saved activations per rank: {counts} bytes").format(
        counts=[r["bytes"] for r in results])


def _check_activation(mode, batch, seq, d_model, n_heads, dtype, world_size=1) -> None:
    one_of("mode", mode, ("single", "tp", "tp_sp", "tp_sp_regather"))
    _check(dtype, batch=batch, seq=seq, d_model=d_model, n_heads=n_heads)
    if mode != "single":
        sp = {"seq": seq} if mode.startswith("tp_sp") else {}
        _check_split(world_size, n_heads=n_heads, d_ff=4 * d_model, **sp)


@experiment("tp_activation_memory",
            summarize=lambda rs: _saved_summary(rs))
@preflight(_check_activation)
def activation_bytes(mode: str = "tp", batch: int = 2, seq: int = 64, d_model: int = 64,
                     n_heads: int = 4, dtype: str = "float32", seed: int = 0) -> dict:
    """Rank function: bytes of the tensors one transformer block saves for backward on
    this rank (measured with ``saved_tensors_hooks``; parameters excluded, tensors that
    share storage counted once, only those on the rank's device). ``mode``: "single"
    (the full block, any world size), "tp", "tp_sp" (SP, column layers keep the gathered
    input) or "tp_sp_regather" (SP as in the paper: only input shards are kept)."""
    from ..models import Block

    dev = runtime.device()
    _check_activation(mode, batch, seq, d_model, n_heads, dtype)
    dt = getattr(torch, dtype)
    rank, size = group_rank_size()
    with seeded(seed):
        block = Block(d_model, n_heads, 4 * d_model).to(dt)
    block.to(dev)
    x = _randn(batch, seq, d_model, generator=torch.Generator().manual_seed(seed), dtype=dt,
               device=dev)
    if mode != "single":
        sp = mode.startswith("tp_sp")
        if sp:
            _require_divisible(seq, size, "seq")
            x = x.chunk(size, dim=1)[rank].clone()  # its own storage, as on a real rank
        block = ParallelBlock(block, None, sequence_parallel=sp,
                              regather=mode == "tp_sp_regather").to(dev)
    params = {p.untyped_storage().data_ptr() for p in block.parameters()}
    seen = {}

    def pack(t):
        # Activation memory is what the rank's device holds: the count is the same
        # whichever device that is, and a host-side tensor would not be part of it.
        ptr = t.untyped_storage().data_ptr()
        if t.device == dev and ptr not in params:
            seen[ptr] = t.untyped_storage().nbytes()
        return t

    x.requires_grad_()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        block(x)
    return {"bytes": sum(seen.values()), "tensors": len(seen)}
