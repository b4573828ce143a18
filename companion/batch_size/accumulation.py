"""Gradient accumulation with ``no_sync``: k micro-steps, one all-reduce, the large-batch step.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``), CS336 L8 section 7.2
("if the batch per GPU is too small for good utilisation, accumulate gradients"). Each
rank splits its share of the global batch into ``accumulation_steps`` micro-batches. The
first k - 1 backward passes run inside ``ddp.no_sync()`` and only add into ``.grad``; the
last one runs outside it, so DDP all-reduces the summed gradient once. With each
micro-batch's mean loss divided by k, the result is the gradient of the mean loss over
the whole global batch: the same optimizer step as one process on the whole batch, with
the memory of one micro-batch and the traffic of one step.

The rank function :func:`accumulation_run` also runs the same step without ``no_sync``
(one all-reduce per micro-step: the same numbers, k times the traffic) and through
``torch.nn.parallel.DistributedDataParallel.no_sync``, counting every all-reduce issued:
``torch.distributed.all_reduce`` calls for the package's DDP, comm-hook calls (one per
bucket) for torch's.
"""
from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ..validation import one_of, positive_int, positive_number, preflight
from .limits import split_batch

__all__ = ["accumulation_run", "large_batch_reference", "gradient_accumulation_demo"]

STRATEGIES = ("companion", "companion_sync_every_micro_step", "torch")


def _check(global_batch, accumulation_steps, steps, lr, dtype, world_size=1):
    positive_int("steps", steps, "pass the number of optimizer steps, e.g. steps=2.")
    positive_number("lr", lr, "pass a learning rate, e.g. lr=0.1.")
    one_of("dtype", dtype, ("float32", "float64"))
    positive_int("accumulation_steps", accumulation_steps, "pass k >= 1, e.g. 4.")
    per_rank = split_batch(global_batch, world_size)["per_rank"]
    if per_rank % accumulation_steps:
        raise ValueError(f"accumulation_steps={accumulation_steps} must divide the {per_rank} "
                         f"sequences per rank (global_batch={global_batch} / {world_size} ranks).")


def _model(dtype, seed):
    from ..models import TinyMLP

    return TinyMLP(seed=seed).to(getattr(torch, dtype))


def large_batch_reference(global_batch: int = 64, steps: int = 2, lr: float = 0.1,
                          dtype: str = "float64", seed: int = 0) -> dict:
    """One process, the whole global batch per step: the step accumulation must equal.

    Returns ``{"params": {name: tensor}, "grads": {name: tensor}, "losses": [...]}``;
    ``grads`` are those of the last step (before it was applied).
    """
    _check(global_batch, 1, steps, lr, dtype)
    from ..data import digits_batch

    model = _model(dtype, seed)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        x, y = digits_batch(step, global_batch, seed=seed)
        loss = F.cross_entropy(model(x.to(getattr(torch, dtype))), y)
        opt.zero_grad()
        loss.backward()
        grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
        opt.step()
        losses.append(loss.item())
    return {"params": {n: p.detach().clone() for n, p in model.named_parameters()},
            "grads": grads, "losses": losses}


@contextlib.contextmanager
def _counting_all_reduce(counter: list):
    # The package's DDP calls torch.distributed.all_reduce by attribute, so wrapping the
    # attribute counts exactly what it issues (bucketed or not).
    original = dist.all_reduce

    def counted(*args, **kwargs):
        counter[-1] += 1
        return original(*args, **kwargs)

    dist.all_reduce = counted
    try:
        yield
    finally:
        dist.all_reduce = original


def _torch_ddp(model):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    ddp = torch.nn.parallel.DistributedDataParallel(model)
    counter = [0]

    def hook(state, bucket):
        counter[-1] += 1  # torch calls this once per gradient bucket it all-reduces
        return default_hooks.allreduce_hook(None, bucket)

    ddp.register_comm_hook(None, hook)
    return ddp, counter


