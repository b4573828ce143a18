"""Per-GPU memory at the real size, measured by torch on a fake process group.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``, "Will it fit?") and
used by ``python -m companion fit``. The planner predicts memory from formulas
(:func:`companion.planner.cost.evaluate`); this module asks torch instead. It runs
torch's own strategies at the real world size on one CPU process:

* a fake process group of ``gpus`` ranks (``backend="fake"``, ``FakeStore``): every
  collective returns at once, so one process plays rank 0 of the whole job;
* the model (:class:`~companion.planner.decoder.Decoder`) built under
  ``FakeTensorMode``: tensors have shapes, dtypes and storages but no bytes, so a
  405B-parameter model costs nothing to build;
* tensor parallelism as DTensor (``parallelize_module``: columns, rows, sequence
  parallelism on the norms and a vocabulary-parallel loss, torchtitan's plan), FSDP2's
  ``fully_shard`` per block over the data-parallel (and context-parallel) ranks with
  bf16 compute and fp32 master weights, gradients and (fused) AdamW states; ZeRO-0
  is the same over a group of one rank, which keeps every state whole (the
  data-parallel all-reduce's buckets are not modelled);
* a pipeline stage as the blocks one rank holds, with the micro-batches 1F1B keeps in
  flight on it (``pp - stage``), run forward before any backward, as that stage does;
* context parallelism as the ``seq / cp`` tokens a rank holds (the ring's K/V buffers
  are not modelled).

torch's ``FSDPMemTracker`` (``torch.distributed._tools``) reports the peak of a second training step (the optimizer states then
exist, as in every later step), by category (:data:`CATEGORIES`).
"""
from __future__ import annotations

import contextlib
import warnings

import torch
import torch.distributed as dist
import torch.nn.functional as F

from .decoder import Decoder
from .memory_model import Layout, padded_vocab
from .specs import ModelSpec

__all__ = ["Layout", "measure_memory", "CATEGORIES"]

# The rows of the fit table, and which of FSDPMemTracker's categories each gathers.
CATEGORIES = {
    "params": ("Sharded Param",),
    "grads": ("Sharded Grad",),
    "optimizer": ("OptState",),
    "gathered": ("Unsharded Param", "All Gather"),
    "activations": ("Activation",),
    "temporaries": ("Temp", "Reduce Scatter", "Unsharded Grad", "Buffer", "Inputs"),
}
_ROW = {torch_name: row for row, names in CATEGORIES.items() for torch_name in names}


def measure_memory(spec: ModelSpec, layout: Layout) -> dict:
    """Bytes by category (:data:`CATEGORIES`) at the peak on the busiest rank, plus
    ``"peak"`` (their sum), ``"states"`` (parameters, gradients and optimizer states
    after the last backward) and ``"stage"`` (the pipeline stage measured).

    Every pipeline stage that could be the busiest is measured (the first holds the
    most micro-batches, the last the output head and its logits); the larger wins.
    """
    if not isinstance(layout, Layout):
        raise TypeError(f"layout: pass a memory_model.Layout, got {type(layout).__name__}.")
    layout.check(spec)
    if dist.is_initialized():
        raise RuntimeError("measure_memory needs a process without a process group (it "
                           "creates a fake one); call it from the notebook or the command "
                           "line, not from inside a rank.")
    stages = sorted({0, layout.pp - 1})
    results = []
    with _fake_world(layout.gpus), warnings.catch_warnings():
        # the embedding's output is a view; nothing here writes into it in place
        warnings.filterwarnings("ignore", message="FSDP2-wrapped module")
        for stage in stages:
            results.append(_measure_stage(spec, layout, stage))
    return max(results, key=lambda r: r["peak"])


@contextlib.contextmanager
def _fake_world(world_size: int):
    from torch.testing._internal.distributed.fake_pg import FakeStore
    dist.init_process_group("fake", rank=0, world_size=world_size, store=FakeStore())
    try:
        yield
    finally:
        dist.destroy_process_group()


