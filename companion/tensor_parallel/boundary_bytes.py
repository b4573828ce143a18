"""What a pipeline sends against what tensor parallelism sends, for the same model.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``), section "Why
pipelines go on the slowest links" (CS336 L8 section 4.2: a pipeline stage boundary
carries only the ``b*s*h`` activation of each micro-batch). It lives with tensor
parallelism because the comparison needs notebook 05's parallel block; notebook 04 shows
the result and notebook 05 builds the block.

:func:`pp_vs_tp_bytes` runs one forward and backward of the same stack of transformer
blocks (``companion.models.Block``) twice on the same ranks:

* **pipeline**: the blocks cut into one contiguous stage per rank; each micro-batch's
  ``[b/m, s, h]`` activation goes forward over each boundary with ``dist.send`` and its
  gradient comes back the same way (GPipe order; the order does not change the bytes);
* **tensor parallel**: every block as :class:`companion.tensor_parallel.ParallelBlock`
  on all ranks, whose collectives (two all-reduces of ``[b, s, h]`` forward and two
  backward per block) are counted by :mod:`companion.collectives.log`.

Bytes are counted from the tensors really passed to torch.distributed on each rank:
the whole tensor for a send; for an all-reduce the ring algorithm's ``2(n-1)/n`` of it
(what one rank puts on its link). Both runs also return the loss, which equals the
single-process loss (the pipeline's exactly up to summation order of micro-batches).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .. import runtime

from ..collectives import log as comm_log
from ..models import Block, seeded
from ..validation import positive_int, preflight

__all__ = ["pp_vs_tp_bytes"]


def _check(layers, batch, seq, d_model, n_heads, microbatches, world_size=1) -> None:
    for name, value in (("layers", layers), ("batch", batch), ("seq", seq),
                        ("d_model", d_model), ("n_heads", n_heads),
                        ("microbatches", microbatches)):
        positive_int(name, value, f"pass a whole number such as {name}=4.")
    if layers % world_size:
        raise ValueError(f"layers={layers} do not split into {world_size} equal pipeline "
                         f"stages; use a multiple of {world_size} layers.")
    if batch % microbatches:
        raise ValueError(f"batch={batch} does not split into microbatches={microbatches}; "
                         f"use a batch that is a multiple of {microbatches}.")
    if n_heads % world_size or d_model % n_heads:
        raise ValueError(f"tensor parallelism splits n_heads={n_heads} over {world_size} "
                         f"ranks and d_model={d_model} into heads: use n_heads a multiple of "
                         f"{world_size} dividing d_model.")


def _model_and_data(layers, batch, seq, d_model, n_heads, seed, dev):
    with seeded(seed):
        blocks = [Block(d_model, n_heads, 4 * d_model) for _ in range(layers)]
    for block in blocks:
        block.to(dev)
    gen = torch.Generator().manual_seed(seed + 1)
    # Drawn on the CPU from the CPU generator, then moved: the same numbers on every device.
    x = torch.randn(batch, seq, d_model, generator=gen, device="cpu").to(dev)
    target = torch.randn(batch, seq, d_model, generator=gen, device="cpu").to(dev)
    return blocks, x, target


def _loss(out, target, parts):
    return ((out - target) ** 2).mean() / parts


def _pipeline(blocks, x, target, microbatches):
    p, s = runtime.world_size(), runtime.rank()
    per = len(blocks) // p
    stage = torch.nn.Sequential(*blocks[s * per:(s + 1) * per])
    xs, ts = x.chunk(microbatches), target.chunk(microbatches)
    sent = messages = 0
    saved, loss = [], 0.0
    for mb in range(microbatches):
        h = xs[mb] if s == 0 else torch.empty_like(xs[mb])
        if s > 0:
            dist.recv(h, src=s - 1)
        h.requires_grad_(s > 0)
        out = stage(h)
        if s < p - 1:
            dist.send(out.detach(), dst=s + 1)
            sent, messages = sent + out.numel() * out.element_size(), messages + 1
        else:
            out = _loss(out, ts[mb], microbatches)
            loss += out.item()
        saved.append((h, out))
    for h, out in reversed(saved):
        if s < p - 1:
            g = torch.empty_like(out)
            dist.recv(g, src=s + 1)
            out.backward(g)
        else:
            out.backward()
        if s > 0:
            dist.send(h.grad, dst=s - 1)
            sent, messages = sent + h.grad.numel() * h.grad.element_size(), messages + 1
    return {"sent_bytes": sent, "messages": messages, "loss": loss if s == p - 1 else None}


def _tensor_parallel(blocks, x, target):
    from . import ParallelBlock

    model = torch.nn.Sequential(*[ParallelBlock(b) for b in blocks]).to(x.device)
    with comm_log.recording() as log:
        loss = _loss(model(x), target, 1)
        loss.backward()
    return {"sent_bytes": log.bytes(), "messages": len(log), "loss": loss.item(),
            "counts": log.counts()}


@preflight(_check)
def pp_vs_tp_bytes(layers: int = 4, batch: int = 8, seq: int = 32, d_model: int = 64,
                   n_heads: int = 4, microbatches: int = 4, seed: int = 0) -> dict:
    """Rank function: bytes this rank sends for one step of ``layers`` transformer blocks
    as a pipeline (one stage per rank) and as tensor parallelism (all ranks on every
    block). Returns ``{"pp": {...}, "tp": {...}, "activation_bytes": b*s*h*4}``."""
    dev = runtime.device()
    _check(layers, batch, seq, d_model, n_heads, microbatches, runtime.world_size())
    blocks, x, target = _model_and_data(layers, batch, seq, d_model, n_heads, seed, dev)
    pp = _pipeline(blocks, x, target, microbatches)
    dist.barrier()
    blocks, x, target = _model_and_data(layers, batch, seq, d_model, n_heads, seed, dev)
    tp = _tensor_parallel(blocks, x, target)
    return {"rank": runtime.rank(), "pp": pp, "tp": tp,
            "activation_bytes": x.numel() * x.element_size()}


def reference_loss(layers: int = 4, batch: int = 8, seq: int = 32, d_model: int = 64,
                   n_heads: int = 4, seed: int = 0) -> float:
    """The same step's loss in one process (no parallelism), for the tests."""
    blocks, x, target = _model_and_data(layers, batch, seq, d_model, n_heads, seed,
                                        runtime.device())
    return _loss(torch.nn.Sequential(*blocks)(x), target, 1).item()
