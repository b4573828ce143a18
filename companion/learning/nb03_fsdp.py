"""Exercise ``03.fsdp-forward`` of notebook 03 (``notebooks/03_zero_memory.ipynb``),
FSDP's forward and backward by hand, and its model: three tanh layers whose weights
every rank holds only as zero-padded shards (``companion.data_parallel.zero``'s layout),
each rank with its own batch, and a :class:`Layers` callable that counts how many full
weights (and how many bytes of them) are alive at each call. :mod:`.nb03` imports this
module, so ``exercise("03.fsdp-forward")`` finds the exercise.
"""
from __future__ import annotations

import weakref

import torch
import torch.distributed as dist

from .exercise import Exercise, register
from .patterns import all_of, only
from .recording import settled

# Pieces of notebook 03's exercises: companion.learning.nb03 imports them; students call
# exercise("03.fsdp-forward").check(...), so nothing here is public API.
__all__: list[str] = []

# torch 2.13's all_gather_into_tensor / reduce_scatter_tensor call the *_single entry
# points; the watcher records whichever the student called (the outermost call).
REDUCE_SCATTER = ("reduce_scatter", "reduce_scatter_tensor", "reduce_scatter_single")
ALL_GATHER = ("all_gather", "all_gather_into_tensor", "all_gather_single")

LAYER_SHAPES = ((6, 5), (7, 6), (3, 7))   # (out, in): 30, 42, 21 elements, none divisible by 4
BATCH = 2


def _device():
    from ..runtime import device
    return device()


def _ordered(result, keys):
    """A dict with ``keys`` in a fixed order (a student's key order must not matter)."""
    if isinstance(result, dict) and set(result) == set(keys):
        return {k: result[k] for k in keys}
    return result


def layer_weights():
    """The input batch and the three full weights, deterministic, in float64."""
    g = torch.Generator().manual_seed(2304_11277)  # the PyTorch FSDP paper's arXiv number
    x = torch.randn(BATCH, LAYER_SHAPES[0][1], generator=g, dtype=torch.float64)
    ws = [torch.randn(s, generator=g, dtype=torch.float64) / s[1] ** 0.5 for s in LAYER_SHAPES]
    return x, ws


def rank_batch(rank: int) -> torch.Tensor:
    """Rank ``rank``'s batch: data parallelism, so every rank sees different inputs."""
    x, _ = layer_weights()
    g = torch.Generator().manual_seed(rank)
    return x + 0.5 * torch.randn(x.shape, generator=g, dtype=x.dtype)


