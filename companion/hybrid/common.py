"""What every hybrid run shares: the tiny transformer, its single-process reference,
its pipeline stages, one pipeline step over point-to-point sends, and the argument checks.

Taught in notebooks 09 (``notebooks/09_hybrid_parallelism.ipynb``) and 12
(``notebooks/12_auto_parallelism.ipynb``, the 3D run).
"""
from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from .. import data
from ..data_parallel.ddp import DDP
from ..models import TinyTransformer
from ..validation import positive_int, positive_number

__all__ = ["TRANSFORMER", "transformer_reference", "TransformerStage", "transformer_spec"]

TRANSFORMER = dict(d_model=32, n_heads=4, n_layers=2, max_seq_len=16)


def check_mesh(degrees: dict, world_size: int) -> None:
    """``degrees`` ({"DP": 2, "TP": 2}) must multiply to the number of ranks launched."""
    total = 1
    for value in degrees.values():
        total *= value
    if total != world_size:
        names = " x ".join(degrees)
        shape = "x".join(str(v) for v in degrees.values())
        raise ValueError(f"a {names} mesh of {shape} needs world_size={total}, "
                         f"not {world_size}; launch with world_size={total}.")


def check_reference(steps, batch, lr) -> None:
    positive_int("steps", steps, "pass the number of SGD steps, e.g. steps=3.")
    positive_int("batch", batch, "pass the global batch size, e.g. batch=8.")
    positive_number("lr", lr, "pass a learning rate such as lr=0.5.")


def check_heads(tp) -> None:
    heads = TRANSFORMER["n_heads"]
    if heads % tp:
        raise ValueError(f"tp={tp} does not divide the model's {heads} attention heads; "
                         f"use a tp that divides {heads}.")


def transformer_reference(*, steps: int, batch: int, lr: float, seed: int = 0,
                          tie_weights: bool = True) -> dict:
    """Single-process training on the full batch: the reference for every hybrid run.

    After the last step each parameter's ``.grad`` still holds that step's gradient."""
    check_reference(steps, batch, lr)
    corpus = data.CharCorpus()
    model = TinyTransformer(vocab_size=corpus.vocab_size, tie_weights=tie_weights, seed=seed,
                            **TRANSFORMER)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        x, y = corpus.batch(step, batch, TRANSFORMER["max_seq_len"], seed)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "params": dict(model.named_parameters()), "model": model}


def ledger_bytes(ddp: DDP) -> float:
    """Payload bytes ``ddp`` handed to gradient all-reduces (its start-up broadcast excluded)."""
    return float(sum(n for op, n in ddp.ledger.calls if op == "all_reduce"))


class TransformerStage(nn.Module):
    """Pipeline stage ``stage`` of ``pp`` cut from a TinyTransformer (untied weights):
    the first stage embeds, the last normalises and projects to the vocabulary. Its
    blocks may already be tensor-parallel (``ParallelBlock``): it only slices."""

    def __init__(self, model: TinyTransformer, stage: int, pp: int):
        super().__init__()
        if model.head.weight is model.tok_emb.weight and pp > 1:
            raise ValueError("tied embeddings would live on two stages; build the model with "
                             "tie_weights=False for pipeline parallelism.")
        base, extra = divmod(len(model.blocks), pp)
        start = stage * base + min(stage, extra)
        self.first, self.last = stage == 0, stage == pp - 1
        if self.first:
            self.tok_emb, self.pos_emb = model.tok_emb, model.pos_emb
        self.blocks = nn.ModuleList(model.blocks[start:start + base + (stage < extra)])
        if self.last:
            self.ln_f, self.head = model.ln_f, model.head

    def forward(self, x):
        if self.first:
            x = self.tok_emb(x) + self.pos_emb(torch.arange(x.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x)) if self.last else x


