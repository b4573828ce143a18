"""Alpa's intra-operator pass: one sharding per operator, chosen by an integer program.

Taught in notebook 12 (L20 p.9-14; Zheng et al. 2022, "Alpa", arXiv 2201.12023, §4.2).

For node v with k_v candidate strategies, a one-hot vector s_v in {0,1}^k_v picks one.
Its cost vector c_v + d_v holds each strategy's compute time and its own collectives
(the all-reduce of a row-parallel matmul, the gradient all-reduce of a data-parallel
weight). For an edge u -> v the matrix R_uv [k_u, k_v] holds the resharding time when u
runs strategy i and v strategy j (forward and the gradient coming back). Alpa minimises

    sum_v (c_v + d_v)^T s_v  +  sum_(u,v) s_u^T R_uv s_v

The product s_u^T R_uv s_v is quadratic; Alpa linearises it with one binary e_uv[i, j]
per pair of choices, forced to equal s_u[i] * s_v[j] by

    sum_j e_uv[i, j] = s_u[i]   (for every i)      sum_i e_uv[i, j] = s_v[j]   (every j)

which leaves a linear objective ``c . z`` over z = [all s_v, all e_uv]: an ILP, solved
exactly with SciPy's ``milp`` (the HiGHS solver). :func:`brute_force` tries every
combination, for tests on small graphs.

``formulation="alpa"`` (the default) is the paper's (§4.2): a heavy operator (here every
matmul) must split its work over every mesh axis, never replicate it, so every candidate
divides the compute evenly and Alpa sets the compute cost to zero; the objective is
communication and resharding alone. ``formulation="compute"`` is a named variant that
charges each strategy's compute and lets a matmul replicate its work on an axis: on a
mesh with a slow axis it then "wins" by computing the same batch twice, which a
training run would not do (notebook 12 shows it as that warning).
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from ..validation import one_of, positive_int
from .graph import Graph
from .sharding import Hardware, reshard_steps, steps_time, strategies

__all__ = ["Problem", "Solution", "build", "solve", "brute_force", "plan_cost",
           "predicted_comm", "axis_bytes", "FORMULATIONS"]

FORMULATIONS = ("alpa", "compute")


@dataclasses.dataclass
class Problem:
    graph: Graph
    mesh: tuple
    hw: Hardware
    options: dict        # node name -> [Strategy]
    node_cost: dict      # node name -> array [k_v]: own collectives (+ compute), seconds
    edge_cost: dict      # (u, v, argument) -> array [k_u, k_v]: resharding, seconds
    formulation: str = "alpa"


@dataclasses.dataclass
class Solution:
    plan: dict           # node name -> strategy name
    seconds: float       # the objective: one forward + backward, nothing overlapped
    breakdown: dict      # compute / communication (the ops' own) / resharding, seconds
    problem: Problem = dataclasses.field(repr=False)


def _check(graph, mesh, hw) -> tuple:
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a Graph from autoparallel.mlp/attention_block/"
                        f"transformer, got {type(graph).__name__}.")
    if not isinstance(mesh, (tuple, list)) or len(mesh) not in (1, 2):
        raise ValueError(f"mesh={mesh!r} must be a 1-D or 2-D mesh shape, e.g. (4,) or (2, 2).")
    for m in mesh:
        positive_int("mesh", m, "each mesh axis holds a whole number of devices, e.g. (2, 2).")
    if not isinstance(hw, Hardware):
        raise TypeError(f"hw must be a sharding.Hardware, got {type(hw).__name__}; e.g. "
                        f"Hardware(peak_flops=312e12, alpha=5e-6, beta=100e9).")
    return tuple(int(m) for m in mesh)


def _edge_steps(problem: Problem, u, v, arg, i, j):
    shape = problem.graph.node(u).shape
    su, sv = problem.options[u][i], problem.options[v][j]
    return (reshard_steps(shape, su.output, sv.inputs[arg], problem.mesh),
            reshard_steps(shape, sv.input_grads[arg], su.output, problem.mesh))


def _compute_time(problem: Problem, node, strategy) -> float:
    if problem.formulation == "alpa":
        return 0.0   # every heavy strategy splits the work evenly (Alpa §4.2)
    return problem.graph.flops(node) / strategy.split / problem.hw.peak_flops


def build(graph: Graph, mesh, hw: Hardware, formulation: str = "alpa") -> Problem:
    """Every node's strategies with their costs, and every edge's resharding matrix
    (``formulation``: the module docstring's ``"alpa"`` or ``"compute"``)."""
    mesh = _check(graph, mesh, hw)
    one_of("formulation", formulation, FORMULATIONS)
    options = {n.name: strategies(graph, n, mesh) for n in graph.nodes}
    if formulation == "alpa":   # no replicated computation for a heavy operator
        options = {n.name: [s for s in options[n.name] if n.kind != "linear"
                            or "rep" not in s.name.split(",")] for n in graph.nodes}
    for name, opts in options.items():
        if not opts:
            raise ValueError(f"node {name!r} has no sharding that divides evenly on mesh={mesh}; "
                             f"pick sizes that are multiples of the mesh axes.")
    problem = Problem(graph, mesh, hw, options, {}, {}, formulation)
    problem.node_cost = {n.name: np.array([_compute_time(problem, n, s)
                                           + steps_time(s.fwd_steps + s.bwd_steps, mesh, hw)
                                           for s in options[n.name]]) for n in graph.nodes}
    for u, v, arg in graph.edges:
        problem.edge_cost[(u, v, arg)] = np.array(
            [[sum(steps_time(s, mesh, hw) for s in _edge_steps(problem, u, v, arg, i, j))
              for j in range(len(options[v]))] for i in range(len(options[u]))])
    return problem


def solve(graph: Graph, mesh, hw: Hardware, fixed: dict | None = None,
          formulation: str = "alpa") -> Solution:
    """The cheapest plan, exactly (``fixed`` pins some nodes: ``{"x": "R"}``)."""
    return _solve_problem(build(graph, mesh, hw, formulation), fixed)


def _solve_problem(problem: Problem, fixed: dict | None = None) -> Solution:
    from scipy.optimize import Bounds, LinearConstraint, milp  # not imported inside ranks
    from scipy.sparse import lil_matrix

    graph = problem.graph
    names = [n.name for n in graph.nodes]
    start, offset = {}, 0                      # where each s_v and e_uv sits in z
    for name in names:
        start[name], offset = offset, offset + len(problem.options[name])
    for key, cost in problem.edge_cost.items():
        start[key], offset = offset, offset + cost.size
    c = np.zeros(offset)                       # objective [n_vars]
    for name in names:
        c[start[name]:start[name] + len(problem.options[name])] = problem.node_cost[name]
    for key, cost in problem.edge_cost.items():
        c[start[key]:start[key] + cost.size] = cost.ravel()   # e_uv flattened row-major
    n_rows = len(names) + sum(sum(m.shape) for m in problem.edge_cost.values())
    A = lil_matrix((n_rows, offset))           # constraints [n_rows, n_vars], all "= b"
    b = np.zeros(n_rows)
    row = 0
    for name in names:                         # sum_i s_v[i] = 1: exactly one strategy
        A[row, start[name]:start[name] + len(problem.options[name])] = 1
        b[row], row = 1, row + 1
    for (u, v, arg), cost in problem.edge_cost.items():
        ku, kv = cost.shape
        e = start[(u, v, arg)] + np.arange(ku * kv).reshape(ku, kv)
        for i in range(ku):                    # sum_j e[i, j] - s_u[i] = 0
            A[row, e[i]] = 1
            A[row, start[u] + i], row = -1, row + 1
        for j in range(kv):                    # sum_i e[i, j] - s_v[j] = 0
            A[row, e[:, j]] = 1
            A[row, start[v] + j], row = -1, row + 1
    upper = np.ones(offset)
    for name, choice in (fixed or {}).items():
        one_of("fixed", name, names, "pin nodes of this graph by name.")
        labels = [s.name for s in problem.options[name]]
        one_of(f"fixed[{name!r}]", choice, labels)
        upper[start[name]:start[name] + len(labels)] = [lab == choice for lab in labels]
    result = milp(c, constraints=LinearConstraint(A.tocsr(), b, b),
                  integrality=np.ones(offset), bounds=Bounds(0, upper))
    if not result.success:
        raise ValueError(f"the integer program found no plan ({result.message}); check fixed=.")
    plan = {name: problem.options[name][int(np.argmax(
        result.x[start[name]:start[name] + len(problem.options[name])]))].name for name in names}
    return _solution(problem, plan)


def plan_cost(problem: Problem, plan: dict) -> dict:
    """``{"compute", "communication", "resharding", "total"}`` seconds of ``plan``."""
    index = {}
    for name, opts in problem.options.items():
        labels = [s.name for s in opts]
        one_of(f"plan[{name!r}]", plan.get(name), labels, "give every node one of its strategies.")
        index[name] = labels.index(plan[name])
    out = {"compute": 0.0, "communication": 0.0}
    for n in problem.graph.nodes:
        s = problem.options[n.name][index[n.name]]
        out["compute"] += _compute_time(problem, n, s)
        out["communication"] += steps_time(s.fwd_steps + s.bwd_steps, problem.mesh, problem.hw)
    out["resharding"] = sum(float(m[index[u], index[v]])
                            for (u, v, _), m in problem.edge_cost.items())
    out["total"] = out["compute"] + out["communication"] + out["resharding"]
    return out


def _solution(problem: Problem, plan: dict) -> Solution:
    cost = plan_cost(problem, plan)
    return Solution(plan, cost.pop("total"), cost, problem)


def brute_force(problem: Problem, limit: int = 200_000) -> Solution:
    """The cheapest plan by trying every combination (small graphs only)."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a Problem from build(...), got {type(problem).__name__}.")
    names = list(problem.options)
    combos = int(np.prod([len(problem.options[n]) for n in names], dtype=float))
    if combos > limit:
        raise ValueError(f"problem has {combos} combinations, more than limit={limit}; "
                         f"use solve() or a smaller graph (or mesh).")
    best = None
    for combo in itertools.product(*(range(len(problem.options[n])) for n in names)):
        pick = dict(zip(names, combo))
        total = sum(problem.node_cost[n][pick[n]] for n in names) + sum(
            m[pick[u], pick[v]] for (u, v, _), m in problem.edge_cost.items())
        if best is None or total < best[0] - 1e-15:
            best = (total, pick)
    return _solution(problem, {n: problem.options[n][best[1][n]].name for n in names})


def _plan_steps(problem: Problem, plan: dict):
    """``(phase, [(kind, mesh axis, payload elements)])`` for every collective ``plan``
    issues: each node's own, then each edge's resharding (checks the plan first)."""
    plan_cost(problem, plan)
    pick = {n: next(i for i, s in enumerate(o) if s.name == plan[n])
            for n, o in problem.options.items()}
    for name, i in pick.items():
        yield "forward", problem.options[name][i].fwd_steps
        yield "backward", problem.options[name][i].bwd_steps
    for u, v, arg in problem.graph.edges:
        fwd, bwd = _edge_steps(problem, u, v, arg, pick[u], pick[v])
        yield "forward", fwd
        yield "backward", bwd


def predicted_comm(problem: Problem, plan: dict, bytes_per_element: int | None = None) -> dict:
    """The collectives ``plan`` issues: ``{"forward": {kind: count}, "backward": ...,
    "forward_bytes": {kind: payload bytes summed over calls, one rank}, "backward_bytes"}``."""
    size = bytes_per_element or problem.hw.bytes_per_element
    out = {k: {} for k in ("forward", "backward", "forward_bytes", "backward_bytes")}
    for phase, steps in _plan_steps(problem, plan):
        for kind, _, payload in steps:
            out[phase][kind] = out[phase].get(kind, 0) + 1
            out[phase + "_bytes"][kind] = out[phase + "_bytes"].get(kind, 0) + payload * size
    return out


def axis_bytes(problem: Problem, plan: dict) -> list:
    """Payload bytes ``plan``'s collectives put on each mesh axis, one rank, forward and
    backward together (notebook 12: which axis carries what)."""
    out = [0] * len(problem.mesh)
    for _phase, steps in _plan_steps(problem, plan):
        for _kind, axis, payload in steps:
            out[axis] += payload * problem.hw.bytes_per_element
    return out
