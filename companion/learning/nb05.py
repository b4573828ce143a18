"""Notebook 05's exercises (``notebooks/05_tensor_parallelism.ipynb``): Megatron's f and g.

* ``05.column-linear`` (warm-up, implement): a column-parallel linear's forward, each
  rank its slice of the output, with no communication.
* ``05.f-and-g`` (core, diagnose): a colleague's f and g give the right output and the
  right number of all-reduces, but wrong gradients; the fix is checked at the edges of a
  tensor-parallel MLP against one process.
* ``05.regather-linear`` (stretch, implement): Megatron-SP's column linear that keeps
  only its input's sequence shard for backward and gathers it again there; checked on
  sequence shards against one process, with the bytes it keeps measured.

Every rank-side function the exercises use is defined here or in
:mod:`companion.learning.nb05_checks`, which holds the tensor-parallel MLP they run on.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

from .exercise import Exercise, register
from .nb05_checks import _mlp_inputs, _one_process, _run_tp_mlp, kept_for_backward
from .patterns import all_of, counts, only, per_rank, summary

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
    id="05.column-linear", level="warm-up", kind="implement",
    title="a column-parallel linear's forward",
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
           "Check the shapes before the values: rank i's block of the weight is "
           "[out/t, in] and x is [tokens, in], and the slice you return is [tokens, out/t]. "
           "Which product of the two has that shape, and which block of the bias goes with "
           "it?"),
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
def fg_expected(x, dy):
    return _one_process(x, dy, seq_shard=False)


def fg_adapter(make_f_and_g, x, dy):
    """``make_f_and_g()`` returns (f, g), each called as ``fn(x, group)``."""
    def setup(mlp):
        mlp.fc1.enter, mlp.fc2.leave = make_f_and_g()
    return _run_tp_mlp(setup, x, dy, sequence_parallel=False)


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
    id="05.f-and-g", level="core", kind="diagnose",
    title="fix a colleague's f and g: right output, wrong gradients",
    student_name="my_f_and_g",
    task="A colleague's `broken_f_and_g()` (in the notebook) returns the two operators of a "
         "tensor-parallel region, each applied as `fn(x, group)`: an identity at the "
         "entrance and, at the exit, `SumOverRanks`, an all-reduce whose backward is an "
         "all-reduce too (like torch.distributed.nn's). In a Megatron MLP on real ranks the "
         "output is right, and each rank makes one all-reduce in forward and one in "
         "backward, as Megatron's does, yet the gradients are wrong. Find out why and "
         "write `my_f_and_g()` returning fixed operators as `torch.autograd.Function`s' "
         "`.apply`. The checker compares the output, the input gradient and every weight "
         "gradient with the single-process MLP, and counts the collectives: one "
         "all-reduce in forward and one in backward, nothing else.",
    hints=("The output is right, so the forward is fine. In backward, which gradient does "
           "each rank hold in full, and which only as its part of a sum over ranks?",
           "Leaving the region, every rank receives the same, full dL/dZ: summing it over t "
           "ranks counts it t times. Entering it, fc1's backward gives each rank dL/dX "
           "through its own columns only. Where does the backward's sum over ranks belong?",
           "The colleague's all-reduce is the right operator for neither edge: each edge "
           "needs the sum in exactly one direction and the identity in the other. Write "
           "each as an autograd Function whose forward does not change its input in place "
           "and whose backward returns one value per forward input."),
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


# ---- 05.regather-linear (stretch) ----------------------------------------------------
_KEPT = "bytes fc1 keeps for backward"


def regather_expected(x, dy):
    """One process's MLP cut to this rank's shard, and the bytes of that input shard."""
    rank, t = dist.get_rank(), dist.get_world_size()
    shard = x.chunk(t, dim=1)[rank]
    return {**_one_process(x, dy, seq_shard=True), _KEPT: shard.numel() * shard.element_size()}


def regather_adapter(make_linear, x, dy):
    """``make_linear()`` returns fc1's whole forward, ``fn(x_shard, weight, bias, group)``."""
    fn, kept = make_linear(), {}

    def setup(mlp):
        fc1 = mlp.fc1

        def forward(h):
            out, kept[_KEPT] = kept_for_backward(fn, h, fc1.weight, fc1.bias, fc1.group)
            return out
        fc1.forward = forward
    out = _run_tp_mlp(setup, x, dy, sequence_parallel=True)
    return {**out, **kept}


