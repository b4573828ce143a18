"""FSDP (ZeRO stage 3): parameters, gradients and optimizer state all sharded; each
layer's parameters are all-gathered just before it runs, forward and backward, and
freed right after.

Taught in notebook 03 (``notebooks/03_zero_memory.ipynb``); CS336 L8 section 3.5 and
MIT 6.5940 L19 page 73. Compared in tests with torch's FSDP2 (``fully_shard``).

Units: every element of an ``nn.ModuleList`` inside the model (a transformer block), or
every child of an ``nn.Sequential`` model, is one unit; the root unit holds the other
parameters (embeddings, final norm, a tied head). Per unit and step:

    forward:  all-gather -> compute -> free           (the root too, once forward ends)
    backward: all-gather -> compute -> free, then one reduce-scatter of the unit's gradients

so each parameter byte is communicated three times (two all-gathers, one
reduce-scatter): 3x against DDP's 2x. The shards use :mod:`companion.data_parallel.zero`'s layout.

Freeing uses the trick of torch's FSDP: a full parameter is one tensor object that
autograd saves for backward; its *storage* is resized to zero after forward and
refilled by the backward all-gather, so the saved tensor sees the data again.

``compute_dtype`` (e.g. ``torch.bfloat16``) all-gathers, computes and reduce-scatters in
that dtype while the shards (master weights) and their gradients stay fp32.

A unit's gradients are reduce-scattered together, in one collective, once autograd has
produced all of them (as torch's FSDP does: FSDP1 with its flat parameters, FSDP2's
``fully_shard`` with one reduce-scatter per parameter group): one call per unit instead of
one per tensor, the same bytes.

``prefetch=True`` issues unit k+1's all-gather asynchronously while unit k computes, in
forward, and unit k-1's while unit k computes in backward (units in reverse order), so
the transfer hides under compute (CS336 L8 section 3.5; notebook 10 measures it). The
price is memory: two blocks are unsharded at once instead of one (the root, which holds
the embeddings and the head, stays gathered through each pass either way). It is off by
default so that notebook 03's just-in-time timeline shows one gathered block at a time;
torch's FSDP2 prefetches by default. The arithmetic is the same either way, bit for bit:
prefetching changes when the bytes travel, not which bytes are added.

``link=DelayedComm(alpha, beta)`` (:mod:`companion.network.delayed`) sends every collective of the
training step through an emulated link; ``fsdp.comm.records = []`` times each of them
(:mod:`companion.overlap`).

Two modules:

* :mod:`.units`: one unit's gather (issued asynchronously, so that it can be prefetched),
  free and reduce-scatter, the default choice of units, and the autograd hook that marks a
  unit's backward;
* :mod:`.wrapper`: :class:`FSDP`, which shards the parameters, builds the units and drives
  them from forward and backward hooks, with or without prefetch.
"""
from .units import default_units
from .wrapper import FSDP

__all__ = ["FSDP", "default_units"]
