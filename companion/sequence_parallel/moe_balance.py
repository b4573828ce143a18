"""Load imbalance across expert-parallel ranks, and one way to balance it.

Taught in notebook 06 (``notebooks/06_sequence_parallelism.ipynb``, section 7).

* **Load**: the assignments an expert computes; a rank's load is the sum over its
  experts, and the imbalance is ``max / mean`` over the ranks (1.0 = balanced).
* **Capacity** (Switch Transformer, Fedus et al. 2021, arXiv 2101.03961): an expert
  takes at most ``ceil(capacity_factor * tokens * top_k / experts)`` of one rank's
  assignments and drops the rest; its compute is fixed, padding included.
* **Dropless**: every assignment is sent and computed, so a rank's expert compute
  follows its load, and because the combine all-to-all waits for every rank's results,
  every rank's step follows the most-loaded rank.
* **Auxiliary-loss-free balancing** (Wang et al. 2024, arXiv 2408.15664; DeepSeek-V3,
  arXiv 2412.19437 §2.1.2): a per-expert bias ``b`` is added to the routing scores for
  the choice of the top-k only (the gates stay unbiased); after each step, with the
  load counted over the whole batch (all ranks), ``b_i += gamma * sign(mean - load_i)``:
  an overloaded expert's bias goes down by ``gamma``, an underloaded one's up.

The skew is stated, not learned: the router's logits get ``skew * log(p_e)`` added,
``p_e`` proportional to ``1/(e+1)`` (Zipf's law), the same as tokens that share one
mean component ``mu`` (``W mu`` is a fixed offset per expert).
"""
from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist

from .. import runtime
from ..collectives import log as comm_log
from ..experiments import experiment
from ..validation import one_of, positive_int, positive_number, preflight
from .moe import MoE, _capacity, route

__all__ = ["load_ratio", "update_bias", "switch_aux_loss", "zipf_offset", "dropless_forward",
           "balance_reference", "moe_load_balance"]


def load_ratio(load) -> float:
    """``max / mean`` of a load vector (per expert or per rank); 1.0 is balanced."""
    # A summary of a few counts, for printing: on the host, whatever device they came from.
    load = torch.as_tensor(load, dtype=torch.float64, device="cpu")
    if load.dim() != 1 or load.numel() == 0 or bool((load < 0).any()) or load.sum() <= 0:
        raise ValueError(f"load={load.tolist()}: pass a 1-D list of counts >= 0, not all zero.")
    return (load.max() / load.mean()).item()


def switch_aux_loss(logits: torch.Tensor, top_k: int = 1, alpha: float = 0.01) -> float:
    """The Switch Transformer's auxiliary load-balancing loss (Fedus et al. 2021, §2.2),
    ``alpha * E * sum_i f_i P_i`` for router ``logits`` ``[tokens, E]``: ``f_i`` is the
    share of the ``tokens * top_k`` assignments that ``sequence_parallel.moe.route`` gives
    expert ``i`` (Switch routes top-1; for top-k every choice counts, so that uniform
    routing still gives ``alpha``), ``P_i`` the mean router probability of expert ``i``.
    Switch uses ``alpha = 1e-2``; the loss is ``alpha`` when ``P`` is uniform.

    Notebook 06 section 7 writes it in prose and balances its run with DeepSeek-V3's bias
    (:func:`update_bias`) instead; the cheat-sheet's section 12 prints it."""
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or logits.shape[0] < 1:
        raise ValueError("logits: pass the router's [tokens, experts] logits as a tensor.")
    positive_int("top_k", top_k, "pass the experts each token goes to, e.g. top_k=1.")
    positive_number("alpha", alpha, "pass the loss weight, e.g. alpha=0.01 (Switch's).")
    n_tokens, n_experts = logits.shape
    _token, expert, _slot, _gate = route(logits, top_k, n_tokens * top_k)  # nothing dropped
    f = torch.bincount(expert, minlength=n_experts).double() / (n_tokens * top_k)
    p = logits.double().softmax(dim=-1).mean(dim=0)
    return alpha * n_experts * float((f * p).sum())


