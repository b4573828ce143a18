"""Hybrid parallelism on real ranks: DP x TP and PP x DP on a 2x2 device mesh.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``). Nothing here is new
parallelism: it composes the package's pieces on process sub-groups from torch's
``init_device_mesh`` (row-major, last dimension innermost, as Megatron places TP):

* **DP x TP** (``train_dp_tp``): the transformer's blocks become
  ``tensor_parallel.ParallelBlock`` on the TP group (notebook 05) and the whole model is
  wrapped in ``companion.DDP`` on the DP group (notebook 03). TP ranks of one replica
  see the same data shard; DP replicas see different shards.
* **PP x DP** (``train_pp_dp``): the same transformer (untied) cut into
  :class:`TransformerStage` pieces runs a ``companion.pipeline`` schedule (notebook 04)
  with point-to-point sends to the neighbouring stage of the same replica; each stage in
  ``companion.DDP`` on its DP group, synchronising only on the last backward of a step
  (``no_sync`` for the others, as with torch's DDP under gradient accumulation).

Both return, per rank, the parameters they own next to the same shard of a
single-process reference trained on the full batch, and the bytes they handed to each
kind of collective, which notebook 09 compares with the planner's prediction
(:func:`transformer_spec` describes the tiny transformer to the planner).
:func:`run_in_miniature` runs a planner configuration's axes at degree 2 on 4 ranks
(notebook 09's exercise ``09.configuration``).
"""
from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh

from . import comm_log, data, runtime, tensor_parallel
from .ddp import DDP
from .experiments import experiment
from .models import TinyTransformer
from .pipeline import make_schedule
from .validation import positive_int, positive_number, preflight

__all__ = ["parallelize_dp_tp", "train_dp_tp", "train_pp_dp", "transformer_reference",
           "TransformerStage", "TRANSFORMER", "transformer_spec", "run_in_miniature",
           "miniature_name"]

TRANSFORMER = dict(d_model=32, n_heads=4, n_layers=2, max_seq_len=16)


def _check_mesh(a: int, b: int, names: str, world_size: int) -> None:
    if a * b != world_size:
        raise ValueError(f"a {names} mesh of {a}x{b} needs world_size={a * b}, "
                         f"not {world_size}; launch with world_size={a * b}.")


def _check_reference(steps, batch, lr) -> None:
    positive_int("steps", steps, "pass the number of SGD steps, e.g. steps=3.")
    positive_int("batch", batch, "pass the global batch size, e.g. batch=8.")
    positive_number("lr", lr, "pass a learning rate such as lr=0.5.")


def _check_dp_tp(dp, tp, steps, batch, lr, world_size=1) -> None:
    positive_int("dp", dp, "pass the data-parallel degree, e.g. dp=2.")
    positive_int("tp", tp, "pass the tensor-parallel degree, e.g. tp=2.")
    _check_reference(steps, batch, lr)
    _check_mesh(dp, tp, "DP x TP", world_size)
    if batch % dp:
        raise ValueError(f"batch={batch} must split evenly over dp={dp}; use a multiple of {dp}.")
    heads = TRANSFORMER["n_heads"]
    if heads % tp:
        raise ValueError(f"tp={tp} does not divide the model's {heads} attention heads; "
                         f"use a tp that divides {heads}.")


def _check_pp_dp(pp, dp, steps, batch, microbatches, schedule, lr, world_size=1) -> None:
    positive_int("pp", pp, "pass the number of pipeline stages, e.g. pp=2.")
    positive_int("dp", dp, "pass the data-parallel degree, e.g. dp=2.")
    positive_int("microbatches", microbatches, "pass the micro-batches per step, e.g. 2.")
    _check_reference(steps, batch, lr)
    _check_mesh(pp, dp, "PP x DP", world_size)
    if batch % (dp * microbatches):
        raise ValueError(f"batch={batch} must split into dp={dp} x microbatches={microbatches} "
                         f"equal parts; use a multiple of {dp * microbatches}.")
    make_schedule(schedule, pp, microbatches)  # refuses an unknown schedule by name


def parallelize_dp_tp(model: TinyTransformer, tp_group) -> TinyTransformer:
    """Swap each block for its tensor-parallel twin built from the same weights (in
    place, torchtitan style: the model class itself knows nothing about it)."""
    for i, block in enumerate(model.blocks):
        model.blocks[i] = tensor_parallel.ParallelBlock(block, tp_group)
    return model


def transformer_reference(*, steps: int, batch: int, lr: float, seed: int = 0,
                          tie_weights: bool = True) -> dict:
    """Single-process training on the full batch: the reference for both hybrid runs."""
    _check_reference(steps, batch, lr)
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


