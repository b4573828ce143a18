"""Notebook 05's exercises (``notebooks/05_tensor_parallelism.ipynb``): Megatron's f and g.

* ``05.column-linear`` (warm-up): a column-parallel linear's forward, each rank its
  slice of the output, with no communication.
* ``05.f-and-g`` (core): Megatron-LM's conjugate operators f and g as autograd
  Functions, checked at the edges of a tensor-parallel MLP against one process.
* ``05.sp-regions`` (stretch): Megatron-SP's pair g / g-bar (all-gather and
  reduce-scatter along the sequence), checked the same way on sequence shards.

Every rank-side function the exercises use is defined here. The MLP is the one
``companion.tensor_parallel`` splits (d_model 16, d_ff 64, float64, seeded), so a
result can be compared with the single-process MLP exactly (up to summation order).
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

from .exercise import Exercise, register
from .patterns import all_of, counts, only, per_rank, summary

BATCH, SEQ, D_MODEL, D_FF, SEED = 2, 8, 16, 64, 0
TOL = 1e-12   # float64; TP adds the ranks' partial sums in another order than one matmul

_REGIONS = "companion.tensor_parallel.regions."
_TORCH_TP = {  # torch's own tensor parallelism: the layer split done for you
    "torch.distributed.tensor.parallel.ColwiseParallel": "torch's column split does it for you",
    "torch.distributed.tensor.parallel.RowwiseParallel": "torch's row split does it for you",
    "torch.distributed.tensor.parallel.SequenceParallel": "torch's sequence parallelism does "
                                                          "it for you",
    "torch.distributed.tensor.parallel.parallelize_module": "torch's tensor parallelism does "
                                                            "it for you",
}


# ---- 05.column-linear (warm-up) ------------------------------------------------------
def _column_inputs(rank: int, world_size: int) -> tuple:
    gen = torch.Generator().manual_seed(5)   # the same X, weight and bias on every rank
    x = torch.randn(4, 8, generator=gen, dtype=torch.float64)
    weight = torch.randn(16, 8, generator=gen, dtype=torch.float64)   # nn.Linear: [out, in]
    bias = torch.randn(16, generator=gen, dtype=torch.float64)
    return x, weight, bias


def column_linear_reference(x, weight, bias):
    """Rank i keeps output rows i of nn.Linear's weight (columns i of the paper's A)."""
    rank, t = dist.get_rank(), dist.get_world_size()
    return F.linear(x, weight.chunk(t, dim=0)[rank], bias.chunk(t, dim=0)[rank])


def _silent(rank: int, world_size: int, calls) -> str | None:
    if calls:
        return (f"made {summary(calls)}; a column-parallel linear needs no communication in "
                "forward, since every rank already holds the whole X")
    return None


COLUMN_LINEAR = register(Exercise(
    id="05.column-linear", level="warm-up", title="a column-parallel linear's forward",
    student_name="my_column_linear",
    task="Every rank holds the same input `x` `[tokens, in]` and the **full** `nn.Linear` "
         "`weight` `[out, in]` and `bias` `[out]`. Write `my_column_linear(x, weight, bias)` "
         "so that rank i of t returns **its slice** of the output, `[tokens, out/t]`: output "
         "features `i*out/t ... (i+1)*out/t - 1`, exactly what rank i of a column-parallel "
         "linear computes. No communication.",
    hints=("Column i of the paper's A is one output feature. Find which dimension of "
           "nn.Linear's `weight` counts output features.",
           "Rank i needs only its block of output features: the same block of the "
           "weight's rows and of the bias; `dist.get_rank()` and `dist.get_world_size()` "
           "say which block.",
           "`weight.chunk(t, dim=0)[i]` is rank i's block of rows; "
           "`torch.nn.functional.linear(x, w, b)` computes x w^T + b."),
    inputs=_column_inputs, reference=column_linear_reference,
    forbidden={"companion.learning.nb05.column_linear_reference":
               "it is the package's solution to this exercise",
               "companion.tensor_parallel.layers.ColumnParallelLinear":
               "it is the package's column-parallel linear",
               "companion.tensor_parallel.layers._slice": "it is the package's weight split",
               "companion.tensor_parallel.layers.shard_like": "it is the package's weight split",
               **_TORCH_TP},
    pattern=per_rank(_silent), pure=True, rtol=0.0, atol=TOL,
    context="import torch\nimport torch.distributed as dist\nimport torch.nn.functional as F\n"
            "import companion",
))


# ---- 05.f-and-g (core) ---------------------------------------------------------------
def _mlp_inputs(rank: int, world_size: int) -> tuple:
    gen = torch.Generator().manual_seed(SEED + 1)   # the same on every rank
    x = torch.randn(BATCH, SEQ, D_MODEL, generator=gen, dtype=torch.float64)
    dy = torch.randn(BATCH, SEQ, D_MODEL, generator=gen, dtype=torch.float64)
    return x, dy


def _full_mlp():
    from ..tensor_parallel.checks import _reference
    return _reference("mlp", D_MODEL, 4, D_FF, torch.float64, SEED)


def _shard_of_full(grads: dict, rank: int, t: int, seq_shard: bool) -> dict:
    """The single-process MLP's gradients cut the way rank ``rank`` of ``t`` holds them."""
    out = {"fc1.weight grad": grads["fc1.weight"].chunk(t, dim=0)[rank],   # column split
           "fc1.bias grad": grads["fc1.bias"].chunk(t, dim=0)[rank],
           "fc2.weight grad": grads["fc2.weight"].chunk(t, dim=1)[rank]}   # row split
    if not seq_shard:   # under SP the row bias sees only this rank's tokens (summed later)
        out["fc2.bias grad"] = grads["fc2.bias"]
    return out


