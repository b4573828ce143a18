"""Run a sharding plan for real with ``torch.distributed.tensor`` (DTensor) and count its
collectives. Taught in notebook 12.

Every rank builds the graph's tensors from one seed, runs it once in plain torch (the
single-process reference) and once as DTensors laid out as the plan says, forward and
backward, then compares outputs and gradients. Tensors move between placements only
through :class:`_Reshard`, which performs :func:`~.sharding.reshard_steps` one mesh
axis at a time (and the mirror steps on the gradient in backward), so the collectives
torch runs are the ones the solver priced. ``CommDebugMode`` counts them; a subclass
adds up their payload bytes.
"""
from __future__ import annotations

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

from .. import runtime
from ..validation import nonnegative_int, preflight
from .graph import Graph
from .ilp import _check, build, plan_cost, predicted_comm
from .sharding import Hardware, _grad, reshard_steps

__all__ = ["run_plan", "run_plans", "check_plan", "check_plans", "reference"]

KINDS = {"all_reduce": "all_reduce", "all_gather_into_tensor": "all_gather",
         "reduce_scatter_tensor": "reduce_scatter", "all_to_all_single": "all_to_all"}
# float64 on both sides: the sharded run adds partial products in another order than
# one matmul does. Each rounding is ~1.1e-16 relative, values are O(1) and no sum has
# more than a few hundred terms, so differences stay below 1e-13 (measured: ~1e-15); a
# wrong placement or a lost gradient gives errors of O(0.1).
TOL = 1e-10


def _placements(names):
    from torch.distributed.tensor import Partial, Replicate, Shard
    return [Replicate() if p == "R" else Partial() if p == "P" else Shard(int(p[1]))
            for p in names]


def _names(placements) -> tuple:
    return tuple("R" if p.is_replicate() else "P" if p.is_partial() else f"S{p.dim}"
                 for p in placements)


def _move(x, dst):
    """Apply reshard_steps to DTensor ``x``: one ``redistribute`` per step and axis."""
    mesh, cur = x.device_mesh, list(_names(x.placements))
    for kind, axis, _ in reshard_steps(x.shape, tuple(cur), dst, mesh.shape):
        cur[axis] = "R" if kind != "reduce_scatter" else dst[axis]
        x = x.redistribute(mesh, _placements(cur))
    if tuple(cur) != tuple(dst):  # the free slices last
        x = x.redistribute(mesh, _placements(dst))
    return x


class _Reshard(torch.autograd.Function):
    """Forward: move to ``dst``. Backward: move the gradient back to where the input
    was (a Partial input gets a replicated gradient, as DTensor's own redistribute does)."""

    @staticmethod
    def forward(ctx, x, dst):
        ctx.src = _grad(_names(x.placements))
        return _move(x, dst)

    @staticmethod
    def backward(ctx, g):
        return _move(g, ctx.src), None


def _attention_local(qkv, seq, d_head):
    """The attention core on whatever rows (whole sequences) and heads this rank holds."""
    tokens, width = qkv.shape
    heads = width // (3 * d_head)
    q, k, v = qkv.view(tokens // seq, seq, heads, 3, d_head).permute(3, 0, 2, 1, 4)
    att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d_head), dim=-1) @ v
    return att.transpose(1, 2).reshape(tokens, heads * d_head)