@experiment("hybrid_dp_tp")
@preflight(_check_dp_tp)
def train_dp_tp(*, dp: int = 2, tp: int = 2, steps: int = 3, batch: int = 8, lr: float = 0.5,
                seed: int = 0) -> dict:
    """Train a tiny transformer with DP x TP on a (dp, tp) mesh; compare with one process."""
    _check_dp_tp(dp, tp, steps, batch, lr, runtime.world_size())
    mesh = init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))
    dp_rank = mesh.get_local_rank("dp")
    corpus = data.CharCorpus()
    model = parallelize_dp_tp(
        TinyTransformer(vocab_size=corpus.vocab_size, seed=seed, **TRANSFORMER), mesh.get_group("tp"))
    ddp = DDP(model, process_group=mesh.get_group("dp"))
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    losses = []
    with comm_log.recording() as log:
        for step in range(steps):
            x, y = corpus.batch(step, batch, TRANSFORMER["max_seq_len"], seed)
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
            "tp_calls": log.counts(), "dp_bytes": _ledger_bytes(ddp) / steps}


def _ledger_bytes(ddp: DDP) -> float:
    """Payload bytes ``ddp`` handed to gradient all-reduces (its start-up broadcast excluded)."""
    return float(sum(n for op, n in ddp.ledger.calls if op == "all_reduce"))


class TransformerStage(nn.Module):
    """Pipeline stage ``stage`` of ``pp`` cut from a TinyTransformer (untied weights):
    the first stage embeds, the last normalises and projects to the vocabulary."""

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


@experiment("hybrid_pp_dp")
@preflight(_check_pp_dp)
def train_pp_dp(*, pp: int = 2, dp: int = 2, steps: int = 3, batch: int = 8,
                microbatches: int = 2, schedule: str = "1f1b", lr: float = 0.5,
                seed: int = 0) -> dict:
    """Train a tiny transformer with PP x DP on a (pp, dp) mesh; compare with one process."""
    _check_pp_dp(pp, dp, steps, batch, microbatches, schedule, lr, runtime.world_size())
    mesh = init_device_mesh("cpu", (pp, dp), mesh_dim_names=("pp", "dp"))
    stage, dp_rank = mesh.get_local_rank("pp"), mesh.get_local_rank("dp")
    sched = make_schedule(schedule, pp, microbatches)
    corpus = data.CharCorpus()
    full = TinyTransformer(vocab_size=corpus.vocab_size, tie_weights=False, seed=seed, **TRANSFORMER)
    piece = TransformerStage(full, stage, pp)
    ddp = DDP(piece, process_group=mesh.get_group("dp"))
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    neighbour = {d: int(mesh.mesh[stage + d, dp_rank]) for d in (-1, 1) if 0 <= stage + d < pp}
    seq, width = TRANSFORMER["max_seq_len"], TRANSFORMER["d_model"]
    last_b = max(i for i, op in enumerate(sched.ops[stage]) if op.kind == "B")
    losses, p2p_bytes = [], 0
    for step in range(steps):
        x, y = corpus.batch(step, batch, seq, seed)
        mb_x = data.shard(x, dp_rank, dp).chunk(microbatches)
        mb_y = data.shard(y, dp_rank, dp).chunk(microbatches)
        # Sends are asynchronous: with blocking ones, 1F1B deadlocks as soon as a stage
        # sends its next activation while its neighbour sends back a gradient.
        saved, loss_sum, sends = {}, 0.0, []
        opt.zero_grad()
        for i, op in enumerate(sched.ops[stage]):
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
                    p2p_bytes += out.numel() * out.element_size()
                saved[mb] = (h_in, out)
            else:  # "B": this micro-batch's gradients; DP sync on the step's last one only
                h_in, out = saved.pop(mb)
                grad_out = None
                if stage < pp - 1:
                    grad_out = torch.empty_like(out)
                    dist.recv(grad_out, src=neighbour[1])
                with contextlib.nullcontext() if i == last_b else ddp.no_sync():
                    out.backward(grad_out)
                if stage > 0:
                    sends.append(dist.isend(h_in.grad, dst=neighbour[-1]))
                    p2p_bytes += h_in.grad.numel() * h_in.grad.element_size()
        for handle in sends:
            handle.wait()
        ddp.finish_gradient_synchronization()
        opt.step()
        total = torch.tensor([loss_sum])
        dist.all_reduce(total)  # only last-stage ranks contribute: the mean over replicas
        losses.append(total.item() / dp)
    ref = transformer_reference(steps=steps, batch=batch, lr=lr, seed=seed, tie_weights=False)
    ref_piece = TransformerStage(ref["model"], stage, pp)
    return {"coords": (stage, dp_rank), "losses": losses, "ref_losses": ref["losses"],
            "params": {n: p.detach().clone() for n, p in piece.named_parameters()},
            "expected": {n: p.detach().clone() for n, p in ref_piece.named_parameters()},
            "pp_bytes": p2p_bytes / steps, "dp_bytes": _ledger_bytes(ddp) / steps}


