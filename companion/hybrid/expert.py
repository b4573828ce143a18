"""Expert parallelism with data parallelism: notebook 06's MoE layer trained on an
EP x DP mesh (4 ranks for EP2 x DP2), equal to one process, its all-to-all bytes in
closed form.

Taught in notebook 12 (``notebooks/12_auto_parallelism.ipynb``); the layer is
``companion.sequence_parallel.moe`` (notebook 06). The model is a dense projection (standing in for the
attention before an MoE layer) and the MoE feed-forward with a residual connection.

**Placement.** ``init_device_mesh(("dp", "ep"))``: EP innermost, so an EP group is
adjacent ranks, as DeepSeek-V3 keeps its expert all-to-all on fast links first.
Every rank reads its own data shard: for the dense weights (projection, router) the
data-parallel degree is the whole world, ``ep * dp``. Each EP rank owns
``n_experts / ep`` experts, so an expert has ``dp`` copies: **experts are
data-parallel over world / ep** (the DP-EP coupling the 5D planner models).

**Gradients.** The training loss is the mean of the ranks' losses. An expert's
gradient after backward already sums the contributions of every token its EP group
sent it (the all-to-all's backward brings them home); all-reducing it over the DP
group adds the other EP groups' tokens, and dividing by the world size makes it the
mean. Dense gradients are all-reduced over the world and divided by it. Routing is per
rank, with the capacity computed from the rank's own tokens, as in GShard; the
single-process reference routes each shard on its own for the same reason.

**All-to-all bytes** (:func:`ep_all_to_all_bytes`): dispatch sends an ``[n_experts,
capacity, d_model]`` buffer whatever the routing (unused slots are zeros), combine sends
it back, and backward does both again for the gradients: four all-to-alls of
``n_experts * capacity * d_model * bytes`` per MoE layer and step, with
``capacity = ceil(capacity_factor * tokens * top_k / n_experts)``. Of each, the
``1/ep`` addressed to the rank's own experts stays local.
"""
from __future__ import annotations

import math
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh

from .. import runtime

from ..collectives import log as comm_log
from ..experiments import experiment
from ..i18n import gettext as tr
from ..sequence_parallel.moe import ExpertParallelMoE, MoE
from ..models import seeded
from ..validation import positive_int, positive_number, preflight
from .mesh import check_mesh

__all__ = ["train_ep_dp", "ep_all_to_all_bytes"]

BYTES = 4  # float32


def _check_moe(tokens, d_model, d_ff, n_experts, top_k, capacity_factor, ep) -> None:
    for name, value in (("tokens", tokens), ("d_model", d_model), ("d_ff", d_ff),
                        ("n_experts", n_experts), ("top_k", top_k), ("ep", ep)):
        positive_int(name, value, f"pass a whole number >= 1 for {name}.")
    positive_number("capacity_factor", capacity_factor, "1.25 leaves a quarter of slack.")
    if top_k > n_experts:
        raise ValueError(f"top_k={top_k} must be at most n_experts={n_experts}.")
    if n_experts % ep:
        raise ValueError(f"n_experts={n_experts} does not split over ep={ep} ranks; "
                         f"use a multiple of {ep} experts.")


def _check_ep_dp(ep, dp, steps, tokens, d_model, d_ff, n_experts, top_k, capacity_factor, lr,
                 world_size=1) -> None:
    positive_int("dp", dp, "pass the data-parallel degree, e.g. dp=2.")
    _check_moe(tokens, d_model, d_ff, n_experts, top_k, capacity_factor, ep)
    positive_int("steps", steps, "pass the number of SGD steps, e.g. steps=2.")
    positive_number("lr", lr, "pass a learning rate such as lr=0.1.")
    check_mesh({"EP": ep, "DP": dp}, world_size)


