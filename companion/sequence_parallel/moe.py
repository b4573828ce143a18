"""A toy mixture-of-experts layer and its expert-parallel version.

Taught in notebook 06 (``notebooks/06_sequence_parallelism.ipynb``, §6, mixture of experts).

Routing follows Switch (top-1: the gate is the router probability) and GShard /
Mixtral (top-2: the two probabilities renormalised). Each expert takes at most
``capacity = ceil(capacity_factor * tokens * top_k / n_experts)`` tokens; first
choices are served before second choices, earlier tokens before later ones, and an
assignment past capacity is dropped (that token gets nothing from that expert; in a
transformer the residual connection carries it on).

Expert parallelism (GShard): rank r owns experts ``[r*E/P, (r+1)*E/P)`` and routes
its own tokens. Dispatch is one all-to-all that sends each expert's capacity buffer
to the expert's owner; combine is the inverse all-to-all. The router is replicated,
so its gradient is all-reduced like data parallelism.
"""
from __future__ import annotations

import copy
import math

import torch
import torch.nn as nn

from .. import runtime
from ..collectives import log as comm_log
from ..experiments import experiment
from ..models import MLP, seeded
from . import AllToAll
from ..validation import one_of, positive_int, positive_number, preflight

__all__ = ["route", "dispatch", "MoE", "ExpertParallelMoE", "compare_moe"]


def route(logits: torch.Tensor, top_k: int, capacity: int, bias: torch.Tensor | None = None):
    """Token -> expert assignments for ``logits`` of shape ``[tokens, experts]``.

    Returns ``(token, expert, slot, gate)`` for the kept assignments, 1-D each, in
    priority order: the k-th choices of all tokens before the (k+1)-th.

    ``bias`` (``[experts]``, optional) is added to the router probabilities for the
    choice of experts only; the gates stay the unbiased probabilities. This is the
    auxiliary-loss-free balancing of Wang et al. 2024 and DeepSeek-V3 (notebook 06,
    :mod:`companion.sequence_parallel.moe_balance`)."""
    n_tokens, n_experts = logits.shape
    positive_int("capacity", capacity, "pass the slots per expert, at least 1.")
    if not 1 <= top_k <= n_experts:
        raise ValueError(f"top_k={top_k} must be between 1 and the number of experts ({n_experts}).")
    probs = logits.softmax(dim=-1)
    if bias is None:
        top_p, top_e = probs.topk(top_k, dim=-1)              # [T, k]
    else:
        if tuple(bias.shape) != (n_experts,):
            raise ValueError(f"bias has shape {tuple(bias.shape)}; pass one number per "
                             f"expert, shape ({n_experts},).")
        top_e = (probs + bias).topk(top_k, dim=-1).indices    # the bias only chooses
        top_p = probs.gather(1, top_e)
    gates = top_p if top_k == 1 else top_p / top_p.sum(dim=-1, keepdim=True)
    expert = top_e.t().reshape(-1)                            # choice-major: [k*T]
    token = torch.arange(n_tokens, device=logits.device).repeat(top_k)
    gate = gates.t().reshape(-1)
    onehot = torch.nn.functional.one_hot(expert, n_experts)
    slot = ((onehot.cumsum(dim=0) - 1) * onehot).sum(dim=-1)  # arrival order at the expert
    keep = slot < capacity
    return token[keep], expert[keep], slot[keep], gate[keep]


def _capacity(n_tokens, top_k, n_experts, capacity_factor):
    positive_number("capacity_factor", capacity_factor, "1.25 leaves a quarter of slack.")
    return max(1, math.ceil(capacity_factor * n_tokens * top_k / n_experts))


