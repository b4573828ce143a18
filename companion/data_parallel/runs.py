"""Notebook 03's experiments: every data-parallel strategy trains the same model on the
same data, so memory, traffic and results can be compared side by side.

Strategies: one process ("single"), the package's DDP, ZeRO-1, ZeRO-2 (``companion.data_parallel.zero``)
and FSDP (``companion.data_parallel.fsdp``), and torch's DistributedDataParallel,
ZeroRedundancyOptimizer and FSDP2 ``fully_shard``. Run from notebook 03, the tests and
``benchmarks/zero.py``, or as ``python -m companion run zero_train --set strategy=fsdp``.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ..validation import accepts, one_of, positive_int, positive_number, preflight, run_preflight
from .zero import ShardedOptimizer


STRATEGIES = ("single", "ddp", "zero1", "zero2", "fsdp",
              "torch_ddp", "torch_zero1", "torch_fsdp2")
STAGE_OF = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp": 3}


def build_model(d_model: int = 32, n_layers: int = 2, seq_len: int = 16, freeze: bool = True,
                dtype: torch.dtype = torch.float32):
    """The test model: a TinyTransformer with its head tied to the embedding and, with
    ``freeze``, one frozen parameter (block 0's first LayerNorm weight)."""
    from ..data import CharCorpus
    from ..models import TinyTransformer

    model = TinyTransformer(vocab_size=CharCorpus().vocab_size, d_model=d_model, n_heads=4,
                            n_layers=n_layers, max_seq_len=seq_len, tie_weights=True)
    if freeze:
        model.blocks[0].ln1.weight.requires_grad_(False)
    return model.to(dtype)


def _optimizer(kind, params, lr, cls_only=False):
    if kind == "adamw":
        cls, kwargs = torch.optim.AdamW, {"lr": lr, "weight_decay": 0.1}
    elif kind == "sgd":
        cls, kwargs = torch.optim.SGD, {"lr": lr, "momentum": 0.9}
    else:
        raise ValueError(f"optimizer must be 'adamw' or 'sgd', got {kind!r}.")
    return (cls, kwargs) if cls_only else cls(params, **kwargs)


def _local(t):
    return t.to_local() if hasattr(t, "to_local") else t


def _wrap(strategy, model, optimizer, lr, bucket_size_mb, compute_dtype, prefetch=False):
    """(callable model, optimizer, ledger or None, (params, grads, state) getter)."""
    from .ddp import DDP
    from .fsdp import FSDP
    from .memory import optimizer_state_tensors

    def plain(opt):
        return lambda: (list(model.parameters()), [p.grad for p in model.parameters()],
                        list(optimizer_state_tensors(opt)))

    if strategy in ("single", "ddp", "torch_ddp"):
        net = model
        if strategy == "ddp":
            net = DDP(model, bucket_size_mb=bucket_size_mb)
        elif strategy == "torch_ddp":
            net = torch.nn.parallel.DistributedDataParallel(model)
        opt = _optimizer(optimizer, model.parameters(), lr)
        return net, opt, getattr(net, "ledger", None), plain(opt)
    if strategy in ("zero1", "zero2"):
        cls, kwargs = _optimizer(optimizer, None, lr, cls_only=True)
        opt = ShardedOptimizer(model.parameters(), cls, stage=STAGE_OF[strategy], **kwargs)
        return model, opt, opt.ledger, lambda: (list(model.parameters()),
                                                list(opt.gradient_tensors()),
                                                list(opt.state_tensors()))
    if strategy == "torch_zero1":
        from torch.distributed.optim import ZeroRedundancyOptimizer

        net = torch.nn.parallel.DistributedDataParallel(model)
        cls, kwargs = _optimizer(optimizer, None, lr, cls_only=True)
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=cls, **kwargs)
        return net, opt, None, lambda: (list(model.parameters()),
                                        [p.grad for p in model.parameters()],
                                        list(optimizer_state_tensors(opt.optim)))
    if strategy == "fsdp":
        net = FSDP(model, compute_dtype=compute_dtype, prefetch=prefetch)
        opt = _optimizer(optimizer, net.parameters(), lr)
        return net, opt, net.ledger, lambda: (*net.held_tensors(),
                                              list(optimizer_state_tensors(opt)))
    if strategy == "torch_fsdp2":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        device_type = next(model.parameters()).device.type
        mesh = init_device_mesh(device_type, (dist.get_world_size(),))
        policy = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=compute_dtype)
        for block in model.blocks:
            fully_shard(block, mesh=mesh, mp_policy=policy)
        fully_shard(model, mesh=mesh, mp_policy=policy)
        opt = _optimizer(optimizer, model.parameters(), lr)
        return model, opt, None, lambda: (
            [_local(p) for p in model.parameters()],
            [_local(p.grad) if p.grad is not None else None for p in model.parameters()],
            [_local(t) for t in optimizer_state_tensors(opt)])
    raise ValueError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}.")


