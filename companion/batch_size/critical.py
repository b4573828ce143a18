"""The critical batch size, measured on the digits data: when a bigger batch stops paying.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``), after CS336 L8
section 3.6 and its transcript ("at a certain point there is a critical batch size,
where the gain from an additional batch element is less than from another SGD step")
and McCandlish, Kaplan, Amodei et al. 2018, "An Empirical Model of Large-Batch Training"
(https://arxiv.org/abs/1812.06162).

This is about optimisation, not parallelism, so it runs in one process: data
parallelism over N ranks computes exactly the same step as one process on the same
global batch (notebooks 02-03 test that), so how many *steps* a batch size needs does
not depend on how the batch is spread. For each batch size B we train ``TinyMLP`` with
Adam from the same seed, at the best learning rate of a small grid, until the loss on the
whole digits set first falls to ``target_loss``, and record the steps S and the samples
E = B S. McCandlish et al.'s model (their equation 2.11) is

    (S / S_min - 1) (E / E_min - 1) = 1,  i.e.  S = S_min + E_min / B,

so below B_crit = E_min / S_min doubling the batch nearly halves the steps (the samples
stay near E_min: perfect scaling), and above it the steps stop falling while the samples
grow with B: data parallelism past B_crit buys nothing. They predict B_crit from the
"simple" gradient noise scale B_simple = tr(Sigma) / |G|^2 (their equation 2.9), the
per-example gradient variance over the squared true gradient, which we also measure.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..validation import positive_int, positive_number

__all__ = ["steps_to_target", "critical_batch_sweep", "fit_critical_batch",
           "gradient_noise_scale"]

# Every batch from 8 to 1,024 reaches the target first at one of these; 3e-3 and 3e-1,
# tried beside them, never did (so the grid has its optimum inside, and costs 3 models).
LRS = (1e-2, 3e-2, 1e-1)
BATCHES = (8, 16, 32, 64, 128, 256, 512, 1024)


def _check(batch_size, lr, target_loss, max_steps, hidden):
    positive_int("batch_size", batch_size, "pass a batch size in 1..1797 (the digits set).")
    if batch_size > 1797:
        raise ValueError(f"batch_size must be at most 1797 (the digits set), got {batch_size}.")
    positive_number("lr", lr, "pass a learning rate, e.g. lr=0.01.")
    positive_number("target_loss", target_loss, "pass a loss to reach, e.g. target_loss=0.15.")
    positive_int("max_steps", max_steps, "pass a step budget, e.g. max_steps=2000.")
    positive_int("hidden", hidden, "pass the MLP width, e.g. hidden=32.")


def _stack(models):
    """TinyMLPs as batched ``(weight [M, in, out], bias [M, 1, out])`` pairs, so one
    ``baddbmm`` per layer runs M models at once (Python overhead, not FLOPs, bounds a
    model this small, and the sweep trains dozens of them)."""
    layers = [m for m in models[0] if isinstance(m, torch.nn.Linear)]
    out = []
    for i in range(len(layers)):
        lins = [[m for m in model if isinstance(m, torch.nn.Linear)][i] for model in models]
        out.append(torch.stack([lin.weight.detach().T for lin in lins]).requires_grad_())
        out.append(torch.stack([lin.bias.detach()[None] for lin in lins]).requires_grad_())
    return out


def _forward(params, x):
    # The TinyMLP forward (Linear -> ReLU ..., Linear) for every model at once.
    for i in range(0, len(params), 2):
        x = torch.baddbmm(params[i + 1], x, params[i])
        if i + 2 < len(params):
            x = torch.relu(x)
    return x


def _train(batch_size, lrs, seeds, target_loss, max_steps, hidden, data):
    """Train one TinyMLP per (seed, lr) with Adam, all at once, each on its seed's batches.

    Returns, per seed, ``(steps, lr index)`` of the first model to reach ``target_loss``
    on the whole set (``(None, None)`` if none did). The loss is checked after every step
    for the first 16 steps, then every ``step // 16`` steps: the steps are an upper bound
    within 1/16 (6%). Checking every step would cost several times the training.
    """
    from ..data import global_batch_indices
    from ..models import TinyMLP

    x, y = data
    grid = [(s, lr) for s in seeds for lr in lrs]
    params = _stack([TinyMLP(hidden=hidden, seed=s) for s, _ in grid])
    lr = torch.tensor([lr for _, lr in grid])[:, None, None]
    moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]
    beta1, beta2, eps = 0.9, 0.999, 1e-8  # torch.optim.Adam's defaults
    found = {s: (None, None) for s in seeds}
    everything = x.expand(len(grid), -1, -1)
    for step in range(1, max_steps + 1):
        idx = torch.stack([global_batch_indices(len(y), batch_size, step - 1, s) for s, _ in grid])
        logits = _forward(params, x[idx])
        # Sum over models of each model's mean loss: every model gets its own gradient.
        loss = F.cross_entropy(logits.flatten(0, 1), y[idx].flatten(), reduction="none")
        grads = torch.autograd.grad(loss.view(len(grid), -1).mean(1).sum(), params)
        with torch.no_grad():
            for p, g, (m, v) in zip(params, grads, moments):
                m.mul_(beta1).add_(g, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                denom = (v / (1 - beta2 ** step)).sqrt_().add_(eps)
                p.sub_(lr * (m / (1 - beta1 ** step)) / denom)
            if step > 16 and step % (step // 16):
                continue
            full = F.cross_entropy(_forward(params, everything).transpose(1, 2),
                                   y.expand(len(grid), -1), reduction="none").mean(1)
        for k, (s, _) in enumerate(grid):
            if found[s][0] is None and full[k] <= target_loss:  # NaN (diverged) never is
                found[s] = (step, k % len(lrs))
        if all(v[0] is not None for v in found.values()):
            break
    return found, params


def steps_to_target(batch_size: int, lr: float, target_loss: float = 0.15,
                    max_steps: int = 2000, seed: int = 0, hidden: int = 32, data=None):
    """Adam steps until the loss on the whole digits set is <= ``target_loss`` (or
    ``None`` if ``max_steps`` do not reach it), checked as in the sweep (within 6%).
    Deterministic given ``seed``."""
    _check(batch_size, lr, target_loss, max_steps, hidden)
    from ..data import load_digits

    data = load_digits() if data is None else data
    return _train(batch_size, [lr], [seed], target_loss, max_steps, hidden, data)[0][seed][0]


def critical_batch_sweep(batch_sizes=BATCHES, target_loss: float = 0.15, lrs=LRS,
                         seeds=(0, 1), max_steps: int = 2000, hidden: int = 32) -> dict:
    """Steps and samples to reach ``target_loss`` as the batch grows (one process).

    For every batch size, one model per (seed, learning rate in ``lrs``) trains from the
    same TinyMLP initialisation of its seed; a seed's steps are those of its best learning
    rate (the first to reach the target), averaged over ``seeds``. Returns
    ``{"rows": [{"batch", "steps", "samples", "steps_ratio", "lr", "per_seed"}...],
    "fit": fit_critical_batch(rows), "noise_scale": {"init", "at_target"},
    "target_loss"}``. ``steps_ratio`` is steps(previous batch) / steps(this batch): 2 means
    doubling the batch halved the steps, 1 means it bought nothing. ``lr`` lists each
    seed's best learning rate (the grid's edge means: widen ``lrs``).
    """
    batch_sizes = [positive_int("batch_sizes", b, "pass batch sizes, e.g. (8, 16, 32).")
                   for b in batch_sizes]
    if len(batch_sizes) < 3 or batch_sizes != sorted(set(batch_sizes)):
        raise ValueError(f"batch_sizes must be at least 3 increasing sizes, got {batch_sizes}.")
    lrs = [positive_number("lrs", lr, "pass learning rates, e.g. (1e-3, 1e-2)") for lr in lrs]
    if not lrs or lrs != sorted(set(lrs)):
        raise ValueError(f"lrs must be an increasing grid of learning rates, got {lrs!r}.")
    seeds = [positive_int("seeds", s, "pass seeds, e.g. (0, 1).", minimum=0) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct seeds, at least one, got {seeds!r}.")
    for b in batch_sizes:
        _check(b, lrs[0], target_loss, max_steps, hidden)
    from ..data import load_digits
    from ..models import TinyMLP

    data = load_digits()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matmuls: one thread is as fast, and results repeat
    try:
        rows = []
        for b in batch_sizes:
            found, params = _train(b, lrs, seeds, target_loss, max_steps, hidden, data)
            if any(steps is None for steps, _ in found.values()):
                raise RuntimeError(f"batch {b} did not reach loss {target_loss} in {max_steps} "
                                   "steps at any learning rate; raise max_steps or target_loss.")
            steps = sum(v[0] for v in found.values()) / len(seeds)
            rows.append({"batch": b, "steps": steps, "samples": b * steps,
                         "steps_ratio": rows[-1]["steps"] / steps if rows else None,
                         "lr": [lrs[v[1]] for v in found.values()],
                         "per_seed": [v[0] for v in found.values()]})
            if b == batch_sizes[0]:  # the smallest batch's winning model, at the target
                k = seeds.index(seeds[0]) * len(lrs) + found[seeds[0]][1]
                at_target = _unstack(params, k, hidden)
        noise = {"init": gradient_noise_scale(TinyMLP(hidden=hidden, seed=seeds[0]), *data),
                 "at_target": gradient_noise_scale(at_target, *data)}
    finally:
        torch.set_num_threads(threads)
    return {"rows": rows, "fit": fit_critical_batch(rows), "noise_scale": noise,
            "target_loss": target_loss}


def _unstack(params, k, hidden):
    from ..models import TinyMLP

    model = TinyMLP(hidden=hidden)
    with torch.no_grad():
        for lin, (w, b) in zip([m for m in model if isinstance(m, torch.nn.Linear)],
                               zip(params[0::2], params[1::2])):
            lin.weight.copy_(w[k].T)
            lin.bias.copy_(b[k, 0])
    return model


def fit_critical_batch(rows) -> dict:
    """Fit S = S_min + E_min / B (McCandlish et al. eq. 2.11) to ``rows`` of
    ``{"batch", "steps"}``, by least squares on the relative error.

    Returns ``{"s_min", "e_min", "b_crit"}`` with ``b_crit = e_min / s_min``: the batch at
    which a run needs twice the minimum steps and twice the minimum samples.
    """
    if len(rows) < 2 or any("batch" not in r or "steps" not in r for r in rows):
        raise ValueError("rows must be at least 2 dicts with 'batch' and 'steps', as "
                         "critical_batch_sweep returns them.")
    b = torch.tensor([float(r["batch"]) for r in rows], dtype=torch.float64)
    s = torch.tensor([float(r["steps"]) for r in rows], dtype=torch.float64)
    design = torch.stack([torch.ones_like(b), 1 / b], dim=1) / s[:, None]
    coef = torch.linalg.lstsq(design, torch.ones_like(s)[:, None]).solution[:, 0]
    s_min, e_min = coef.tolist()
    return {"s_min": s_min, "e_min": e_min,
            "b_crit": e_min / s_min if s_min > 0 else math.inf}


def gradient_noise_scale(model, x, y) -> float:
    """B_simple = tr(Sigma) / |G|^2 on the data ``(x, y)`` (McCandlish et al. eq. 2.9).

    G is the mean gradient of the cross-entropy over all examples, tr(Sigma) the summed
    variance of the per-example gradients: the batch size at which the noise in a batch's
    gradient equals the gradient itself. Exact for any model (``torch.func``); for a
    stack of ``Linear`` layers and ReLUs (``TinyMLP``) in closed form, as fast as one
    backward pass (:func:`_linear_stack_noise`).
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}.")
    if len(x) < 2 or len(x) != len(y):
        raise ValueError(f"x and y must hold the same number (>= 2) of examples, got "
                         f"{len(x)} and {len(y)}.")
    if isinstance(model, torch.nn.Sequential) and all(
            isinstance(m, (torch.nn.Linear, torch.nn.ReLU)) for m in model):
        return _linear_stack_noise(model, x, y)
    from torch.func import functional_call, grad, vmap

    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return F.cross_entropy(functional_call(model, p, (xi[None],)), yi[None])

    per_example = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    flat = torch.cat([g.reshape(len(x), -1) for g in per_example.values()], dim=1).double()
    mean = flat.mean(0)
    trace = flat.var(0, unbiased=True).sum()
    return (trace / mean.pow(2).sum()).item()