def dispatch(x, router, n_experts: int, top_k: int, capacity_factor: float):
    """Flatten ``x`` to tokens, route them, and pack each expert's tokens into a
    ``[n_experts, capacity, d]`` buffer (unused slots stay zero).

    Returns (tokens, buffer, assignment, statistics)."""
    flat = x.reshape(-1, x.shape[-1])
    cap = _capacity(flat.shape[0], top_k, n_experts, capacity_factor)
    token, expert, slot, gate = route(router(flat), top_k, cap)
    buf = flat.new_zeros(n_experts, cap, flat.shape[-1]).index_put((expert, slot), flat[token])
    stats = {"capacity": cap, "load": torch.bincount(expert, minlength=n_experts),
             "dropped": flat.shape[0] * top_k - token.numel()}
    return flat, buf, (token, expert, slot, gate), stats


class MoE(nn.Module):
    """Single-process MoE feed-forward: router, ``n_experts`` MLPs, top-k routing with
    capacity. Input and output ``[batch, seq, d_model]``."""

    def __init__(self, d_model: int = 16, d_ff: int = 32, n_experts: int = 4,
                 top_k: int = 1, capacity_factor: float = 1.25, seed: int = 0):
        super().__init__()
        for name, value in (("d_model", d_model), ("d_ff", d_ff), ("n_experts", n_experts),
                            ("top_k", top_k)):
            positive_int(name, value, "MoE sizes must all be >= 1.")
        _capacity(1, top_k, n_experts, capacity_factor)  # refuses a NaN or <= 0 factor now
        with seeded(seed):
            self.router = nn.Linear(d_model, n_experts, bias=False)
            self.experts = nn.ModuleList(MLP(d_model, d_ff) for _ in range(n_experts))
        self.top_k, self.capacity_factor, self.n_experts = top_k, capacity_factor, n_experts
        self.last_stats: dict = {}

    def dispatch(self, x):
        """Route the flattened tokens and pack them into ``[experts, capacity, d]``."""
        flat, buf, assignment, self.last_stats = dispatch(
            x, self.router, self.n_experts, self.top_k, self.capacity_factor)
        return flat, buf, assignment

    @staticmethod
    def combine(flat, out_buf, assignment, shape):
        token, expert, slot, gate = assignment
        y = flat.new_zeros(flat.shape).index_add(0, token, out_buf[expert, slot] * gate.unsqueeze(-1))
        return y.view(shape)

    def forward(self, x):
        flat, buf, assignment = self.dispatch(x)
        out_buf = torch.stack([e(buf[i]) for i, e in enumerate(self.experts)])
        return self.combine(flat, out_buf, assignment, x.shape)


class ExpertParallelMoE(nn.Module):
    """The same layer with experts spread over the ranks of ``group`` (built from the
    full :class:`MoE`; keeps only this rank's experts)."""

    def __init__(self, full: MoE, group=None):
        super().__init__()
        import torch.distributed as dist

        self.group = group
        self.size = dist.get_world_size(group) if dist.is_initialized() else 1
        rank = dist.get_rank(group) if dist.is_initialized() else 0
        if full.n_experts % self.size:
            raise ValueError(f"n_experts={full.n_experts} is not divisible by {self.size} ranks; "
                             f"use a multiple of {self.size} experts.")
        self.settings = (full.n_experts, full.top_k, full.capacity_factor)
        self.router = copy.deepcopy(full.router)
        per = full.n_experts // self.size
        self.first = rank * per
        self.experts = nn.ModuleList(copy.deepcopy(full.experts[self.first + i]) for i in range(per))

    def forward(self, x):
        flat, buf, assignment, self.last_stats = dispatch(x, self.router, *self.settings)
        per, cap, d = len(self.experts), buf.shape[1], buf.shape[2]
        # Dispatch: chunk j of [P, E/P, C, d] goes to rank j; we receive [P(source), E/P, C, d].
        recv = AllToAll.apply(buf.view(self.size, per, cap, d), 0, 0, self.group, None)
        out = torch.stack([e(recv[:, i]) for i, e in enumerate(self.experts)], dim=1)
        # Combine: send every source its tokens' results back.
        back = AllToAll.apply(out, 0, 0, self.group, None).reshape(-1, cap, d)
        return MoE.combine(flat, back, assignment, x.shape)


