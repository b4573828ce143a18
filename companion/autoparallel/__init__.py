"""Automatic parallelisation, after Alpa (notebook 12, L20 p.9-14).

Intra-operator auto-sharding: a graph of real operators (:mod:`.graph`), each operator's
candidate shardings with their alpha-beta costs (:mod:`.sharding`), the integer program
that picks one per operator (:mod:`.ilp`), and the chosen plan run for real with
``torch.distributed.tensor`` on CPU ranks (:mod:`.dtensor_run`).
"""
from .graph import Graph, Node, attention_block, mlp, transformer
from .ilp import (FORMULATIONS, Problem, Solution, axis_bytes, brute_force, build, plan_cost,
                  predicted_comm, solve)
from .baseline import compare_with_megatron, megatron_plan, sweep
from .dtensor_run import check_plan, check_plans, reference, run_plan, run_plans
from .sharding import Hardware, Strategy, reshard_steps, strategies

__all__ = ["Graph", "Node", "mlp", "attention_block", "transformer", "Hardware", "Strategy",
           "strategies", "reshard_steps", "Problem", "Solution", "build", "solve",
           "brute_force", "plan_cost", "predicted_comm", "axis_bytes", "FORMULATIONS",
           "megatron_plan",
           "compare_with_megatron", "sweep", "run_plan", "run_plans", "check_plan",
           "check_plans", "reference"]
