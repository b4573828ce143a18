"""Per-GPU memory predicted from the shapes: the planner's model, tensor by tensor.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``, "Will it fit?");
``python -m companion fit`` prints it beside torch's measurement of the same layout
(:mod:`companion.planner.torch_memory`), and the tests hold the two together: model
states within 1 %, the peak within 10 %.

The model counts what each operation keeps for backward, for the decoder real runs
train (:mod:`companion.planner.decoder`: GQA, SwiGLU or GELU, fused attention, fused
norms), in units of e bytes per element (2 in bf16, 4 in fp32), per block and
micro-batch of b sequences of s tokens (s b h elements of width h):

* the two norms' inputs: 2 (sharded along the sequence by TP's sequence parallelism);
* the inputs of Q/K/V and of the MLP, gathered to the whole sequence under TP
  (torch's ``PrepareModuleInput`` keeps the gathered tensor; Megatron re-gathers in
  backward instead and keeps the shard): 2;
* Q, the attention output, K and V (2 kv/h): 2 + 2 kv/h; fused attention keeps the
  log-sum-exp (4 bytes per head and token), never the s x s scores, so Korthikanti et
  al.'s selective recomputation of the attention core saves only that;
* the MLP: SwiGLU keeps w1's and w3's outputs, the SiLU and the product, 4 f/h; GELU
  keeps w1's output and the GELU, 2 f/h; all split by TP.

Full recomputation keeps each block's input, 1 (sharded by sequence parallelism).

Around the blocks, at two moments, whichever is larger is the peak:

* at the loss: parameters and optimizer states (no gradient yet); every in-flight
  micro-batch's activations; the head's inputs; and the loss's own bytes
  (:func:`loss_bytes`: 14 per logit for ``cross_entropy(logits.float())``, up to
  4 + 4 t per local logit for torch's ``loss_parallel`` on TP-split logits);
* at the end of a micro-batch's backward: the states with their gradients, the
  activations of the micro-batches still in flight, and the last unit's gradients
  being reduced (the embedding's: under TP, torch's vocabulary-parallel embedding
  builds the gradient of the whole vocabulary on every rank first).

These constants are torch 2.13's implementation, read from its code and checked by
the tests against its tracker; a change of kernel or loss moves them.
"""
from __future__ import annotations

import dataclasses

from .specs import ModelSpec

__all__ = ["Layout", "predict_memory", "block_activation_bytes", "loss_bytes", "ROWS",
           "RECOMPUTE"]

RECOMPUTE = ("none", "selective", "full")
ROWS = ("params", "grads", "optimizer", "gathered", "activations", "temporaries")


