"""A real pipeline: a TinyMLP cut into stages on N ranks, running any schedule.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``).

Each rank builds the same seeded model, keeps only its stages (virtual stages
``s, s+p, ...`` under interleaving) and walks its op list from the schedule:

* ``F``: receive the activation from the previous stage (``dist.recv``), run the stage,
  send the output on (``dist.isend``: a blocking send could wait for a peer that is
  itself blocked sending, the classic 1F1B deadlock); the last stage computes the loss.
* ``B``: receive the output gradient, backpropagate, send the input gradient back.
  With split backward (ZB-H1) ``B`` asks autograd for the input gradient only, and
* ``W`` later asks the retained graph for the weight gradient.

Every message carries a tag naming (kind, micro-batch, virtual stage), so a rank can
never consume the wrong tensor whatever order its peer sends in. Where two consecutive
virtual stages sit on the same rank (the turn of a V layout: ZB-V, DualPipeV), the
tensor is handed over in memory instead of sent, as a GPU would keep it on the device.

**Timing model.** On a 2-core CPU, four ranks computing at once share two cores, and
the measured timeline would show the machine's contention rather than the schedule. So
with ``device_time={"F": s, "B": s, "W": s}`` each op does its real math and then waits
until its *emulated device time* has passed, standing in for a GPU kernel of that
length (``time.sleep`` leaves the cores free). An optional ``"send"`` entry emulates a
link's latency: each message carries the time it was sent, and the receiver may not
use it before that time plus the latency (a hand-over in memory has none). With
``device_time=None`` ops take their raw CPU time. Either way the activations and gradients really move between
processes and the model really trains.

**Exactness.** Each micro-batch's weight gradient is kept separately and summed in
micro-batch order at the end, so the result does not depend on the schedule, and it
equals single-process gradient accumulation over the same micro-batches bit for bit
(:func:`reference_step`).
"""
from __future__ import annotations

import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from .. import runtime
from ..data import digits_batch
from ..experiments import experiment
from ..models import TinyMLP
from .schedules import Op, Schedule, make_schedule
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


def microbatches_of(batch_size: int, microbatches: int, step: int = 0, batch=None):
    """The global digits batch for ``step`` (or ``batch=(x, y)``) in ``microbatches`` equal
    pieces."""
    x, y = digits_batch(step, batch_size) if batch is None else batch
    if microbatches < 1 or len(y) % microbatches:
        raise ValueError(f"batch_size={len(y)} does not split into {microbatches} equal "
                         f"micro-batches; use a batch size that is a multiple of {microbatches}.")
    return list(x.chunk(microbatches)), list(y.chunk(microbatches))


_STAMP = 1 << 24  # tag offset of a message's send-time stamp (emulated latency only)


def _tag(kind: str, microbatch: int, virtual_stage: int, virtual_stages: int) -> int:
    return (0 if kind == "F" else 1) + 2 * (virtual_stage + virtual_stages * microbatch)


class _SavedBytes:
    """Counts the bytes autograd saves for backward during one forward (shared storages
    counted once): the activation memory a micro-batch pins until its backward."""

    def __init__(self):
        self.seen, self.total = set(), 0

    def pack(self, t):
        key = t.untyped_storage().data_ptr()
        if key not in self.seen:
            self.seen.add(key)
            self.total += t.untyped_storage().nbytes()
        return t

    def __enter__(self):
        self.ctx = torch.autograd.graph.saved_tensors_hooks(self.pack, lambda t: t)
        self.ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self.ctx.__exit__(*exc)


def _vjp(out, inputs, g_out, retain):
    """Gradients of ``out`` w.r.t. ``inputs`` given the output gradient ``g_out``.

    Written as the gradient of the scalar ``sum(out * g_out)`` (whose gradient w.r.t.
    ``out`` is exactly ``1.0 * g_out``, so the numbers are unchanged) because passing a
    tensor ``grad_outputs`` makes torch import its symbolic-shapes machinery, which costs
    every fresh rank seconds on a small CPU.
    """
    if g_out is not None:
        out = (out * g_out).sum()
    return torch.autograd.grad(out, inputs, retain_graph=retain)


