"""A pipeline stage of the tiny transformer and its training loop: the stage in DDP on
its data-parallel group, each step's schedule run by ``companion.pipeline``'s executor.

Taught in notebooks 09 (``notebooks/09_hybrid_parallelism.ipynb``, PP x DP) and 12
(``notebooks/12_auto_parallelism.ipynb``, DP x TP x PP). The executor is notebook 04's:
the same op loop, tagged point-to-point sends and receives as the TinyMLP pipeline. What
differs is the stage object (``pipeline.executor.AccumulatingStage``): its backward
accumulates into ``.grad``, where DDP's hooks start the gradient all-reduce, and all
but the step's last backward run under ``ddp.no_sync()``, as with torch's DDP under
gradient accumulation.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from .. import data, runtime
from ..data_parallel.ddp import DDP
from ..models import TinyTransformer
from ..pipeline.executor import AccumulatingStage, execute
from ..pipeline.ops import Schedule
from .transformer import TRANSFORMER

__all__ = ["TransformerStage"]


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
            x = self.tok_emb(x) + self.pos_emb(torch.arange(x.shape[1], device=x.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x)) if self.last else x


def _token_loss(targets, microbatches: int):
    """The last stage's loss of micro-batch ``mb``: its share of the mean over the step."""
    def loss(logits, mb):
        return F.cross_entropy(logits.flatten(0, 1), targets[mb].flatten()) / microbatches
    return loss


def train_pipeline_stage(ddp: DDP, opt, sched: Schedule, stage: int, ranks: list, *,
                         corpus, steps: int, batch: int, seed: int, dp_rank: int, dp: int,
                         loss_copies: int) -> tuple[list, int]:
    """``steps`` SGD steps of pipeline stage ``stage`` (``ddp`` wraps its piece) on its
    DP shard of each global batch, ``sched`` (whole backwards, one chunk per rank) run by
    the executor with ``ranks[s]`` the global rank of stage ``s`` in this replica.
    Returns the losses, each the mean over replicas, and the bytes this stage sent to
    its neighbours.

    Only last-stage ranks hold a loss; ``loss_copies`` is how many of them hold each
    replica's loss (dp, times tp when the TP ranks of a replica all compute it)."""
    dev = runtime.device()
    m, seq = sched.microbatches, TRANSFORMER["max_seq_len"]
    piece = AccumulatingStage(ddp, m, hold=ddp.no_sync)
    losses, sent_bytes = [], 0
    for step in range(steps):
        x, y = corpus.batch(step, batch, seq, seed, device=dev)
        mb_x = data.shard(x, dp_rank, dp).chunk(m)
        mb_y = data.shard(y, dp_rank, dp).chunk(m)
        shapes = [(len(mb_x[0]), seq, TRANSFORMER["d_model"])] * sched.stages
        opt.zero_grad()
        result = execute(sched, stage, {0: piece}, mb_x, shapes=shapes, ranks=ranks,
                         loss=_token_loss(mb_y, m))
        ddp.finish_gradient_synchronization()
        sent_bytes += result.sent_bytes
        opt.step()
        total = torch.tensor([sum(result.losses.values(), 0.0)], device=dev)
        dist.all_reduce(total)
        losses.append(total.item() / loss_copies)
    return losses, sent_bytes
