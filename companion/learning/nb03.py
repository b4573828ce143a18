"""Notebook 03's exercises (``notebooks/03_zero_memory.ipynb``): ZeRO's memory and steps.

* ``03.predict-memory`` (warm-up): the bytes one rank holds under ZeRO stages 0-3,
  compared with the bytes measured on real ranks after a real step of each stage.
* ``03.zero2-step`` (core): one ZeRO-2 optimizer step (reduce-scatter the gradients,
  update this rank's shard of the optimizer state, all-gather the weights), equal to
  single-process training.
* ``03.fsdp-forward`` (stretch): a ZeRO-3 / FSDP forward pass that all-gathers each
  layer's weights on demand and lets them go before the next layer.

Exercise ids are "03.<name>"; :func:`companion.learning.exercise` fetches them. The
stretch exercise's model (sharded layers that count the full weights left alive) is
:mod:`.nb03_fsdp`.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .exercise import Exercise, register
from .nb03_fsdp import LAYER_SHAPES, Layers, layer_weights, shard_of
from .patterns import all_of, counts, only

# torch 2.13's all_gather_into_tensor / reduce_scatter_tensor call the *_single entry
# points; the watcher records whichever the student called (the outermost call).
REDUCE_SCATTER = ("reduce_scatter", "reduce_scatter_tensor", "reduce_scatter_single")
ALL_GATHER = ("all_gather", "all_gather_into_tensor", "all_gather_single")
PARTS = ("params", "grads", "optimizer")
MEASURED_MODEL = dict(d_model=64, freeze=False)   # section 5's model, every weight trained


def _device():
    from ..runtime import device
    return device()


def _ordered(result, keys):
    """A dict with ``keys`` in a fixed order (a student's key order must not matter)."""
    if isinstance(result, dict) and set(result) == set(keys):
        return {k: result[k] for k in keys}
    return result


# ---- 03.predict-memory (warm-up) -------------------------------------------------------
def bytes_inputs(rank: int, world_size: int) -> tuple:
    from ..data_parallel.runs import build_model
    model = build_model(**MEASURED_MODEL)
    return (sum(p.numel() for p in model.parameters()), world_size)


def bytes_measured(num_params: int, world_size: int) -> dict:
    """What this rank holds after one real AdamW step of DDP, ZeRO-1, ZeRO-2 and FSDP."""
    from ..data_parallel.runs import STAGE_OF, train_many
    runs = train_many([dict(strategy=s, steps=1, **MEASURED_MODEL) for s in STAGE_OF])
    return {f"stage {STAGE_OF[run['strategy']]}":
            {part: float(run["held"][part]) for part in PARTS} for run in runs}


def bytes_adapter(candidate, num_params: int, world_size: int) -> dict:
    return {f"stage {stage}": _ordered(candidate(num_params, world_size, stage), PARTS)
            for stage in range(4)}


PREDICT_BYTES = register(Exercise(
    id="03.predict-memory", level="warm-up", title="predict the bytes one rank holds",
    student_name="predict_bytes",
    task="Write `predict_bytes(num_params, world_size, stage)`: the bytes of weights, "
         "gradients and optimizer state that **one rank** holds when a model of "
         "`num_params` parameters trains in **fp32 with AdamW** under ZeRO `stage` "
         "(0 = DDP, 3 = FSDP) on `world_size` ranks. Return "
         "`{'params': ..., 'grads': ..., 'optimizer': ...}`. The checker runs your "
         "function on 4 real ranks for stages 0-3 and compares it, rank by rank, with the "
         "bytes measured there after one real training step of each stage (within 1%: "
         "shards are padded to equal sizes, and AdamW keeps a step counter per tensor).",
    hints=("First count what one parameter costs before any sharding, in fp32 with "
           "AdamW: its weight, its gradient, and what the optimizer remembers about it. "
           "Then ask, for each of the three, from which stage on it is split over the "
           "ranks.",
           "fp32 AdamW: 4 bytes of weight, 4 of gradient, and two 4-byte moments (there is "
           "no separate master copy: the weights already are fp32).",
           "Stage 1 divides the optimizer state by N, stage 2 also the gradients, stage 3 "
           "also the weights; the rest stays whole on every rank."),
    inputs=bytes_inputs, expected=bytes_measured, adapter=bytes_adapter,
    forbidden={"companion.data_parallel.memory.zero_memory_per_gpu":
               "it is the package's answer to this exercise",
               "companion.data_parallel.memory.bytes_per_param":
               "it answers the first half (the bytes per parameter): count them yourself",
               "companion.data_parallel.memory.max_params_that_fit":
               "it evaluates the package's formula for you"},
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
    id="03.zero2-step", level="core", title="one ZeRO-2 step from two collectives",
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
           "The calls: `dist.reduce_scatter_single(out, grad)` with `out` of c elements, "
           "and `dist.all_gather_single(full, my_slice)` with `full` of N·c elements "
           "(`dist.reduce_scatter` and `dist.all_gather` with lists of chunks work too)."),
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


# ---- 03.fsdp-forward (stretch) --------------------------------------------------------
def fsdp_inputs(rank: int, world_size: int) -> tuple:
    x, ws = layer_weights()
    dev = _device()
    return (x.to(dev), [shard_of(w, rank, world_size).to(dev) for w in ws],
            list(LAYER_SHAPES), Layers())


FSDP_KEYS = ("output", "calls of layers", "most full weights alive at once")


def fsdp_expected(x, shards, shapes, layers) -> dict:
    """One process holding every full weight: the forward pass the shards must reproduce."""
    x0, ws = layer_weights()
    out = x0
    for w in ws:
        out = torch.tanh(out @ w.T)
    return {"output": out.to(x.device), "calls of layers": len(ws),
            "most full weights alive at once": 1}


def fsdp_adapter(candidate, x, shards, shapes, layers) -> dict:
    out = candidate(x, shards, shapes, layers)
    return {"output": out, "calls of layers": layers.calls,
            "most full weights alive at once": layers.most_alive}


FSDP_FORWARD = register(Exercise(
    id="03.fsdp-forward", level="stretch", title="an FSDP forward pass: gather, compute, free",
    student_name="my_fsdp_forward",
    task="A 3-layer model is sharded ZeRO-3 style: for layer i, every rank holds "
         "`shards[i]`, its chunk of the flattened weight of shape `shapes[i]`, cut into "
         "N chunks of c = ⌈numel / N⌉ elements and zero-padded at the end (rank r holds "
         "elements [r·c, (r+1)·c)). Write `my_fsdp_forward(x, shards, shapes, layers)` "
         "that runs the forward pass `x = layers(i, x, weight_i)` for i = 0, 1, 2 and "
         "returns the output. Rebuild each full weight **just before its layer runs** and "
         "let it go before the next one: the checker counts how many full weights are "
         "alive at once (1 is the goal), compares the output with one process holding "
         "every weight, and checks the communication: one all-gather per layer, nothing "
         "else.",
    hints=("Keep only one layer's full weights at a time: fetch a layer's weights just "
           "before it runs, and let them go before fetching the next.",
           "An all-gather of the chunks gives, on every rank, the padded flat weight. "
           "Cut off the padding before reshaping it to the layer's shape.",
           "For layer i: gather into a buffer of N·c elements, keep the first "
           "rows·cols of them, reshape to `shapes[i]` and call `layers(i, x, weight)`. "
           "A name rebound to the next layer's buffer frees the previous one.",
           "`dist.all_gather_single(buffer, shards[i])` gathers. (torch's FSDP frees "
           "explicitly, with `t.untyped_storage().resize_(0)`, because autograd keeps a "
           "reference to every weight it needs for backward.)"),
    inputs=fsdp_inputs, expected=fsdp_expected, adapter=fsdp_adapter,
    forbidden={"torch.distributed.all_reduce":
               "summing zero-padded copies rebuilds the weight at twice an all-gather's "
               "traffic",
               "companion.data_parallel.fsdp.FSDP": "it is the package's FSDP",
               "companion.data_parallel.fsdp.FSDP.gather_full_params": "it is the package's FSDP",
               "companion.data_parallel.zero.unpack_chunks": "it is the package's un-sharding step",
               "torch.distributed.fsdp.fully_shard": "it is torch's FSDP2",
               "torch.distributed.fsdp.FullyShardedDataParallel": "it is torch's FSDP"},
    pattern=all_of(
        only(*ALL_GATHER, "barrier", why="ZeRO-3's forward only gathers weights"),
        counts({ALL_GATHER: len(LAYER_SHAPES)}, why="one all-gather per layer, on demand")),
    pure=True, rtol=1e-12, atol=1e-12,   # float64, and no arithmetic in the communication
    context="import torch\nimport torch.distributed as dist",
))