def _linear_stack_noise(model, x, y) -> float:
    """``gradient_noise_scale`` of Linear and ReLU layers without per-example gradients.

    Example i's gradient for a Linear layer is ``delta_i a_i^T`` (and ``delta_i`` for the
    bias), ``a_i`` the layer's input and ``delta_i`` the loss's gradient at its output, so
    its squared norm is ``|delta_i|^2 (|a_i|^2 + 1)``, and
    ``sum_i |g_i - G|^2 = sum_i |g_i|^2 - n |G|^2``: one backward pass of the summed loss
    gives every ``delta_i``. Equal to the ``torch.func`` path up to float32 rounding
    (tests/test_batch_size.py); computed in float64 from there on.
    """
    n, inputs, outputs = len(x), [], []
    h = x
    with torch.enable_grad():
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                inputs.append(h.detach().double())
                bias = None if layer.bias is None else layer.bias.detach()
                h = F.linear(h, layer.weight.detach(), bias)
                if not h.requires_grad:  # the first layer: the weights' own grads are not needed
                    h.requires_grad_()
                outputs.append(h)
            else:
                h = layer(h)
        deltas = torch.autograd.grad(F.cross_entropy(h, y, reduction="sum"), outputs)
    per_example = torch.zeros(n, dtype=torch.float64)
    mean_sq = 0.0
    for a, d, layer in zip(inputs, (d.double() for d in deltas), [m for m in model if
                                                                   isinstance(m, torch.nn.Linear)]):
        has_bias = layer.bias is not None
        per_example += d.pow(2).sum(1) * (a.pow(2).sum(1) + has_bias)
        mean_sq += (d.T @ a / n).pow(2).sum() + (d.mean(0).pow(2).sum() if has_bias else 0.0)
    trace = (per_example.sum() - n * mean_sq) / (n - 1)
    return (trace / mean_sq).item()