def update_bias(bias: torch.Tensor, load, gamma: float) -> torch.Tensor:
    """One step of auxiliary-loss-free balancing: ``bias + gamma * sign(mean - load)``
    (DeepSeek-V3 §2.1.2; Wang et al. 2024, Algorithm 1). ``load`` is the whole batch's
    per-expert count, so every rank computes the same new bias."""
    positive_number("gamma", gamma, "the bias update speed, e.g. 0.01.")
    load = torch.as_tensor(load, dtype=bias.dtype, device=bias.device)
    if load.shape != bias.shape:
        raise ValueError(f"load has shape {tuple(load.shape)} but bias {tuple(bias.shape)}; "
                         "pass one count per expert.")
    return bias + gamma * torch.sign(load.mean() - load)


def zipf_offset(n_experts: int, skew: float) -> torch.Tensor:
    """``skew * log(p_e)``, ``p_e`` proportional to ``1/(e+1)``: expert 0 most popular."""
    positive_int("n_experts", n_experts, "pass the number of experts, e.g. 8.")
    positive_number("skew", skew, "0 is uniform, 1 is Zipf's law.", zero=True)
    # On the CPU: a constant of the experiment, the same bits whichever device routes.
    p = 1.0 / torch.arange(1, n_experts + 1, dtype=torch.float64, device="cpu")
    return skew * (p / p.sum()).log()


def _route_all(flat, router, offset, top_k, capacity, bias):
    return route(router(flat) + offset.to(flat.device, flat.dtype), top_k, capacity, bias)


def dropless_forward(flat, assignment, experts, n_experts: int, group=None):
    """Expert-parallel MoE without capacity: send every kept assignment to its expert's
    owner (the counts first, then the rows), run this rank's ``experts``, send the
    results back and combine them with the gates. Returns ``(y, seconds)``: this rank's
    wall seconds of the dispatch, the expert compute, the combine and the three together
    (``step``, from after the counts' exchange), and ``compute_cpu``, the CPU seconds of
    the expert compute (torch runs one thread per rank here)."""
    token, expert, _slot, gate = assignment
    n = dist.get_world_size(group) if dist.is_initialized() else 1
    per = n_experts // n
    if per * n != n_experts or len(experts) != per:
        raise ValueError(f"{len(experts)} local experts for n_experts={n_experts} on {n} ranks; "
                         f"pass the n_experts/{n} experts this rank owns.")
    order = torch.argsort(expert, stable=True)            # by expert, hence by owner
    counts = torch.bincount(expert, minlength=n_experts).view(n, per)
    arriving = torch.stack(comm_log.all_to_all(list(counts), group, label="counts"))
    send, recv = counts.sum(1).tolist(), arriving.sum(1).tolist()
    runtime.synchronize()
    t0 = time.perf_counter()
    rows = comm_log.all_to_all_rows(flat[token[order]], send, recv, group, label="dispatch")
    runtime.synchronize()
    t1, c1 = time.perf_counter(), time.thread_time()
    which = torch.arange(per, device=rows.device).repeat(n).repeat_interleave(arriving.reshape(-1))
    out = torch.empty_like(rows)
    for i, e in enumerate(experts):
        mine = which == i
        out[mine] = e(rows[mine])
    runtime.synchronize()
    t2, c2 = time.perf_counter(), time.thread_time()
    back = comm_log.all_to_all_rows(out, recv, send, group, label="combine")
    runtime.synchronize()
    t3 = time.perf_counter()
    y = torch.zeros_like(flat).index_add(0, token[order], back * gate[order].unsqueeze(-1))
    # compute_cpu: this thread's CPU seconds, the work itself even when ranks share cores
    return y, {"dispatch": t1 - t0, "compute": t2 - t1, "compute_cpu": c2 - c1,
               "combine": t3 - t2, "step": t3 - t0}