def _max_diff(a, b) -> float:
    return (a.detach().double() - b.detach().double()).abs().max().item()


def _check_compare(top_k, capacity_factor, n_experts, tokens, d_model, d_ff, dtype,
                   world_size=1) -> None:
    one_of("dtype", dtype, ("float64", "float32"))
    positive_int("tokens", tokens, "pass the tokens per rank, e.g. tokens=16.")
    MoE(d_model, d_ff, n_experts, top_k, capacity_factor)  # its constructor checks the sizes
    if not top_k <= n_experts:
        raise ValueError(f"top_k={top_k} must be between 1 and the number of experts "
                         f"({n_experts}).")
    if n_experts % world_size:
        raise ValueError(f"n_experts={n_experts} is not divisible by {world_size} ranks; "
                         f"use a multiple of {world_size} experts.")


def _moe_summary(rs) -> str:
    from ..i18n import gettext as tr
    return tr("max |diff| vs single-process MoE: {diffs}; dropped per rank {dropped}").format(
        diffs=", ".join(f"{k} {max(r[k] for r in rs):.1e}"
                        for k in ("out", "x_grad", "router_grad", "expert_grad")),
        dropped=[r["dropped"] for r in rs])


@experiment("moe_expert_parallel", summarize=_moe_summary)
@preflight(_check_compare)
def compare_moe(top_k: int = 1, capacity_factor: float = 1.25, n_experts: int = 4,
                tokens: int = 16, d_model: int = 16, d_ff: int = 32, seed: int = 0,
                dtype: str = "float64") -> dict:
    """Rank function: expert-parallel MoE on this rank's tokens vs the single-process
    MoE run on every rank's tokens (each batch routed on its own, as in EP).

    Returns differences (outputs, input grads, router and expert grads), the
    collectives per phase, and routing statistics."""
    import torch.distributed as dist

    dev = runtime.device()
    _check_compare(top_k, capacity_factor, n_experts, tokens, d_model, d_ff, dtype)
    dt = getattr(torch, dtype)
    full = MoE(d_model, d_ff, n_experts, top_k, capacity_factor, seed).to(dt).to(dev)
    rank, size = dist.get_rank(), dist.get_world_size()
    ep = ExpertParallelMoE(full).to(dev)
    gen = torch.Generator().manual_seed(seed + 1)

    def draw():  # on the CPU from the CPU generator, then moved: the same on every device
        return torch.randn(1, tokens, d_model, generator=gen, dtype=dt, device="cpu").to(dev)

    xs = [draw().requires_grad_() for _ in range(size)]
    dys = [draw() for _ in range(size)]
    ref_out = [full(x) for x in xs]
    sum((y * dy).sum() for y, dy in zip(ref_out, dys)).backward()
    with torch.no_grad():
        full(xs[rank])  # routing statistics of this rank's batch in the reference
    ref_stats = full.last_stats

    x = xs[rank].detach().clone().requires_grad_()
    with comm_log.recording() as log:
        y = ep(x)
        (y * dys[rank]).sum().backward()
    router_grad = comm_log.all_reduce(ep.router.weight.grad)  # replicated router: sum over ranks
    expert_diff = max(_max_diff(p.grad, q.grad) for i, e in enumerate(ep.experts)
                      for p, q in zip(e.parameters(), full.experts[ep.first + i].parameters()))
    return {"out": _max_diff(y, ref_out[rank]), "x_grad": _max_diff(x.grad, xs[rank].grad),
            "router_grad": _max_diff(router_grad, full.router.weight.grad), "expert_grad": expert_diff,
            "forward": log.counts("forward"), "backward": log.counts("backward"),
            "forward_bytes": log.bytes("forward"),
            "capacity": ep.last_stats["capacity"], "load": ep.last_stats["load"],
            "dropped": ep.last_stats["dropped"], "ref_dropped": ref_stats["dropped"],
            "local_params": sum(p.numel() for p in ep.parameters())}
