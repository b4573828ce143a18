"""ZeRO stages 1 and 2: shard the optimizer state (1) and the gradients (2) over the
data-parallel ranks, at the communication cost of plain data parallelism.

Taught in notebook 03 (``notebooks/03_zero_memory.ipynb``); MIT 6.5940 L19 pages 69-73,
CS336 L8 section 3.4. Compared in tests with torch's ``ZeroRedundancyOptimizer``.

Sharding (the same layout FSDP uses in :mod:`companion.fsdp`): every parameter of Psi_i
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

from .memory import CommLedger

__all__ = ["ShardedOptimizer", "chunk_size", "chunk_bounds", "pack_chunks", "unpack_chunks"]


def chunk_size(numel: int, world_size: int) -> int:
    """c = ceil(numel / N): the padded size of every rank's chunk."""
    return math.ceil(numel / world_size)


def chunk_bounds(numel: int, world_size: int, rank: int) -> tuple[int, int]:
    """Rank ``rank``'s element range [lo, hi) of a flattened tensor of ``numel`` elements."""
    c = chunk_size(numel, world_size)
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
        self.stage = stage
        self.world_size, self.rank = dist.get_world_size(), dist.get_rank()
        self.ledger = CommLedger(self.world_size)
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


# -- Experiments of notebook 03: every strategy trains the same model on the same data --

STRATEGIES = ("single", "ddp", "zero1", "zero2", "fsdp",
              "torch_ddp", "torch_zero1", "torch_fsdp2")
STAGE_OF = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp": 3}


def build_model(d_model: int = 32, n_layers: int = 2, seq_len: int = 16, freeze: bool = True,
                dtype: torch.dtype = torch.float32):
    """The test model: a TinyTransformer with its head tied to the embedding and, with
    ``freeze``, one frozen parameter (block 0's first LayerNorm weight)."""
    from .data import CharCorpus
    from .models import TinyTransformer

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


def _wrap(strategy, model, optimizer, lr, bucket_size_mb, compute_dtype):
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
        net = FSDP(model, compute_dtype=compute_dtype)
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
    lines = [f"{r['strategy']} on {len(results)} rank(s), {r['num_params']:,} parameters"]
    lines += [f"step {i}: loss {loss:.4f}" for i, loss in enumerate(r["losses"])]
    for rank, res in enumerate(results):
        held = res["held"]
        lines.append(f"rank {rank} holds params {held['params']:,} B, grads {held['grads']:,} B, "
                     f"optimizer {held['optimizer']:,} B; sent {res['comm_bytes']} B last step")
    return "\n".join(lines)


def _register(fn):
    from .experiments import experiment

    return experiment("zero_train", summarize=_summarize_train)(fn)


@_register
def train(strategy: str = "ddp", steps: int = 3, optimizer: str = "adamw", lr: float = 1e-2,
          batch_size: int = 8, seq_len: int = 16, d_model: int = 32, n_layers: int = 2,
          freeze: bool = True, bucket_size_mb=None, compute_dtype=None,
          dtype="float32") -> dict:
    """Train the test model with ``strategy`` on this rank's shard of each global batch.

    Returns the global losses, the full parameters after training (by name), the bytes
    this rank holds after the last ``step()`` (params, grads, optimizer state) and the ring
    bytes it sent during the last step. ``strategy="single"`` runs without any process group.
    """
    from .data import CharCorpus, shard
    from .memory import held_bytes

    if isinstance(compute_dtype, str):
        compute_dtype = getattr(torch, compute_dtype)
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    distributed = dist.is_available() and dist.is_initialized()
    rank, n = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    if strategy != "single" and not distributed:
        raise ValueError(f"strategy {strategy!r} needs ranks: run it with companion.launch.")
    if batch_size % n:
        raise ValueError(f"batch_size={batch_size} does not split over {n} ranks; use a "
                         f"multiple of {n}.")
    corpus = CharCorpus()
    dev = torch.device("cpu")
    if distributed:
        from .runtime import device

        dev = device()
    model = build_model(d_model, n_layers, seq_len, freeze, dtype).to(dev)
    num_params = sum(p.numel() for p in model.parameters())
    net, opt, ledger, holdings = _wrap(strategy, model, optimizer, lr, bucket_size_mb,
                                       compute_dtype)
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


def train_many(configs) -> list:
    """Run :func:`train` once per keyword dict in ``configs`` on the same ranks (one launch
    instead of many; notebook 03 and the tests use it)."""
    return [train(**config) for config in configs]
