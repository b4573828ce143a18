"""A 3D-parallelism planner: DP x TP x PP x ZeRO stage x micro-batch, ranked.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``).
"""
from .comm import comm_bytes_per_step
from .cost import Plan, collective_time, evaluate
from .grading import critique, grade
from .links import group_collective_time, group_layout, pp_link
from .search import plan, powers_of_two_dividing
from .specs import CLUSTERS, MODELS, ClusterSpec, ModelSpec

__all__ = ["ModelSpec", "ClusterSpec", "MODELS", "CLUSTERS", "Plan", "evaluate", "plan",
           "collective_time", "powers_of_two_dividing", "comm_bytes_per_step", "grade",
           "critique", "group_layout", "group_collective_time", "pp_link"]
