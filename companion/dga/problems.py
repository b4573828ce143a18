"""The digits problem delayed gradient averaging trains: data split, TinyMLP gradients.

Taught in notebook 08 (``notebooks/08_delayed_gradient_averaging.ipynb``, sections 2-6):
each ``(grad_fn, w0, accuracy_fn)`` is what :func:`.algorithms.run_worker` trains on one
rank, on a flat parameter vector.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from .. import runtime
from ..data import digits_batch, load_digits
from ..models import TinyMLP
from ..validation import positive_int

__all__ = ["N_TRAIN", "digits_split", "mlp_problem", "side_by_side"]

N_TRAIN = 1440  # divisible by common batch sizes; the other 357 digits are held out


def digits_split(data=None):
    """``(train, test)`` digits tensors: 1440 training samples, 357 held out.

    ``data`` is ``load_digits()``'s result; pass it from the notebook so that the ranks
    need not import scikit-learn (seconds per rank on a busy 2-core machine).

    The split is a fixed random permutation: the file is ordered by writer, so its last
    rows would make a test set of unseen writers rather than unseen digits.
    """
    x, y = load_digits() if data is None else data
    # A CPU generator's draw, indexing the CPU data set: the split is the same everywhere.
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0), device="cpu")
    train, test = perm[:N_TRAIN], perm[N_TRAIN:]
    return (x[train], y[train]), (x[test], y[test])


def mlp_problem(rank_: int, world_size_: int, *, batch_size: int = 64, seed: int = 0,
                hidden: int = 128, data=None, device=None):
    """``(grad_fn, w0, accuracy_fn)`` for TinyMLP on this rank's shard of the digits batches,
    on ``device`` (default: :func:`companion.runtime.device`, the rank's own device)."""
    positive_int("batch_size", batch_size, "pass the global batch size, e.g. batch_size=64.")
    positive_int("hidden", hidden, "pass the hidden width, e.g. hidden=128.")
    dev = runtime.device() if device is None else device
    train_data, (x_test, y_test) = digits_split(data)
    x_test, y_test = x_test.to(dev), y_test.to(dev)
    model = TinyMLP(hidden=hidden, seed=seed).to(dev)
    params = list(model.parameters())

    def grad_fn(w, step):
        vector_to_parameters(w, params)
        x, y = digits_batch(step, batch_size, rank_, world_size_, seed=seed, data=train_data,
                            device=dev)
        loss = F.cross_entropy(model(x), y)
        return parameters_to_vector(torch.autograd.grad(loss, params)), loss.item()

    def accuracy_fn(w):
        vector_to_parameters(w, params)
        with torch.no_grad():
            return (model(x_test).argmax(1) == y_test).float().mean().item()

    return grad_fn, parameters_to_vector(params).detach().clone(), accuracy_fn


def side_by_side(problems: list):
    """Several ``(grad_fn, w0, accuracy_fn)`` problems as one, on the concatenated vector.

    Every algorithm here updates elementwise (the all-reduce averages elementwise too),
    so this is exactly independent runs that share each message: the notebook trains
    its seeds this way, paying one all-reduce per step instead of one per seed.
    """
    sizes = [w0.numel() for _, w0, _ in problems]

    def grad_fn(w, step):
        outs = [fn(part, step) for (fn, _, _), part in zip(problems, w.split(sizes))]
        return torch.cat([g for g, _ in outs]), sum(loss for _, loss in outs) / len(outs)

    def accuracy_fn(w):
        return [acc(part) for (_, _, acc), part in zip(problems, w.split(sizes))]

    return grad_fn, torch.cat([w0 for _, w0, _ in problems]), accuracy_fn
