"""Notebook 03's exercises (``notebooks/03_zero_memory.ipynb``): ZeRO's memory and steps.

* ``03.predict-memory`` (warm-up, a decision): the ZeRO stage to use under a memory
  budget, with the bytes one rank then holds, judged against the bytes measured on real
  ranks after a real step of each stage, and for large models against the package's
  formula.
* ``03.zero2-step`` (core): one ZeRO-2 optimizer step (reduce-scatter the gradients,
  update this rank's shard of the optimizer state, all-gather the weights), equal to
  single-process training.
* ``03.fsdp-forward`` (stretch): FSDP's forward and backward by hand: all-gather each
  layer's weights on demand and let them go before the next layer, gather them again in
  backward, and reduce-scatter each weight gradient to its shard.

Exercise ids are "03.<name>"; :func:`companion.learning.exercise` fetches them. The
stretch exercise's model (sharded layers that count the full weights left alive) is
:mod:`.nb03_fsdp`.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .exercise import Exercise, register
from .nb03_fsdp import ALL_GATHER, REDUCE_SCATTER, _device, _ordered
from .patterns import all_of, counts, only
from ..units import fmt_bytes

PARTS = ("params", "grads", "optimizer")
MEASURED_MODEL = dict(d_model=64, freeze=False)   # section 5's model, every weight trained


# ---- 03.predict-memory (warm-up, a decision) ----------------------------------------
# Large models judged with the package's formula: (parameters, ranks, budget per rank).
FORMULA_CASES = ((7.5e9, 64, 80e9), (13e9, 8, 80e9), (7.5e9, 8, 40e9), (70e9, 8, 80e9))
# Section 5's model on the real ranks: budgets between what the stages need (as
# fractions of the gap), so that padding and step counters (< 1%) cannot decide.
MEASURED_BUDGETS = ((0, -0.05), (0, 0.5), (1, 0.5), (2, 0.5), (3, 0.1))


def _formula_bytes(num_params, world_size) -> list[float]:
    """What one rank holds at stages 0-3 (fp32 AdamW), from the package's formula."""
    from ..data_parallel.memory import zero_memory_per_gpu
    return [zero_memory_per_gpu(num_params, world_size, s, precision="fp32",
                                optimizer="adamw")["total"] for s in range(4)]


def _budget(need: list[float], stage: int, gap: float) -> float:
    """Between what ``stage`` and ``stage + 1`` need (``gap`` of the way down), or, for
    the last stage, ``gap`` below what it needs (nothing fits); a negative gap above
    what stage 0 needs."""
    if gap < 0:
        return need[stage] * (1 - gap)
    if stage == len(need) - 1:
        return need[stage] * (1 - gap)
    return need[stage] - gap * (need[stage] - need[stage + 1])


def bytes_inputs(rank: int, world_size: int) -> tuple:
    from ..data_parallel.runs import build_model
    model = build_model(**MEASURED_MODEL)
    psi = sum(p.numel() for p in model.parameters())
    need = _formula_bytes(psi, world_size)
    mine = tuple((psi, world_size, _budget(need, s, gap)) for s, gap in MEASURED_BUDGETS)
    return (mine + FORMULA_CASES,)


def _label(num_params, world_size, budget) -> str:
    return f"{num_params:,.0f} parameters on {world_size} ranks of {fmt_bytes(budget)}"


def _decide(need: list[float], budget: float) -> dict:
    """Stages 0-2 send the same bytes per step and stage 3 half as much again, so: the
    lowest stage that fits, or None (with what the leanest stage needs)."""
    for stage, nbytes in enumerate(need):
        if nbytes <= budget:
            return {"stage": stage, "bytes": float(nbytes)}
    return {"stage": None, "bytes": float(need[-1])}


def bytes_measured(cases) -> dict:
    """Section 5's model: what every rank held after one real AdamW step of DDP, ZeRO-1,
    ZeRO-2 and FSDP (the largest over the ranks decides); the other cases: the formula."""
    from ..data_parallel.runs import STAGE_OF, train_many
    runs = train_many([dict(strategy=s, steps=1, **MEASURED_MODEL) for s in STAGE_OF])
    held = torch.tensor([float(sum(run["held"][part] for part in PARTS)) for run in runs],
                        dtype=torch.float64)
    dist.all_reduce(held, op=dist.ReduceOp.MAX)
    measured = [0.0] * 4
    for run, nbytes in zip(runs, held.tolist()):
        measured[STAGE_OF[run["strategy"]]] = nbytes
    out = {}
    for num_params, world_size, budget in cases:
        on_ranks = (num_params, world_size) == cases[0][:2]
        need = measured if on_ranks else _formula_bytes(num_params, world_size)
        out[_label(num_params, world_size, budget)] = _decide(need, budget)
    return out


