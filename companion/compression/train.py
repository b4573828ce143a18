"""Data-parallel training on real ranks with every compressor (one run per call).

Taught in notebook 07 (``notebooks/07_gradient_compression.ipynb``). Every function
here runs inside ranks (``companion.launch(train, world_size=4, ...)``, or
``python -m companion run compression_train --world-size 4 --set method=dgc``).

Each rank computes the gradient on its shard of the global digits batch, hands it to a
compressor's ``exchange`` (which does the collectives and returns the averaged update)
and steps plain momentum SGD. Ranks return data; the notebook plots.
"""
from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import runtime
from ..data import digits_batch, load_digits
from ..experiments import experiment
from ..i18n import gettext as tr
from .lr import lr_at
from .powersgd import PowerSGD
from .quantization import OneBit, QuantizedExchange, TernGrad, Threshold, TopKNoFeedback
from .sparse import DGC, DGCConfig
from .wire import all_reduce_mean
from ..models import seeded
from ..validation import one_of, positive_int, positive_number, preflight

__all__ = ["BiasFreeMLP", "MomentumSGD", "DenseAllReduce", "make_compressor", "train",
           "densification", "train_torch_powersgd", "split_digits", "METHODS", "TEST_SIZE"]

METHODS = ("dense", "dgc", "topk_no_feedback", "powersgd", "onebit", "threshold", "terngrad")
TEST_SIZE = 297  # the last 297 digits are held out; 1,500 remain for training


class BiasFreeMLP(nn.Sequential):
    """An MLP for 8x8 digits without biases: every tensor is a matrix DGC can prune.

    (With biases, the dense vectors would dominate a tiny model's payload at 99.9%
    sparsity; the notebook shows that effect with the lecture's models instead.)
    Built on the CPU under ``seeded(seed)``, then moved whole, like every model.
    """
    def __init__(self, hidden: int = 128, depth: int = 1, seed: int = 0):
        positive_int("hidden", hidden, "pass the hidden width, e.g. hidden=128.")
        positive_int("depth", depth, "pass the number of hidden layers, e.g. depth=1.")
        with seeded(seed):
            layers, width = [], 64
            for _ in range(depth):
                layers += [nn.Linear(width, hidden, bias=False), nn.ReLU()]
                width = hidden
            super().__init__(*layers, nn.Linear(width, 10, bias=False))


class DenseAllReduce:
    """The baseline: all-reduce the fp32 gradients (4 bytes per number).

    ``encode``/``combine`` let :func:`companion.compression.ablation.train_many` send the
    same numbers in its shared all-gather instead.
    """

    applies_momentum = False
    last_density_after_sum = 1.0
    equal_sizes = True

    def __init__(self, params_like):
        self.last_bytes = 4 * sum(p.numel() for p in params_like)

    def lr_scale(self, step):
        return 1.0

    def exchange(self, grads, step):
        return all_reduce_mean(grads)

    def encode(self, grads, step):
        return [{"values": g.reshape(-1)} for g in grads]

    def combine(self, gathered, grads):
        return [sum(rank_payloads[i]["values"] for rank_payloads in gathered).view_as(g)
                / len(gathered) for i, g in enumerate(grads)]


class MomentumSGD:
    """``torch.optim.SGD(momentum=m)`` (no dampening, weight decay or Nesterov), same
    floating-point operations in the same order; a test checks it bit for bit.

    Why not torch's: constructing a torch optimizer imports ``torch._dynamo``, about a
    second per rank per launch on a 2-core machine, longer than our training runs.
    """

    def __init__(self, params, lr: float, momentum: float = 0.0):
        self.params, self.lr, self.momentum = list(params), lr, momentum
        self.buffers = [None] * len(self.params)

    @torch.no_grad()
    def step(self):
        for i, p in enumerate(self.params):
            d = p.grad
            if self.momentum:
                if self.buffers[i] is None:
                    self.buffers[i] = torch.clone(d).detach()
                else:
                    self.buffers[i].mul_(self.momentum).add_(d)
                d = self.buffers[i]
            p.add_(d, alpha=-self.lr)


def make_compressor(method: str, params_like, *, density=0.001, momentum=0.9, seed=0,
                    momentum_correction=True, factor_masking=True, clip_norm=None,
                    warmup_steps=0, powersgd_rank=2, tau=0.01, accumulate=None):
    """Build one rank's compressor for ``method`` (one of :data:`METHODS`)."""
    if method == "dense":
        return DenseAllReduce(params_like)
    if method == "dgc":
        config = DGCConfig(density=density, momentum=momentum,
                           momentum_correction=momentum_correction, clip_norm=clip_norm,
                           factor_masking=factor_masking, warmup_steps=warmup_steps)
        return DGC(params_like, config, seed=seed, world_size=runtime.world_size(),
                   rank=runtime.rank(), accumulate=accumulate)
    if method == "topk_no_feedback":
        return QuantizedExchange(params_like, TopKNoFeedback(density))
    if method == "powersgd":
        return PowerSGD(params_like, rank=powersgd_rank, seed=seed)
    if method == "onebit":
        return QuantizedExchange(params_like, OneBit())
    if method == "threshold":
        return QuantizedExchange(params_like, Threshold(tau))
    if method == "terngrad":
        gen = torch.Generator().manual_seed(seed * 7919 + runtime.rank())
        return QuantizedExchange(params_like, TernGrad(gen))
    raise ValueError(f"unknown method {method!r}; pick one of {', '.join(METHODS)}.")


