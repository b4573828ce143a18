"""Memory and communication accounting for data parallelism, ZeRO and FSDP.

Taught in notebook 03 (``notebooks/03_zero_memory.ipynb``), after MIT 6.5940 L19
pages 68-73 and Stanford CS336 L8 section 3. Every function states its formula; the
notebook checks them against bytes measured on real ranks.

Notation (ZeRO paper, Rajbhandari et al. 2020): Psi parameters, N data-parallel ranks,
K bytes of optimizer state per parameter. Mixed-precision Adam keeps 2 bytes of fp16
weights, 2 of fp16 gradients and K = 12 (fp32 master weights, momentum, variance):
16 bytes per parameter. Stage 1 shards the optimizer state, stage 2 also the gradients,
stage 3 (FSDP) also the parameters:

    stage 0 (DDP): (2 + 2 + K) Psi        stage 2: 2 Psi + (2 + K) Psi / N
    stage 1:       (2 + 2) Psi + K Psi / N  stage 3: (2 + 2 + K) Psi / N

Activations follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in
Large Transformer Models"), Table 2, for one transformer layer in 16-bit precision.
"""
from __future__ import annotations

import math

import torch

# The course's unit (companion.units): GB = 10**9 bytes, as in the ZeRO paper and the
# lectures (7.5e9 parameters x 16 B = "120 GB"); re-exported as memory.GB.
from ..collectives.accounting import ring_bytes
from ..units import GB
from ..validation import positive_number

__all__ = ["PRECISIONS", "OPTIMIZERS", "bytes_per_param", "zero_memory_per_gpu",
           "max_params_that_fit", "activation_memory_per_layer", "communication_volume",
           "held_bytes", "optimizer_state_tensors", "GB",
           "transformer_params", "MODEL_CONFIGS"]


# precision -> (weight bytes, gradient bytes, fp32 master copy in the optimizer?, state bytes)
PRECISIONS = {
    "mixed": (2, 2, True, 4),    # fp16/bf16 compute, fp32 master weights and Adam moments
    "fp32": (4, 4, False, 4),    # everything in fp32: no separate master copy needed
    "bf16": (2, 2, False, 2),    # pure bf16, no master weights (moments in bf16 too)
}
# optimizer -> number of per-parameter state tensors it keeps
OPTIMIZERS = {"adam": 2, "adamw": 2, "sgd_momentum": 1, "sgd": 0}
STAGES = (0, 1, 2, 3)


def _positive(name, value, integer=True):
    # Whole floats count (7.5e9 parameters is a float), NaN and infinity do not.
    positive_number(name, value, f"pass e.g. {name}=1.")
    if integer and not float(value).is_integer():
        raise ValueError(f"{name} must be a positive integer, got {value!r}; pass e.g. {name}=1.")


