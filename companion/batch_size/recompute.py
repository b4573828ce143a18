"""Activation recomputation, measured: none, selective and full, on real ranks.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``), section
"recomputation", after CS336 L8 section 4.4 and 7.3 ("recompute more, fit a bigger batch,
get better utilisation") and Korthikanti et al. 2022, "Reducing Activation Recomputation
in Large Transformer Models" (https://arxiv.org/abs/2205.05198), whose per-layer formula
is :func:`companion.data_parallel.memory.activation_memory_per_layer`.

Policies, applied from outside to a :class:`~companion.models.TinyTransformer` with
``torch.utils.checkpoint`` (the model knows nothing of them):

* ``"none"``: autograd keeps every tensor backward needs;
* ``"selective"``: the attention core softmax(q k^T / sqrt(d)) v (``models.attention``:
  the paper's "QK^T, softmax, softmax dropout, attention over V") is checkpointed, so only
  its inputs q, k, v are kept and the s x s score matrices are recomputed in backward;
* ``"full"``: every block is checkpointed: only its input survives forward, and backward
  runs the block's forward again (one extra forward: with backward = 2 forward, a step
  costs (F + F + 2F) / (F + 2F) = 4/3).

What is measured (:class:`ActivationMeter`, a ``TorchDispatchMode``): every storage that
an operation creates during the step, by weak reference. "Stored" is the bytes of those
still alive when forward ends, i.e. what the step keeps for backward (whatever keeps it:
autograd's saved tensors or a checkpoint's inputs), attributed to the block that created
it. "Peak" is the most bytes alive at once at any allocation of the step, so it also
counts recomputed activations, gradients and DDP's gradient buffer. Parameters are never
created by the step, so neither is counted. Bytes are those of the storages (a view costs
nothing), on CPU, where nothing is cached by an allocator.
"""
from __future__ import annotations

import contextlib
import statistics
import time

import torch
import torch.nn.functional as F
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.checkpoint import checkpoint

from .. import models
from ..data_parallel.memory import activation_memory_per_layer
from ..validation import one_of, positive_int, preflight

__all__ = ["POLICIES", "recomputation", "ActivationMeter", "expected_bytes_per_layer",
           "recompute_run", "recompute_table", "fit_in_budget"]

POLICIES = ("none", "selective", "full")


@contextlib.contextmanager
def recomputation(model: models.TinyTransformer, policy: str):
    """Run ``model`` under ``policy`` inside the ``with`` block; undone on exit."""
    one_of("policy", policy, POLICIES, "use 'none', 'selective' or 'full'.")
    if not isinstance(model, models.TinyTransformer):
        raise TypeError(f"model must be a companion.models.TinyTransformer, got "
                        f"{type(model).__name__}.")
    original = models.attention
    if policy == "full":
        for block in model.blocks:
            # An instance attribute wins over the class's forward; __call__ (and hooks) stay.
            block.forward = (lambda x, b=block: checkpoint(type(b).forward, b, x,
                                                           use_reentrant=False))
    elif policy == "selective":
        # CausalSelfAttention calls models.attention by name: the region Korthikanti et al.
        # recompute, and nothing else.
        models.attention = lambda q, k, v, causal=True: checkpoint(
            original, q, k, v, causal, use_reentrant=False)
    try:
        yield model
    finally:
        models.attention = original
        for block in model.blocks:
            block.__dict__.pop("forward", None)