def check_run(steps, lr, global_batch, hidden, eval_every, world_size=1,
              schedule="constant") -> None:
    """The training sizes every entry point shares, checked before any rank computes."""
    for name, value in (("steps", steps), ("global_batch", global_batch), ("hidden", hidden),
                        ("eval_every", eval_every)):
        positive_int(name, value, f"pass a whole number such as {name}=64.")
    positive_number("lr", lr, "pass a learning rate such as lr=0.1.")
    one_of("schedule", schedule, ("constant", "cosine"))
    if global_batch % world_size:
        raise ValueError(f"global_batch={global_batch} must be a multiple of the world size "
                         f"{world_size}; use e.g. {world_size * (global_batch // world_size + 1)}.")


def _check_compressor(method, momentum, seed, options) -> None:
    # A stand-in parameter is enough for each compressor's constructor to check the method
    # and its settings (density, rank, tau, a misspelt option), with no data loaded yet.
    make_compressor(method, [torch.zeros(2, 2, device="cpu")], momentum=momentum, seed=seed,
                    **options)


def _check_train(method, steps, lr, momentum, global_batch, hidden, seed, eval_every,
                 schedule, options, world_size=1) -> None:
    check_run(steps, lr, global_batch, hidden, eval_every, world_size, schedule)
    _check_compressor(method, momentum, seed, options)


def split_digits():
    """``((x_train, y_train), (x_test, y_test))``. Load it once in the notebook and pass it
    as ``data=`` to every launch: a rank that calls ``load_digits`` itself imports
    scikit-learn, which costs seconds per launch on a busy 2-core machine."""
    x, y = load_digits()
    return (x[:-TEST_SIZE], y[:-TEST_SIZE]), (x[-TEST_SIZE:], y[-TEST_SIZE:])


@torch.no_grad()
def _accuracy(model, x, y) -> float:
    return (model(x).argmax(1) == y).float().mean().item()


def _summary(results) -> str:
    r = results[0]
    return tr("{method}: final test accuracy {acc:.3f}, {bytes} B/step per rank vs {dense} B "
              "dense ({ratio:.0f}x)").format(method=r["method"], acc=r["test_acc"][-1],
                                             bytes=r["bytes"][-1], dense=r["dense_bytes"],
                                             ratio=r["dense_bytes"] / r["bytes"][-1])


@experiment("compression_train", summarize=_summary)
@preflight(_check_train)
def train(*, method: str = "dense", steps: int = 300, lr: float = 0.1, momentum: float = 0.9,
          global_batch: int = 64, hidden: int = 128, seed: int = 0, eval_every: int = 25,
          schedule: str = "constant", data=None, **options) -> dict:
    """Train the bias-free MLP on digits with ``method``; per-step curves and bytes.

    ``options`` go to :func:`make_compressor` (density, clip_norm, warmup_steps, ...).
    Returns local losses, test accuracy every ``eval_every`` steps, this rank's payload
    bytes per step and the density of the summed update per step.
    """
    dev, world, rank = runtime.device(), runtime.world_size(), runtime.rank()
    _check_train(method, steps, lr, momentum, global_batch, hidden, seed, eval_every, schedule,
                 options, world)
    (x_train, y_train), (x_test, y_test) = data or split_digits()
    x_test, y_test = x_test.to(dev), y_test.to(dev)
    model = BiasFreeMLP(hidden=hidden, seed=seed).to(dev)
    params = list(model.parameters())
    comp = make_compressor(method, [p.detach() for p in params], momentum=momentum,
                           seed=seed, **options)
    opt = MomentumSGD(params, lr=lr, momentum=0.0 if comp.applies_momentum else momentum)
    out = {"method": method, "losses": [], "bytes": [], "density_after_sum": [],
           "eval_steps": [], "test_acc": [], "dense_bytes": 4 * sum(p.numel() for p in params)}
    runtime.synchronize()
    start, cpu_start = time.perf_counter(), time.process_time()
    for step in range(steps):
        x, y = digits_batch(step, global_batch, rank, world, seed=seed, data=(x_train, y_train))
        loss = F.cross_entropy(model(x), y)
        grads = torch.autograd.grad(loss, params)
        update = comp.exchange(list(grads), step)
        for p, u in zip(params, update):
            p.grad = u
        opt.lr = lr_at(lr, step, steps, schedule) * comp.lr_scale(step)
        opt.step()
        out["losses"].append(loss.item())
        out["bytes"].append(comp.last_bytes)
        out["density_after_sum"].append(comp.last_density_after_sum)
        if (step + 1) % eval_every == 0 or step == steps - 1:
            out["eval_steps"].append(step + 1)
            out["test_acc"].append(_accuracy(model, x_test, y_test))
    runtime.synchronize()
    out["seconds"] = time.perf_counter() - start
    out["cpu_seconds"] = time.process_time() - cpu_start  # this rank's own CPU time
    out["params"] = [p.detach().clone() for p in params] if rank == 0 else None
    return out