def _run_one(strategy, global_batch, k, steps, lr, dtype, seed, bucket_size_mb):
    from ..data import digits_batch, shard
    from ..data_parallel.ddp import DDP

    rank, n = dist.get_rank(), dist.get_world_size()
    model = _model(dtype, seed)
    if strategy == "torch":
        ddp, counter = _torch_ddp(model)
        counting = contextlib.nullcontext()
    else:
        ddp, counter = DDP(model, bucket_size_mb=bucket_size_mb), [0]
        counting = _counting_all_reduce(counter)
    sync_every = strategy == "companion_sync_every_micro_step"
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    per_step, losses = [], []
    with counting:
        for step in range(steps):
            counter.append(0)
            x, y = digits_batch(step, global_batch, rank, n, seed=seed)
            opt.zero_grad()
            total = 0.0
            for i, (xm, ym) in enumerate(zip(x.chunk(k), y.chunk(k))):
                last = i == k - 1
                context = contextlib.nullcontext() if last or sync_every else ddp.no_sync()
                with context:
                    # Equal micro-batches: the mean of their mean losses is the mean loss.
                    loss = F.cross_entropy(ddp(xm.to(getattr(torch, dtype))), ym) / k
                    loss.backward()
                total += loss.item()
            grads = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
            opt.step()
            per_step.append(counter[-1])
            t = torch.tensor([total], dtype=torch.float64)
            _plain_all_reduce(t)
            losses.append(t.item() / n)
    return {"params": {name: p.detach().clone() for name, p in model.named_parameters()},
            "grads": grads, "losses": losses, "all_reduces_per_step": per_step,
            "shards": shard(torch.arange(global_batch), rank, n).tolist()}


def _plain_all_reduce(t):
    # The loss report is not gradient traffic: issued outside the counting wrapper.
    torch.distributed.distributed_c10d.all_reduce(t)


def _preflight(global_batch, accumulation_steps, steps, lr, dtype, world_size=1):
    _check(global_batch, accumulation_steps, steps, lr, dtype, world_size)


@preflight(_preflight)
def accumulation_run(global_batch: int = 64, accumulation_steps: int = 4, steps: int = 2,
                     lr: float = 0.1, dtype: str = "float64", seed: int = 0,
                     strategies=STRATEGIES, bucket_size_mb: float = 25.0) -> dict:
    """Rank function: train ``steps`` SGD steps with gradient accumulation, per strategy.

    Each rank takes its contiguous shard of every global digits batch (``data.shard``)
    and splits it into ``accumulation_steps`` micro-batches. ``bucket_size_mb=25`` puts
    the whole TinyMLP in one bucket, like torch's default, so one synchronised backward
    is one all-reduce. Returns ``{strategy: {"params", "grads", "losses",
    "all_reduces_per_step", "shards"}}``.
    """
    n = dist.get_world_size()
    _check(global_batch, accumulation_steps, steps, lr, dtype, n)
    for s in strategies:
        one_of("strategies", s, STRATEGIES)
    return {s: _run_one(s, global_batch, accumulation_steps, steps, lr, dtype, seed,
                        bucket_size_mb) for s in strategies}


def _max_diff(a: dict, b: dict) -> float:
    return max((a[k] - b[k]).abs().max().item() for k in a)


def gradient_accumulation_demo(world_size: int = 2, global_batch: int = 64,
                               accumulation_steps: int = 4, steps: int = 2, lr: float = 0.1,
                               dtype: str = "float64", seed: int = 0) -> dict:
    """Launch :func:`accumulation_run` on ``world_size`` real ranks and compare it with
    :func:`large_batch_reference` (one process, the whole batch).

    Returns, per strategy (``"companion"``: ``no_sync`` then one synchronised micro-step;
    ``"companion_sync_every_micro_step"``: no ``no_sync``; ``"torch"``: torch's DDP with
    ``no_sync``): ``max_param_diff`` and ``max_grad_diff`` against the reference (the worst
    rank), ``all_reduces_per_step`` (rank 0's count per optimizer step) and
    ``ranks_identical``; plus the batch split (``per_rank``, ``micro_batch``).
    """
    positive_int("world_size", world_size, "pass the number of ranks, e.g. world_size=2.")
    _check(global_batch, accumulation_steps, steps, lr, dtype, world_size)
    from ..launcher import launch

    per_rank = launch(accumulation_run, global_batch, accumulation_steps, steps, lr, dtype,
                      seed, world_size=world_size, timeout=120)
    ref = large_batch_reference(global_batch, steps, lr, dtype, seed)
    out = {"world_size": world_size, "global_batch": global_batch,
           "per_rank": global_batch // world_size, "accumulation_steps": accumulation_steps,
           "micro_batch": global_batch // world_size // accumulation_steps, "dtype": dtype}
    for strategy in per_rank[0]:
        runs = [r[strategy] for r in per_rank]
        out[strategy] = {
            "max_param_diff": max(_max_diff(r["params"], ref["params"]) for r in runs),
            "max_grad_diff": max(_max_diff(r["grads"], ref["grads"]) for r in runs),
            "max_loss_diff": max(abs(a - b) for a, b in zip(runs[0]["losses"], ref["losses"])),
            "all_reduces_per_step": runs[0]["all_reduces_per_step"],
            "ranks_identical": all(torch.equal(r["params"][k], runs[0]["params"][k])
                                   for r in runs for k in r["params"]),
        }
    return out