def shard_of(weight: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Rank ``rank``'s chunk of the flattened weight, zero-padded: companion.data_parallel.zero's layout."""
    c = -(-weight.numel() // world_size)
    flat = torch.nn.functional.pad(weight.reshape(-1), (0, c * world_size - weight.numel()))
    return flat[rank * c:(rank + 1) * c].clone()


def single_process_step(world_size: int):
    """One process holding every full weight: each rank's output, and the weights'
    gradients of the mean over ranks of each rank's loss 0.5 * ||output||^2."""
    _, ws = layer_weights()
    full = [w.clone().requires_grad_(True) for w in ws]
    outputs, loss = [], 0.0
    for r in range(world_size):
        out = rank_batch(r)
        for w in full:
            out = torch.tanh(out @ w.T)
        outputs.append(out.detach())
        loss = loss + 0.5 * out.pow(2).sum() / world_size
    return outputs, [g.detach() for g in torch.autograd.grad(loss, full)]


class Layers:
    """The model's layers, ``layers(i, x, weight) = tanh(x @ weight.T)``, which also count
    how many full weights handed to them are still alive (not freed) at each call, and
    how many bytes their storages hold."""

    def __init__(self, shapes=LAYER_SHAPES):
        self.shapes = tuple(tuple(s) for s in shapes)
        self.calls = 0
        self.most_alive = 0
        self.most_bytes = 0
        self._seen = []   # weak references: holding them must not keep a weight alive

    def _alive_now(self) -> tuple[int, int]:
        storages = {}
        for ref in self._seen:
            t = ref()
            if t is not None and t.untyped_storage().nbytes() > 0:
                storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return len(storages), sum(storages.values())

    def _alive(self) -> tuple[int, int]:
        """Full weights still alive, and their storages' bytes: dropped by the student (no
        reference left) or freed in place (storage resized to 0, as torch's FSDP does)
        count as gone. gloo's worker thread may hold an all-gather's output a moment
        after the call returned, so a count above 1 is re-read for a moment before it is
        believed."""
        return settled(self._alive_now, lambda alive: alive[0] <= 1)

    def __call__(self, i: int, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if not 0 <= i < len(self.shapes):
            raise IndexError(f"layer {i} does not exist: the model has {len(self.shapes)} "
                             "layers, 0 to " + str(len(self.shapes) - 1))
        if tuple(weight.shape) != self.shapes[i]:
            raise ValueError(f"layer {i} needs a weight of shape {self.shapes[i]}, got "
                             f"{tuple(weight.shape)}")
        base = weight._base if weight._base is not None else weight
        self._seen.append(weakref.ref(base))
        self.calls += 1
        count, nbytes = self._alive()
        self.most_alive = max(self.most_alive, count)
        self.most_bytes = max(self.most_bytes, nbytes)
        return torch.tanh(x @ weight.T)


# ---- the exercise ---------------------------------------------------------------------
def fsdp_inputs(rank: int, world_size: int) -> tuple:
    _, ws = layer_weights()
    dev = _device()
    return (rank_batch(rank).to(dev), [shard_of(w, rank, world_size).to(dev) for w in ws],
            list(LAYER_SHAPES), Layers())


def _one_layer_bytes(world_size: int, element_size: int) -> int:
    """The largest gathered weight, padding included: what one layer may keep alive."""
    return max(world_size * -(-(a * b) // world_size) for a, b in LAYER_SHAPES) * element_size


def _shard_key(i: int) -> str:
    return f"weight-gradient shard of layer {i}"


def fsdp_expected(x, shards, shapes, layers) -> dict:
    """One process holding every full weight: this rank's output, and this rank's shard of
    each weight gradient of the mean loss over the ranks."""
    rank, n = dist.get_rank(), dist.get_world_size()
    _, ws = layer_weights()
    out = x.detach().cpu()
    for w in ws:
        out = torch.tanh(out @ w.T)
    _, grads = single_process_step(n)
    result = {"output": out.to(x.device), "calls of layers": len(ws),
              "most full weights alive at once": 1,
              "no more than one layer's weight bytes alive at once": True}
    for i, g in enumerate(grads):
        result[_shard_key(i)] = shard_of(g, rank, n).to(x.device)
    return result


def fsdp_adapter(candidate, x, shards, shapes, layers) -> dict:
    """The student's pass; ``(output, gradient shards)`` or the output alone (a forward
    pass only, whose missing gradients the check then reports)."""
    got = candidate(x, shards, shapes, layers)
    out, grads = got if isinstance(got, tuple) and len(got) == 2 else (got, None)
    limit = _one_layer_bytes(dist.get_world_size(), x.element_size())
    result = {"output": out, "calls of layers": layers.calls,
              "most full weights alive at once": layers.most_alive,
              "no more than one layer's weight bytes alive at once": layers.most_bytes <= limit}
    for i in range(len(shapes)):
        given = isinstance(grads, (list, tuple)) and i < len(grads)
        result[_shard_key(i)] = grads[i] if given else "not returned"
    return result


def _fsdp_order(calls_per_rank, world_size):
    """One all-gather per layer in forward; in backward each layer's weight gathered again
    (layer 0's may be skipped: its input needs no gradient) and each weight gradient
    reduce-scattered before the next layer's weight is gathered."""
    n_layers = len(LAYER_SHAPES)
    for rank, calls in enumerate(calls_per_rank):
        seq = [c for c in calls if c.name != "barrier"]
        forward, backward = seq[:n_layers], seq[n_layers:]
        if len(forward) < n_layers or any(c.name not in ALL_GATHER for c in forward):
            return (f"rank {rank}: the pass must start with one all-gather per layer (the "
                    f"forward), got {[c.name for c in forward]}")
        gathers = [c for c in backward if c.name in ALL_GATHER]
        scatters = [c for c in backward if c.name in REDUCE_SCATTER]
        if len(scatters) != n_layers or not n_layers - 1 <= len(gathers) <= n_layers:
            return (f"rank {rank}: after the forward it made {len(gathers)} all-gather(s) "
                    f"and {len(scatters)} reduce-scatter(s); backward needs {n_layers} "
                    f"reduce-scatters (one per weight gradient) and the weights again, "
                    f"{n_layers - 1} or {n_layers} all-gathers")
        forward_bytes = [c.bytes for c in forward]
        for c in gathers:
            if c.bytes not in forward_bytes:
                return (f"rank {rank}: backward gathered one layer's weight twice; gather "
                        "each again once, when its gradients are computed")
            forward_bytes.remove(c.bytes)
        ahead = 0
        for c in backward:
            ahead = ahead + 1 if c.name in ALL_GATHER else max(ahead - 1, 0)
            if ahead > 1:
                return (f"rank {rank}: backward gathered {ahead} layers' weights before "
                        "reduce-scattering the first one's gradient; gather a layer's weight "
                        "when its gradients are computed, and let it go before the next")
    return None


FSDP_FORWARD = register(Exercise(
    id="03.fsdp-forward", level="stretch", kind="implement",
    title="FSDP by hand: gather, compute, free, and again in backward",
    student_name="my_fsdp_forward",
    task="A 3-layer model, layer i computing x <- tanh(x W_i^T) as `layers(i, x, W_i)`, is "
         "sharded ZeRO-3 style: for layer i every rank holds `shards[i]`, its chunk of the "
         "flattened W_i of shape `shapes[i]`, cut into N chunks of c = ⌈numel / N⌉ "
         "elements and zero-padded at the end (rank r holds elements [r·c, (r+1)·c)). "
         "Each rank has its own batch `x`, and its loss is 0.5·‖output‖², so the gradient "
         "reaching the output is the output itself. Write `my_fsdp_forward(x, shards, "
         "shapes, layers)` returning `(output, grad_shards)`: the forward pass, calling "
         "`layers` once per layer, then the backward pass by hand, with `grad_shards[i]` "
         "this rank's shard of W_i's gradient of the loss averaged over the ranks. As FSDP "
         "does: rebuild each full weight **just before** its layer needs it and let it go "
         "before the next, in forward and again in backward, and reduce-scatter each "
         "weight gradient as soon as it is computed. The checker compares with one process "
         "holding every weight (float64), counts the full weights alive at each call of "
         "`layers` (1 is the goal) and checks the order of the collectives.",
    hints=("Draw section 5b's timeline for three layers: forward gathers 0, 1, 2; backward "
           "runs 2, 1, 0, gathering each weight again. What must forward keep for "
           "backward, if not the weights?",
           "An all-gather of the chunks gives every rank the padded flat weight: cut off "
           "the padding before reshaping. For y = tanh(x W^T), the backward needs the "
           "layer's input x, its output y and, for the gradient reaching x, W itself.",
           "Each rank's weight gradient is that of its own batch only. The reduce-scatter "
           "wants a flat tensor of N·c elements, padded like the weight, and hands rank r "
           "the sum of every rank's chunk r: the average is one step away.",
           "A name rebound, or a temporary passed straight to `layers`, lets a gathered "
           "weight go. Layer 0's input needs no gradient, so its weight need not be "
           "gathered again."),
    inputs=fsdp_inputs, expected=fsdp_expected, adapter=fsdp_adapter,
    forbidden={"torch.distributed.all_reduce":
               "an all-reduce rebuilds weights at twice an all-gather's traffic, and leaves "
               "every rank the full gradient: reduce-scatter it",
               "companion.data_parallel.fsdp.FSDP": "it is the package's FSDP",
               "companion.data_parallel.fsdp.FSDP.gather_full_params": "it is the package's FSDP",
               "companion.data_parallel.zero.unpack_chunks": "it is the package's un-sharding step",
               "torch.distributed.fsdp.fully_shard": "it is torch's FSDP2",
               "torch.distributed.fsdp.FullyShardedDataParallel": "it is torch's FSDP",
               "companion.learning.nb03_fsdp.single_process_step": "it is the checker's answer"},
    pattern=all_of(
        only(*ALL_GATHER, *REDUCE_SCATTER, "barrier",
             why="FSDP gathers weights and reduce-scatters gradients, nothing else"),
        _fsdp_order),
    pure=True, rtol=1e-12, atol=1e-12,   # float64; only the order of a 4-term sum differs
    context="import torch\nimport torch.distributed as dist",
))
