"""Batch size as a resource: gradient accumulation, the limit it puts on data
parallelism, and the critical batch size beyond which a bigger batch stops paying.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``), section "batch size
and accumulation", after CS336 L8 section 3.6 (FSDP "consumes the global batch": a batch
of 8 allows at most 8 GPUs) and section 7.2 (fill the remaining GPUs with data
parallelism; accumulate gradients when the batch per GPU gets too small), and
McCandlish et al. 2018, "An Empirical Model of Large-Batch Training"
(https://arxiv.org/abs/1812.06162).

Three modules, one idea each:

* :mod:`.limits`: a global batch of B sequences allows at most B data-parallel ranks;
  tokens per step / sequence length for published models;
* :mod:`.accumulation`: k micro-steps under ``DDP.no_sync()`` then one synchronised
  micro-step equal the large-batch step, with one all-reduce per optimizer step;
* :mod:`.critical`: steps and samples to reach a target loss on the digits data as the
  batch grows, and the gradient noise scale that predicts where returns diminish.
"""
from .accumulation import accumulation_run, gradient_accumulation_demo, large_batch_reference
from .critical import critical_batch_sweep, fit_critical_batch, gradient_noise_scale, steps_to_target
from .limits import PUBLISHED_BATCHES, dp_limit_table, max_dp_ranks, sequences_per_step, split_batch

__all__ = ["max_dp_ranks", "split_batch", "sequences_per_step", "dp_limit_table",
           "PUBLISHED_BATCHES", "accumulation_run", "large_batch_reference",
           "gradient_accumulation_demo", "steps_to_target", "critical_batch_sweep",
           "fit_critical_batch", "gradient_noise_scale"]
