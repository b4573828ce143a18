"""The DGC ablation at full length: many runs trained as one stacked model.

Taught in notebook 07 (``notebooks/07_gradient_compression.ipynb``), section 3.

At 99.9% sparsity one rank sends about 0.1% of the weights per step, so from one rank a
given weight goes out roughly once every thousand steps; DGC's delayed updates need
thousands of steps to catch up (the paper trains for tens of thousands). With
:func:`~companion.compression.train_many` a step costs a few milliseconds *per run*
(Python, one run after another): too slow for 30 runs x 2,000 steps in a live class.

Here every run's weights are rows of one tensor ``[R, n_params]`` (each layer a view of
it), so a step is the same few dozen batched tensor operations whatever R is: one
batched forward/backward, one batched top-k per layer, and ONE all-gather carrying the
dense runs' gradients and the sparse runs' (indices, values). Per run, the algorithm is
exactly :class:`~companion.compression.DGC` followed by
:class:`~companion.compression.train.MomentumSGD`; a test checks each stacked run against
:func:`~companion.compression.train` with the same settings. Only floating-point
rounding differs: batched matmuls and in-place updates round differently from one run's
own operations.
"""
from __future__ import annotations

import dataclasses
import math
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from .. import runtime
from .lr import lr_at
from ..data import global_batch_indices, shard
from .sparse import DGCConfig, density_schedule, lr_warmup
from .train import BiasFreeMLP, check_run, split_digits
from ..validation import positive_int, preflight

__all__ = ["train_stacked"]

def _settings(runs: list[dict], momentum: float) -> list[dict]:
    """``{method, seed, config}`` per run: a DGC run's settings become the same
    :class:`~companion.compression.DGCConfig` the reference builds, which checks them."""
    out = []
    for run in runs:
        run = dict(run)
        method, seed = run.pop("method", None), run.pop("seed", 0)
        if method == "dgc":
            try:
                config = DGCConfig(momentum=momentum, **run)
            except TypeError:
                raise ValueError(f"unknown settings {sorted(run)} for a DGC run; it takes "
                                 f"{[f.name for f in dataclasses.fields(DGCConfig)]}.") from None
        elif method == "dense" and not run:
            config = None
        elif method == "dense":
            raise ValueError(f"unknown settings {sorted(run)}: a dense run takes only a seed.")
        else:
            raise ValueError(f"train_stacked runs 'dense' and 'dgc' only, got {method!r}; "
                             "train other methods with train_many().")
        out.append({"method": method, "seed": seed, "config": config})
    return out


def _column(values, device) -> torch.Tensor:
    """Per-run settings as an [R, 1] column, to broadcast over a run's parameters."""
    return torch.tensor(values, device=device).view(-1, 1)


