"""The same pipeline step through torch's own ``torch.distributed.pipelining``.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``), where it is the
outside reference for our executor: same TinyMLP pieces, same micro-batches, torch's
``PipelineStage`` with ``ScheduleGPipe`` or ``Schedule1F1B`` on the rank's device.

torch accumulates micro-batch gradients into ``.grad`` with ``backward()`` in the order
its schedule runs the backward passes; we pass a loss already divided by ``m`` and
``scale_grads=False`` so that both compute the same sum of the same terms.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import runtime
from ..models import TinyMLP
from .tinymlp import microbatches_of, sgd_step, split_stages
from ..validation import one_of, positive_int, preflight

__all__ = ["run_torch_pipelining"]


def _check_torch(schedule, microbatches, batch_size, depth, batch, world_size=1) -> None:
    one_of("schedule", schedule, ("gpipe", "1f1b"),
           "torch.distributed.pipelining is compared for these two only.")
    positive_int("microbatches", microbatches, "pass the micro-batches per step, e.g. 4.")
    positive_int("batch_size", batch_size, "pass the global batch size, e.g. 32.")
    positive_int("depth", depth, "pass the number of hidden layers, e.g. depth=7.")
    if batch is None and batch_size % microbatches:
        raise ValueError(f"batch_size={batch_size} does not split into {microbatches} equal "
                         f"micro-batches; use a batch size that is a multiple of {microbatches}.")
    if depth + 1 < world_size:
        raise ValueError(f"the model has {depth + 1} layers but the pipeline needs {world_size} "
                         f"pieces; build TinyMLP(depth>={world_size - 1}) or use fewer ranks.")


@preflight(_check_torch)
def run_torch_pipelining(*, schedule: str = "gpipe", microbatches: int = 4,
                         batch_size: int = 32, depth: int = 7, hidden: int = 64,
                         lr: float = 0.1, seed: int = 0, batch=None) -> dict:
    """One step with torch.distributed.pipelining on this rank; returns its piece's
    gradients and updated parameters keyed like :func:`run_pipeline`."""
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    classes = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}
    _check_torch(schedule, microbatches, batch_size, depth, batch, runtime.world_size())
    dev = runtime.device()
    p, s = runtime.world_size(), runtime.rank()
    xs, ys = microbatches_of(batch_size, microbatches, batch=batch, device=dev)
    piece = split_stages(TinyMLP(hidden=hidden, depth=depth, seed=seed), p)[s].to(dev)
    stage = PipelineStage(piece, s, p, dev)

    def loss_fn(logits, target):
        return F.cross_entropy(logits, target) / microbatches

    sched = classes[schedule](stage, microbatches, loss_fn=loss_fn, scale_grads=False)
    x, y = torch.cat(xs), torch.cat(ys)
    losses = []
    if p == 1:
        sched.step(x, target=y, losses=losses)
    elif s == 0:
        sched.step(x)
    elif s == p - 1:
        sched.step(target=y, losses=losses)
    else:
        sched.step()
    grads = {n: q.grad.detach().clone() for n, q in piece.named_parameters()}
    sgd_step([q for _, q in piece.named_parameters()], list(grads.values()), lr)
    params = {n: q.detach().clone() for n, q in piece.named_parameters()}
    return {"rank": s, "grads": {s: grads}, "params": {s: params},
            "losses": [float(v.detach()) * microbatches for v in losses]}
