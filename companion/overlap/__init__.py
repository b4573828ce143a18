"""Overlap of communication with compute, measured on real ranks behind an emulated link.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``); CS336 L8 section 3.5
and the Ultra-Scale Playbook's appendix on overlap.

* :class:`companion.data_parallel.comm.Collectives` (notebook 03) is what DDP and FSDP
  issue their collectives through; here it runs behind an emulated link, timed;
* :mod:`.timeline`: one step split into compute and hidden / exposed communication;
* :mod:`.runs`: DDP and FSDP steps on real ranks (:func:`measure_overlap`);
* :mod:`.crossover`: the batch sweep that finds the crossover (:func:`measure_crossover`)
  and the roofline's prediction of it (:func:`predicted_crossover`);
* :mod:`.plot`: those timelines drawn per rank (:func:`draw_overlap`), and the exposure
  that counts when ranks share cores (:func:`slowest_rank_exposed`).
"""
from .runs import measure_overlap, mlp_flops, torch_ddp_buckets
from .crossover import crossover_batch, measure_crossover, predicted_crossover
from .plot import draw_overlap, slowest_rank_exposed
from .timeline import merge_spans, overlap_length, span_length, step_timeline

__all__ = ["measure_overlap", "measure_crossover",
           "predicted_crossover", "crossover_batch", "mlp_flops", "step_timeline",
           "merge_spans", "span_length", "overlap_length", "draw_overlap",
           "slowest_rank_exposed", "torch_ddp_buckets"]
