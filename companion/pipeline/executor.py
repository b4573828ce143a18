"""The pipeline executor: one rank's part of a schedule, run over real point-to-point sends.

Taught in notebook 04 (``notebooks/04_pipeline_parallelism.ipynb``), where it runs a
TinyMLP (:func:`~companion.pipeline.run_pipeline`); notebooks 09 and 12 run their
transformer stages through it too (``companion.hybrid``). :func:`execute` walks this
rank's op list, ``sched.ops[stage]``:

* ``F``: receive the activation from the previous stage (``dist.recv``), run the stage,
  send the output on (``dist.isend``: a blocking send could wait for a peer that is
  itself blocked sending, the classic 1F1B deadlock); the last stage computes the loss.
* ``B``: receive the output gradient, backpropagate, send the input gradient back.
  With split backward (ZB-H1) ``B`` asks autograd for the input gradient only, and
* ``W`` later asks the retained graph for the weight gradient.

Every message carries a tag naming (kind, micro-batch, virtual stage), so a rank can
never consume the wrong tensor whatever order its peer sends in (NCCL ignores tags:
there a rank receives in the order its peer sent, :meth:`Schedule.sends`, and keeps
each message until its op asks for it). Where two consecutive virtual stages sit on
the same rank (the turn of a V layout: ZB-V, DualPipeV), the tensor is handed over in
memory instead of sent, as a GPU would keep it on the device.

**What a stage computes** is the caller's: one stage object per model chunk on this
rank, with ``forward(x)`` and ``backward(microbatch, out, g_out, x_in, wants_input,
wants_weights)`` returning the input gradient. Two are here:

* :class:`MicrobatchGrads` keeps each micro-batch's weight gradient separately and sums
  them in micro-batch order (:meth:`~MicrobatchGrads.summed`), so the result does not
  depend on the schedule and equals single-process gradient accumulation bit for bit;
* :class:`AccumulatingStage` lets ``out.backward()`` accumulate into ``.grad``, which
  is what DDP's gradient hooks watch; its ``hold`` (``ddp.no_sync``) keeps the
  data-parallel sync for the step's last backward, as under torch's gradient accumulation.

**Timing model.** On a 2-core CPU, four ranks computing at once share two cores, and
the measured timeline would show the machine's contention rather than the schedule. So
with ``device_time={"F": s, "B": s, "W": s}`` each op does its real math and then waits
until its *emulated device time* has passed, standing in for a GPU kernel of that
length (``time.sleep`` leaves the cores free); ``"send"`` emulates a link's latency:
each message carries the time it was sent, and the receiver may not use it before that
time plus the latency (a hand-over in memory has none). ``None``: raw CPU time.
"""
from __future__ import annotations

import contextlib
import dataclasses
import time

import torch
import torch.distributed as dist

from .. import runtime
from .links import Links as _Links
from .ops import Schedule

__all__ = ["execute", "StepResult", "MicrobatchGrads", "AccumulatingStage", "boundary_shapes",
           "check_device_time"]


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


class MicrobatchGrads:
    """A model chunk whose weight gradient is kept per micro-batch (``grads[mb]``)."""

    def __init__(self, module: torch.nn.Module):
        self.module, self.params, self.grads = module, list(module.parameters()), {}

    def forward(self, x):
        return self.module(x)

    def backward(self, microbatch, out, g_out, x_in, wants_input, wants_weights):
        inputs = ([x_in] if wants_input else []) + (self.params if wants_weights else [])
        result = _vjp(out, inputs, g_out, retain=not wants_weights) if inputs else ()
        if wants_weights:
            self.grads[microbatch] = result[len(result) - len(self.params):]
        return result[0] if wants_input else None

    def summed(self) -> list:
        """The weight gradient summed in micro-batch order: the schedule cannot change the bits."""
        total = list(self.grads[0])
        for mb in range(1, len(self.grads)):
            total = [a + b for a, b in zip(total, self.grads[mb])]
        return total


class AccumulatingStage:
    """A model chunk whose backward accumulates into ``.grad``; every ``microbatches``-th
    backward (the step's last) runs outside ``hold``, so that is where DDP syncs."""

    def __init__(self, module: torch.nn.Module, microbatches: int, hold=contextlib.nullcontext):
        self.module, self.microbatches, self.hold, self.done = module, microbatches, hold, 0

    def forward(self, x):
        return self.module(x)

    def backward(self, microbatch, out, g_out, x_in, wants_input, wants_weights):
        if not wants_weights:
            raise ValueError("an accumulating stage runs whole backwards only; use a schedule "
                             "without split backward, e.g. schedule='1f1b'.")
        self.done += 1
        last = self.done % self.microbatches == 0
        with contextlib.nullcontext() if last else self.hold():
            out.backward(g_out)
        return x_in.grad if wants_input else None


def boundary_shapes(pieces: list, x) -> list:
    """The output shape of every piece (model order) for the input ``x``, so receivers
    can allocate buffers. The untimed backward also warms up autograd and the saved-bytes
    hooks, whose first call would otherwise stretch the first timed ops."""
    shapes, h = [], x.clone().requires_grad_()
    for piece in pieces:
        with _SavedBytes():
            out = piece(h)
        shapes.append(tuple(out.shape))
        _vjp(out, [h], torch.ones_like(out), retain=False)
        h = out.detach().requires_grad_()
    return shapes


def check_device_time(device_time) -> None:
    """ValueError unless ``device_time`` is None or gives F, B, W (and maybe send)."""
    keys = set(device_time or {})
    if keys and not {"F", "B", "W"} <= keys <= {"F", "B", "W", "send"}:
        raise ValueError("device_time must give seconds for 'F', 'B' and 'W', and may give "
                         "'send' (a message's latency).")


