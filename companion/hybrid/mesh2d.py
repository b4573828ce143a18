"""Hybrid parallelism on real ranks: DP x TP and PP x DP on a 2x2 device mesh.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``). Nothing here is new
parallelism: it composes the package's pieces on process sub-groups from torch's
``init_device_mesh`` (row-major, last dimension innermost, as Megatron places TP):

* **DP x TP** (``train_dp_tp``): the transformer's blocks become
  ``tensor_parallel.ParallelBlock`` on the TP group (notebook 05) and the whole model is
  wrapped in ``companion.DDP`` on the DP group (notebook 03). TP ranks of one replica
  see the same data shard; DP replicas see different shards.
* **PP x DP** (``train_pp_dp``): the same transformer (untied) cut into
  ``TransformerStage`` pieces runs a ``companion.pipeline`` schedule through notebook
  04's executor, with point-to-point sends to the neighbouring stage of the same
  replica; each stage in ``companion.DDP`` on its DP group, synchronising only on the
  last backward of a step (``no_sync`` for the others, as with torch's DDP under
  gradient accumulation).

Both return, per rank, the parameters they own next to the same shard of a
single-process reference trained on the full batch, and the bytes they handed to each
kind of collective, which notebook 09 compares with the planner's prediction
(``transformer_spec`` describes the tiny transformer to the planner).
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh

from .. import data, runtime, tensor_parallel

from ..collectives import log as comm_log
from ..data_parallel.ddp import DDP
from ..experiments import experiment
from ..models import TinyTransformer
from ..pipeline import make_schedule
from ..validation import positive_int, preflight
from .mesh import check_mesh, ledger_bytes
from .pipeline_stage import TransformerStage, train_pipeline_stage
from .transformer import TRANSFORMER, check_heads, check_reference, transformer_reference

__all__ = ["parallelize_dp_tp", "train_dp_tp", "train_pp_dp"]


def _check_dp_tp(dp, tp, steps, batch, lr, world_size=1) -> None:
    positive_int("dp", dp, "pass the data-parallel degree, e.g. dp=2.")
    positive_int("tp", tp, "pass the tensor-parallel degree, e.g. tp=2.")
    check_reference(steps, batch, lr)
    check_mesh({"DP": dp, "TP": tp}, world_size)
    if batch % dp:
        raise ValueError(f"batch={batch} must split evenly over dp={dp}; use a multiple of {dp}.")
    check_heads(tp)


def _check_pp_dp(pp, dp, steps, batch, microbatches, schedule, lr, world_size=1) -> None:
    positive_int("pp", pp, "pass the number of pipeline stages, e.g. pp=2.")
    positive_int("dp", dp, "pass the data-parallel degree, e.g. dp=2.")
    positive_int("microbatches", microbatches, "pass the micro-batches per step, e.g. 2.")
    check_reference(steps, batch, lr)
    check_mesh({"PP": pp, "DP": dp}, world_size)
    if batch % (dp * microbatches):
        raise ValueError(f"batch={batch} must split into dp={dp} x microbatches={microbatches} "
                         f"equal parts; use a multiple of {dp * microbatches}.")
    sched = make_schedule(schedule, pp, microbatches)  # refuses an unknown schedule by name
    if sched.split_backward or sched.chunks != 1:
        raise ValueError(f"schedule={schedule!r} splits the backward or holds several chunks "
                         "per rank, which this PP x DP step does not execute; use "
                         "schedule='1f1b' or 'gpipe'.")


def parallelize_dp_tp(model: TinyTransformer, tp_group) -> TinyTransformer:
    """Swap each block for its tensor-parallel twin built from the same weights (in
    place, torchtitan style: the model class itself knows nothing about it)."""
    for i, block in enumerate(model.blocks):
        model.blocks[i] = tensor_parallel.ParallelBlock(block, tp_group)
    return model


@experiment("hybrid_dp_tp")
@preflight(_check_dp_tp)
def train_dp_tp(*, dp: int = 2, tp: int = 2, steps: int = 3, batch: int = 8, lr: float = 0.5,
                seed: int = 0) -> dict:
    """Train a tiny transformer with DP x TP on a (dp, tp) mesh; compare with one process."""
    _check_dp_tp(dp, tp, steps, batch, lr, runtime.world_size())
    dev = runtime.device()
    mesh = init_device_mesh(dev.type, (dp, tp), mesh_dim_names=("dp", "tp"))
    dp_rank = mesh.get_local_rank("dp")
    corpus = data.CharCorpus()
    # Sliced into TP shards on the CPU, then moved: the same bits on every device.
    model = parallelize_dp_tp(
        TinyTransformer(vocab_size=corpus.vocab_size, seed=seed, **TRANSFORMER),
        mesh.get_group("tp")).to(dev)
    ddp = DDP(model, process_group=mesh.get_group("dp"))
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    losses = []
    with comm_log.recording() as log:
        for step in range(steps):
            x, y = corpus.batch(step, batch, TRANSFORMER["max_seq_len"], seed, device=dev)
            x, y = data.shard(x, dp_rank, dp), data.shard(y, dp_rank, dp)
            loss = F.cross_entropy(ddp(x).flatten(0, 1), y.flatten())
            opt.zero_grad()
            loss.backward()
            ddp.finish_gradient_synchronization()
            opt.step()
            mean = loss.detach().clone()
            dist.all_reduce(mean, group=mesh.get_group("dp"))
            losses.append(mean.item() / dp)
    ref = transformer_reference(steps=steps, batch=batch, lr=lr, seed=seed)
    tp_group = mesh.get_group("tp")
    params, expected = {}, {}
    for name, p in model.named_parameters():
        params[name] = p.detach().clone()
        expected[name] = tensor_parallel.shard_like(p, ref["params"][name].detach(), tp_group)
    return {"coords": (dp_rank, mesh.get_local_rank("tp")), "losses": losses,
            "ref_losses": ref["losses"], "params": params, "expected": expected,
            "tp_bytes": log.bytes(kind="all_reduce", wire=False) / steps,
            "tp_calls": log.counts(), "dp_bytes": ledger_bytes(ddp) / steps}


@experiment("hybrid_pp_dp")
@preflight(_check_pp_dp)
def train_pp_dp(*, pp: int = 2, dp: int = 2, steps: int = 3, batch: int = 8,
                microbatches: int = 2, schedule: str = "1f1b", lr: float = 0.5,
                seed: int = 0) -> dict:
    """Train a tiny transformer with PP x DP on a (pp, dp) mesh; compare with one process."""
    _check_pp_dp(pp, dp, steps, batch, microbatches, schedule, lr, runtime.world_size())
    dev = runtime.device()
    mesh = init_device_mesh(dev.type, (pp, dp), mesh_dim_names=("pp", "dp"))
    stage, dp_rank = mesh.get_local_rank("pp"), mesh.get_local_rank("dp")
    sched = make_schedule(schedule, pp, microbatches)
    corpus = data.CharCorpus()
    full = TinyTransformer(vocab_size=corpus.vocab_size, tie_weights=False, seed=seed, **TRANSFORMER)
    piece = TransformerStage(full, stage, pp).to(dev)
    ddp = DDP(piece, process_group=mesh.get_group("dp"))
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    ranks = [int(mesh.mesh[s, dp_rank]) for s in range(pp)]  # this replica's stages
    losses, p2p_bytes = train_pipeline_stage(
        ddp, opt, sched, stage, ranks, corpus=corpus, steps=steps, batch=batch, seed=seed,
        dp_rank=dp_rank, dp=dp, loss_copies=dp)
    ref = transformer_reference(steps=steps, batch=batch, lr=lr, seed=seed, tie_weights=False)
    ref_piece = TransformerStage(ref["model"], stage, pp)
    return {"coords": (stage, dp_rank), "losses": losses, "ref_losses": ref["losses"],
            "params": {n: p.detach().clone() for n, p in piece.named_parameters()},
            "expected": {n: p.detach().clone() for n, p in ref_piece.named_parameters()},
            "pp_bytes": p2p_bytes / steps, "dp_bytes": ledger_bytes(ddp) / steps}