class ActivationMeter(TorchDispatchMode):
    """Bytes of the storages the operations inside create, alive now and at their peak."""

    def __init__(self):
        super().__init__()
        self.label = "other"
        self._live = {}  # storage id -> (weak reference, bytes, label)
        self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        # A view or an in-place result shares its input's storage: not a new allocation
        # (this is what keeps a weight's transpose, a view of a parameter, out).
        inputs = {StorageWeakRef(t.untyped_storage()).cdata
                  for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        fresh = False
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.untyped_storage().nbytes():
                ref = StorageWeakRef(t.untyped_storage())
                if ref.cdata in inputs:
                    continue
                known = self._live.get(ref.cdata)
                if known is None or known[0].expired():  # an address can be reused
                    self._live[ref.cdata] = (ref, t.untyped_storage().nbytes(), self.label)
                    fresh = True
        if fresh:
            self.peak = max(self.peak, self.live_bytes())
        return out

    def live_bytes(self, by_label: bool = False):
        """Bytes alive now (``by_label``: a dict label -> bytes)."""
        self._live = {k: v for k, v in self._live.items() if not v[0].expired()}
        if not by_label:
            return sum(nbytes for _, nbytes, _ in self._live.values())
        out = {}
        for _, nbytes, label in self._live.values():
            out[label] = out.get(label, 0) + nbytes
        return out

    def label_blocks(self, model):
        """Attribute what each of ``model.blocks`` creates to ``"block i"``; returns handles."""
        handles = []
        for i, block in enumerate(model.blocks):
            handles.append(block.register_forward_pre_hook(
                lambda *_, i=i: setattr(self, "label", f"block {i}")))
            handles.append(block.register_forward_hook(
                lambda *_: setattr(self, "label", "other")))
        return handles


def expected_bytes_per_layer(seq_len: int, batch: int, hidden: int, heads: int,
                             policy: str = "none", bytes_per_element: int = 4,
                             dropout: bool = False) -> float:
    """Korthikanti et al.'s per-layer bytes, for the precision and dropout of a model.

    ``activation_memory_per_layer`` is the paper's 16-bit count with dropout: sbh (34 +
    5as/h). Without dropout the two 1-byte masks (2 sbh) and, in attention, the dropout
    mask and output (3 a s^2 b) are not stored, leaving 32 sbh + 2 a s^2 b in 16 bits;
    ``bytes_per_element=4`` (fp32) doubles it. Selective drops the a s^2 b terms; full keeps
    each layer's input only. TinyTransformer has no dropout and computes in fp32.
    """
    paper = activation_memory_per_layer(seq_len, batch, hidden, heads, recompute=policy)
    positive_int("bytes_per_element", bytes_per_element, "use 2 (bf16/fp16) or 4 (fp32).")
    sbh, as2b = seq_len * batch * hidden, heads * seq_len ** 2 * batch
    if not dropout and policy != "full":
        paper -= 2 * sbh + (3 * as2b if policy == "none" else 0)
    return paper * bytes_per_element / 2


def _metered(net, model, x, y, policy):
    """One step under ``policy`` with an :class:`ActivationMeter`: bytes, outputs, grads."""
    with recomputation(model, policy):
        model.zero_grad(set_to_none=True)
        meter = ActivationMeter()
        handles = meter.label_blocks(model)
        with meter:
            logits = net(x)
            loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
            stored = meter.live_bytes(by_label=True)
            loss.backward()  # DDP all-reduces the gradients here
        for h in handles:
            h.remove()
    blocks = [v for k, v in stored.items() if k.startswith("block")]
    return {"stored_per_layer": sum(blocks) / len(blocks), "stored_total": sum(stored.values()),
            "peak": meter.peak, "loss": loss.detach(), "logits": logits.detach(),
            "grads": {n: p.grad.clone() for n, p in model.named_parameters()}}


def _timed(net, model, x, y, policies, repeats):
    """Median forward and forward+backward seconds per policy, without the all-reduce.

    Timed under ``no_sync`` so that the ratio compares computation only (waiting for the
    other rank is not recomputation's cost), and round-robin over the policies so that a
    burst of load on a shared machine hits them alike. The forward is timed with autograd
    recording, as the recomputation in backward runs it.
    """
    forward, step = {p: [] for p in policies}, {p: [] for p in policies}
    sync = net.no_sync() if hasattr(net, "no_sync") else contextlib.nullcontext()
    with sync:
        for i in range(repeats + 1):  # the first round is a warm-up
            for policy in policies:
                with recomputation(model, policy):
                    model.zero_grad(set_to_none=True)
                    t0 = time.perf_counter()
                    net(x)
                    t1 = time.perf_counter()
                    F.cross_entropy(net(x).flatten(0, 1), y.flatten()).backward()
                    t2 = time.perf_counter()
                if i:
                    forward[policy].append(t1 - t0)
                    step[policy].append(t2 - t1)
    model.zero_grad(set_to_none=True)
    return {p: (statistics.median(forward[p]), statistics.median(step[p])) for p in policies}


def _check_sizes(seq_len, d_model, n_heads, n_layers, micro_batches, repeats):
    for name, value in (("seq_len", seq_len), ("d_model", d_model), ("n_heads", n_heads),
                        ("n_layers", n_layers), ("repeats", repeats)):
        positive_int(name, value, f"pass a positive whole number, e.g. {name}=2.")
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}.")
    if not micro_batches:
        raise ValueError("micro_batches must list at least one micro-batch size, e.g. (1, 2, 4).")
    for b in micro_batches:
        positive_int("micro_batches", b, "pass sequences per micro-batch, e.g. (1, 2, 4).")


def _preflight(micro_batches, policies, seq_len, d_model, n_heads, n_layers, repeats):
    _check_sizes(seq_len, d_model, n_heads, n_layers, micro_batches, repeats)
    for p in policies:
        one_of("policies", p, POLICIES, "use 'none', 'selective' or 'full'.")