def train_pipeline_stage(ddp: DDP, opt, ops, stage: int, pp: int, neighbour: dict, *,
                         corpus, steps: int, batch: int, seed: int, dp_rank: int, dp: int,
                         microbatches: int, loss_copies: int) -> tuple[list, int]:
    """``steps`` SGD steps of one pipeline stage on its DP shard of each global batch
    (notebooks 09 and 12's PP x DP and DP x TP x PP runs). Returns the losses, each the
    mean over replicas, and the bytes this stage sent to its neighbours.

    Only last-stage ranks hold a loss; ``loss_copies`` is how many of them hold each
    replica's loss (dp, times tp when the TP ranks of a replica all compute it)."""
    losses, sent_bytes = [], 0
    for step in range(steps):
        x, y = corpus.batch(step, batch, TRANSFORMER["max_seq_len"], seed)
        mb_x = data.shard(x, dp_rank, dp).chunk(microbatches)
        mb_y = data.shard(y, dp_rank, dp).chunk(microbatches)
        opt.zero_grad()
        loss_sum, sent = pipeline_step(ddp, ops, stage, pp, neighbour, mb_x, mb_y)
        sent_bytes += sent
        opt.step()
        total = torch.tensor([loss_sum])
        dist.all_reduce(total)
        losses.append(total.item() / loss_copies)
    return losses, sent_bytes


def pipeline_step(ddp: DDP, ops, stage: int, pp: int, neighbour: dict, mb_x, mb_y) -> tuple:
    """Run one stage's part of a step: ``ops`` (its schedule's "F"/"B" list) on the
    micro-batches ``mb_x``/``mb_y``, activations and their gradients exchanged with the
    global ranks ``neighbour[-1]`` (previous stage) and ``neighbour[+1]`` (next stage).
    DP gradient sync happens on the step's last backward only (``no_sync`` for the others).

    Returns ``(this stage's summed loss, bytes it sent point-to-point)``; the loss is
    the mean over micro-batches on the last stage and 0 elsewhere."""
    seq, width = TRANSFORMER["max_seq_len"], TRANSFORMER["d_model"]
    microbatches = len(mb_x)
    last_b = max(i for i, op in enumerate(ops) if op.kind == "B")
    # Sends are asynchronous: with blocking ones, 1F1B deadlocks as soon as a stage
    # sends its next activation while its neighbour sends back a gradient.
    saved, loss_sum, sends, sent = {}, 0.0, [], 0
    for i, op in enumerate(ops):
        mb = op.microbatch
        if op.kind == "F":
            if stage == 0:
                h_in = mb_x[mb]
            else:
                h_in = torch.empty(len(mb_x[mb]), seq, width)
                dist.recv(h_in, src=neighbour[-1])
                h_in.requires_grad_()
            out = ddp(h_in)
            if stage == pp - 1:
                out = F.cross_entropy(out.flatten(0, 1), mb_y[mb].flatten()) / microbatches
                loss_sum += out.item()
            else:
                sends.append(dist.isend(out.detach(), dst=neighbour[1]))
                sent += out.numel() * out.element_size()
            saved[mb] = (h_in, out)
        else:  # "B": this micro-batch's gradients
            h_in, out = saved.pop(mb)
            grad_out = None
            if stage < pp - 1:
                grad_out = torch.empty_like(out)
                dist.recv(grad_out, src=neighbour[1])
            with contextlib.nullcontext() if i == last_b else ddp.no_sync():
                out.backward(grad_out)
            if stage > 0:
                sends.append(dist.isend(h_in.grad, dst=neighbour[-1]))
                sent += h_in.grad.numel() * h_in.grad.element_size()
    for handle in sends:
        handle.wait()
    ddp.finish_gradient_synchronization()
    return loss_sum, sent


def transformer_spec(tied: bool):
    """The tiny transformer as the planner sees it (biases, LayerNorms, learned
    positions; ``tied`` for DP x TP, untied for pipeline stages)."""
    from ..planner import ModelSpec

    if not isinstance(tied, bool):
        raise TypeError(f"tied must be True (DP x TP: one embedding table for input and "
                        f"output) or False (pipeline stages), got {tied!r}.")
    cfg = TRANSFORMER
    return ModelSpec("tiny", layers=cfg["n_layers"], hidden=cfg["d_model"], heads=cfg["n_heads"],
                     seq_len=cfg["max_seq_len"], vocab=data.CharCorpus().vocab_size,
                     tied_embeddings=tied, biases=True, layernorm=True, learned_positions=True)