def bytes_adapter(candidate, cases) -> dict:
    return {_label(*case): _ordered(candidate(*case), ("stage", "bytes")) for case in cases}


PREDICT_BYTES = register(Exercise(
    id="03.predict-memory", level="warm-up", kind="decide",
    title="choose the ZeRO stage that fits a memory budget",
    student_name="choose_stage",
    task="A model of `num_params` parameters trains in **fp32 with AdamW** on "
         "`world_size` ranks, each with `budget` bytes for its model states (weights, "
         "gradients, optimizer state). Write `choose_stage(num_params, world_size, budget)` "
         "returning `{'stage': s, 'bytes': b}`: the ZeRO stage to use (0 = DDP, 3 = FSDP) "
         "and the bytes one rank then holds. Choose, among the stages that fit, the one "
         "that communicates least per step (section 3: stages 0-2 send the same bytes, "
         "stage 3 more), and of equal communication the lowest; if none "
         "fits, return stage None and the bytes of the stage that needs least. The checker "
         "asks about 9 configurations: five for section 5's model on 4 real ranks, judged "
         "against the bytes measured there after one real step of each stage, and four "
         "models of 7.5-70 billion parameters on 8-64 GPUs, judged with the package's "
         "formula. It refuses a stage that does not fit, a stage when a better one fits, "
         "and bytes more than 1% off (shards are padded to equal sizes, and AdamW keeps a "
         "step counter per tensor).",
    hints=("Take one stage at a time: what does one rank hold of the weights, of the "
           "gradients and of the optimizer state, and which of the three does that stage "
           "divide by N? Then go through the stages in the order you would prefer them.",
           "fp32 AdamW keeps no separate master copy (the weights already are fp32), and "
           "the optimizer remembers two numbers per parameter. Section 2's table is for "
           "mixed precision: redo its bytes, do not copy them.",
           "No budget is within 1% of what a stage needs, so your formula and the "
           "measurement agree on every decision; the bytes you report are compared with "
           "the measurement at the stage you chose."),
    inputs=bytes_inputs, expected=bytes_measured, adapter=bytes_adapter,
    forbidden={"companion.data_parallel.memory.zero_memory_per_gpu":
               "it is the package's answer to the bytes per rank",
               "companion.data_parallel.memory.bytes_per_param":
               "it answers the first half (the bytes per parameter): count them yourself",
               "companion.data_parallel.memory.max_params_that_fit":
               "it evaluates the package's formula for you",
               "companion.data_parallel.memory.communication_volume":
               "the package's communication count: section 3 says what each stage sends",
               "companion.learning.nb03._formula_bytes": "it is the checker's formula",
               "companion.learning.nb03._decide": "it is the checker's decision"},
    rtol=0.01, timeout=120.0,
))


# ---- 03.zero2-step (core) -------------------------------------------------------------
SHAPE = (3, 4)        # the model: one linear map W, 12 parameters (3 per rank on 4 ranks)
PER_RANK_BATCH = 2
LR, BETA = 0.1, 0.9   # SGD with momentum, as torch.optim.SGD(momentum=0.9, dampening=0)


def _regression(world_size: int):
    """The global batch (X, Y), the starting weights and momentum, all deterministic."""
    g = torch.Generator().manual_seed(1910_02054)  # the ZeRO paper's arXiv number
    n = PER_RANK_BATCH * world_size
    x = torch.randn(n, SHAPE[1], generator=g, dtype=torch.float64)
    y = torch.randn(n, SHAPE[0], generator=g, dtype=torch.float64)
    w = torch.randn(SHAPE, generator=g, dtype=torch.float64).reshape(-1)
    momentum = torch.randn(w.numel(), generator=g, dtype=torch.float64)
    return x, y, w, momentum


def _loss_gradient(w, x, y):
    """Gradient of the mean squared error 0.5 * mean ||x W^T - y||^2 at flat weights w."""
    w = w.detach().clone().requires_grad_(True)
    loss = 0.5 * ((x @ w.view(SHAPE).T - y) ** 2).sum(dim=1).mean()
    return torch.autograd.grad(loss, w)[0]


