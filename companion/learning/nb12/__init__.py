"""Notebook 12's exercises (``notebooks/12_auto_parallelism.ipynb``): auto-parallelism.

* ``12.megatron-placements`` (warm-up, real ranks): give DTensor placements to the two
  weights of an MLP so that one forward and one backward pass need exactly the
  communication Megatron's column-then-row split needs, one all-reduce; checked on 4
  ranks with torch's ``CommDebugMode`` counting the collectives DTensor issues.
* ``12.stage-slicing`` (core): Alpa's inter-operator dynamic program: cut a chain of
  layers into contiguous stages, give each stage a number of devices, and minimise the
  slowest stage; checked against exhaustive search on problems with uneven layers.
* ``12.cp-ep-degrees`` (stretch): with TP and PP fixed, the smallest context-parallel
  degree that fits, then the fastest expert-parallel degree, judged by the 5D planner
  (``companion.planner``) on Llama-3 405B's long-context stage, Llama-3 70B at 32K,
  DeepSeek-V3 and Mixtral 8x7B.

One module per exercise: :mod:`.placements`, :mod:`.slicing`, :mod:`.degrees`.
"""
from __future__ import annotations

# Each exercise is one module; the names below are what the notebook, the tests and the
# exercises' forbidden lists reach as ``companion.learning.nb12.<name>``.
from .placements import (PLACEMENTS, comm_counts, megatron_placements_reference,
                         run_sharded_mlp)
from .slicing import (STAGE_PROBLEMS, STAGE_SLICING, brute_force_slicing, stage_slicing_reference,
                      stage_time)
from .degrees import CP_DEGREES, CP_EP, cp_ep_reference, ep_options, evaluate_axes
