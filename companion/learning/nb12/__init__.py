"""Notebook 12's exercises (``notebooks/12_auto_parallelism.ipynb``): auto-parallelism.

* ``12.megatron-placements`` (warm-up, implement, real ranks): give DTensor placements to
  the two weights of an MLP so that one forward and one backward pass need exactly the
  communication Megatron's column-then-row split needs, one all-reduce; checked on 4
  ranks with torch's ``CommDebugMode`` counting the collectives DTensor issues.
* ``12.expert-grads`` (core, diagnose, real ranks): a given EP x DP step sums every
  gradient over every rank, adding up different experts; fix it so that training equals
  one process, checked on EP 2 x DP 2 and EP 4 x DP 1 by value and by the bytes each
  group's all-reduces carry.
* ``12.stage-slicing`` (stretch, implement): Alpa's inter-operator dynamic program on
  Alpa's sub-mesh shapes: cut a chain of layers into contiguous stages, give each a
  sub-mesh, minimise the slowest stage; checked against exhaustive search on small
  models, then on a 40-layer model within a time limit exhaustive search cannot meet.

One module per exercise: :mod:`.placements`, :mod:`.expert_grads`, :mod:`.slicing`.
"""
from __future__ import annotations

# Each exercise is one module; the names below are what the notebook, the tests and the
# exercises' forbidden lists reach as ``companion.learning.nb12.<name>``.
from .placements import (PLACEMENTS, comm_counts, megatron_placements_reference,
                         run_sharded_mlp)
from .expert_grads import EXPERT_GRADS, expert_grads_reference
from .slicing import (STAGE_PROBLEMS, STAGE_SLICING, brute_force_slicing, stage_slicing_reference,
                      stage_time, submesh_sizes)
