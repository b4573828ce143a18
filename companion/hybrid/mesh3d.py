"""DP x TP x PP at once on a 3D device mesh (8 ranks for 2 x 2 x 2), equal to one process.

Taught in notebook 12 (``notebooks/12_auto_parallelism.ipynb``, the real 3D run); it
stacks notebook 09's two 2x2 runs. Every rank builds the untied tiny transformer, makes
its blocks tensor-parallel on its TP group (``tensor_parallel.ParallelBlock``, notebook
05, without sequence parallelism), keeps its pipeline stage (``TransformerStage``,
notebook 04's 1F1B or GPipe schedule, run by that notebook's executor over
point-to-point sends) and wraps that stage in ``companion.DDP`` on its DP group
(notebook 03).

**Rank placement.** ``init_device_mesh`` is row-major, the last dimension innermost.
The default ``order=("pp", "dp", "tp")`` is Megatron-LM's default rank order,
``"tp-cp-ep-dp-pp"`` written innermost first (``megatron/core/parallel_state.py``): TP
ranks adjacent (0-1, 2-3, ...), then DP, pipeline stages outermost. The planner's own
docstring puts DP outermost instead; ``order=("dp", "pp", "tp")`` runs that layout.
Either way every rank moves the same bytes; only which ranks share a group changes
(on a real cluster: which links each group uses).

**Bytes, per rank and step (payloads, float32).** Each block all-reduces a
``[micro_batch, seq, d_model]`` activation twice forward and its gradient twice
backward on the TP group. TP ranks of a stage hold the same activation, so each sends
all of it to its twin in the next stage (Megatron's scatter-gather trick, which sends
1/tp and all-gathers behind the boundary, is not used: its all-gather would be TP
traffic the planner does not count). DDP all-reduces the stage's local (TP-sharded)
gradients once per step. :func:`predicted_bytes` asks the planner
(``planner.comm_bytes_per_step``) for the same three numbers, with the flags that
describe this run: ``vocab_parallel=False`` (embeddings replicated over TP),
``sequence_parallel=False``, ``bytes_per_element=4``.
"""
from __future__ import annotations

import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

from .. import data, runtime, tensor_parallel

from ..collectives import log as comm_log
from ..data_parallel.ddp import DDP
from ..experiments import experiment
from ..i18n import gettext as tr
from ..models import TinyTransformer
from ..pipeline import make_schedule
from ..validation import nonnegative_int, one_of, positive_int, preflight
from .mesh import check_mesh, ledger_bytes
from .pipeline_stage import TransformerStage, train_pipeline_stage
from .transformer import (TRANSFORMER, check_heads, check_reference, transformer_reference,
                          transformer_spec)
from .mesh2d import parallelize_dp_tp

__all__ = ["train_dp_tp_pp", "predicted_bytes", "MEGATRON_ORDER"]

MEGATRON_ORDER = ("pp", "dp", "tp")
# Schedules whose ops are only whole forwards and backwards of one chunk per rank (the
# zero-bubble ones split backward in two, interleaved ones hold several chunks).
SCHEDULES = ("gpipe", "1f1b")


def _check_order(order) -> None:
    if not isinstance(order, (tuple, list)) or sorted(order) != ["dp", "pp", "tp"]:
        raise ValueError(f"order={order!r} must name 'dp', 'pp' and 'tp' once each, outermost "
                         f"first, e.g. order={MEGATRON_ORDER!r} (Megatron-LM's placement).")


def _check_sizes(dp, tp, pp, batch, microbatches) -> None:
    for name, value in (("dp", dp), ("tp", tp), ("pp", pp), ("microbatches", microbatches)):
        positive_int(name, value, f"pass a whole number >= 1 for {name}, e.g. {name}=2.")
    positive_int("batch", batch, "pass the global batch size, e.g. batch=8.")
    check_heads(tp)
    layers = TRANSFORMER["n_layers"]
    if pp > layers:
        raise ValueError(f"pp={pp} stages for the tiny transformer's {layers} blocks; "
                         f"use pp <= {layers}.")
    if batch % (dp * microbatches):
        raise ValueError(f"batch={batch} must split into dp={dp} x microbatches={microbatches} "
                         f"equal parts; use a multiple of {dp * microbatches}.")


def _check_dp_tp_pp(dp, tp, pp, steps, batch, microbatches, schedule, lr, order,
                    world_size=1) -> None:
    _check_sizes(dp, tp, pp, batch, microbatches)
    check_reference(steps, batch, lr)
    one_of("schedule", schedule, SCHEDULES, "the 3D run executes GPipe or 1F1B.")
    _check_order(order)
    check_mesh({"DP": dp, "TP": tp, "PP": pp}, world_size)
    make_schedule(schedule, pp, microbatches)


def _check_predicted(dp, tp, pp, batch, microbatches, stage) -> None:
    _check_sizes(dp, tp, pp, batch, microbatches)
    nonnegative_int("stage", stage, f"pass a pipeline stage in 0..{pp - 1}.")
    if stage >= pp:
        raise ValueError(f"stage={stage} is not one of the {pp} stages; pass 0..{pp - 1}.")


