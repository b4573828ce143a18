"""A parallelism planner: DP x TP x PP x ZeRO stage x micro-batch, ranked (notebook 09),
with context and expert parallelism for long sequences and MoE models (notebook 12).

Taught in notebooks 09 (``notebooks/09_hybrid_parallelism.ipynb``) and 12. Whether a
layout fits, predicted and measured by torch at the real size: ``planner.fit``
(``python -m companion fit``).
"""
from .axes import Mesh, all_to_all_time, axis_layout
from .cluster_spec import ClusterSpec
from .comm import comm_bytes_per_step
from .cost import Plan, evaluate
from .feasibility import shown_reason
from .grading import critique, grade
from .memory_model import Layout, predict_memory
from .links import (collective_time, group_collective_time, group_layout, layout_collective_time,
                    pp_link)
from .presets import CLUSTERS, MODELS
from .search import plan, powers_of_two_dividing
from .specs import MLA, ModelSpec

__all__ = ["ModelSpec", "ClusterSpec", "MODELS", "CLUSTERS", "Plan", "evaluate", "plan",
           "collective_time", "powers_of_two_dividing", "comm_bytes_per_step", "grade",
           "critique", "group_layout", "group_collective_time", "pp_link", "MLA",
           "axis_layout", "all_to_all_time", "layout_collective_time", "Mesh", "Layout",
           "predict_memory", "shown_reason"]