@torch.no_grad()
def _sgd_step(params, grads, lr):
    """Plain SGD, ``p -= lr * g`` (what torch.optim.SGD does without momentum; written out
    because the first torch.optim import in a fresh rank pulls in torch._dynamo)."""
    for prm, g in zip(params, grads):
        prm.add_(g, alpha=-lr)


def _check_run(schedule, microbatches, chunks, batch_size, depth, hidden, lr, batch,
               world_size=1) -> Schedule:
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
    latency (see the module docstring), or None for raw CPU time.
    ``batch=(x, y)`` passes the global batch in (loading digits imports scikit-learn, which
    costs every fresh rank seconds); by default the ranks load digits batch ``step``.
    Returns this rank's op events, per-piece gradients and updated parameters, losses
    and activation memory.
    """
    p, s = runtime.world_size(), runtime.rank()
    sched = _check_run(schedule, microbatches, chunks, batch_size, depth, hidden, lr, batch, p)
    microbatches, chunks = sched.microbatches, sched.chunks
    xs, ys = microbatches_of(batch_size, microbatches, step, batch)
    pieces = split_stages(TinyMLP(hidden=hidden, depth=depth, seed=seed), p * chunks)
    V, last = sched.virtual_stages, sched.virtual_stages - 1
    mine = {c: pieces[sched.virtual_stage(s, c)] for c in range(chunks)}
    # Boundary shapes, so receivers can allocate buffers; the untimed backward warms up
    # autograd and the hooks, whose first call would otherwise stretch the first ops.
    shapes, h = [], xs[0].clone().requires_grad_()
    for piece in pieces:
        with _SavedBytes():
            out = piece(h)
        shapes.append(tuple(out.shape))
        _vjp(out, [h], torch.ones_like(out), retain=False)
        h = out.detach().requires_grad_()
    cost = dict(device_time or {})
    if cost and not {"F", "B", "W"} <= set(cost) <= {"F", "B", "W", "send"}:
        raise ValueError("device_time must give seconds for 'F', 'B' and 'W', and may give "
                         "'send' (a message's latency).")
    latency = cost.pop("send", 0.0)

    saved, grads, sends, events, losses, local = {}, {}, [], [], {}, {}

    def receive(kind, shape, src_vs, mb):
        """The tensor virtual stage ``src_vs`` produced for ``mb``: from this rank's
        memory when it lives here, else received."""
        tag, src = _tag(kind, mb, src_vs, V), sched.placement(src_vs)[0]
        if tag in local:
            return local.pop(tag)
        buf = torch.empty(shape)
        dist.recv(buf, src=src, tag=tag)
        if latency:
            sent = torch.empty(1, dtype=torch.float64)
            dist.recv(sent, src=src, tag=tag + _STAMP)
            wait = sent.item() + latency - time.perf_counter()
            if wait > 0:
                time.sleep(wait)  # still on the wire: the rank sits idle, as on a real link
        return buf

    held = peak_held = 0
    held_bytes = peak_bytes = 0
    dist.barrier()  # start together, so early ranks do not record waiting as idle
    for op in sched.ops[s]:
        vs = sched.virtual_stage(s, op.chunk)
        params = list(mine[op.chunk].parameters())
        outgoing = None
        key = (op.microbatch, op.chunk)
        if op.kind == "F":
            if vs == 0:
                x_in = xs[op.microbatch]
            else:
                x_in = receive("F", shapes[vs - 1], vs - 1, op.microbatch).requires_grad_()
            t0 = time.perf_counter()
            with _SavedBytes() as counter:
                out = mine[op.chunk](x_in)
                if vs == last:
                    out = F.cross_entropy(out, ys[op.microbatch]) / microbatches
            if vs == last:
                losses[op.microbatch] = out.item() * microbatches
            else:
                outgoing = (out.detach(), sched.placement(vs + 1)[0], _tag("F", op.microbatch, vs, V))
            saved[key] = [x_in, out, None, counter.total]
            held += 1
            held_bytes += counter.total
            peak_held, peak_bytes = max(peak_held, held), max(peak_bytes, held_bytes)
        else:
            x_in, out, g_out, nbytes = saved[key]
            if op.kind == "B" and vs != last:
                g_out = receive("B", shapes[vs], vs + 1, op.microbatch)
                saved[key][2] = g_out
            t0 = time.perf_counter()
            wants_input = op.kind == "B" and vs > 0
            wants_weights = op.kind == "W" or not sched.split_backward
            inputs = ([x_in] if wants_input else []) + (params if wants_weights else [])
            result = _vjp(out, inputs, g_out, retain=not wants_weights) if inputs else ()
            if wants_input:
                outgoing = (result[0], sched.placement(vs - 1)[0], _tag("B", op.microbatch, vs, V))
            if wants_weights:
                grads[key] = result[len(result) - len(params):]
                del saved[key]
                held -= 1
                held_bytes -= nbytes
        compute = time.perf_counter() - t0
        if cost:
            kind_cost = cost[op.kind] + (cost["W"] if op.kind == "B" and not sched.split_backward else 0)
            remaining = t0 + kind_cost / chunks - time.perf_counter()
            if remaining > 0:
                time.sleep(remaining)
        events.append((op.kind, op.microbatch, op.chunk, t0, time.perf_counter(), compute))
        if outgoing is not None:  # sent once the (emulated) kernel has finished
            tensor, dst, tag = outgoing
            if dst == s:
                local[tag] = tensor
            else:
                sends.append(dist.isend(tensor, dst=dst, tag=tag))
                if latency:  # perf_counter is one clock for every process on this machine
                    stamp = torch.tensor([time.perf_counter()], dtype=torch.float64)
                    sends.append(dist.isend(stamp, dst=dst, tag=tag + _STAMP))
    for handle in sends:
        handle.wait()

    out_grads, out_params = {}, {}
    for c, piece in mine.items():
        vs = sched.virtual_stage(s, c)
        total = list(grads[(0, c)])
        for mb in range(1, microbatches):  # fixed order: the schedule cannot change the bits
            total = [a + b for a, b in zip(total, grads[(mb, c)])]
        _sgd_step(piece.parameters(), total, lr)
        names = [n for n, _ in piece.named_parameters()]
        out_grads[vs] = dict(zip(names, total))
        out_params[vs] = {n: prm.detach().clone() for n, prm in piece.named_parameters()}
    dist.barrier()
    return {"rank": s, "schedule": sched.name, "events": events, "grads": out_grads,
            "params": out_params, "losses": [losses[k] for k in sorted(losses)],
            "peak_held": peak_held, "peak_bytes": peak_bytes,
            "chunks": chunks, "split_backward": sched.split_backward,
            "threads": torch.get_num_threads()}


def reference_step(*, stages: int, microbatches: int = 4, chunks: int = 1,
                   batch_size: int = 32, depth: int = 7, hidden: int = 64, lr: float = 0.1,
                   step: int = 0, seed: int = 0, threads: int | None = None,
                   batch: tuple | None = None) -> dict:
    """Single-process gradient accumulation over the same micro-batches, then one SGD step.

    Pass ``threads`` = the ranks' thread count (``run_pipeline`` returns it): CPU matrix
    products split their reductions differently on 1 and 2 threads, which changes the
    last bits of a weight gradient.

    Returns ``{"grads": {piece: {name: tensor}}, "params": ..., "losses": [...]}`` keyed
    like :func:`run_pipeline` (piece = virtual stage), plus the plain full-batch gradient
    under ``"full_batch_grads"``.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(threads or before)
    try:
        return _reference(stages, microbatches, chunks, batch_size, depth, hidden, lr, step, seed,
                          batch)
    finally:
        torch.set_num_threads(before)


def _reference(stages, microbatches, chunks, batch_size, depth, hidden, lr, step, seed, batch):
    xs, ys = microbatches_of(batch_size, microbatches, step, batch)
    model = TinyMLP(hidden=hidden, depth=depth, seed=seed)
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
    _sgd_step(params, [by_param[id(q)] for q in params], lr)
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
                    first["schedule"] + " (measured)", unit)


def _summary(results) -> str:
    tl = timeline_from_results(results)
    return (f"{tl.name}: step {tl.makespan:.1f} ms, utilisation {tl.utilization:.1%}, "
            f"peak activations per stage {[r['peak_held'] for r in results]}")