def bytes_per_param(precision: str = "mixed", optimizer: str = "adam") -> dict:
    """Bytes per parameter for weights, gradients and optimizer state (unsharded).

    optimizer bytes = (4 if an fp32 master copy is kept) + states x state bytes, so
    mixed-precision Adam gives 2 + 2 + (4 + 2 x 4) = 16 (ZeRO's K = 12), fp32 Adam
    4 + 4 + 8 = 16, pure-bf16 Adam 2 + 2 + 4 = 8, mixed SGD with momentum 2 + 2 + 8.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; use one of {sorted(PRECISIONS)}.")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; use one of {sorted(OPTIMIZERS)}.")
    weight, grad, master, state = PRECISIONS[precision]
    return {"params": weight, "grads": grad,
            "optimizer": (4 if master else 0) + OPTIMIZERS[optimizer] * state}


def zero_memory_per_gpu(num_params, world_size, stage, precision: str = "mixed",
                        optimizer: str = "adam", param_bytes=None, grad_bytes=None,
                        optimizer_bytes=None) -> dict:
    """Bytes per GPU for ZeRO ``stage`` (0 = plain DDP, 3 = FSDP) on ``world_size`` ranks.

    Returns ``{"params", "grads", "optimizer", "total"}``. Stage s divides the optimizer
    state by N when s >= 1, the gradients when s >= 2 and the weights when s == 3 (the
    ZeRO paper's Figure 1). ``param_bytes``/``grad_bytes``/``optimizer_bytes`` override
    the per-parameter bytes that ``precision`` and ``optimizer`` imply. Shards are the
    exact fraction Psi / N; implementations pad each tensor to a multiple of N, which
    adds at most N - 1 elements per tensor.
    """
    _positive("num_params", num_params)
    _positive("world_size", world_size)
    if stage not in STAGES:
        raise ValueError(f"unknown ZeRO stage {stage!r}; use 0 (DDP), 1, 2 or 3 (FSDP).")
    per = bytes_per_param(precision, optimizer)
    for key, override in (("params", param_bytes), ("grads", grad_bytes),
                          ("optimizer", optimizer_bytes)):
        if override is not None:
            if not isinstance(override, (int, float)) or override < 0:
                raise ValueError(f"{key} bytes per parameter must be >= 0, got {override!r}.")
            per[key] = override
    n = world_size
    out = {"params": num_params * per["params"] / (n if stage >= 3 else 1),
           "grads": num_params * per["grads"] / (n if stage >= 2 else 1),
           "optimizer": num_params * per["optimizer"] / (n if stage >= 1 else 1)}
    out["total"] = out["params"] + out["grads"] + out["optimizer"]
    return out


def max_params_that_fit(gpu_memory_bytes, world_size, stage, **precision) -> int:
    """Largest parameter count whose weights, gradients and optimizer state fit in
    ``gpu_memory_bytes`` per GPU (activations and fragmentation not counted).

    The model states are linear in Psi, so this is memory / (bytes per GPU per
    parameter): 80 GB / 16 B = 5e9 for DDP, as on L19 page 69.
    """
    _positive("gpu_memory_bytes", gpu_memory_bytes, integer=False)
    per_param = zero_memory_per_gpu(1, world_size, stage, **precision)["total"]
    if per_param == 0:
        raise ValueError("with zero bytes per parameter every model fits; give some bytes.")
    # a hair of slack so that 80e9 / 16 is 5e9 and not 4999999999 from rounding
    return int(math.floor(gpu_memory_bytes / per_param * (1 + 1e-12)))


def activation_memory_per_layer(seq_len, batch, hidden, heads, tp=1,
                                sequence_parallel=False, recompute="none") -> float:
    """Activation bytes one transformer layer stores for backward (Korthikanti et al.).

    With s = seq_len, b = batch, h = hidden, a = heads, t = tp (16-bit activations,
    1-byte dropout masks, as in the paper's Table 2):

    * no parallelism:            s b h (34 + 5 a s / h)
    * tensor parallel:           s b h (10 + 24 / t + 5 a s / (h t))
    * tensor + sequence parallel: s b h / t (34 + 5 a s / h)
    * ``recompute="selective"`` drops the attention term 5 a s / h (the softmax and its
      dropout are recomputed in backward);
    * ``recompute="full"`` keeps only each layer's input: 2 s b h, the paper's row, or
      2 s b h / t with sequence parallelism, whose layer input is already the sequence
      shard (Megatron-LM checkpoints that shard; the planner counts the same, notebooks
      09 and 12).

    By block the 34 are attention 11, MLP 19 and the two LayerNorms 4 (the paper's
    Section 4.1). Tensor parallelism divides 24 of them by t; the other 10 (LayerNorm
    inputs, the inputs of the QKV and first MLP linears, two dropout masks) stay whole
    unless sequence parallelism shards them along the sequence.
    """
    for name, value in (("seq_len", seq_len), ("batch", batch), ("hidden", hidden),
                        ("heads", heads), ("tp", tp)):
        _positive(name, value)
    if recompute not in ("none", "selective", "full"):
        raise ValueError(f"recompute must be 'none', 'selective' or 'full', got {recompute!r}.")
    if hidden % heads:
        raise ValueError(f"hidden={hidden} is not divisible by heads={heads}; pick a head "
                         "count that divides the hidden size.")
    if heads % tp or hidden % tp:
        raise ValueError(f"tp={tp} does not divide heads={heads} and hidden={hidden}: tensor "
                         "parallelism splits whole heads and equal column blocks; pick a "
                         "TP degree that divides both.")
    if sequence_parallel and tp == 1:
        sequence_parallel = False  # SP shards over the TP group: with t = 1 it is a no-op
    s, b, h, a, t = seq_len, batch, hidden, heads, tp
    sbh = s * b * h
    if recompute == "full":
        return 2.0 * sbh / (t if sequence_parallel else 1)
    attention = 0.0 if recompute == "selective" else 5.0 * a * s / h
    if sequence_parallel:
        return sbh / t * (34 + attention)
    return sbh * (10 + 24 / t + attention / t)


def communication_volume(num_params, world_size, stage, bytes_per_element=2) -> dict:
    """Bytes each rank sends per training step, for DDP (stage 0) and ZeRO stages 1-3.

    Every stage moves the gradients once through a reduce-scatter (an all-reduce is a
    reduce-scatter plus an all-gather) and the parameters once through an all-gather;
    stage 3 all-gathers the parameters twice (forward and backward). Returns
    per-collective bytes, ``"total"`` (ring bytes each rank sends), ``"times_params"``
    (``total`` over the parameter bytes: the course's "x the parameter bytes", exactly
    ``m (N - 1) / N``) and ``"multiple"`` (``m``: 2, 2, 2, 3, the large-N limit: the ZeRO
    paper's 2 Psi, 2 Psi and 3 Psi of its section 7; CS336 L8 quotes DDP's as "2 times
    parameters" and ZeRO-3's as one all-gather more). Taught in notebook 03, section 3.
    """
    _positive("num_params", num_params)
    _positive("world_size", world_size)
    if stage not in STAGES:
        raise ValueError(f"unknown ZeRO stage {stage!r}; use 0 (DDP), 1, 2 or 3 (FSDP).")
    payload = num_params * bytes_per_element
    ops = ({"all_reduce": 1} if stage == 0 else
           {"reduce_scatter": 1, "all_gather": 2 if stage == 3 else 1})
    # _positive lets a whole float through (8.0 ranks); ring_bytes counts ranks as ints
    out = {op: count * ring_bytes(op, payload, int(world_size)) for op, count in ops.items()}
    out["total"] = sum(out.values())
    out["times_params"] = out["total"] / payload
    out["multiple"] = 3 if stage == 3 else 2
    return out


def held_bytes(tensors) -> int:
    """Bytes of the distinct storages behind ``tensors`` (views and aliases counted once).

    This is what a rank really holds on CPU: a parameter's chunk that is a view into
    the full parameter costs nothing extra, a freed (size-0) storage costs nothing.
    """
    seen, total = set(), 0
    for t in tensors:
        if t is None:
            continue
        storage = t.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        if storage.nbytes() == 0 or key in seen:
            continue
        seen.add(key)
        total += storage.nbytes()
    return total


def optimizer_state_tensors(optimizer: torch.optim.Optimizer):
    """Every tensor in an optimizer's state (moments, step counters)."""
    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor):
                yield value


def transformer_params(layers, hidden, ffn, vocab, heads, kv_heads=None, gated_mlp=False,
                       biases=False, tied_embeddings=False, max_positions=0) -> int:
    """Parameter count of a decoder-only transformer from its configuration.

    Per layer: Q and output projections h x h each, K and V h x (h kv_heads / heads) each
    (grouped-query attention), an MLP of 2 (or 3 when gated, as SwiGLU) h x ffn matrices,
    two norms; plus token embeddings (and a separate output matrix unless tied), learned
    positions if ``max_positions``, and a final norm. ``biases=True`` adds GPT-style
    biases and LayerNorm shifts. Used for the presets of notebook 03's calculator.
    """
    for name, value in (("layers", layers), ("hidden", hidden), ("ffn", ffn),
                        ("vocab", vocab), ("heads", heads)):
        _positive(name, value)
    kv_heads = heads if kv_heads is None else kv_heads
    if hidden % heads or heads % kv_heads:
        raise ValueError("hidden must be divisible by heads and heads by kv_heads.")
    kv = hidden * kv_heads // heads
    attn = 2 * hidden * hidden + 2 * hidden * kv
    mlp = (3 if gated_mlp else 2) * hidden * ffn
    norms = 2 * hidden * (2 if biases else 1)
    bias = (hidden + 2 * kv + hidden + ffn + hidden) if biases else 0
    per_layer = attn + mlp + norms + bias
    embeddings = vocab * hidden * (1 if tied_embeddings else 2) + max_positions * hidden
    return layers * per_layer + embeddings + hidden * (2 if biases else 1)


# name -> transformer_params(...) arguments, from each model's published configuration
MODEL_CONFIGS = {
    "GPT-3 175B": dict(layers=96, hidden=12288, ffn=4 * 12288, vocab=50257, heads=96,
                       biases=True, tied_embeddings=True, max_positions=2048),
    "Llama-3 8B": dict(layers=32, hidden=4096, ffn=14336, vocab=128256, heads=32,
                       kv_heads=8, gated_mlp=True),
    "Llama-3 70B": dict(layers=80, hidden=8192, ffn=28672, vocab=128256, heads=64,
                        kv_heads=8, gated_mlp=True),
    "Llama-3 405B": dict(layers=126, hidden=16384, ffn=53248, vocab=128256, heads=128,
                         kv_heads=8, gated_mlp=True),
}
