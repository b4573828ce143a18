"""Data-parallel training two ways: a parameter server, and all-reduce among peers.

Taught in notebook 02 (``notebooks/02_parameter_server_vs_allreduce.ipynb``). L19 pages
33-42 walk through the parameter server (Li et al., OSDI 2014) in five steps, which
:func:`parameter_server_train` performs literally, every step of training:

1. replicate: the server sends the current weights to every worker (a "pull");
2. split the data: worker w takes the w-th equal slice of the global batch;
3. compute gradients locally, on that slice;
4. push gradients to the server, which sums them (and divides by the workers);
5. update the weights, on the server.

:func:`all_reduce_train` drops the server: every rank keeps a replica, and one
all-reduce of the gradients (ring by default, any algorithm of
:mod:`companion.collectives`) replaces steps 1, 4 and 5's central role.
Both equal :func:`single_process_train` on the same global batches (tested).
``data`` lets the caller load the digits once and ship them to the ranks (loading
imports scikit-learn, which costs each rank seconds).
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from .. import runtime
from ..collectives import ALL_REDUCE_ALGORITHMS, traffic
from ..collectives.traffic import exchange
from ..data import digits_batch, load_digits
from ..experiments import experiment
from ..i18n import gettext as tr
from ..models import TinyMLP
from ..validation import one_of, positive_int, positive_number, preflight

__all__ = ["single_process_train", "parameter_server_train", "all_reduce_train"]


def _flat_grad(model) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def _check(steps, batch_size, lr, hidden, algorithm="ring", world_size=1) -> None:
    # Before the first collective, so a launched run fails on every rank the same way.
    positive_int("steps", steps, "pass the number of SGD steps, e.g. steps=20.")
    positive_int("batch_size", batch_size, "pass the global batch size, e.g. batch_size=48.")
    positive_number("lr", lr, "pass a learning rate such as lr=0.5.")
    positive_int("hidden", hidden, "pass the hidden width, e.g. hidden=64.")
    one_of("algorithm", algorithm, ALL_REDUCE_ALGORITHMS, "choose one of these, e.g. 'ring'.")
    if batch_size % world_size:
        raise ValueError(f"batch_size={batch_size} does not split over {world_size} ranks; "
                         f"use a multiple of {world_size}.")


def _check_server(steps, batch_size, lr, hidden, world_size) -> None:
    _check(steps, batch_size, lr, hidden)
    if world_size < 2:
        raise ValueError("a parameter server needs at least one worker: use world_size >= 2.")
    workers = world_size - 1
    if batch_size % workers:
        raise ValueError(f"batch_size={batch_size} does not split over {workers} workers; "
                         f"use a multiple of {workers}.")


def _sgd_(model, grad: torch.Tensor, lr: float) -> None:
    with torch.no_grad():
        vector_to_parameters(parameters_to_vector(model.parameters()) - lr * grad,
                             model.parameters())


def _local_gradient(model, x, y) -> tuple[torch.Tensor, float]:
    model.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    return _flat_grad(model), loss.item()


def single_process_train(steps: int = 20, batch_size: int = 48, lr: float = 0.5,
                         hidden: int = 64, data=None) -> dict:
    """The reference: one process, the whole global batch, plain SGD."""
    _check(steps, batch_size, lr, hidden)
    dev = runtime.device()
    data = load_digits() if data is None else data
    model = TinyMLP(hidden=hidden).to(dev)
    losses = []
    for step in range(steps):
        grad, loss = _local_gradient(model, *digits_batch(step, batch_size, data=data, device=dev))
        _sgd_(model, grad, lr)
        losses.append(loss)
    return {"losses": losses, "params": parameters_to_vector(model.parameters()).detach()}


def _ps_summary(results) -> str:
    server = results[0]
    return tr("parameter server: {workers} workers, final loss {loss:.4f}; server sent {sent} B "
              "and received {received} B").format(
        workers=len(results) - 1, loss=server["losses"][-1],
        sent=server["traffic"]["bytes_sent"], received=server["traffic"]["bytes_received"])


@experiment("collectives_parameter_server", summarize=_ps_summary)
@preflight(_check_server)
def parameter_server_train(steps: int = 20, batch_size: int = 48, lr: float = 0.5,
                           hidden: int = 64, data=None) -> dict:
    """Rank 0 is the server, ranks 1..N-1 the workers; the five steps of L19 p.33-42.

    Every rank returns ``losses`` and ``traffic`` (its byte counts). The server's losses
    are the global-batch loss per step (each worker pushes its loss as one extra number
    after its gradient), a worker's are its own slice's; the server also returns the
    final ``params``.
    """
    _check_server(steps, batch_size, lr, hidden, runtime.world_size())
    dev = runtime.device()
    n, r = dist.get_world_size(), dist.get_rank()
    workers = n - 1
    data = load_digits() if data is None else data
    # same seed everywhere; only the server's copy is trained
    model = TinyMLP(hidden=hidden).to(dev)
    weights = parameters_to_vector(model.parameters()).detach().clone()
    losses = []
    with traffic() as t:
        for step in range(steps):
            if r == 0:
                # 1. replicate: every worker pulls the current weights
                exchange([(w, weights, 0, "copy") for w in range(1, n)], [], "pull")
                # 4. push: the server receives each worker's gradient (and its loss)
                pushed = [torch.empty(weights.numel() + 1, device=dev) for _ in range(workers)]
                exchange([], [(w, pushed[w - 1], 0, "reduce") for w in range(1, n)], "push")
                grad = torch.zeros_like(weights)
                for g in pushed:  # in worker order, a fixed order
                    grad += g[:-1]
                grad /= workers  # equal slices: the mean of their means is the batch mean
                losses.append(sum(g[-1].item() for g in pushed) / workers)
                # 5. update on the server
                weights -= lr * grad
            else:
                exchange([], [(0, weights, 0, "copy")], "pull")
                with torch.no_grad():
                    vector_to_parameters(weights, model.parameters())
                # 2. split the data, 3. compute the gradient locally
                x, y = digits_batch(step, batch_size, r - 1, workers, data=data, device=dev)
                grad, loss = _local_gradient(model, x, y)
                losses.append(loss)
                message = torch.cat([grad, torch.tensor([loss], device=dev)])
                exchange([(0, message, 0, "reduce")], [], "push")
    out = {"losses": losses, "traffic": t.summary()}
    if r == 0:
        out["params"] = weights
    return out


@experiment("collectives_all_reduce_training")
@preflight(_check)
def all_reduce_train(steps: int = 20, batch_size: int = 48, lr: float = 0.5,
                     hidden: int = 64, algorithm: str = "ring", data=None) -> dict:
    """Every rank a replica and a slice of the batch; gradients averaged by ``algorithm``."""
    _check(steps, batch_size, lr, hidden, algorithm, runtime.world_size())
    dev = runtime.device()
    n, r = dist.get_world_size(), dist.get_rank()
    data = load_digits() if data is None else data
    model = TinyMLP(hidden=hidden).to(dev)
    all_reduce = ALL_REDUCE_ALGORITHMS[algorithm]
    losses = []
    with traffic() as t:
        for step in range(steps):
            x, y = digits_batch(step, batch_size, r, n, data=data, device=dev)
            grad, loss = _local_gradient(model, x, y)
            # the loss rides along in the same all-reduce, so logging costs no extra message
            avg = all_reduce(torch.cat([grad, torch.tensor([loss], device=dev)]), op="avg")
            _sgd_(model, avg[:-1], lr)
            losses.append(avg[-1].item())
    return {"losses": losses, "params": parameters_to_vector(model.parameters()).detach(),
            "traffic": t.summary()}