def _one_process(x, dy, seq_shard: bool) -> dict:
    """Expected results: the single-process MLP, forward and backward, cut for this rank."""
    rank, t = dist.get_rank(), dist.get_world_size()
    mlp = _full_mlp()
    xr = x.clone().requires_grad_()
    y = mlp(xr)
    (y * dy).sum().backward()
    cut = (lambda z: z.chunk(t, dim=1)[rank]) if seq_shard else (lambda z: z)
    grads = {n: p.grad for n, p in mlp.named_parameters()}
    return {"output": cut(y.detach()), "input grad": cut(xr.grad),
            **_shard_of_full(grads, rank, t, seq_shard)}


def fg_expected(x, dy):
    return _one_process(x, dy, seq_shard=False)


def _run_tp_mlp(make_edges, x, dy, sequence_parallel: bool) -> dict:
    """The package's TP MLP with the student's operators at its edges, forward and
    backward on this rank's input (a sequence shard under SP)."""
    from ..tensor_parallel.layers import ParallelMLP

    rank, t = dist.get_rank(), dist.get_world_size()
    enter, leave = make_edges()
    mlp = ParallelMLP(_full_mlp(), sequence_parallel=sequence_parallel)
    mlp.fc1.enter, mlp.fc2.leave = enter, leave
    if sequence_parallel:
        x, dy = x.chunk(t, dim=1)[rank], dy.chunk(t, dim=1)[rank]
    xt = x.clone().requires_grad_()
    y = mlp(xt)
    (y * dy).sum().backward()
    grads = {"fc1.weight grad": mlp.fc1.weight.grad, "fc1.bias grad": mlp.fc1.bias.grad,
             "fc2.weight grad": mlp.fc2.weight.grad}
    if not sequence_parallel:
        grads["fc2.bias grad"] = mlp.fc2.bias.grad
    return {"output": y, "input grad": xt.grad, **grads}


def fg_adapter(make_f_and_g, x, dy):
    """``make_f_and_g()`` returns (f, g), each called as ``fn(x, group)``."""
    return _run_tp_mlp(make_f_and_g, x, dy, sequence_parallel=False)


def f_and_g_reference():
    from ..tensor_parallel.regions import f, g
    return f, g


_AUTOGRAD_COLLECTIVES = {
    "torch.distributed.nn.functional.all_reduce":
        "its backward is an all-reduce too, so it is neither f nor g; write the backward "
        "yourself",
    "torch.distributed._functional_collectives.all_reduce":
        "use torch.distributed.all_reduce, the collective the lecture names",
}

F_AND_G = register(Exercise(
    id="05.f-and-g", level="core", title="Megatron's f and g as autograd Functions",
    student_name="my_f_and_g",
    task="Write the two conjugate operators of a tensor-parallel region as "
         "`torch.autograd.Function`s: **f** (`MyF`, at the entrance) and **g** (`MyG`, at "
         "the exit), each applied as `fn(x, group)`, and let `my_f_and_g()` return "
         "`(MyF.apply, MyG.apply)`. The checker puts them at the edges of a Megatron MLP "
         "(fc1 column-parallel, fc2 row-parallel) on real ranks and compares the output, the "
         "input gradient and every weight gradient with the single-process MLP. It also "
         "counts the collectives: exactly one all-reduce in forward (g's) and one in "
         "backward (f's), nothing else.",
    hints=("Ask, for each operator and each direction: does every rank already hold the "
           "whole tensor, or only a part of a sum?",
           "g's forward receives the row-parallel layer's partial sums; f's backward "
           "receives the gradient through this rank's columns only. Both need the sum over "
           "ranks; in the other direction each is the identity.",
           "An autograd Function's forward must not change its input in place: all-reduce "
           "a copy (`x.clone()`). Keep the group on `ctx` for backward, which returns one "
           "value per forward input: `(gradient for x, None)`.",
           "`dist.all_reduce(t, group=group)` sums t in place over the ranks."),
    inputs=_mlp_inputs, expected=fg_expected, adapter=fg_adapter,
    forbidden={**{_REGIONS + n: "it is the package's own f or g" for n in (
                   "CopyToTensorParallelRegion", "ReduceFromTensorParallelRegion", "f", "g")},
               "companion.learning.nb05.f_and_g_reference":
               "it is the package's solution to this exercise",
               **_AUTOGRAD_COLLECTIVES, **_TORCH_TP},
    pattern=all_of(only("all_reduce", why="f and g communicate with all-reduces only"),
                   counts({"all_reduce": 1}, phase="forward", why="g sums the partial outputs"),
                   counts({"all_reduce": 1}, phase="backward",
                          why="f sums the partial input gradients")),
    rtol=0.0, atol=TOL, world_size=4,
    context="import torch\nimport torch.distributed as dist\nimport companion",
))