@dataclasses.dataclass(frozen=True)
class Layout:
    """How ``gpus`` GPUs train: data parallel takes ``gpus / (tp * pp * cp)``."""

    gpus: int
    tp: int = 1
    pp: int = 1
    cp: int = 1
    zero: int = 3
    seq: int = 2048
    micro_batch: int = 1
    recompute: str = "none"
    precision: str = "bf16"

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp * self.cp)

    @property
    def shards(self) -> int:
        """Ranks each state is sharded over: DP x CP under ZeRO-3, else none."""
        return self.dp * self.cp if self.zero == 3 else 1

    def check(self, spec: ModelSpec) -> None:
        """A clear ValueError for a layout that cannot run, before anything is built."""
        if not isinstance(spec, ModelSpec):
            raise TypeError(f"spec: pass a planner ModelSpec, got {type(spec).__name__}.")
        for name in ("gpus", "tp", "pp", "cp", "seq", "micro_batch"):
            _degree(name, getattr(self, name))
        if self.gpus % (self.tp * self.pp * self.cp):
            raise ValueError(f"gpus={self.gpus} is not a multiple of tp x pp x cp = "
                             f"{self.tp * self.pp * self.cp}: the degrees must multiply to "
                             "the GPU count (data parallel takes the rest).")
        if self.zero not in (0, 3):
            raise ValueError(f"zero={self.zero!r}: torch's FSDP2 shards every state "
                             "(zero=3) or none (zero=0); use 0 or 3.")
        if self.recompute not in RECOMPUTE:
            raise ValueError(f"recompute={self.recompute!r}: use one of {RECOMPUTE}.")
        if self.precision not in ("bf16", "fp32"):
            raise ValueError(f"precision={self.precision!r}: use 'bf16' (mixed) or 'fp32'.")
        if spec.is_moe or spec.mla:
            raise ValueError(f"{spec.name}: memory is modelled for dense GQA models only.")
        kv = spec.kv_heads or spec.heads
        for what, n in (("heads", spec.heads), ("kv_heads", kv), ("hidden", spec.hidden),
                        ("ffn", spec.ffn)):
            if n % self.tp:
                raise ValueError(f"tp={self.tp} does not divide {spec.name}'s {what} ({n}); "
                                 "pick a TP degree that divides the heads and the widths.")
        if self.pp > spec.layers:
            raise ValueError(f"pp={self.pp} exceeds {spec.name}'s {spec.layers} layers.")
        if self.seq % self.cp or (self.seq // self.cp) % self.tp:
            raise ValueError(f"seq={self.seq} must divide by cp x tp = {self.cp * self.tp} "
                             "(sequence parallelism splits each rank's tokens over TP).")


def _degree(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name}={value!r}: use a positive whole number.")


def padded_vocab(spec: ModelSpec, tp: int) -> int:
    """The vocabulary rounded up to a multiple of ``tp``, so that its TP shards are equal
    (GPT-3's 50,257 under TP 8 becomes 50,264; Megatron pads further, to 128 x tp)."""
    _degree("tp", tp)
    return -(-spec.vocab // tp) * tp


def block_activation_bytes(spec: ModelSpec, tokens: int, batch: int, tp: int = 1,
                           recompute: str = "none", element_bytes: int = 2,
                           keeps: str = "torch") -> float:
    """Bytes one block keeps for backward, per micro-batch (the module docstring's count).

    ``keeps="torch"`` is torch 2.13's tensor parallelism, which ``fit`` measures;
    ``keeps="megatron"`` is the planner's (notebooks 09 and 12), Megatron-LM's way: the
    Q/K/V and MLP inputs are kept as sequence shards and gathered again in backward,
    and the fused SwiGLU keeps w1's and w3's outputs and their product, 3 f/h, not 4.
    A MoE block's MLP is the experts a token visits (top-k, padded to the capacity
    factor) plus the shared ones; MLA's attention keeps its queries, keys and values at
    their own widths (``attention_dim``, ``kv_dim``)."""
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute={recompute!r}: use one of {RECOMPUTE}.")
    if keeps not in ("torch", "megatron"):
        raise ValueError(f"keeps={keeps!r}: use 'torch' (what fit measures) or 'megatron'.")
    for name, value in (("tokens", tokens), ("batch", batch)):
        _degree(name, value)
    _degree("tp", tp)
    h, t = spec.hidden, tp
    sbh = tokens * batch * h
    if recompute == "full":
        return element_bytes * sbh / t
    width = spec.ffn
    if spec.is_moe:
        width = (spec.top_k * spec.capacity_factor + spec.shared_experts) * spec.expert_ffn
    per_width = (3 if keeps == "megatron" else 4) if spec.gated_mlp else 2
    mlp = per_width * width / h
    # Q and the attention output, K and V (MLA's at their up-projected widths); the MLP
    kv = spec.attention_dim if spec.mla else spec.kv_dim
    split = 2 * (spec.attention_dim + kv) / h + mlp
    gathered = (2 if keeps == "torch" else 2 / t) if t > 1 else 0
    if t == 1:
        split += 2                          # the Q/K/V and MLP inputs, ordinary inputs
    per = element_bytes * sbh * (2 / t + gathered + split / t)
    if recompute == "none":
        per += 4 * tokens * batch * spec.heads / t     # the log-sum-exp
    return per


def loss_bytes(tokens: int, vocab: int, tp: int = 1, element_bytes: int = 2,
               keeps: str = "torch") -> dict:
    """Bytes of the logits and the cross-entropy on one rank at the loss's peak, split as
    torch's tracker splits them: ``"activations"`` (kept from forward) and
    ``"temporaries"`` (backward's), for ``tokens`` tokens of a ``vocab`` vocabulary.

    Without TP (torchtitan's ``cross_entropy(logits.float())``): the logits (e bytes
    each) and the fp32 log-softmax are kept, and backward adds two fp32 gradients (8).
    Under TP, torch's ``loss_parallel`` on vocabulary shards: in forward its decomposed
    log-softmax makes an fp32 copy (of bf16 logits), the shifted logits and their
    exponentials in fp32 and the result (e); in backward the logits and the log-softmax
    (e each) meet an fp32 tensor of the WHOLE vocabulary per token (4 t bytes per local
    logit), which is why its cost grows with t. Whichever phase is larger is the peak.

    ``keeps="megatron"`` (the planner's): Megatron-LM's vocabulary-parallel cross-entropy
    turns an fp32 copy of the local logits into the softmax in place and keeps it (4),
    and its backward returns that tensor as the gradient, cast back to e bytes.
    """
    if keeps not in ("torch", "megatron"):
        raise ValueError(f"keeps={keeps!r}: use 'torch' (what fit measures) or 'megatron'.")
    for name, value in (("tokens", tokens), ("vocab", vocab), ("tp", tp)):
        _degree(name, value)
    e, t = element_bytes, tp
    local = tokens * vocab / t
    if keeps == "megatron":
        return {"activations": 4 * local, "temporaries": e * local}
    if t == 1:
        return {"activations": (e + 4) * local, "temporaries": 8 * local}
    forward = (4 if e == 2 else 0) + 8 + e
    if e + forward >= 2 * e + 4 * t:
        return {"activations": e * local, "temporaries": forward * local}
    return {"activations": 2 * e * local, "temporaries": 4 * t * local}


def predict_memory(spec: ModelSpec, layout: Layout, stage: int | None = None) -> dict:
    """Bytes by row (:data:`ROWS`) at the peak of the busiest pipeline stage, with
    ``"peak"``, ``"states"`` and ``"stage"``, as :func:`.torch_memory.measure_memory`
    returns them."""
    if not isinstance(layout, Layout):
        raise TypeError(f"layout: pass a memory_model.Layout, got {type(layout).__name__}.")
    layout.check(spec)
    stages = range(layout.pp) if stage is None else [stage]
    return max((_stage(spec, layout, s) for s in sorted({stages[0], stages[-1]})),
               key=lambda r: r["peak"])


def _stage(spec: ModelSpec, layout: Layout, stage: int) -> dict:
    t, e = layout.tp, 2 if layout.precision == "bf16" else 4
    first, last = stage == 0, stage == layout.pp - 1
    tokens, b = layout.seq // layout.cp, layout.micro_batch
    blocks = spec.stage_layers(layout.pp)[stage]
    vocab = padded_vocab(spec, t)
    tables = 1 if first and last and spec.tied_embeddings else first + last
    root = vocab * spec.hidden * tables // t + (spec.hidden if last else 0)
    params = blocks * spec.layer_params() // t + root
    per_param = 16.0 / layout.shards            # fp32 weights, gradients, AdamW's m, v
    in_flight = layout.pp - stage
    acts = blocks * in_flight * block_activation_bytes(spec, tokens, b, t, layout.recompute, e)
    sbh = tokens * b * spec.hidden
    # FSDP2 reshards every unit after its forward: at the loss nothing is gathered in
    # bf16; in fp32 (no cast) the embedding and the head were measured still gathered
    held = 4.0 * root if e == 4 and layout.zero == 3 else 0.0
    loss = {"gathered": held, "activations": acts, "temporaries": 0.0}
    if last:
        # the final norm's input (a sequence shard) and the head's (gathered under TP)
        loss["activations"] += e * sbh / t + e * sbh
        for row, value in loss_bytes(tokens * b, vocab, t, e).items():
            loss[row] += value
    at_loss = {"params": 4 * params / layout.shards, "grads": 0.0,
               "optimizer": 8 * params / layout.shards, **loss}
    # FSDP2 reduces after every micro-batch's backward, the embedding's gradient last
    # (the head's first): the micro-batches still in flight keep their activations
    # while the last unit's gradients are reduced. Under TP, the vocabulary-parallel
    # embedding's backward builds the gradient of the WHOLE vocabulary (e V h bytes)
    # before it is split again, with 8 bytes per local entry of copies and buffers;
    # otherwise the unit's gathered gradients, their fp32 copy and the reduce-scatter's
    # output (6 + 6 / shards bytes per parameter; 4 + 4 / shards in fp32).
    per_grad = (6.0 if e == 2 else 4.0) * (1 + 1 / layout.shards)
    if first and t > 1:
        reducing = e * vocab * spec.hidden + 8.0 * vocab * spec.hidden / t
    else:
        reducing = per_grad * root
    gathered = 0.0
    if layout.zero == 3 and first and t > 1:
        # sharded, the first block is still gathered and reducing its gradients while
        # the embedding's backward runs (unsharded, FSDP2 neither gathers nor copies)
        block = spec.layer_params() / t
        gathered = e * (vocab * spec.hidden / t + block)
        reducing += per_grad * block
    per_mb = acts / in_flight
    ends = [{"params": 4 * params / layout.shards,
             "grads": 4 * (params - (root if k == 1 else 0)) / layout.shards,
             "optimizer": 8 * params / layout.shards, "gathered": gathered,
             "activations": per_mb * (in_flight - k), "temporaries": reducing}
            for k in range(1, min(in_flight, 2) + 1)]
    out = max([at_loss, *ends], key=lambda r: sum(r.values()))
    out = {**out, "peak": sum(out.values()), "states": per_param * params, "stage": stage}
    return out