class _Stack:
    """R bias-free MLPs as one ``[R, n]`` parameter tensor; layers are views into it."""

    def __init__(self, settings: list[dict], hidden: int, device):
        # Each run's model is built on the CPU as train() builds it (same initial bits),
        # then the stacked weights move.
        models = [BiasFreeMLP(hidden=hidden, seed=s["seed"]) for s in settings]
        layers = [m for m in models[0] if isinstance(m, torch.nn.Linear)]
        self.shapes = [tuple(layer.weight.shape) for layer in layers]
        self.sizes = [layer.weight.numel() for layer in layers]
        self.params = torch.stack([torch.cat([p.detach().reshape(-1) for p in m.parameters()])
                                   for m in models]).to(device).requires_grad_()

    def layer_views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        return list(flat.split(self.sizes, dim=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` is ``[R, batch, 64]``: every run sees its own batch."""
        views = self.layer_views(self.params)
        for i, (w, shape) in enumerate(zip(views, self.shapes)):
            x = x @ w.view(-1, *shape).transpose(1, 2)
            if i < len(views) - 1:
                x = torch.relu(x)
        return x


class _StackedDGC:
    """DGC's local part (:meth:`companion.compression.DGC.encode`) for many runs at once."""

    def __init__(self, settings: list[dict], sizes: list[int], momentum: float, device):
        self.settings, self.sizes, self.momentum = settings, sizes, momentum
        self.device = device
        # 0/1 float columns: multiplying by them is exact and far cheaper than where().
        configs = [s["config"] for s in settings]
        self.correct = _column([float(c.momentum_correction) for c in configs], device)
        self.mask = _column([float(c.factor_masking) for c in configs], device)
        self.clip = _column([c.clip_norm or math.inf for c in configs], device)
        self.u = torch.zeros(len(settings), sum(sizes), device=device)
        self.v = torch.zeros_like(self.u)
        self._cache = {}

    def _selection(self, layer: int, densities: tuple) -> tuple:
        """``(k_max, keep, k per run)`` for one layer: ``keep`` is ``[R, k_max]`` 0/1 floats
        (during warm-up runs keep different k) or None when every run keeps k_max.
        Cached: the densities change only during warm-up."""
        key = (layer, densities)
        if key not in self._cache:
            n = self.sizes[layer]
            # k per run is a count, logged as bytes and read on the host: made on the CPU,
            # only the mask that multiplies values moves to the device.
            ks = torch.tensor([max(1, math.ceil(d * n)) for d in densities], device="cpu")
            k_max = int(ks.max())
            keep = (torch.arange(k_max, device="cpu") < ks[:, None]).float()
            self._cache[key] = (k_max, None if bool(keep.all()) else keep.to(self.device), ks)
        return self._cache[key]

    def encode(self, grads: torch.Tensor, step: int):
        """Clip, accumulate, pick each layer's top-k, clear what was sent.

        A step's cost is dominated by passes over the full ``[R, n]`` tensors, so the
        clearing after the top-k works on the ``[R, k]`` selected entries only.
        """
        norm = grads.square().sum(1, keepdim=True).sqrt()
        limit = self.clip / math.sqrt(runtime.world_size())
        # In place: the caller has no further use for this step's raw gradient.
        g = grads.mul_(torch.clamp(limit / (norm + 1e-12), max=1.0))
        # Without momentum correction u stays zero, so m*u + g is exactly g: gradient
        # dropping's accumulation.
        corrected = self.u.mul_(self.momentum).add_(g)
        self.v += corrected
        self.u = corrected.mul_(self.correct)
        densities = tuple(density_schedule(step, s["config"].density, s["config"].warmup_steps)
                          for s in self.settings)
        payload = []
        for layer, (u, v) in enumerate(zip(self.u.split(self.sizes, 1),
                                           self.v.split(self.sizes, 1))):
            k_max, keep, ks = self._selection(layer, densities)
            # Unsorted when every run keeps k_max; sorted otherwise, so run r's k_r
            # entries come first and the rest are padding, masked by `keep`.
            idx = v.abs().topk(k_max, dim=1, sorted=keep is not None).indices
            values = v.gather(1, idx)
            sent = values if keep is None else values * keep
            payload.append((idx.to(torch.int32), sent, ks))
            v.scatter_(1, idx, values - sent)  # 0 where sent, unchanged where padding
            # Factor masking zeroes the velocity of what was sent, in masked runs only.
            drop = self.mask if keep is None else self.mask * keep
            u.scatter_(1, idx, u.gather(1, idx) * (1.0 - drop))
        return payload


def _exchange(grads: torch.Tensor, n_dense: int, payload, sizes: list[int]) -> torch.Tensor:
    """ONE all-gather per step carries the dense runs' gradients and the sparse runs'
    (indices, values). Returns every run's sum over ranks, ``[R, n]``, dense runs first.

    Why not an all-reduce for the dense runs: on a 2-core machine with 4 ranks a gloo
    collective costs milliseconds, more than the step's arithmetic, so one collective
    instead of two nearly halves the step. Summing in rank order differs from gloo's
    all-reduce by fp32 rounding only.
    """
    world = runtime.world_size()
    dense = grads[:n_dense]
    pieces = [dense.reshape(-1).view(torch.int32)]
    pieces += [t.reshape(-1) for idx, val, _ in payload for t in (idx, val.view(torch.int32))]
    local = torch.cat(pieces)
    gathered = [local]
    if world > 1:
        gathered = [torch.empty_like(local) for _ in range(world)]
        dist.all_gather(gathered, local)
    every = torch.stack(gathered)  # [world, message]
    total = torch.zeros_like(grads)
    offset = dense.numel()
    for r in range(world):  # rank order, as the reference sums
        total[:n_dense] += every[r, :offset].view(torch.float32).view_as(dense)
    for (idx, val, _), target in zip(payload, total[n_dense:].split(sizes, 1)):
        runs, k = idx.shape

        def per_run(block):  # [world, runs * k] -> [runs, world * k], rank 0's entries first
            return block.reshape(world, runs, k).transpose(0, 1).reshape(runs, world * k)

        # Rank order along each row: scatter_add_ adds rank 0's value first, as the
        # reference's per-rank decode-and-sum does.
        all_idx = per_run(every[:, offset:offset + idx.numel()])
        all_val = per_run(every[:, offset + idx.numel():offset + 2 * idx.numel()])
        target.scatter_add_(1, all_idx.long(), all_val.view(torch.float32))
        offset += 2 * idx.numel()
    return total


def _check_stacked(runs, steps, lr, momentum, schedule, global_batch, hidden, eval_every,
                   progress_every, world_size=1) -> list[dict]:
    check_run(steps, lr, global_batch, hidden, eval_every, world_size, schedule)
    positive_int("progress_every", progress_every, "pass 0 for no progress lines.", minimum=0)
    return _settings(runs, momentum)


@preflight(_check_stacked)
def train_stacked(runs: list[dict], *, steps: int = 2000, lr: float = 0.05,
                  momentum: float = 0.95, schedule: str = "cosine", global_batch: int = 64,
                  hidden: int = 128, eval_every: int = 250, progress_every: int = 0,
                  data=None) -> list[dict]:
    """Train every run of ``runs`` (``method`` "dense" or "dgc", ``seed`` and DGC's
    settings) as one stacked model on this process group; per-run curves as
    :func:`~companion.compression.train_many` returns them.

    ``progress_every > 0``: rank 0 prints a line every that many steps (the notebook
    shows ranks' output live), since a long run otherwise looks like a hung cell.

    Wire bytes are each run's own payload (``k`` int32 indices and ``k`` fp32 values per
    layer). During warm-up the stacked all-gather pads runs to the longest ``k``, an
    artefact of stacking that a single run would not send.
    """
    dev = runtime.device()
    world, rank = runtime.world_size(), runtime.rank()
    given = _check_stacked(runs, steps, lr, momentum, schedule, global_batch, hidden, eval_every,
                           progress_every, world)
    (x_train, y_train), (x_test, y_test) = data or split_digits()
    x_train, y_train, x_test, y_test = (t.to(dev) for t in (x_train, y_train, x_test, y_test))
    # Dense runs first, so each group is a slice (a view) of the stacked tensors.
    order = sorted(range(len(given)), key=lambda i: given[i]["method"] != "dense")
    settings = [given[i] for i in order]
    n_dense = sum(s["method"] == "dense" for s in settings)
    stack = _Stack(settings, hidden, dev)
    n_params = sum(stack.sizes)
    dgc = _StackedDGC(settings[n_dense:], stack.sizes, momentum, dev)
    # Momentum-corrected runs already send velocity, so their optimizer has none.
    opt_momentum = _column([0.0 if s["config"] and s["config"].momentum_correction
                            else momentum for s in settings], dev)
    buffer = torch.zeros(len(settings), n_params, device=dev)
    warmups = [s["config"].warmup_steps if s["config"] else 0 for s in settings]
    # Bytes sent, a count logged beside the CPU ks and turned into lists at the end.
    dense_sent = torch.full((n_dense,), 4 * n_params, device="cpu")
    losses_log, sent_log, evals = [], [], []
    runtime.synchronize()
    start = time.process_time()
    for step in range(steps):
        idx = torch.stack([shard(global_batch_indices(len(y_train), global_batch, step, s["seed"]),
                                 rank, world) for s in settings]).to(dev)
        losses = F.cross_entropy(stack.forward(x_train[idx]).flatten(0, 1), y_train[idx].view(-1),
                                 reduction="none").view(idx.shape).mean(1)
        # Runs share no weights, so the gradient of the sum is each run's own gradient.
        (grads,) = torch.autograd.grad(losses.sum(), stack.params)
        payload = dgc.encode(grads[n_dense:], step) if n_dense < len(settings) else []
        total = _exchange(grads, n_dense, payload, stack.sizes)
        sent_log.append(torch.cat([dense_sent, *([sum(8 * ks for _, _, ks in payload)]
                                                 if payload else [])]))
        losses_log.append(losses.detach())
        base = lr_at(lr, step, steps, schedule)
        lrs = _column([-base * lr_warmup(step, w) for w in warmups], dev)
        with torch.no_grad():
            buffer.mul_(opt_momentum).add_(total.div_(world))
            stack.params.addcmul_(lrs, buffer)
            if (step + 1) % eval_every == 0 or step == steps - 1:
                preds = stack.forward(x_test.expand(len(settings), -1, -1)).argmax(2)
                evals.append((step + 1, (preds == y_test).float().mean(1)))
        if progress_every > 0 and rank == 0 and (step + 1) % progress_every == 0:
            runtime.synchronize()
            print(f"step {step + 1:,}/{steps:,} ({time.process_time() - start:.0f} CPU-s)",
                  flush=True)
    runtime.synchronize()
    cpu = (time.process_time() - start) / len(settings)
    # Logs are kept as tensors and turned into lists once: per-step Python loops over
    # the runs would cost more than the step's arithmetic.
    losses_all = torch.stack(losses_log, 1).tolist()
    sent_all = torch.stack(sent_log, 1).tolist()
    accs_all = torch.stack([a for _, a in evals], 1).tolist()
    results = []
    for i, (s, row) in enumerate(zip(settings, stack.params.detach())):
        params = ([w.view(shape).clone() for w, shape in
                   zip(stack.layer_views(row[None]), stack.shapes)] if rank == 0 else None)
        results.append({"method": s["method"], "seed": s["seed"], "losses": losses_all[i],
                        "bytes": sent_all[i], "eval_steps": [e for e, _ in evals],
                        "test_acc": accs_all[i], "dense_bytes": 4 * n_params,
                        "params": params})  # final weights, as train() returns them
    back = {i: results[j] for j, i in enumerate(order)}  # the caller's order
    return [dict(back[i], cpu_seconds=cpu) for i in range(len(given))]