def _tokens(rank, step, tokens, d_model, seed, dtype, device):
    gen = torch.Generator().manual_seed(seed + 1000 * step + rank + 1)
    # Drawn on the CPU from the CPU generator, then moved: the same tokens on every device.
    return torch.randn(tokens, d_model, generator=gen, dtype=dtype, device="cpu").to(device)


def balance_reference(world_size: int = 4, steps: int = 40, gamma: float = 0.01,
                      skew: float = 0.5, n_experts: int = 8, top_k: int = 2,
                      tokens: int = 256, d_model: int = 16, factors=(1.0, 1.25, 2.0),
                      seed: int = 0, dtype: str = "float64") -> dict:
    """Single process: the bias trajectory, the whole batch's per-expert loads and each
    rank's capacity drops that :func:`moe_load_balance` computes on ``world_size`` ranks
    (bit-exact: the loads are integer counts, so their all-reduce has no rounding)."""
    _check(world_size, steps, gamma, skew, n_experts, top_k, tokens, d_model, dtype)
    for cf in factors:
        _capacity(1, top_k, n_experts, cf)
    dev = runtime.device()
    dt = getattr(torch, dtype)
    router = MoE(d_model, 1, n_experts, top_k, seed=seed).router.to(dt).to(dev)
    offset = zipf_offset(n_experts, skew).to(dev)
    bias, whole = torch.zeros(n_experts, dtype=dt, device=dev), tokens * top_k

    def load_of(step, b):
        load = torch.zeros(n_experts, dtype=torch.int64, device=dev)
        for r in range(world_size):
            with torch.no_grad():
                _, e, _, _ = _route_all(_tokens(r, step, tokens, d_model, seed, dt, dev),
                                        router, offset, top_k, whole, b)
            load += torch.bincount(e, minlength=n_experts)
        return load

    def dropped(b):
        out = []
        for r in range(world_size):
            x = _tokens(r, 0, tokens, d_model, seed, dt, dev)
            with torch.no_grad():
                out.append({cf: whole - _route_all(x, router, offset, top_k, _capacity(
                    tokens, top_k, n_experts, cf), b)[0].numel() for cf in factors})
        return out

    before, trace = load_of(0, None), []
    for step in range(1, steps + 1):
        load = load_of(step, bias)
        trace.append(load_ratio(load.view(world_size, -1).sum(1)))
        bias = update_bias(bias, load, gamma)
    return {"load_before": before.tolist(), "load_after": load_of(0, bias).tolist(),
            "bias": bias.tolist(), "trace": trace, "dropped_before": dropped(None),
            "dropped_after": dropped(bias)}


def _check(world_size, steps, gamma, skew, n_experts, top_k, tokens, d_model, dtype) -> None:
    positive_int("world_size", world_size, "pass the number of ranks, e.g. 4.")
    positive_int("steps", steps, "pass the balancing steps, e.g. 40.", minimum=0)
    positive_number("gamma", gamma, "the bias update speed, e.g. 0.01.")
    zipf_offset(n_experts, skew)
    positive_int("tokens", tokens, "pass the tokens per rank, e.g. 256.")
    positive_int("d_model", d_model, "pass the token width, e.g. 16.")
    one_of("dtype", dtype, ("float64", "float32"))
    if not 1 <= top_k <= n_experts:
        raise ValueError(f"top_k={top_k} must be between 1 and n_experts={n_experts}.")
    if n_experts % world_size:
        raise ValueError(f"n_experts={n_experts} is not divisible by {world_size} ranks; "
                         f"use a multiple of {world_size} experts.")


def _check_run(world_size=1, steps=40, gamma=0.01, skew=0.5, n_experts=8, top_k=2,
               tokens=256, d_model=16, d_ff=32, factors=(1.0,), repeats=1, dtype="float64"):
    _check(world_size, steps, gamma, skew, n_experts, top_k, tokens, d_model, dtype)
    positive_int("d_ff", d_ff, "pass the experts' hidden width, e.g. 32.")
    positive_int("repeats", repeats, "pass how many timed steps to take the median of.")
    for cf in factors:
        _capacity(1, top_k, n_experts, cf)