@dataclasses.dataclass
class StepResult:
    """What one rank's part of a step recorded: ``events`` are ``(kind, micro-batch,
    chunk, start, end, compute seconds)``; ``losses`` the last stage's loss per micro-batch
    (as ``loss`` returned it); ``peak_held``/``peak_bytes`` the most micro-batches and
    saved bytes held at once; ``sent_bytes`` the payload sent to other ranks."""

    events: list
    losses: dict
    peak_held: int
    peak_bytes: int
    sent_bytes: int


class _Ops:
    """One rank's F and B/W ops: what each receives, computes, keeps and hands on."""

    def __init__(self, sched, pieces, inputs, shapes, loss, links):
        self.sched, self.pieces, self.inputs, self.shapes = sched, pieces, inputs, shapes
        self.loss, self.links, self.last = loss, links, sched.virtual_stages - 1
        self.saved, self.losses = {}, {}
        self.held = self.peak_held = self.held_bytes = self.peak_bytes = 0

    def forward(self, op, vs):
        """Run F; return its start time and what it sends ``(tensor, kind, to virtual stage)``."""
        mb = op.microbatch
        if vs == 0:
            x_in = self.inputs[mb]
        else:
            x_in = self.links.receive("F", self.shapes[vs - 1], vs - 1, mb).requires_grad_()
        runtime.synchronize()  # the op starts once its input has arrived, not when asked for
        t0 = time.perf_counter()
        with _SavedBytes() as counter:
            out = self.pieces[op.chunk].forward(x_in)
            if vs == self.last:
                out = self.loss(out, mb)
        if vs == self.last:
            self.losses[mb] = out.item()
        self.saved[(mb, op.chunk)] = [x_in, out, None, counter.total]
        self.held, self.held_bytes = self.held + 1, self.held_bytes + counter.total
        self.peak_held = max(self.peak_held, self.held)
        self.peak_bytes = max(self.peak_bytes, self.held_bytes)
        return t0, (None if vs == self.last else (out.detach(), "F", vs + 1))

    def backward(self, op, vs):
        """Run B or W; return its start time and the input gradient to send, if any."""
        key = (op.microbatch, op.chunk)
        x_in, out, g_out, nbytes = self.saved[key]
        if op.kind == "B" and vs != self.last:
            g_out = self.links.receive("B", self.shapes[vs], vs + 1, op.microbatch)
            self.saved[key][2] = g_out
        runtime.synchronize()
        t0 = time.perf_counter()
        wants_input = op.kind == "B" and vs > 0
        wants_weights = op.kind == "W" or not self.sched.split_backward
        grad = self.pieces[op.chunk].backward(op.microbatch, out, g_out, x_in, wants_input,
                                              wants_weights)
        if wants_weights:
            del self.saved[key]
            self.held, self.held_bytes = self.held - 1, self.held_bytes - nbytes
        return t0, ((grad, "B", vs - 1) if wants_input else None)


def execute(sched: Schedule, stage: int, pieces: dict, inputs, *, shapes, loss, ranks=None,
            device_time: dict | None = None) -> StepResult:
    """Run ``sched.ops[stage]``, this rank's part of one step, and wait for its sends.

    ``pieces[c]`` is the stage object of chunk ``c`` (see the module docstring);
    ``inputs[mb]`` the first virtual stage's input; ``shapes[vs]`` the output shape of
    virtual stage ``vs`` (:func:`boundary_shapes`); ``loss(out, mb)`` the last virtual
    stage's loss of ``mb``; ``ranks[s]`` the global rank of pipeline stage ``s``
    (default ``s``); ``device_time`` the emulated op times (module docstring). Messages
    are received into buffers on the rank's device (:func:`companion.runtime.device`).
    """
    if sorted(pieces) != list(range(sched.chunks)):
        raise ValueError(f"pieces has chunks {sorted(pieces)} but the schedule puts "
                         f"{sched.chunks} on each stage; give pieces for 0..{sched.chunks - 1}.")
    if not 0 <= stage < sched.stages:
        raise ValueError(f"stage={stage} is not one of the schedule's {sched.stages} stages; "
                         f"pass 0..{sched.stages - 1}.")
    check_device_time(device_time)
    cost = dict(device_time or {})
    links = _Links(sched, stage, range(sched.stages) if ranks is None else ranks,
                   cost.pop("send", 0.0), shapes, runtime.device())
    run, events = _Ops(sched, pieces, inputs, shapes, loss, links), []
    for op in sched.ops[stage]:
        vs = sched.virtual_stage(stage, op.chunk)
        t0, outgoing = run.forward(op, vs) if op.kind == "F" else run.backward(op, vs)
        runtime.synchronize()  # a GPU kernel has run when it has finished, not when launched
        compute = time.perf_counter() - t0
        if cost:
            both = op.kind == "B" and not sched.split_backward
            remaining = (t0 + (cost[op.kind] + (cost["W"] if both else 0)) / sched.chunks
                         - time.perf_counter())
            if remaining > 0:
                time.sleep(remaining)
        events.append((op.kind, op.microbatch, op.chunk, t0, time.perf_counter(), compute))
        if outgoing is not None:  # sent once the (emulated) kernel has finished
            tensor, kind, dst_vs = outgoing
            links.send(tensor, kind, op.microbatch, vs, dst_vs)
    links.wait()
    return StepResult(events, run.losses, run.peak_held, run.peak_bytes, links.sent_bytes)