def regather_reference():
    from ..tensor_parallel.regions import GatherLinearRegather
    return GatherLinearRegather.apply


_GATHER = ("all_gather", "all_gather_into_tensor")
_SCATTER = ("reduce_scatter", "reduce_scatter_tensor")
_AUTOGRAD_SP = {
    "torch.distributed.nn.functional.all_gather": "an autograd all-gather writes the "
                                                  "backward for you, and keeps the gathered "
                                                  "input",
    "torch.distributed.nn.functional.reduce_scatter": "an autograd reduce-scatter writes the "
                                                      "backward for you",
    "torch.distributed._functional_collectives.all_gather_tensor_autograd":
        "an autograd all-gather writes the backward for you, and keeps the gathered input",
    "torch.distributed._functional_collectives.reduce_scatter_tensor_autograd":
        "an autograd reduce-scatter writes the backward for you",
}

REGATHER_LINEAR = register(Exercise(
    id="05.regather-linear", level="stretch", kind="implement",
    title="sequence parallelism's column linear that gathers its input twice",
    student_name="my_gather_linear",
    task="Under Megatron sequence parallelism fc1 receives this rank's **sequence shard** "
         "`x` `[b, s/t, h]` (tokens `i*s/t ...` on rank i) and must return this rank's "
         "columns of fc1 for **every** token, `[b, s, d_ff/t]`, from its `weight` "
         "`[d_ff/t, h]` and `bias`. Gathering x and calling a linear would keep the "
         "gathered input, t times the shard, alive until backward. Write "
         "`MyGatherLinear`, a `torch.autograd.Function` applied as `fn(x, weight, bias, "
         "group)`, that keeps **only the shard** and gathers it again in backward, and let "
         "`my_gather_linear()` return `MyGatherLinear.apply`. The checker runs the TP+SP MLP "
         "with it as fc1 on real ranks and compares the output shard, the input-gradient "
         "shard and the weight gradients with one process; it measures the bytes fc1 keeps "
         "for backward (saved tensors and tensors left on ctx, parameters excluded), which "
         "must be the shard's; and the pattern: forward one all-gather (yours) and fc2's "
         "reduce-scatter, backward two all-gathers (fc2's and your re-gather) and your "
         "reduce-scatter, no all-reduce.",
    hints=("What does backward need? The weight gradient needs the input of every token; "
           "the input gradient it produces covers every token but holds only this rank's "
           "columns' share. Which of the two can be rebuilt from what this rank owns?",
           "Keep the shard with ctx.save_for_backward and gather it again in backward, with "
           "the same collective as in forward. For the input gradient you need one "
           "collective that both sums over the ranks and leaves each rank its own tokens.",
           "In backward, grad is [b, s, d_ff/t]: the weight gradient [d_ff/t, h] and the "
           "bias gradient sum over batch and sequence both, so flatten those two dimensions "
           "first. Return one gradient per input of forward (None for the group)."),
    inputs=_mlp_inputs, expected=regather_expected, adapter=regather_adapter,
    forbidden={**{_REGIONS + n: "it is the package's own sequence-parallel gather" for n in (
                   "GatherFromSequenceParallelRegion", "sp_all_gather")},
               _REGIONS + "GatherLinearRegather": "it is the package's solution to this "
                                                  "exercise",
               "companion.learning.nb05.regather_reference":
               "it is the package's solution to this exercise",
               **_AUTOGRAD_SP, **_TORCH_TP},
    pattern=all_of(only(*_GATHER, *_SCATTER, why="sequence parallelism replaces the "
                        "all-reduce by its two halves"),
                   counts({_GATHER: 1, _SCATTER: 1}, phase="forward",
                          why="your gather, then fc2's reduce-scatter"),
                   counts({_GATHER: 2, _SCATTER: 1}, phase="backward",
                          why="fc2's all-gather, your re-gather and your reduce-scatter")),
    rtol=0.0, atol=TOL, world_size=4,
    context="import torch\nimport torch.distributed as dist\nimport companion",
))