# ---- 05.sp-regions (stretch) ---------------------------------------------------------
def sp_expected(x, dy):
    return _one_process(x, dy, seq_shard=True)


def sp_adapter(make_regions, x, dy):
    """``make_regions()`` returns (g, g_bar): entrance and exit of the SP region."""
    return _run_tp_mlp(make_regions, x, dy, sequence_parallel=True)


def sp_regions_reference():
    from ..tensor_parallel.regions import sp_all_gather, sp_reduce_scatter
    return sp_all_gather, sp_reduce_scatter


_GATHER = ("all_gather", "all_gather_into_tensor")
_SCATTER = ("reduce_scatter", "reduce_scatter_tensor")

SP_REGIONS = register(Exercise(
    id="05.sp-regions", level="stretch",
    title="sequence parallelism's g and g-bar (all-gather, reduce-scatter)",
    student_name="my_sp_regions",
    task="Under Megatron sequence parallelism each rank enters the MLP with its **sequence "
         "shard** `[b, s/t, h]` (tokens `i*s/t ...` on rank i) and must leave with the same "
         "shard of the output. Write the two edge operators as autograd Functions, "
         "Korthikanti et al.'s **g** (`MySPGather`: all-gather along the sequence, dim 1, in "
         "rank order; backward: reduce-scatter) and **g-bar** (`MySPScatter`: reduce-scatter "
         "along dim 1; backward: all-gather), and let `my_sp_regions()` return "
         "`(MySPGather.apply, MySPScatter.apply)`. The checker runs the TP MLP with them on "
         "real ranks and compares the output shard, the input-gradient shard and the "
         "weight gradients with one process; the pattern is one all-gather and one "
         "reduce-scatter in each direction, and no all-reduce.",
    hints=("Megatron's all-reduce = reduce-scatter + all-gather. Which half belongs at the "
           "entrance of the region, which at the exit, and what is each one's gradient?",
           "The entrance needs every token (all-gather); its gradient arrives as a full-"
           "sequence partial sum on every rank, so backward sums and keeps only this "
           "rank's tokens. The exit is the mirror image.",
           "torch.distributed works on lists: `dist.all_gather(parts, x)` fills one tensor "
           "per rank, `dist.reduce_scatter(out, parts)` sums `parts[j]` over the ranks into "
           "rank j's `out`. Make each part `.contiguous()` and concatenate along dim 1.",
           "Each backward returns `(gradient for x, None)`: the gather's gradient is the "
           "reduce-scattered `grad`, the scatter's the all-gathered `grad`."),
    inputs=_mlp_inputs, expected=sp_expected, adapter=sp_adapter,
    forbidden={**{_REGIONS + n: "it is the package's own sequence-parallel region" for n in (
                   "GatherFromSequenceParallelRegion", "ReduceScatterToSequenceParallelRegion",
                   "GatherLinearRegather", "sp_all_gather", "sp_reduce_scatter")},
               "companion.learning.nb05.sp_regions_reference":
               "it is the package's solution to this exercise",
               "companion.collectives.log.all_gather": "it is the package's all-gather along a "
                                                "dimension; write it with torch.distributed",
               "companion.collectives.log.reduce_scatter": "it is the package's reduce-scatter "
                                                    "along a dimension; write it with "
                                                    "torch.distributed",
               "torch.distributed.nn.functional.all_gather": "an autograd all-gather skips "
                                                             "writing the backward",
               "torch.distributed.nn.functional.reduce_scatter": "an autograd reduce-scatter "
                                                                 "skips writing the backward",
               "torch.distributed._functional_collectives.all_gather_tensor_autograd":
               "an autograd all-gather skips writing the backward",
               "torch.distributed._functional_collectives.reduce_scatter_tensor_autograd":
               "an autograd reduce-scatter skips writing the backward",
               **_TORCH_TP},
    pattern=all_of(only(*_GATHER, *_SCATTER, why="all-reduce = reduce-scatter + all-gather; "
                        "sequence parallelism uses the halves"),
                   counts({_GATHER: 1, _SCATTER: 1}, phase="forward",
                          why="g gathers the tokens, g-bar reduce-scatters the output"),
                   counts({_GATHER: 1, _SCATTER: 1}, phase="backward",
                          why="each operator's gradient is the other collective")),
    rtol=0.0, atol=TOL, world_size=4,
    context="import torch\nimport torch.distributed as dist\nimport companion",
))
