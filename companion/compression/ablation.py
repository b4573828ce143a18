"""Many runs in lockstep on real ranks: the DGC ablation of L20 p.47 and the comparison
of every compressor.

Taught in notebook 07 (``notebooks/07_gradient_compression.ipynb``).

On a 2-core machine most of a 4-rank step's cost is the collective, not the tiny MLP.
:func:`train_many` therefore advances many independent runs together, each with its own
compressor object, and packs all their payloads into ONE all-gather per step; each run's
numbers are exactly those of :func:`companion.compression.train` with the same settings (a
test checks it), only the transport is shared. :func:`ablation` needs thousands of steps
and uses the stacked engine of ``stacked.py`` instead.
"""
from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from .. import runtime
from ..data import digits_batch
from ..experiments import experiment
from ..i18n import gettext as tr
from .lr import lr_at
from .sparse import ABLATION
from .stacked import train_stacked
from .train import (BiasFreeMLP, MomentumSGD, _accuracy, _check_compressor, check_run,
                    make_compressor, split_digits)
from .wire import all_gather_payloads, payload_bytes
from ..validation import accepts, preflight, run_preflight

__all__ = ["ablation_settings", "train_many", "ablation"]


def ablation_settings(row: str, *, clip_norm: float, warmup_steps: int, density: float) -> dict:
    """``train`` keyword arguments for one row of L20 p.47 ("dense" or an ABLATION key)."""
    if row == "dense":
        return {"method": "dense"}
    if row not in ABLATION:
        raise ValueError(f"unknown ablation row {row!r}; pick 'dense' or one of {list(ABLATION)}.")
    flags = dict(ABLATION[row])
    return {"method": "dgc", "density": density,
            "momentum_correction": flags["momentum_correction"],
            "factor_masking": flags["factor_masking"],
            "clip_norm": clip_norm if flags.get("clip") else None,
            "warmup_steps": warmup_steps if flags.get("warmup") else 0}


def _check_many(runs, steps, lr, momentum, global_batch, hidden, eval_every, schedule,
                world_size=1) -> None:
    check_run(steps, lr, global_batch, hidden, eval_every, world_size, schedule)
    for settings in runs:
        settings = dict(settings)
        seed, method = settings.pop("seed", 0), settings.pop("method", None)
        if method == "powersgd":
            raise ValueError("PowerSGD all-reduces its own factors and cannot share the "
                             "all-gather; run it with train().")
        _check_compressor(method, momentum, seed, settings)


@preflight(_check_many)
def train_many(runs: list[dict], *, steps: int = 300, lr: float = 0.1, momentum: float = 0.9,
               global_batch: int = 64, hidden: int = 128, eval_every: int = 25,
               schedule: str = "constant", data=None) -> list[dict]:
    """Train one model per entry of ``runs`` (each: ``seed`` plus :func:`train`'s
    compressor settings; any method but PowerSGD), one shared all-gather per step."""
    dev = runtime.device()
    world, rank = runtime.world_size(), runtime.rank()
    _check_many(runs, steps, lr, momentum, global_batch, hidden, eval_every, schedule, world)
    (x_train, y_train), (x_test, y_test) = data or split_digits()
    x_test, y_test = x_test.to(dev), y_test.to(dev)
    state = []
    for settings in runs:
        settings = dict(settings)
        seed, method = settings.pop("seed", 0), settings.pop("method")
        model = BiasFreeMLP(hidden=hidden, seed=seed).to(dev)
        params = list(model.parameters())
        comp = make_compressor(method, [p.detach() for p in params], momentum=momentum,
                               seed=seed, **settings)
        opt = MomentumSGD(params, lr=lr, momentum=0.0 if comp.applies_momentum else momentum)
        out = {"method": method, "seed": seed, "losses": [], "bytes": [], "eval_steps": [],
               "test_acc": [], "dense_bytes": 4 * sum(p.numel() for p in params)}
        state.append((seed, model, params, comp, opt, out))
    equal_sizes = all(s[3].equal_sizes for s in state)
    runtime.synchronize()
    cpu_start = time.process_time()
    for step in range(steps):
        payloads, counts, grads_all = [], [], []
        for seed, model, params, comp, opt, out in state:
            x, y = digits_batch(step, global_batch, rank, world, seed=seed,
                                data=(x_train, y_train), device=dev)
            loss = F.cross_entropy(model(x), y)
            grads = list(torch.autograd.grad(loss, params))
            p = comp.encode(grads, step)
            out["losses"].append(loss.item())
            out["bytes"].append(payload_bytes(p))
            payloads += p
            counts.append(len(p))
            grads_all.append(grads)
        gathered = all_gather_payloads(payloads, equal_sizes=equal_sizes)
        offset = 0
        for (seed, model, params, comp, opt, out), n, grads in zip(state, counts, grads_all):
            mine = [rank_payloads[offset:offset + n] for rank_payloads in gathered]
            offset += n
            for p, u in zip(params, comp.combine(mine, grads)):
                p.grad = u
            opt.lr = lr_at(lr, step, steps, schedule) * comp.lr_scale(step)
            opt.step()
            if (step + 1) % eval_every == 0 or step == steps - 1:
                out["eval_steps"].append(step + 1)
                out["test_acc"].append(_accuracy(model, x_test, y_test))
    runtime.synchronize()
    for *_, out in state:
        out["cpu_seconds"] = (time.process_time() - cpu_start) / len(state)
    return [s[-1] for s in state]


def _ablation_summary(results) -> str:
    rows = [tr("{row} final test accuracy per seed").format(row=f"{tr('row'):<24}")]
    for row, runs in results[0].items():
        rows.append(f"{row:<24} " + "  ".join(f"{r['test_acc'][-1]:.3f}" for r in runs))
    return "\n".join(rows)


def _ablation_runs(seeds, rows, density, clip_norm, warmup_steps) -> list[dict]:
    return [dict(seed=s, **ablation_settings(row, clip_norm=clip_norm, warmup_steps=warmup_steps,
                                             density=density)) for row in rows for s in seeds]


def _check_ablation(seeds, rows, density, clip_norm, warmup_steps, train_kwargs,
                    world_size=1) -> None:
    runs = _ablation_runs(seeds, list(rows or ["dense", *ABLATION]), density, clip_norm,
                          warmup_steps)
    accepts("train_kwargs", train_stacked, (runs,), train_kwargs,
            "pass only train_stacked()'s keywords (steps, lr, global_batch, ...).")
    run_preflight(train_stacked, (runs,), train_kwargs, world_size)


@experiment("compression_ablation", summarize=_ablation_summary)
@preflight(_check_ablation)
def ablation(*, seeds=(0, 1, 2, 3, 4), rows=None, density: float = 0.001, clip_norm: float = 0.5,
             warmup_steps: int = 48, **train_kwargs) -> dict:
    """Every row of the DGC ablation for every seed: ``{row: [run per seed, ...]}``.

    All runs train as one stacked model (:func:`~companion.compression.stacked.train_stacked`,
    2,000 steps by default): DGC needs thousands of steps at 99.9% sparsity.
    """
    rows = list(rows or ["dense", *ABLATION])
    runs = _ablation_runs(seeds, rows, density, clip_norm, warmup_steps)
    done = iter(train_stacked(runs, **train_kwargs))
    return {row: [next(done) for _ in seeds] for row in rows}