def _mesh(layout: Layout):
    """(the mesh FSDP shards over, the TP mesh). ZeRO-0 shards over a group of one:
    FSDP2 then keeps every state whole and still computes in bf16 from fp32 masters."""
    from torch.distributed.device_mesh import init_device_mesh
    shard = layout.shards
    mesh = init_device_mesh("cpu", (layout.dp * layout.cp // shard, shard, layout.tp),
                            mesh_dim_names=("replicate", "shard", "tp"))
    # sliced here, outside FakeTensorMode: slicing reads the mesh's real rank tensor;
    # the replicas' gradient all-reduce (ZeRO-0's buckets) is not modelled
    return mesh["shard"], mesh["tp"]


def _measure_stage(spec: ModelSpec, layout: Layout, stage: int) -> dict:
    from torch._subclasses.fake_tensor import FakeTensorMode

    counts = spec.stage_layers(layout.pp)
    first, last = stage == 0, stage == layout.pp - 1
    tokens = layout.seq // layout.cp
    meshes = _mesh(layout)  # outside FakeTensorMode: the mesh reads real rank tensors
    with FakeTensorMode():
        vocab = padded_vocab(spec, layout.tp)
        model = Decoder(spec, counts[stage], first, last, layout.recompute, vocab)
        _parallelize(model, meshes, layout, first, last)
        # fused: one kernel per step without foreach temporaries, as real runs (and
        # torchtitan) configure it
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        inputs = [_inputs(vocab, spec, layout, first, tokens)
                  for _ in range(layout.pp - stage)]
        run = _Run(model, opt, inputs, vocab, last)
        _create_states(model, opt)
        tracker = run.tracker()
        with tracker:
            held = run.step(tracker)
        peak = _rows(tracker.get_tracker_snapshot("peak"))
    out = {**peak, "peak": sum(peak.values())}
    held = _rows(held)
    # after the last backward, before the step: parameters, gradients, optimizer states
    out["states"] = held["params"] + held["grads"] + held["optimizer"]
    out["stage"] = stage
    return out


def _create_states(model, opt) -> None:
    """AdamW's states exist from the first step on; make them with a step on zero
    gradients rather than a whole (slow, under FakeTensorMode) training step."""
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    opt.zero_grad()


def _rows(snapshot) -> dict:
    out = dict.fromkeys(CATEGORIES, 0)
    for per_device in snapshot.values():
        for key, value in per_device.items():
            name = getattr(key, "value", str(key))
            if name != "Total":
                out[_ROW[name]] += int(value)
    return out


def _inputs(vocab, spec, layout, first, tokens):
    if first:
        return torch.randint(0, vocab, (layout.micro_batch, tokens))
    dtype = torch.float32 if layout.precision == "fp32" else torch.bfloat16
    # a middle stage receives the previous stage's hidden states, sequence-sharded by TP
    return torch.randn(layout.micro_batch, tokens // layout.tp, spec.hidden, dtype=dtype,
                       requires_grad=True)


class _Run:
    """One stage's training step, as 1F1B's warm-up runs it: every in-flight micro-batch
    forward, then each backward, then the optimizer."""

    def __init__(self, model, opt, inputs, vocab, last):
        self.model, self.opt, self.inputs, self.vocab, self.last = model, opt, inputs, vocab, last

    def tracker(self):
        from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
        tracker = FSDPMemTracker(self.model, self.opt)
        tracker.track_inputs(tuple(self.inputs))
        return tracker

    def step(self, tracker=None):
        """Returns the tracker's snapshot after the last backward (None untracked)."""
        outs = []
        for x in self.inputs:
            if tracker is not None:
                tracker.reset_mod_stats()  # per-module stats only; the peak is kept
            outs.append(self.model(x))
        for out in outs:
            if self.last:
                _loss_backward(out, self.vocab)
            else:
                out.backward(torch.ones_like(out))
        held = tracker.get_tracker_snapshot("current") if tracker is not None else None
        self.opt.step()
        self.opt.zero_grad()
        return held


def _loss_backward(logits, vocab) -> None:
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.parallel import loss_parallel
    labels = torch.randint(0, vocab, logits.shape[:2])
    if isinstance(logits, DTensor):  # vocabulary-parallel logits: never gathered whole
        with loss_parallel():
            F.cross_entropy(logits.flatten(0, 1), labels.flatten()).backward()
        return
    F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten()).backward()


def _parallelize(model, meshes, layout, first, last) -> None:
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    if layout.tp > 1:
        from .torch_tp import apply_tensor_parallel
        apply_tensor_parallel(model, meshes[1], first, last)
    mp = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
          if layout.precision == "bf16" else MixedPrecisionPolicy())
    # FSDP over a TP-split model joins the two meshes, which computes on their real rank
    # tensors; the parameters stay fake (a fake tensor dispatches to its own mode)
    # torchtitan's units: the embedding, each block, the final norm with the head, the
    # root last
    units = ([model.embed] if first else []) + list(model.blocks)
    units += [[model.norm, model.head]] if last else []
    with unset_fake_temporarily():
        for unit in units:
            fully_shard(unit, mesh=meshes[0], mp_policy=mp)
        fully_shard(model, mesh=meshes[0], mp_policy=mp)