def ep_all_to_all_bytes(*, tokens: int, d_model: int, n_experts: int, top_k: int,
                        capacity_factor: float, ep: int, bytes_per_element: int = BYTES) -> dict:
    """All-to-all traffic of one MoE layer per training step on one rank of an EP group
    of ``ep`` ranks routing ``tokens`` tokens: ``{"capacity", "per_call", "calls",
    "payload", "wire"}``. ``payload`` is what the rank hands to its all-to-alls (the
    whole ``[n_experts, capacity, d_model]`` buffer, four times: dispatch and combine,
    forward and backward); ``wire`` leaves the rank, ``(ep - 1) / ep`` of it."""
    _check_moe(tokens, d_model, 1, n_experts, top_k, capacity_factor, ep)
    positive_int("bytes_per_element", bytes_per_element, "pass 4 for float32, 2 for bf16.")
    capacity = max(1, math.ceil(capacity_factor * tokens * top_k / n_experts))
    per_call = n_experts * capacity * d_model * bytes_per_element
    return {"capacity": capacity, "per_call": per_call, "calls": 4, "payload": 4 * per_call,
            "wire": 4 * per_call * (ep - 1) / ep}


def _grad_bytes(d_model, d_ff, n_experts, ep) -> dict:
    """Payload of the gradient all-reduces per step: dense (projection with bias, router
    without) over the world; this rank's experts (two linears with biases) over DP."""
    dense = d_model * d_model + d_model + d_model * n_experts
    expert = 2 * d_model * d_ff + d_ff + d_model
    return {"dense_grads": dense * BYTES, "expert_grads": n_experts // ep * expert * BYTES}


class _MoEModel(nn.Module):
    """Projection, then MoE with a residual: the single-process model (no parallelism)."""

    def __init__(self, d_model, d_ff, n_experts, top_k, capacity_factor, seed):
        super().__init__()
        with seeded(seed):
            self.proj = nn.Linear(d_model, d_model)
        self.moe = MoE(d_model, d_ff, n_experts, top_k, capacity_factor, seed)

    def forward(self, x):
        h = self.proj(x)
        return h + self.moe(h)


def _data(step, shards, tokens, d_model, seed, device=None):
    device = runtime.device() if device is None else device
    gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
    # Drawn from a CPU generator, on the CPU: the same numbers on every device.
    return (torch.randn(shards, 1, tokens, d_model, generator=gen, device="cpu").to(device),
            torch.randn(shards, 1, tokens, d_model, generator=gen, device="cpu").to(device))


def _reference(steps, shards, tokens, lr, seed, model_args):
    dev = runtime.device()
    model = _MoEModel(*model_args, seed).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        xs, ts = _data(step, shards, tokens, model_args[0], seed, dev)
        # Each shard routed on its own (capacity from its tokens), as every EP rank does.
        loss = sum(F.mse_loss(model(x), t) for x, t in zip(xs, ts)) / shards
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


def _max_diff(a: dict, b: dict) -> float:
    return max((a[n] - b[n]).abs().max().item() for n in a)


def _summary(rs) -> str:
    exact = all(r["measured"] == r["predicted"] for r in rs)
    return (tr("max |param diff| {param:.1e}, max |grad diff| {grad:.1e}; bytes measured == "
               "closed form on every rank: True") if exact else
            tr("max |param diff| {param:.1e}, max |grad diff| {grad:.1e}; bytes measured == "
               "closed form on every rank: False")).format(
        param=max(r["max_param_diff"] for r in rs), grad=max(r["max_grad_diff"] for r in rs))


@experiment("hybrid_ep_dp", summarize=_summary)
@preflight(_check_ep_dp)
def train_ep_dp(*, ep: int = 2, dp: int = 2, steps: int = 2, tokens: int = 16,
                d_model: int = 16, d_ff: int = 32, n_experts: int = 4, top_k: int = 2,
                capacity_factor: float = 1.25, lr: float = 0.1, seed: int = 0) -> dict:
    """Rank function: train notebook 06's MoE layer (behind a dense projection) with
    ``n_experts / ep`` experts per rank on a (dp, ep) mesh, ``tokens`` tokens per rank;
    compare with one process and with :func:`ep_all_to_all_bytes`.

    Returns this rank's coordinates, groups and experts, its parameters and last-step
    gradients next to one process's, the losses, the bytes per step (``measured``: the
    all-to-all payload and the two gradient all-reduces) next to ``predicted``, the
    routing statistics of its last batch and ``seconds``."""
    _check_ep_dp(ep, dp, steps, tokens, d_model, d_ff, n_experts, top_k, capacity_factor, lr,
                 runtime.world_size())
    dev = runtime.device()
    start = time.perf_counter()
    mesh = init_device_mesh(dev.type, (dp, ep), mesh_dim_names=("dp", "ep"))
    world, rank = dp * ep, dist.get_rank()
    ep_group, dp_group = mesh.get_group("ep"), mesh.get_group("dp")
    model_args = (d_model, d_ff, n_experts, top_k, capacity_factor)
    model = _MoEModel(*model_args, seed)
    model.moe = ExpertParallelMoE(model.moe, ep_group)  # keeps only this rank's experts
    model.to(dev)
    first = model.moe.first
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    with comm_log.recording() as log:
        for step in range(steps):
            xs, ts = _data(step, world, tokens, d_model, seed, dev)
            loss = F.mse_loss(model(xs[rank]), ts[rank])
            opt.zero_grad()
            loss.backward()
            for name, p in model.named_parameters():
                expert = name.startswith("moe.experts.")
                total = comm_log.all_reduce(p.grad, dp_group if expert else None,
                                            label="expert_grads" if expert else "dense_grads")
                p.grad.copy_(total / world)
            opt.step()
            mean = loss.detach().clone()
            dist.all_reduce(mean)
            losses.append(mean.item() / world)
    runtime.synchronize()
    seconds = time.perf_counter() - start
    measured = {"all_to_all": log.bytes(kind="all_to_all", wire=False) / steps,
                **{k: log.bytes(label=k, wire=False) / steps
                   for k in ("dense_grads", "expert_grads")}}
    predicted = {"all_to_all": ep_all_to_all_bytes(
        tokens=tokens, d_model=d_model, n_experts=n_experts, top_k=top_k,
        capacity_factor=capacity_factor, ep=ep)["payload"],
        **_grad_bytes(d_model, d_ff, n_experts, ep)}
    # A group of one runs its collectives locally: the log counts them, no byte moves.
    for key, size in (("all_to_all", ep), ("dense_grads", world), ("expert_grads", dp)):
        if size == 1:
            measured[key] = predicted[key] = 0

    ref, ref_losses = _reference(steps, world, tokens, lr, seed, model_args)
    ref_params = dict(ref.named_parameters())
    params, expected, grads, expected_grads = {}, {}, {}, {}
    for name, p in model.named_parameters():
        if name.startswith("moe.experts."):  # local expert i is global expert first + i
            _, _, i, rest = name.split(".", 3)
            ref_name = f"moe.experts.{first + int(i)}.{rest}"
        else:
            ref_name = name
        params[name], grads[name] = p.detach().clone(), p.grad.detach().clone()
        expected[name] = ref_params[ref_name].detach().clone()
        expected_grads[name] = ref_params[ref_name].grad.detach().clone()
    stats = model.moe.last_stats
    coords = {n: mesh.get_local_rank(n) for n in ("dp", "ep")}
    return {"rank": rank, "coords": coords,
            "groups": {n: dist.get_process_group_ranks(mesh.get_group(n)) for n in ("dp", "ep")},
            "experts": list(range(first, first + n_experts // ep)), "losses": losses,
            "ref_losses": ref_losses, "params": params, "expected": expected, "grads": grads,
            "expected_grads": expected_grads, "max_param_diff": _max_diff(params, expected),
            "max_grad_diff": _max_diff(grads, expected_grads), "measured": measured,
            "predicted": predicted, "calls": log.counts(), "capacity": stats["capacity"],
            "dropped": stats["dropped"], "seconds": seconds}