@preflight(_preflight)
def recompute_run(micro_batches=(4,), policies=POLICIES, seq_len: int = 64, d_model: int = 64,
                  n_heads: int = 4, n_layers: int = 2, repeats: int = 3, seed: int = 0) -> list:
    """Rank function: each policy at each micro-batch on this rank, the model in DDP.

    Each rank takes its own windows of the corpus. Returns rows ``{"policy",
    "micro_batch", "stored_per_layer", "stored_total", "peak", "forward_s", "step_s",
    "tokens_per_s" (all ranks), "bit_exact"}``, where ``bit_exact`` says that the logits,
    loss and synchronised gradients equal those of ``"none"`` bit for bit.
    """
    import torch.distributed as dist

    from ..data import CharCorpus
    from ..data_parallel.ddp import DDP

    _preflight(micro_batches, policies, seq_len, d_model, n_heads, n_layers, repeats)
    n = dist.get_world_size() if dist.is_initialized() else 1
    rank = dist.get_rank() if dist.is_initialized() else 0
    corpus = CharCorpus()
    model = models.TinyTransformer(corpus.vocab_size, d_model, n_heads, n_layers, seq_len,
                                   seed=seed)
    net = DDP(model, bucket_size_mb=25) if n > 1 else model
    rows = []
    for b in micro_batches:
        x, y = corpus.batch(rank, b, seq_len, seed=seed)
        base = _metered(net, model, x, y, "none")
        times = _timed(net, model, x, y, policies, repeats)
        for policy in policies:
            m = base if policy == "none" else _metered(net, model, x, y, policy)
            exact = (torch.equal(m["logits"], base["logits"]) and torch.equal(m["loss"], base["loss"])
                     and all(torch.equal(m["grads"][k], base["grads"][k]) for k in m["grads"]))
            forward_s, step_s = times[policy]
            rows.append({"policy": policy, "micro_batch": b, "bit_exact": exact,
                         "forward_s": forward_s, "step_s": step_s,
                         "tokens_per_s": n * b * seq_len / step_s,
                         **{k: m[k] for k in ("stored_per_layer", "stored_total", "peak")}})
    return rows


def recompute_table(world_size: int = 2, micro_batches=(4,), seq_len: int = 64,
                    d_model: int = 64, n_heads: int = 4, n_layers: int = 2,
                    repeats: int = 3) -> list:
    """Launch :func:`recompute_run` on ``world_size`` ranks; rank 0's rows, each with
    ``expected_per_layer`` (this model: fp32, no dropout), ``paper_per_layer`` (the
    paper's 16-bit formula as printed), ``step_ratio`` (step time / the ``"none"`` step at
    the same micro-batch) and ``predicted_ratio`` ((2F + B) / (F + B) for full, from the
    measured forward F and backward B; 4/3 when B = 2F; 1 for none; for selective the
    attention core's share of the forward FLOPs, 4 s^2 h of 24 s h^2 + 4 s^2 h per token)."""
    positive_int("world_size", world_size, "pass the number of ranks, e.g. world_size=2.")
    _check_sizes(seq_len, d_model, n_heads, n_layers, micro_batches, repeats)
    from ..launcher import launch

    rows = launch(recompute_run, micro_batches, POLICIES, seq_len, d_model, n_heads, n_layers,
                  repeats, world_size=world_size, timeout=300)[0]
    none = {r["micro_batch"]: r for r in rows if r["policy"] == "none"}
    core = 4 * seq_len * d_model / (24 * d_model ** 2 + 4 * seq_len * d_model)  # of F
    for r in rows:
        f, b = none[r["micro_batch"]]["forward_s"], none[r["micro_batch"]]["step_s"]
        extra = {"none": 0.0, "selective": core * f, "full": f}[r["policy"]]
        r["step_ratio"] = r["step_s"] / b
        r["predicted_ratio"] = (b + extra) / b
        r["expected_per_layer"] = expected_bytes_per_layer(seq_len, r["micro_batch"], d_model,
                                                           n_heads, r["policy"])
        r["paper_per_layer"] = activation_memory_per_layer(seq_len, r["micro_batch"], d_model,
                                                           n_heads, recompute=r["policy"])
    return rows


def fit_in_budget(rows, budget_bytes: float) -> dict:
    """For each policy, the largest measured micro-batch whose stored activations fit in
    ``budget_bytes`` per rank, and its throughput: ``{policy: row or None}``."""
    if not rows or not all({"policy", "micro_batch", "stored_total"} <= set(r) for r in rows):
        raise ValueError("rows must be recompute_table's rows (policy, micro_batch, "
                         "stored_total, tokens_per_s).")
    if not isinstance(budget_bytes, (int, float)) or not budget_bytes > 0:
        raise ValueError(f"budget_bytes must be a positive number of bytes, got {budget_bytes!r}.")
    out = {}
    for policy in POLICIES:
        fits = [r for r in rows if r["policy"] == policy and r["stored_total"] <= budget_bytes]
        out[policy] = max(fits, key=lambda r: r["micro_batch"]) if fits else None
    return out