def reference(graph: Graph, seed: int = 0, dtype=torch.float64) -> dict:
    """The graph's input, weights and output-gradient probe, from ``seed`` (full tensors,
    on the CPU: drawn from a CPU generator, the same numbers on every device)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a Graph from autoparallel.mlp/attention_block/"
                        f"transformer, got {type(graph).__name__}.")
    nonnegative_int("seed", seed, "pass a seed such as 0.")
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(graph.nodes[0].shape, generator=gen, dtype=dtype, device="cpu")
    weights = {n.name: torch.randn(n.weight, generator=gen, dtype=dtype, device="cpu")
               / math.sqrt(n.weight[0]) for n in graph.nodes if n.kind == "linear"}
    probe = torch.randn(x.shape, generator=gen, dtype=dtype, device="cpu")
    return {"x": x, "weights": weights, "probe": probe}


def _execute(graph: Graph, x, weights, strategy=None):
    """Forward through the graph; ``strategy`` (node -> Strategy) makes it the DTensor run."""
    d_head = graph.nodes[0].shape[1] // graph.heads
    vals = {}
    for n in graph.nodes:
        s = strategy[n.name] if strategy else None
        ins = [vals[u] if s is None else _Reshard.apply(vals[u], s.inputs[k])
               for k, u in enumerate(n.inputs)]
        if n.kind == "input":
            y = x
        elif n.kind == "linear":
            y = ins[0] @ weights[n.name]
            if s is not None:
                y = _Reshard.apply(y, s.output)  # the node's own reduction of a Partial
        elif n.kind == "gelu":
            y = F.gelu(ins[0])
        elif n.kind == "add":
            y = ins[0] + ins[1]
        elif n.kind == "attention" and s is None:
            y = _attention_local(ins[0], graph.seq, d_head)
        elif n.kind == "attention":
            from torch.distributed.tensor.experimental import local_map
            pl = _placements(s.output)
            y = local_map(lambda t: _attention_local(t, graph.seq, d_head), out_placements=pl,
                          in_placements=(pl,), redistribute_inputs=False)(ins[0])
        else:  # output sink
            y = ins[0]
        vals[n.name] = y
    return vals[graph.nodes[-1].name]


def _counter():
    from torch.distributed.tensor.debug import CommDebugMode

    class Counter(CommDebugMode):
        """CommDebugMode, plus the payload bytes of each collective."""

        def __init__(self):
            super().__init__()
            self.payload = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = super().__torch_dispatch__(func, types, args, kwargs)
            name = getattr(getattr(func, "_overloadpacket", None), "__name__", "")
            if out is not NotImplemented and name in KINDS:
                kind = KINDS[name]
                self.payload[kind] = self.payload.get(kind, 0) + args[0].numel() * args[0].element_size()
            return out

        def counts(self):
            return {KINDS[k.__name__]: v for k, v in self.get_comm_counts().items() if v}

    return Counter()


def _check_run(graph, plan, mesh=(4,), seed=0, world_size=None) -> None:
    mesh = _check(graph, mesh, Hardware(peak_flops=1.0))
    nonnegative_int("seed", seed, "pass a seed such as 0.")
    if world_size is not None and math.prod(mesh) != world_size:
        raise ValueError(f"mesh={mesh} holds {math.prod(mesh)} devices but world_size="
                         f"{world_size}; launch prod(mesh) ranks.")
    if not isinstance(plan, dict):
        raise TypeError(f"plan must be a dict node -> strategy (solve(...).plan), got {plan!r}.")
    plan_cost(build(graph, mesh, Hardware(peak_flops=1.0), "compute"), plan)


@preflight(_check_run)
def run_plan(graph: Graph, plan: dict, mesh=(4,), seed: int = 0) -> dict:
    """Rank function: ``plan`` on a DTensor mesh against one process. Returns the largest
    differences (output, input gradient, weight gradients) and the collectives measured
    in forward and in backward (counts and payload bytes of this rank)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import distribute_tensor

    _check_run(graph, plan, mesh, seed, dist.get_world_size())
    dev = runtime.device()
    problem = build(graph, mesh, Hardware(peak_flops=1.0), "compute")
    strategy = {n: next(s for s in opts if s.name == plan[n]) for n, opts in problem.options.items()}
    t = reference(graph, seed)
    t = {"x": t["x"].to(dev), "probe": t["probe"].to(dev),
         "weights": {k: w.to(dev) for k, w in t["weights"].items()}}
    x = t["x"].clone().requires_grad_()
    ws = {k: w.clone().requires_grad_() for k, w in t["weights"].items()}
    _execute(graph, x, ws).backward(t["probe"])

    dm = init_device_mesh(dev.type, tuple(mesh))
    dx = distribute_tensor(t["x"], dm, _placements(strategy["x"].output)).requires_grad_()
    dws = {k: distribute_tensor(w, dm, _placements(strategy[k].weight)).requires_grad_()
           for k, w in t["weights"].items()}
    with _counter() as fwd:
        out = _execute(graph, dx, dws, strategy)
    probe = distribute_tensor(t["probe"], dm, out.placements)
    with _counter() as bwd:
        out.backward(probe)
        for k, w in dws.items():  # the gradient sync of a data-parallel weight
            w.grad = _move(w.grad, _names(w.placements))
    ref_out = _execute(graph, t["x"], t["weights"])
    diff = lambda a, b: (a.full_tensor() - b).abs().max().item()  # noqa: E731
    return {"out": diff(out.detach(), ref_out), "x_grad": diff(dx.grad, x.grad),
            "w_grad": max((diff(dws[k].grad, ws[k].grad) for k in ws), default=0.0),
            "forward": fwd.counts(), "backward": bwd.counts(),
            "forward_bytes": dict(fwd.payload), "backward_bytes": dict(bwd.payload)}


def _check_cases(cases, world_size=None) -> None:
    if not isinstance(cases, (list, tuple)) or not cases:
        raise ValueError(f"cases must be a non-empty list of (graph, plan, mesh), got {cases!r}.")
    for i, case in enumerate(cases):
        if not (isinstance(case, (list, tuple)) and len(case) == 3):
            raise ValueError(f"cases[{i}] must be a (graph, plan, mesh) triple, got {case!r}.")
        _check_run(*case, world_size=world_size)


@preflight(_check_cases)
def run_plans(cases) -> list:
    """Rank function: :func:`run_plan` for every ``(graph, plan, mesh)``, in one launch."""
    _check_cases(cases, dist.get_world_size())
    return [run_plan(g, p, m) for g, p, m in cases]


def check_plans(cases, timeout: float = 120.0) -> list:
    """Launch every ``(graph, plan, mesh)`` (all meshes with the same number of devices)
    on real ranks; per case rank 0's result, the solver's prediction (``predicted``),
    whether measured equals predicted on every rank (``comm_matches``) and whether every
    rank equals one process (``equal_to_one_process``)."""
    import companion
    _check_cases(cases)
    sizes = {math.prod(m) for _, _, m in cases}
    if len(sizes) != 1:
        raise ValueError(f"cases use meshes of {sorted(sizes)} devices; one launch needs one "
                         f"device count, so split them into separate calls.")
    per_rank = companion.launch(run_plans, [(g, p, tuple(m)) for g, p, m in cases],
                                world_size=sizes.pop(), timeout=timeout)
    keys = ("forward", "backward", "forward_bytes", "backward_bytes")
    out = []
    for i, (g, p, m) in enumerate(cases):
        results = [r[i] for r in per_rank]
        predicted = predicted_comm(build(g, m, Hardware(peak_flops=1.0), "compute"), p, bytes_per_element=8)
        row = dict(results[0], predicted=predicted)
        row["comm_matches"] = all({k: r[k] for k in keys} == predicted for r in results)
        row["equal_to_one_process"] = all(max(r["out"], r["x_grad"], r["w_grad"]) < TOL
                                          for r in results)
        out.append(row)
    return out


def check_plan(graph: Graph, plan: dict, mesh=(4,), timeout: float = 120.0) -> dict:
    """:func:`check_plans` for one plan."""
    return check_plans([(graph, plan, mesh)], timeout)[0]