def transformer_spec(tied: bool):
    """The tiny transformer as the planner sees it (biases, LayerNorms, learned
    positions; ``tied`` for DP x TP, untied for pipeline stages)."""
    from .planner import ModelSpec

    if not isinstance(tied, bool):
        raise TypeError(f"tied must be True (DP x TP: one embedding table for input and "
                        f"output) or False (pipeline stages), got {tied!r}.")
    cfg = TRANSFORMER
    return ModelSpec("tiny", layers=cfg["n_layers"], hidden=cfg["d_model"], heads=cfg["n_heads"],
                     seq_len=cfg["max_seq_len"], vocab=data.CharCorpus().vocab_size,
                     tied_embeddings=tied, biases=True, layernorm=True, learned_positions=True)


def miniature_name(tp: int, pp: int, world_size: int = 4) -> str:
    """Which run stands for a configuration on ``world_size`` ranks: its pipeline axis
    if it has one (with DP), else its TP axis (with DP), else DP alone."""
    _check_miniature(tp, pp, world_size)
    if pp > 1:
        return f"PP2 x DP{world_size // 2}"
    if tp > 1:
        return f"DP{world_size // 2} x TP2"
    return f"DP{world_size}"


def _check_miniature(tp, pp, world_size=4, steps=1, batch=8) -> None:
    positive_int("tp", tp, "pass the configuration's tensor-parallel degree, e.g. tp=4.")
    positive_int("pp", pp, "pass the configuration's pipeline degree, e.g. pp=1.")
    _check_reference(steps, batch, 0.5)
    if world_size < 4 or world_size % 2:
        raise ValueError(f"a miniature needs an even world_size of at least 4 (two axes of "
                         f"degree 2), got {world_size}; launch with world_size=4.")
    if batch % world_size:
        raise ValueError(f"batch={batch} must split over the {world_size} ranks' data shards "
                         f"and micro-batches; use a multiple of {world_size}.")


@preflight(_check_miniature)
def run_in_miniature(*, tp: int, pp: int, steps: int = 1, batch: int = 8) -> dict:
    """Run a configuration's axes at degree 2 (see :func:`miniature_name`) with the tiny
    transformer; return the run's name, its largest parameter difference from one
    process, and the bytes its collectives moved next to the planner's prediction."""
    from .planner import comm_bytes_per_step

    world = runtime.world_size()
    _check_miniature(tp, pp, world, steps, batch)
    name = miniature_name(tp, pp, world)
    if pp > 1:
        dp = world // 2
        r = train_pp_dp(pp=2, dp=dp, steps=steps, batch=batch, microbatches=2)
        pred = comm_bytes_per_step(transformer_spec(False), dp=dp, tp=1, pp=2,
                                   micro_batch=batch // (2 * dp), microbatches=2,
                                   bytes_per_element=4, stage=r["coords"][0])
        # pp_boundary counts both directions; each end of the boundary sends one of them.
        measured, predicted = ({"dp": r["dp_bytes"], "pp": r["pp_bytes"]},
                               {"dp": pred["dp"], "pp": pred["pp_boundary"] / 2})
    else:
        dp, t = (world // 2, 2) if tp > 1 else (world, 1)
        r = train_dp_tp(dp=dp, tp=t, steps=steps, batch=batch)
        pred = comm_bytes_per_step(transformer_spec(True), dp=dp, tp=t, pp=1,
                                   micro_batch=batch // dp, microbatches=1,
                                   bytes_per_element=4, vocab_parallel=False)
        # With tp=1 the blocks' all-reduces run on a group of one: no bytes move.
        measured = {"dp": r["dp_bytes"], "tp": r["tp_bytes"] if t > 1 else 0}
        predicted = {"dp": pred["dp"], "tp": pred["tp"]}
    diff = max((r["params"][n] - r["expected"][n]).abs().max().item() for n in r["params"])
    return {"run": name, "max_param_diff": diff, "measured": measured, "predicted": predicted}