def predicted_bytes(*, dp: int, tp: int, pp: int, batch: int, microbatches: int,
                    stage: int) -> dict:
    """The planner's payload bytes per step for one rank of pipeline ``stage`` in
    :func:`train_dp_tp_pp`: ``{"tp", "pp", "dp"}`` (``pp``: what this rank sends, one
    direction per neighbouring stage). Notebook 12 prints it next to the measured bytes."""
    from ..planner import comm_bytes_per_step

    _check_predicted(dp, tp, pp, batch, microbatches, stage)
    pred = comm_bytes_per_step(transformer_spec(False), dp=dp, tp=tp, pp=pp,
                               micro_batch=batch // (dp * microbatches),
                               microbatches=microbatches, zero=0, bytes_per_element=4,
                               vocab_parallel=False, sequence_parallel=False, stage=stage)
    neighbours = (stage > 0) + (stage < pp - 1)
    # pp_boundary counts both directions of one boundary: activations go forward,
    # gradients come back, so a stage sends one direction to each neighbour.
    return {"tp": pred["tp"], "pp": pred["pp_boundary"] // 2 * neighbours, "dp": pred["dp"]}


def _summary(results) -> str:
    exact = all(r["measured"] == r["predicted"] for r in results)
    return (tr("max |param diff| {param:.1e}, max |grad diff| {grad:.1e}; bytes measured == "
               "planner on every rank: True; slowest rank {seconds:.2f} s") if exact else
            tr("max |param diff| {param:.1e}, max |grad diff| {grad:.1e}; bytes measured == "
               "planner on every rank: False; slowest rank {seconds:.2f} s")).format(
        param=max(r["max_param_diff"] for r in results),
        grad=max(r["max_grad_diff"] for r in results), seconds=max(r["seconds"] for r in results))


def _max_diff(a: dict, b: dict) -> float:
    return max((a[n] - b[n]).abs().max().item() for n in a)


@experiment("hybrid_dp_tp_pp", summarize=_summary)
@preflight(_check_dp_tp_pp)
def train_dp_tp_pp(*, dp: int = 2, tp: int = 2, pp: int = 2, steps: int = 2, batch: int = 8,
                   microbatches: int = 2, schedule: str = "1f1b", lr: float = 0.5,
                   seed: int = 0, order: tuple = MEGATRON_ORDER) -> dict:
    """Rank function: train the tiny transformer with DP x TP x PP on a 3D mesh laid out
    as ``order`` (outermost first); compare with one process and with the planner.

    Returns this rank's mesh coordinates and groups, its parameters and last-step
    gradients next to the same TP shard of one process's, the losses, the bytes it
    moved per step (``measured``) next to :func:`predicted_bytes`, and ``seconds``
    (set-up and training, without the reference)."""
    _check_dp_tp_pp(dp, tp, pp, steps, batch, microbatches, schedule, lr, order,
                    runtime.world_size())
    start = time.perf_counter()
    order = tuple(order)
    degree = {"dp": dp, "tp": tp, "pp": pp}
    dev = runtime.device()
    mesh = init_device_mesh(dev.type, tuple(degree[n] for n in order), mesh_dim_names=order)
    coords = {n: mesh.get_local_rank(n) for n in ("dp", "pp", "tp")}
    stage, dp_rank = coords["pp"], coords["dp"]
    tp_group = mesh.get_group("tp")

    def global_rank(**moved) -> int:
        at = {**coords, **moved}
        return int(mesh.mesh[tuple(at[n] for n in order)])

    corpus = data.CharCorpus()
    full = TinyTransformer(vocab_size=corpus.vocab_size, tie_weights=False, seed=seed,
                           **TRANSFORMER)
    piece = TransformerStage(parallelize_dp_tp(full, tp_group), stage, pp).to(dev)
    ddp = DDP(piece, process_group=mesh.get_group("dp"))
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    sched = make_schedule(schedule, pp, microbatches)
    ranks = [global_rank(pp=s) for s in range(pp)]  # this rank's twins in every stage
    with comm_log.recording() as log:
        # The tp copies of one replica's loss are equal: dp * tp copies in all.
        losses, p2p_bytes = train_pipeline_stage(
            ddp, opt, sched, stage, ranks, corpus=corpus, steps=steps, batch=batch,
            seed=seed, dp_rank=dp_rank, dp=dp, loss_copies=dp * tp)
    runtime.synchronize()
    seconds = time.perf_counter() - start
    # A degree of 1 runs its collectives on a group of one: the logs count the calls
    # but no byte leaves the rank.
    measured = {"tp": log.bytes(kind="all_reduce", wire=False) / steps if tp > 1 else 0,
                "pp": p2p_bytes / steps, "dp": ledger_bytes(ddp) / steps if dp > 1 else 0}

    ref = transformer_reference(steps=steps, batch=batch, lr=lr, seed=seed, tie_weights=False)
    ref_piece = dict(TransformerStage(ref["model"], stage, pp).named_parameters())
    params, expected, grads, expected_grads = {}, {}, {}, {}
    for name, p in piece.named_parameters():
        params[name], grads[name] = p.detach().clone(), p.grad.detach().clone()
        expected[name] = tensor_parallel.shard_like(p, ref_piece[name].detach(), tp_group)
        expected_grads[name] = tensor_parallel.shard_like(p, ref_piece[name].grad, tp_group)
    groups = {n: dist.get_process_group_ranks(mesh.get_group(n)) for n in ("dp", "pp", "tp")}
    return {"rank": dist.get_rank(), "coords": coords, "order": order, "groups": groups,
            "mesh": mesh.mesh.tolist(), "losses": losses, "ref_losses": ref["losses"],
            "params": params, "expected": expected, "grads": grads,
            "expected_grads": expected_grads, "max_param_diff": _max_diff(params, expected),
            "max_grad_diff": _max_diff(grads, expected_grads), "measured": measured,
            "predicted": predicted_bytes(dp=dp, tp=tp, pp=pp, batch=batch,
                                         microbatches=microbatches, stage=stage),
            "tp_calls": log.counts(), "seconds": seconds}