def zero2_inputs(rank: int, world_size: int) -> tuple:
    x, y, w, momentum = _regression(world_size)
    if w.numel() % world_size:
        raise ValueError(f"the exercise needs a world size dividing {w.numel()}")
    c = w.numel() // world_size
    mine = slice(rank * PER_RANK_BATCH, (rank + 1) * PER_RANK_BATCH)
    local_grad = _loss_gradient(w, x[mine], y[mine])  # this rank's micro-batch only
    dev = _device()
    return (w.to(dev), local_grad.to(dev), momentum[rank * c:(rank + 1) * c].to(dev),
            LR, BETA)


ZERO2_KEYS = ("grad_shard", "momentum", "weights")  # the first wrong one explains the rest


def zero2_expected(w, grad, momentum, lr, beta) -> dict:
    """Single-process training: the whole batch's gradient, the whole momentum buffer."""
    rank, n = dist.get_rank(), dist.get_world_size()
    x, y, w0, m0 = _regression(n)
    g = _loss_gradient(w0, x, y)           # the mean over the global batch
    m = beta * m0 + g
    new_w = w0 - lr * m
    c = w0.numel() // n
    mine = slice(rank * c, (rank + 1) * c)
    dev = w.device
    return {"grad_shard": g[mine].to(dev), "momentum": m[mine].to(dev), "weights": new_w.to(dev)}


def zero2_adapter(candidate, w, grad, momentum, lr, beta):
    return _ordered(candidate(w, grad, momentum, lr, beta), ZERO2_KEYS)


ZERO2_STEP = register(Exercise(
    id="03.zero2-step", level="core", kind="implement",
    title="one ZeRO-2 step from two collectives",
    student_name="my_zero2_step",
    task="Every rank holds the full flat weights `w` (12 values), the gradient `grad` of "
         "the loss on **its own** micro-batch, and only **its shard** of the optimizer "
         "state: `momentum`, elements `[r·c, (r+1)·c)` of the momentum buffer, with "
         "c = len(w) / N. Write `my_zero2_step(w, grad, momentum, lr, beta)` doing one "
         "step of SGD with momentum the ZeRO-2 way and return a dict: `'grad_shard'` "
         "(the gradient averaged over all ranks, your shard only), `'momentum'` (your "
         "updated shard: beta·momentum + grad_shard) and `'weights'` (the full updated "
         "weights, w − lr·momentum on every shard). The checker compares with "
         "**single-process training on the whole batch** and checks the communication: "
         "one reduce-scatter and one all-gather per step, no all-reduce.",
    hints=("Each rank needs the averaged gradient only for the slice of weights it "
           "owns, and afterwards every rank needs every updated slice. Which two "
           "collectives do exactly that? Which one would DDP use instead?",
           "A reduce-scatter of the full local gradient hands rank r the sum of every "
           "rank's slice r; divide by the number of ranks for the mean.",
           "Update only your slice (momentum, then the weights of your slice), then "
           "all-gather the updated slices into a full vector on every rank.",
           "torch.distributed has both collectives in a flat form (one tensor in, one "
           "tensor out) and in a form taking a list of chunks; either works. The output "
           "buffer is yours to allocate, the size of what this rank receives."),
    inputs=zero2_inputs, expected=zero2_expected, adapter=zero2_adapter,
    forbidden={"torch.distributed.all_reduce":
               "an all-reduce leaves every rank with the full gradient, the copy ZeRO-2 "
               "removes: reduce-scatter it instead",
               "companion.data_parallel.zero.ShardedOptimizer": "it is the package's ZeRO-1/2",
               "companion.data_parallel.zero.ShardedOptimizer.step": "it is the package's ZeRO-1/2",
               "torch.distributed.optim.ZeroRedundancyOptimizer":
               "it is torch's ZeRO-1: write the step yourself",
               "torch.distributed.optim.ZeroRedundancyOptimizer.step":
               "it is torch's ZeRO-1: write the step yourself"},
    pattern=all_of(
        only(*REDUCE_SCATTER, *ALL_GATHER, "barrier",
             why="ZeRO-2 replaces DDP's all-reduce by a reduce-scatter and an all-gather"),
        counts({REDUCE_SCATTER: 1, ALL_GATHER: 1},
               why="one reduce-scatter of the gradient, one all-gather of the weights")),
    rtol=1e-12, atol=1e-12,   # float64; only the order of a 4-term sum differs
    context="import torch\nimport torch.distributed as dist",
))