def _summarize_train(results):
    r = results[0]
    from ..i18n import gettext as tr
    lines = [tr("{strategy} on {ranks} rank(s), {params} parameters").format(
        strategy=r["strategy"], ranks=len(results), params=f"{r['num_params']:,}")]
    lines += [tr("step {i}: loss {loss}").format(i=i, loss=f"{loss:.4f}")
              for i, loss in enumerate(r["losses"])]
    for rank, res in enumerate(results):
        held = res["held"]
        lines.append(tr("rank {rank} holds params {params} B, grads {grads} B, optimizer "
                        "{optimizer} B; sent {sent} B last step").format(
            rank=rank, params=f"{held['params']:,}", grads=f"{held['grads']:,}",
            optimizer=f"{held['optimizer']:,}", sent=res["comm_bytes"]))
    return "\n".join(lines)


def _register(fn):
    from ..experiments import experiment

    return experiment("zero_train", summarize=_summarize_train)(fn)


def _check_train(strategy, steps, optimizer, lr, batch_size, seq_len, d_model, n_layers,
                 world_size=1) -> None:
    one_of("strategy", strategy, STRATEGIES)
    one_of("optimizer", optimizer, ("adamw", "sgd"))
    for name, value in (("steps", steps), ("batch_size", batch_size), ("seq_len", seq_len),
                        ("d_model", d_model), ("n_layers", n_layers)):
        positive_int(name, value, f"pass a whole number >= 1 for {name}.")
    positive_number("lr", lr, "pass a learning rate such as lr=0.01.")
    if batch_size % world_size:
        raise ValueError(f"batch_size={batch_size} does not split over {world_size} ranks; use a "
                         f"multiple of {world_size}.")


@_register
@preflight(_check_train)
def train(strategy: str = "ddp", steps: int = 3, optimizer: str = "adamw", lr: float = 1e-2,
          batch_size: int = 8, seq_len: int = 16, d_model: int = 32, n_layers: int = 2,
          freeze: bool = True, bucket_size_mb=None, compute_dtype=None,
          dtype="float32", prefetch: bool = False) -> dict:
    """Train the test model with ``strategy`` on this rank's shard of each global batch.

    Returns the global losses, the full parameters after training (by name), the bytes
    this rank holds after the last ``step()`` (params, grads, optimizer state) and the ring
    bytes it sent during the last step. ``strategy="single"`` runs without any process group;
    ``prefetch`` is :class:`companion.FSDP`'s (notebook 10).
    """
    from ..data import CharCorpus, shard
    from .memory import held_bytes

    distributed = dist.is_available() and dist.is_initialized()
    rank, n = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    _check_train(strategy, steps, optimizer, lr, batch_size, seq_len, d_model, n_layers, n)
    if isinstance(compute_dtype, str):
        compute_dtype = getattr(torch, compute_dtype)
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    if strategy != "single" and not distributed:
        raise ValueError(f"strategy {strategy!r} needs ranks: run it with companion.launch.")
    corpus = CharCorpus()
    dev = torch.device("cpu")
    if distributed:
        from ..runtime import device

        dev = device()
    model = build_model(d_model, n_layers, seq_len, freeze, dtype).to(dev)
    num_params = sum(p.numel() for p in model.parameters())
    net, opt, ledger, holdings = _wrap(strategy, model, optimizer, lr, bucket_size_mb,
                                       compute_dtype, prefetch)
    losses, held = [], None
    for step in range(steps):
        if ledger is not None:
            ledger.reset()  # keep only the last step's traffic
        x, y = corpus.batch(step, batch_size, seq_len)
        x, y = shard(x, rank, n).to(dev), shard(y, rank, n).to(dev)
        logits = net(x)
        if logits.dtype in (torch.float16, torch.bfloat16):
            logits = logits.float()  # the loss in fp32, as mixed-precision training does
        loss = F.cross_entropy(logits.reshape(-1, corpus.vocab_size), y.reshape(-1))
        loss.backward()
        if hasattr(net, "finish_gradient_synchronization"):
            net.finish_gradient_synchronization()
        opt.step()
        if step == steps - 1:
            params, grads, state = holdings()
            held = {"params": held_bytes(params), "grads": held_bytes(grads),
                    "optimizer": held_bytes(state)}
            if dev.type == "cuda":  # what the allocator says, next to the tensors counted
                held["cuda_allocated"] = torch.cuda.memory_allocated(dev)
        opt.zero_grad()
        global_loss = loss.detach().clone()
        if distributed:  # for reporting only: not part of the training step's traffic
            dist.all_reduce(global_loss)
            global_loss /= n
        losses.append(global_loss.item())
    if strategy == "fsdp":
        final = net.gather_full_params()
    elif strategy == "torch_fsdp2":
        final = {k: _local(v.full_tensor()).clone() for k, v in model.named_parameters()}
    else:
        final = {k: v.detach().clone() for k, v in model.named_parameters()}
    return {"strategy": strategy, "losses": losses, "params": final, "held": held,
            "num_params": num_params,
            "comm_bytes": ledger.bytes_sent() if ledger is not None else None,
            "timeline": getattr(net, "timeline", None)}


def _check_many(configs, world_size=1) -> None:
    for config in configs:
        accepts("configs", train, (), config, "each entry is a dict of train()'s keywords.")
        run_preflight(train, (), config, world_size)


@preflight(_check_many)
def train_many(configs) -> list:
    """Run :func:`train` once per keyword dict in ``configs`` on the same ranks (one launch
    instead of many; notebook 03 and the tests use it)."""
    _check_many(configs)  # every config before the first one trains
    return [train(**config) for config in configs]