def _timed(flat, assignment, experts, n_experts, repeats):
    runs = []
    for _ in range(repeats):
        dist.barrier()                       # every rank starts the step together
        with torch.no_grad():
            y, seconds = dropless_forward(flat, assignment, experts, n_experts)
        runs.append(seconds)
    return y, {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def _balance(router, offset, bias, steps, gamma, tokens, d_model, seed, dt, top_k, n_experts):
    rank, size = dist.get_rank(), dist.get_world_size()
    trace = []
    for step in range(1, steps + 1):
        x = _tokens(rank, step, tokens, d_model, seed, dt, bias.device)
        with torch.no_grad():
            _, e, _, _ = _route_all(x, router, offset, top_k, tokens * top_k, bias)
        load = comm_log.all_reduce(torch.bincount(e, minlength=n_experts), label="balance")
        trace.append(load_ratio(load.view(size, -1).sum(1)))
        bias = update_bias(bias, load, gamma)
    return bias, trace


@experiment("moe_load_balance")
@preflight(_check_run)
def moe_load_balance(steps: int = 40, gamma: float = 0.01, skew: float = 0.5,
                     n_experts: int = 8, top_k: int = 2, tokens: int = 256, d_model: int = 16,
                     d_ff: int = 32, factors=(1.0, 1.25, 2.0), repeats: int = 1,
                     seed: int = 0, dtype: str = "float64", check: bool = True) -> dict:
    """Rank function: a skewed router's load per rank, capacity drops and the timed
    dropless step, before and after ``steps`` of auxiliary-loss-free balancing.

    With ``check``, the dropless output is compared with the single-process MoE on
    this rank's tokens (no capacity, the same bias)."""
    size = dist.get_world_size() if dist.is_initialized() else 1
    _check_run(size, steps, gamma, skew, n_experts, top_k, tokens, d_model, d_ff, factors,
               repeats, dtype)
    dev = runtime.device()
    rank = dist.get_rank()
    dt = getattr(torch, dtype)
    full = MoE(d_model, d_ff, n_experts, top_k, seed=seed).to(dt).to(dev)
    offset, per = zipf_offset(n_experts, skew).to(dev), n_experts // size
    experts = [full.experts[rank * per + i] for i in range(per)]
    x = _tokens(rank, 0, tokens, d_model, seed, dt, dev)
    whole = tokens * top_k                   # capacity that nothing exceeds: dropless
    bias0 = torch.zeros(n_experts, dtype=dt, device=dev)
    bias, trace = _balance(full.router, offset, bias0, steps, gamma, tokens, d_model, seed,
                           dt, top_k, n_experts)
    result = {"trace": trace, "bias": bias.tolist()}
    for name, b in (("before", None), ("after", bias)):
        with torch.no_grad():
            assignment = _route_all(x, full.router, offset, top_k, whole, b)
        load = comm_log.all_reduce(torch.bincount(assignment[1], minlength=n_experts))
        y, seconds = _timed(x, assignment, experts, n_experts, repeats)
        dropped = {}
        for cf in factors:
            cap = _capacity(tokens, top_k, n_experts, cf)
            with torch.no_grad():
                kept = _route_all(x, full.router, offset, top_k, cap, b)[0].numel()
            dropped[cf] = whole - kept
        result[name] = {"load": load.tolist(), "rank_load": load.view(size, -1).sum(1).tolist(),
                        "seconds": seconds, "dropped": dropped}
        if check:
            result[name]["out"] = _reference_diff(x, assignment, full, y)
    return result


def _reference_diff(x, assignment, full, y) -> float:
    # One process: each expert on this rank's tokens routed to it, combined as MoE does.
    token, expert, _slot, gate = assignment
    out = torch.empty(len(token), x.shape[1], dtype=x.dtype, device=x.device)
    with torch.no_grad():
        for e, layer in enumerate(full.experts):
            mine = expert == e
            out[mine] = layer(x[token[mine]])
        ref = torch.zeros_like(x).index_add(0, token, out * gate.unsqueeze(-1))
    return (ref - y).abs().max().item()
