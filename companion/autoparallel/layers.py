"""A model as the layers Alpa's inter-operator program slices into pipeline stages.

Taught in notebook 12 (``notebooks/12_auto_parallelism.ipynb``, section on Alpa's
stages): each :class:`Layer` carries, per micro-batch, what ``autoparallel.stages``
needs to cost a stage of it: FLOPs, weight bytes, the activation a stage boundary after
it sends, what it keeps for backward and what tensor parallelism all-reduces in it.
"""
from __future__ import annotations

import dataclasses

from ..data_parallel import memory
from ..planner.specs import ModelSpec
from ..validation import positive_int, positive_number

__all__ = ["Layer", "model_layers", "LLAMA_3_2_1B"]

# A model whose ends outweigh its blocks: the output head (128,256 x 2,048) holds the
# weights of 4.3 blocks, does 3.4 blocks' FLOPs at 8,192 tokens (a block's attention
# counted) and keeps fp32 logits. Shape from Meta's model card
# (https://huggingface.co/meta-llama/Llama-3.2-1B, config.json); 8,192-token sequences.
LLAMA_3_2_1B = ModelSpec("Llama-3.2 1B", layers=16, hidden=2048, heads=32, seq_len=8192,
                         vocab=128256, ffn_hidden=8192, kv_heads=8, gated_mlp=True,
                         tied_embeddings=True, published_params=1.23e9)


@dataclasses.dataclass(frozen=True)
class Layer:
    """One layer of the pipeline, per micro-batch: training FLOPs (forward and backward),
    16-bit weight bytes, bytes of its output (what a stage boundary after it sends), bytes
    kept for backward (default: the output), and what Megatron tensor parallelism
    all-reduces in it (``tp_bytes`` over ``tp_calls`` calls, forward and backward)."""

    name: str
    flops: float
    param_bytes: float
    activation_bytes: float
    saved_bytes: float | None = None
    tp_bytes: float = 0.0
    tp_calls: int = 0
    kind: str = "block"  # "embedding" and "head" ride with the first/last stage in an equal split
    batch: int | None = None  # sequences per micro-batch: a stage's DP degree must divide it

    def __post_init__(self):
        for field in ("flops", "param_bytes", "activation_bytes", "tp_bytes"):
            positive_number(field, getattr(self, field), f"pass {field} of layer {self.name!r} "
                            "as a finite number >= 0.", zero=True)
        if self.saved_bytes is None:
            object.__setattr__(self, "saved_bytes", self.activation_bytes)
        positive_number("saved_bytes", self.saved_bytes, "pass bytes >= 0.", zero=True)
        positive_int("tp_calls", self.tp_calls, "pass a count >= 0.", minimum=0)
        if self.batch is not None:
            positive_int("batch", self.batch, "pass sequences per micro-batch, or None.")


def model_layers(model, micro_batch: int = 1, blocks_per_layer: int = 1,
                 recompute: str = "selective") -> list[Layer]:
    """A ``planner.ModelSpec`` as pipeline layers: the input embedding, the transformer
    blocks (``blocks_per_layer`` to a layer, to keep the search small) and the output head.

    The embedding is a table lookup: its weights and optimizer state weigh as much as the
    head's but it does no matrix multiply (counted 0 FLOPs). The head does 6 h V FLOPs per
    token and keeps fp32 logits for the loss (4 s b V bytes); a block does 6 N_block FLOPs
    per token plus attention's 6 s h, as ``ModelSpec.flops_per_token``. Tied embeddings:
    the head keeps its own copy, as Megatron does when they sit on different stages.
    """
    positive_int("micro_batch", micro_batch, "pass sequences per micro-batch, e.g. 1.")
    positive_int("blocks_per_layer", blocks_per_layer, "pass e.g. 1 or 4.")
    if model.layers % blocks_per_layer:
        raise ValueError(f"blocks_per_layer={blocks_per_layer} does not divide the model's "
                         f"{model.layers} blocks; pick a divisor.")
    s, b, h, v = model.seq_len, micro_batch, model.hidden, model.vocab
    tokens, hidden = s * b, 2.0 * s * b * h  # a 16-bit [b, s, h] tensor
    saved = memory.activation_memory_per_layer(s, b, h, model.heads, recompute=recompute)
    k = blocks_per_layer
    embed = Layer("embedding", 0.0, 2.0 * (model.embedding_params() - (0 if model.tied_embeddings
                  else v * h)), hidden, tp_bytes=hidden, tp_calls=1, kind="embedding", batch=b)
    block = dict(batch=b, flops=k * 6.0 * tokens * (model.layer_params() + s * h),
                 param_bytes=k * 2.0 * model.layer_params(), activation_bytes=hidden,
                 saved_bytes=k * saved, tp_bytes=k * 4 * hidden, tp_calls=4 * k)
    blocks = [Layer(f"blocks {i * k}-{i * k + k - 1}" if k > 1 else f"block {i}", **block)
              for i in range(model.layers // k)]
    # the head's backward all-reduces its input gradient; the vocab-parallel loss adds
    # three all-reduces of one fp32 number per token (max, sum of exponentials, target).
    head = Layer("head", 6.0 * tokens * h * v, 2.0 * (v * h + model._norm()), 2.0 * tokens * v,
                 saved_bytes=hidden + 4.0 * tokens * v, tp_bytes=hidden + 12.0 * tokens,
                 tp_calls=4, kind="head", batch=b)
    return [embed, *blocks, head]
