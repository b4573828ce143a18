"""Candidate shardings of each operator on a device mesh, and what each one costs.

Taught in notebook 12 (L20 p.9-14; Alpa, Zheng et al. 2022, arXiv 2201.12023, §4).

A *placement* says, for every mesh axis, how a 2-D tensor lies on that axis's devices,
in DTensor's terms: ``"R"`` (Replicate), ``"S0"`` / ``"S1"`` (Shard rows / columns) or
``"P"`` (Partial: every device holds a summand). A 1-D mesh has 1-tuples, ``("S1",)``; a
2-D mesh pairs, ``("S0", "S1")``. A tensor dimension is sharded by at most one axis.

A matmul ``y = x @ W`` on one mesh axis has these five strategies: the one-axis cases of
the batched-matmul algorithms Alpa lists for a 2-D mesh (its Table 2: split the batch,
an output dimension or the contracted one), plus ``rep``, which only
``formulation="compute"`` offers (``autoparallel.ilp``: Alpa never replicates a matmul):

=========  ======  ======  ====================  ==========  ==================
 name       x       W       y                     grad of x   grad of W
=========  ======  ======  ====================  ==========  ==================
 rep        R       R       R                     R           R
 dp         S0      R       S0 (batch split)      S0          P -> all-reduce
 col        R       S1      S1 (Megatron fc1)     P           S1
 row        S1      S0      P -> all-reduce -> R  S1          S0
 row_rs     S1      S0      P -> reduce-scatter   S1          S0
=========  ======  ======  ====================  ==========  ==================

On a 2-D mesh a strategy picks one row per axis (``"dp,col"``). Elementwise ops and the
attention core keep their input's placement (``R``, ``S0`` = batch, ``S1`` = features or
heads). Moving a tensor between placements (:func:`reshard_steps`) costs, per axis:
``S -> R`` an all-gather, ``P -> R`` an all-reduce, ``P -> S`` a reduce-scatter,
``R -> S`` nothing (a local slice), ``S0 -> S1`` an all-gather then a slice (what DTensor
does on gloo, which has no all-to-all for it). The backward pass moves the gradient the
opposite way, from where the consumer's backward leaves it to where the producer wants
it: a forward slice ``R -> S1`` costs an all-gather of the gradient going back.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

from ..planner.links import collective_time
from ..validation import positive_int, positive_number
from .graph import Graph, Node

__all__ = ["Hardware", "Strategy", "strategies", "reshard_steps"]

# name: (x, W, y before the node's own reduction, y after it, grad of x, grad of W)
LINEAR = {"rep": ("R", "R", "R", "R", "R", "R"),
          "dp": ("S0", "R", "S0", "S0", "S0", "P"),
          "col": ("R", "S1", "S1", "S1", "P", "S1"),
          "row": ("S1", "S0", "P", "R", "S1", "S0"),
          "row_rs": ("S1", "S0", "P", "S0", "S1", "S0")}


@dataclasses.dataclass(frozen=True)
class Hardware:
    """What one device computes (``peak_flops``, FLOP/s) and what a message costs on each
    mesh axis: ``alpha`` seconds + bytes / ``beta`` (bytes/s, per direction). ``alpha`` and
    ``beta`` are numbers (every axis alike) or one per mesh axis (e.g. axis 0 between
    nodes, axis 1 inside one)."""
    peak_flops: float
    alpha: float | tuple = 5e-6
    beta: float | tuple = 100e9
    bytes_per_element: int = 2

    def __post_init__(self):
        positive_number("peak_flops", self.peak_flops, "pass FLOP/s per device, e.g. 312e12.")
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            for v in (value if isinstance(value, (tuple, list)) else (value,)):
                positive_number(name, v, "pass seconds per message (alpha) or bytes/s (beta), "
                                "one number or one per mesh axis.", zero=name == "alpha")
        positive_int("bytes_per_element", self.bytes_per_element, "2 for bf16, 4 for fp32.")

    def link(self, axis: int) -> tuple:
        pick = lambda v: v[axis] if isinstance(v, (tuple, list)) else v  # noqa: E731
        return pick(self.alpha), pick(self.beta)


@dataclasses.dataclass(frozen=True)
class Strategy:
    name: str
    inputs: tuple        # placement each argument must arrive in
    output: tuple        # placement of the node's output
    input_grads: tuple   # placement of each argument's gradient as the backward leaves it
    split: int           # devices the op's FLOPs are divided over
    fwd_steps: tuple = ()  # the node's own collectives: (kind, mesh axis, payload elements)
    bwd_steps: tuple = ()
    weight: tuple = ()   # linear: placement of W


def _local(shape, placement, mesh) -> int:
    n = math.prod(shape)
    for axis, p in enumerate(placement):
        if p[0] == "S":
            n //= mesh[axis]
    return n


def _valid(shape, placement, mesh, rows_unit=1) -> bool:
    dims = [p for p in placement if p[0] == "S"]
    if len(dims) != len(set(dims)):
        return False  # one tensor dimension split by two axes: kept out, see module docstring
    for axis, p in enumerate(placement):
        if p[0] == "S":
            size = shape[int(p[1])] // (rows_unit if p == "S0" else 1)
            if size % mesh[axis]:
                return False
    return True


def reshard_steps(shape, src, dst, mesh) -> list:
    """Collectives that move a ``shape`` tensor from placement ``src`` to ``dst``:
    ``[(kind, axis, payload elements)]``, in the order dtensor_run performs them, one
    axis at a time: all-reduces first (while the other axes still shard the tensor, so
    the piece summed is small), then all-gathers, then reduce-scatters, then the free
    slices. The payload is the buffer each rank hands in (its local piece)."""
    for name, p in (("src", src), ("dst", dst)):
        if len(p) != len(mesh) or any(q not in ("R", "S0", "S1", "P") for q in p):
            raise ValueError(f"{name}={p!r} must give one of 'R', 'S0', 'S1', 'P' per mesh axis "
                             f"(mesh={tuple(mesh)}), e.g. ('S0',) on a 1-D mesh.")
    if len(shape) != 2:
        raise ValueError(f"shape={shape!r} must be a 2-D [rows, columns] tensor shape.")
    cur, out = list(src), []
    for phase in (0, 1, 2, 3):
        for axis, (s, d) in enumerate(zip(src, dst)):
            if s == d:
                continue
            if phase == 1 and s[0] == "S":
                out.append(("all_gather", axis, _local(shape, cur, mesh)))
                cur[axis] = "R"
            elif phase == 0 and s == "P" and d == "R":
                out.append(("all_reduce", axis, _local(shape, cur, mesh)))
                cur[axis] = "R"
            elif phase == 2 and s == "P" and d[0] == "S":
                out.append(("reduce_scatter", axis, _local(shape, cur, mesh)))
                cur[axis] = d
            elif phase == 3 and d[0] == "S":
                cur[axis] = d  # a slice of a replicated tensor: no message
            elif d == "P":
                raise ValueError(f"no reshard into Partial ({src} -> {dst}).")
    return out


def steps_time(steps, mesh, hw: Hardware) -> float:
    """Alpha-beta seconds of ``steps`` (ring collectives, planner.collective_time)."""
    total = 0.0
    for kind, axis, payload in steps:
        alpha, beta = hw.link(axis)
        nbytes = payload * hw.bytes_per_element
        full = nbytes * mesh[axis] if kind == "all_gather" else nbytes  # the gathered size
        total += collective_time(kind, full, mesh[axis], alpha, beta)
    return total


def _grad(placement) -> tuple:
    # A Partial forward placement gets a replicated gradient (as DTensor keeps it).
    return tuple("R" if p == "P" else p for p in placement)


def _linear(graph: Graph, node: Node, mesh) -> list:
    d_in, d_out = node.weight
    tokens = node.shape[0]
    out = []
    for names in itertools.product(LINEAR, repeat=len(mesh)):
        x, w, y_raw, y, dx, dw = (tuple(LINEAR[n][i] for n in names) for i in range(6))
        shapes = ((x, (tokens, d_in)), (w, (d_in, d_out)), (y, (tokens, d_out)))
        if not all(_valid(s, p, mesh) for p, s in shapes):
            continue
        split = math.prod(m for m, n in zip(mesh, names) if n != "rep")
        bwd = reshard_steps((tokens, d_out), y, _grad(y_raw), mesh)  # the reduction's backward
        bwd += reshard_steps((d_in, d_out), dw, w, mesh)             # gradient sync of W
        out.append(Strategy(",".join(names), (x,), y, (dx,), split,
                            tuple(reshard_steps((tokens, d_out), y_raw, y, mesh)), tuple(bwd), w))
    return out


def _same_placement(graph: Graph, node: Node, mesh, options) -> list:
    arity = len(node.inputs)
    unit = graph.seq if node.kind == "attention" else 1  # whole sequences per device
    out = []
    for p in itertools.product(options, repeat=len(mesh)):
        if not _valid(node.shape, p, mesh, unit):
            continue
        if node.kind == "attention" and "S1" in p and graph.heads % mesh[p.index("S1")]:
            continue  # a head is never split
        split = math.prod(m for m, q in zip(mesh, p) if q != "R")
        out.append(Strategy(",".join(p), (p,) * arity, p, (p,) * arity, split))
    return out


def strategies(graph: Graph, node: Node, mesh) -> list:
    """Every candidate :class:`Strategy` of ``node`` on a mesh of shape ``mesh``."""
    if not isinstance(graph, Graph) or node not in graph.nodes:
        raise ValueError(f"node must be one of graph's nodes (graph.nodes), got {node!r}.")
    if not isinstance(mesh, (tuple, list)) or len(mesh) not in (1, 2):
        raise ValueError(f"mesh={mesh!r} must be a 1-D or 2-D mesh shape, e.g. (4,) or (2, 2).")
    if node.kind == "linear":
        return _linear(graph, node, mesh)
    if node.kind in ("input", "output") and node.placement == "R":
        rep = ("R",) * len(mesh)
        args = (rep,) * len(node.inputs)
        return [Strategy(",".join(rep), args, rep, args, 1)]
    if node.kind == "input":  # the data may arrive replicated or split by batch
        return _same_placement(graph, node, mesh, ("R", "S0"))
    if node.kind == "output":
        src = graph.node(node.inputs[0])
        return _same_placement(graph, dataclasses.replace(node, shape=src.shape), mesh,
                               ("R", "S0", "S1"))
    return _same_placement(graph, node, mesh, ("R", "S0", "S1"))