def _check_densification(steps, density, hidden, global_batch, seed, world_size=1) -> None:
    positive_int("steps", steps, "pass a number of steps such as steps=40.")
    if steps <= 5:
        raise ValueError(f"steps={steps}: need more than 5 (the first 5 are skipped while "
                         "error feedback builds up); use steps=15 or more.")
    _check_train("dgc", steps, 0.1, 0.9, global_batch, hidden, seed, steps, "constant",
                 {"density": density}, world_size)


@experiment("compression_densification")
@preflight(_check_densification)
def densification(*, steps: int = 40, density: float = 0.001, hidden: int = 128,
                  global_batch: int = 64, seed: int = 0, data=None) -> dict:
    """Density of the *summed* sparse update (DGC, every rank's top-k), averaged over the
    steps after the first 5, next to the density one rank sends."""
    _check_densification(steps, density, hidden, global_batch, seed, runtime.world_size())
    run = train(method="dgc", steps=steps, density=density, hidden=hidden,
                global_batch=global_batch, seed=seed, eval_every=steps, data=data)
    return {"world_size": runtime.world_size(), "density": density,
            "density_after_sum": sum(run["density_after_sum"][5:]) / len(run["density_after_sum"][5:])}


def _check_torch_powersgd(steps, lr, global_batch, hidden, eval_every, powersgd_rank,
                          world_size=1) -> None:
    check_run(steps, lr, global_batch, hidden, eval_every, world_size)
    positive_int("powersgd_rank", powersgd_rank, "pass the low-rank size, e.g. 2.")


@experiment("compression_torch_powersgd")
@preflight(_check_torch_powersgd)
def train_torch_powersgd(*, steps: int = 300, lr: float = 0.1, momentum: float = 0.9,
                         global_batch: int = 64, hidden: int = 128, seed: int = 0,
                         powersgd_rank: int = 2, eval_every: int = 25, batched: bool = False,
                         data=None) -> dict:
    """The same training with torch's DDP + ``powerSGD_hook`` (or the batched hook).

    ``bytes_per_step``: the fp32 bytes the hook all-reduced per compressed step, from its
    own counters (``PowerSGDState.total_numel_after_compression``)."""
    import torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook as ps
    from torch.nn.parallel import DistributedDataParallel

    _check_torch_powersgd(steps, lr, global_batch, hidden, eval_every, powersgd_rank,
                          runtime.world_size())
    dev, world, rank = runtime.device(), runtime.world_size(), runtime.rank()
    (x_train, y_train), (x_test, y_test) = data or split_digits()
    x_test, y_test = x_test.to(dev), y_test.to(dev)
    model = BiasFreeMLP(hidden=hidden, seed=seed).to(dev)
    ddp = DistributedDataParallel(model, device_ids=[dev.index] if dev.type == "cuda" else None)
    # start_powerSGD_iter=2 is the earliest torch allows with error feedback; our
    # PowerSGD compresses from step 0, so the first two steps differ slightly.
    state = ps.PowerSGDState(process_group=None, matrix_approximation_rank=powersgd_rank,
                             start_powerSGD_iter=2, min_compression_rate=0.0,
                             use_error_feedback=True, warm_start=True, random_seed=seed)
    ddp.register_comm_hook(state, ps.batched_powerSGD_hook if batched else ps.powerSGD_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=momentum)
    out = {"method": "torch powerSGD_hook", "losses": [], "eval_steps": [], "test_acc": []}
    for step in range(steps):
        x, y = digits_batch(step, global_batch, rank, world, seed=seed, data=(x_train, y_train))
        opt.zero_grad()
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        out["losses"].append(loss.item())
        if (step + 1) % eval_every == 0 or step == steps - 1:
            out["eval_steps"].append(step + 1)
            out["test_acc"].append(_accuracy(model, x_test, y_test))
    # The hook's own count of the numbers it all-reduced once compressing (its P's, Q's
    # and uncompressed tensors), per compressed step, as fp32 bytes.
    compressed_steps = state.iter - state.start_powerSGD_iter
    if compressed_steps > 0:
        out["bytes_per_step"] = 4 * state.total_numel_after_compression // compressed_steps
    return out
