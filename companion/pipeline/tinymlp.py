"""A real pipeline: a TinyMLP cut into stages on N ranks, running any schedule.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``).

Each rank builds the same seeded model, keeps only its stages (virtual stages
``s, s+p, ...`` under interleaving) and hands them to the executor
(:func:`~companion.pipeline.executor.execute`), which walks its op list from the
schedule, sends activations and gradients between the ranks and, with ``device_time``,
emulates a GPU's op times and a link's latency (its module docstring says how).
Either way the activations and gradients really move between processes and the model
really trains.

**Exactness.** Each micro-batch's weight gradient is kept separately and summed in
micro-batch order at the end (``executor.MicrobatchGrads``), so the result does not
depend on the schedule, and it equals single-process gradient accumulation over the
same micro-batches bit for bit (:func:`reference_step`).
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from .. import runtime
from ..data import digits_batch
from ..experiments import experiment
from ..i18n import gettext as tr
from ..models import TinyMLP
from .executor import MicrobatchGrads, boundary_shapes, check_device_time, execute
from .ops import Op, Schedule
from .registry import make_schedule
from .simulate import Event, Timeline
from ..validation import one_of, positive_int, positive_number, preflight

__all__ = ["split_stages", "run_pipeline", "reference_step", "timeline_from_results",
           "microbatches_of"]


def split_stages(model: nn.Sequential, parts: int) -> list[nn.Sequential]:
    """Cut a TinyMLP into ``parts`` contiguous pieces at Linear boundaries (a Linear keeps
    its ReLU). Earlier pieces get the extra layer when the count does not divide."""
    layers, current = [], []
    for module in model:
        if isinstance(module, nn.Linear) and current:
            layers.append(current)
            current = []
        current.append(module)
    layers.append(current)
    if parts < 1 or len(layers) < parts:
        raise ValueError(f"the model has {len(layers)} layers but the pipeline needs {parts} "
                         f"pieces (stages x chunks); build TinyMLP(depth>={parts - 1}) or use "
                         "fewer stages or chunks.")
    base, extra = divmod(len(layers), parts)
    pieces, i = [], 0
    for k in range(parts):
        n = base + (k < extra)
        pieces.append(nn.Sequential(*[m for layer in layers[i:i + n] for m in layer]))
        i += n
    return pieces


def microbatches_of(batch_size: int, microbatches: int, step: int = 0, batch=None,
                    device=None):
    """The global digits batch for ``step`` (or ``batch=(x, y)``) in ``microbatches`` equal
    pieces, on ``device`` (default: :func:`companion.runtime.device`)."""
    device = runtime.device() if device is None else device
    x, y = digits_batch(step, batch_size, device=device) if batch is None else batch
    x, y = x.to(device), y.to(device)
    if microbatches < 1 or len(y) % microbatches:
        raise ValueError(f"batch_size={len(y)} does not split into {microbatches} equal "
                         f"micro-batches; use a batch size that is a multiple of {microbatches}.")
    return list(x.chunk(microbatches)), list(y.chunk(microbatches))


@torch.no_grad()
def sgd_step(params, grads, lr):
    """Plain SGD, ``p -= lr * g`` (what torch.optim.SGD does without momentum; written out
    because the first torch.optim import in a fresh rank pulls in torch._dynamo)."""
    for prm, g in zip(params, grads):
        prm.add_(g, alpha=-lr)


def _check_run(schedule, microbatches, chunks, batch_size, depth, hidden, lr, batch,
               device_time=None, world_size=1) -> Schedule:
    """The schedule for ``world_size`` stages, once every size has been checked."""
    if isinstance(schedule, Schedule):
        if schedule.stages != world_size:
            raise ValueError(f"the schedule is for {schedule.stages} stages but there are "
                             f"{world_size} ranks; launch with world_size={schedule.stages}.")
        sched = schedule.validate()
    else:
        sched = make_schedule(schedule, world_size, microbatches, chunks)
    for name, value in (("batch_size", batch_size), ("depth", depth), ("hidden", hidden)):
        positive_int(name, value, f"pass a whole number such as {name}=32.")
    positive_number("lr", lr, "pass a learning rate such as lr=0.1.")
    check_device_time(device_time)
    if batch is None and batch_size % sched.microbatches:
        raise ValueError(f"batch_size={batch_size} does not split into {sched.microbatches} "
                         f"equal micro-batches; use a batch size that is a multiple of "
                         f"{sched.microbatches}.")
    pieces = world_size * sched.chunks
    if depth + 1 < pieces:
        raise ValueError(f"the model has {depth + 1} layers but the pipeline needs {pieces} "
                         f"pieces (stages x chunks); build TinyMLP(depth>={pieces - 1}) or use "
                         "fewer stages or chunks.")
    return sched


@experiment("pipeline_run", summarize=lambda results: _summary(results))
@preflight(_check_run)
def run_pipeline(*, schedule="1f1b", microbatches: int = 4, chunks: int | None = None,
                 batch_size: int = 32, depth: int = 7, hidden: int = 64, lr: float = 0.1,
                 step: int = 0, seed: int = 0, device_time: dict | None = None,
                 batch: tuple | None = None) -> dict:
    """One training step of a pipelined TinyMLP on this rank (one stage per rank).

    ``schedule`` is a name (see ``SCHEDULES``) or a :class:`Schedule` for exactly
    ``world_size`` stages. ``device_time`` maps F/B/W to the emulated seconds of one
    micro-batch through a whole stage, and optionally "send" to a message's emulated
    latency (see the executor's module docstring), or None for raw CPU time.
    ``batch=(x, y)`` passes the global batch in (loading digits imports scikit-learn, which
    costs every fresh rank seconds); by default the ranks load digits batch ``step``.
    Returns this rank's op events, per-piece gradients and updated parameters, losses,
    activation memory, and the thread count and device :func:`reference_step` should use.
    """
    dev = runtime.device()
    p, s = runtime.world_size(), runtime.rank()
    sched = _check_run(schedule, microbatches, chunks, batch_size, depth, hidden, lr, batch,
                       device_time, p)
    microbatches, chunks = sched.microbatches, sched.chunks
    xs, ys = microbatches_of(batch_size, microbatches, step, batch, dev)
    pieces = split_stages(TinyMLP(hidden=hidden, depth=depth, seed=seed).to(dev), p * chunks)
    mine = {c: MicrobatchGrads(pieces[sched.virtual_stage(s, c)]) for c in range(chunks)}
    shapes = boundary_shapes(pieces, xs[0])
    dist.barrier()  # start together, so early ranks do not record waiting as idle
    result = execute(sched, s, mine, xs, shapes=shapes, device_time=device_time,
                     loss=lambda out, mb: F.cross_entropy(out, ys[mb]) / microbatches)

    out_grads, out_params = {}, {}
    for c, stage in mine.items():
        vs, total = sched.virtual_stage(s, c), stage.summed()
        sgd_step(stage.module.parameters(), total, lr)
        names = [n for n, _ in stage.module.named_parameters()]
        out_grads[vs] = dict(zip(names, total))
        out_params[vs] = {n: prm.detach().clone() for n, prm in stage.module.named_parameters()}
    dist.barrier()
    return {"rank": s, "schedule": sched.name, "events": result.events, "grads": out_grads,
            "params": out_params,
            "losses": [result.losses[k] * microbatches for k in sorted(result.losses)],
            "peak_held": result.peak_held, "peak_bytes": result.peak_bytes,
            "chunks": chunks, "split_backward": sched.split_backward,
            "threads": torch.get_num_threads(), "device": str(dev)}


def reference_step(*, stages: int, microbatches: int = 4, chunks: int = 1,
                   batch_size: int = 32, depth: int = 7, hidden: int = 64, lr: float = 0.1,
                   step: int = 0, seed: int = 0, threads: int | None = None,
                   batch: tuple | None = None, device=None) -> dict:
    """Single-process gradient accumulation over the same micro-batches, then one SGD step.

    Pass ``threads`` = the ranks' thread count (``run_pipeline`` returns it): CPU matrix
    products split their reductions differently on 1 and 2 threads, which changes the
    last bits of a weight gradient. For the same reason pass ``device`` = the ranks'
    device (``run_pipeline`` returns it; default :func:`companion.runtime.device`).

    Returns ``{"grads": {piece: {name: tensor}}, "params": ..., "losses": [...]}`` keyed
    like :func:`run_pipeline` (piece = virtual stage), plus the plain full-batch gradient
    under ``"full_batch_grads"``.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(threads or before)
    try:
        return _reference(stages, microbatches, chunks, batch_size, depth, hidden, lr, step, seed,
                          batch, runtime.device() if device is None else torch.device(device))
    finally:
        torch.set_num_threads(before)


def _reference(stages, microbatches, chunks, batch_size, depth, hidden, lr, step, seed, batch,
               dev):
    xs, ys = microbatches_of(batch_size, microbatches, step, batch, dev)
    model = TinyMLP(hidden=hidden, depth=depth, seed=seed).to(dev)
    pieces = split_stages(model, stages * chunks)
    params = list(model.parameters())
    total, losses = None, []
    for x, y in zip(xs, ys):
        loss = F.cross_entropy(model(x), y) / microbatches
        losses.append(loss.item() * microbatches)
        g = torch.autograd.grad(loss, params)
        total = list(g) if total is None else [a + b for a, b in zip(total, g)]
    x_full, y_full = torch.cat(xs), torch.cat(ys)
    full = torch.autograd.grad(F.cross_entropy(model(x_full), y_full), params)
    by_param = dict(zip(map(id, params), total))
    full_by_param = dict(zip(map(id, params), full))
    sgd_step(params, [by_param[id(q)] for q in params], lr)
    out = {"grads": {}, "params": {}, "full_batch_grads": {}, "losses": losses}
    for vs, piece in enumerate(pieces):
        named = list(piece.named_parameters())
        out["grads"][vs] = {n: by_param[id(q)] for n, q in named}
        out["full_batch_grads"][vs] = {n: full_by_param[id(q)] for n, q in named}
        out["params"][vs] = {n: q.detach().clone() for n, q in named}
    return out


def timeline_from_results(results: list, unit: str = "ms") -> Timeline:
    """A :class:`Timeline` from the ranks' recorded events (time from the first op's start)."""
    scale = {"ms": 1e3, "s": 1.0}[one_of("unit", unit, ("ms", "s"))]
    t0 = min(e[3] for r in results for e in r["events"])
    events = [Event(r["rank"], Op(k, mb, c), (a - t0) * scale, (b - t0) * scale)
              for r in results for (k, mb, c, a, b, _) in r["events"]]
    first = results[0]
    return Timeline(events, len(results), first["chunks"], first["split_backward"],
                    tr("{schedule} (measured)").format(schedule=first["schedule"]), unit)


def _summary(results) -> str:
    tl = timeline_from_results(results)
    return tr("{name}: step {step:.1f} ms, utilisation {utilisation:.1%}, peak activations per "
              "stage {peaks}").format(name=tl.name, step=tl.makespan, utilisation=tl.utilization,
                                      peaks=[r["peak_held"] for r in results])
