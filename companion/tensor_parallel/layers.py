"""Megatron tensor-parallel layers and Megatron sequence parallelism, built from full modules.

Taught in notebook 05 (``notebooks/05_tensor_parallelism.ipynb``).

Shoeybi et al. (Megatron-LM, 2019) split the MLP's first linear by columns and the
second by rows, so the only communication of a block is at the region's edges:

* ``f`` (:class:`CopyToTensorParallelRegion`): identity forward, all-reduce backward;
* ``g`` (:class:`ReduceFromTensorParallelRegion`): all-reduce forward, identity
  backward. f and g are each other's duals.

Korthikanti et al. (2022, "Reducing Activation Recomputation") keep the activations
*between* TP regions (LayerNorm, residual, dropout) sharded along the sequence. Then
the region starts with an all-gather along the sequence (backward: reduce-scatter) and
ends with a reduce-scatter (backward: all-gather): the same bytes as the all-reduce
they replace, since all-reduce = reduce-scatter + all-gather.

The operators themselves are in :mod:`.regions`. Every parallel module is built *from
the full single-process module* (``companion.models``) and keeps its parameter names, so
a test can slice the reference's weights and gradients the same way and compare.
Collectives go through ``companion.collectives.log``.
"""
from __future__ import annotations

import copy

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from ..collectives import log as comm_log
from ..models import attention
from ..validation import positive_int
# The conjugate operators live in .regions; the layers use them, and importing them here
# keeps ``from companion.tensor_parallel.layers import f, g`` working.
from .regions import (CopyToTensorParallelRegion, GatherFromSequenceParallelRegion,
                      GatherLinearRegather, ReduceFromTensorParallelRegion,
                      ReduceScatterToSequenceParallelRegion, _identity, f, g, sp_all_gather,
                      sp_reduce_scatter)

__all__ = ["CopyToTensorParallelRegion", "ReduceFromTensorParallelRegion",
           "GatherFromSequenceParallelRegion", "ReduceScatterToSequenceParallelRegion",
           "f", "g", "sp_all_gather", "sp_reduce_scatter", "ColumnParallelLinear",
           "RowParallelLinear", "ParallelMLP", "ParallelAttention", "ParallelBlock",
           "shard_like", "allreduce_sequence_parallel_grads", "group_rank_size",
           "GatherLinearRegather"]


def group_rank_size(group=None) -> tuple[int, int]:
    """(rank in ``group``, size of ``group``); (0, 1) outside a process group."""
    if not dist.is_initialized():
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


def _require_linear(full) -> None:
    if not isinstance(full, nn.Linear):
        raise TypeError(f"full must be the torch.nn.Linear to split, got {type(full).__name__}.")


def _require_divisible(n: int, parts: int, what: str) -> None:
    if n % parts:
        raise ValueError(f"{what}={n} is not divisible by the tensor-parallel size {parts}; "
                         f"choose a {what} that is a multiple of {parts} or use fewer ranks.")


# --- sharding helpers ----------------------------------------------------------------

def _slice(full: torch.Tensor, dim: int, chunks: int, rank: int, size: int) -> torch.Tensor:
    """This rank's part of ``full``: ``dim`` is made of ``chunks`` equal blocks (3 for a
    fused q|k|v projection) and each block is split across ranks separately."""
    blocks = full.chunk(chunks, dim=dim)
    return torch.cat([b.chunk(size, dim=dim)[rank] for b in blocks], dim=dim)


def _param(t: torch.Tensor, spec) -> nn.Parameter:
    p = nn.Parameter(t.detach().clone())
    p.tp_shard = spec  # (dim, chunks) or None (replicated); read by shard_like
    return p


def shard_like(param: nn.Parameter, full: torch.Tensor, group=None) -> torch.Tensor:
    """Slice a full tensor (the reference weight or its gradient) the way ``param`` is."""
    spec = getattr(param, "tp_shard", None)
    if spec is None:
        return full
    rank, size = group_rank_size(group)
    return _slice(full, spec[0], spec[1], rank, size)


class ColumnParallelLinear(nn.Module):
    """``Y_i = X A_i``: rank i keeps output rows i of ``full.weight`` (columns of A in
    the paper's ``XA`` notation). Its input must be the full activation, so it starts
    with ``f`` (or, under sequence parallelism, an all-gather)."""

    def __init__(self, full: nn.Linear, group=None, chunks: int = 1,
                 sequence_parallel: bool = False, enter=None, regather: bool = False):
        super().__init__()
        _require_linear(full)
        positive_int("chunks", chunks, "pass 1, or 3 for a fused Q/K/V weight.")
        self.regather = sequence_parallel and regather
        rank, size = group_rank_size(group)
        _require_divisible(full.out_features // chunks, size, "output features")
        self.group = group
        self.weight = _param(_slice(full.weight, 0, chunks, rank, size), (0, chunks))
        self.bias = (_param(_slice(full.bias, 0, chunks, rank, size), (0, chunks))
                     if full.bias is not None else None)
        self.enter = enter or (sp_all_gather if sequence_parallel else f)

    def forward(self, x):
        if self.regather:
            return GatherLinearRegather.apply(x, self.weight, self.bias, self.group)
        return F.linear(self.enter(x, self.group), self.weight, self.bias)


class RowParallelLinear(nn.Module):
    """``Z = sum_i Y_i B_i``: rank i keeps input columns i of ``full.weight`` and
    produces a partial sum, which ``g`` (or a reduce-scatter) adds up. The bias is
    added once, after the sum."""

    def __init__(self, full: nn.Linear, group=None, sequence_parallel: bool = False,
                 leave=None):
        super().__init__()
        _require_linear(full)
        rank, size = group_rank_size(group)
        _require_divisible(full.in_features, size, "input features")
        self.group, self.size = group, size
        self.weight = _param(_slice(full.weight, 1, 1, rank, size), (1, 1))
        self.bias = _param(full.bias, None) if full.bias is not None else None
        if self.bias is not None and sequence_parallel:
            self.bias.sequence_parallel = True  # added on a sequence shard: partial grad
        self.leave = leave or (sp_reduce_scatter if sequence_parallel else g)

    def forward(self, x):
        if self.size == 1:  # nothing to sum: fuse the bias like nn.Linear (bit-exact path)
            return self.leave(F.linear(x, self.weight, self.bias), self.group)
        y = self.leave(F.linear(x, self.weight), self.group)
        return y + self.bias if self.bias is not None else y


_MISTAKES = {None: (None, None), "swap_fg": (g, f), "drop_f": (_identity, None)}


class ParallelMLP(nn.Module):
    """fc1 column-parallel -> GELU (local, no communication) -> fc2 row-parallel.

    ``mistake`` is for the notebook's demo only: ``"swap_fg"`` puts g where f belongs
    and f where g belongs; ``"drop_f"`` forgets f (forward still right, input gradient
    silently wrong).
    """

    def __init__(self, full, group=None, sequence_parallel: bool = False, mistake=None,
                 regather: bool = False):
        super().__init__()
        if mistake not in _MISTAKES:
            raise ValueError(f"mistake must be one of {list(_MISTAKES)}, got {mistake!r}.")
        enter, leave = _MISTAKES[mistake]
        _require_divisible(full.fc1.out_features, group_rank_size(group)[1], "d_ff")
        self.fc1 = ColumnParallelLinear(full.fc1, group, sequence_parallel=sequence_parallel,
                                        enter=enter, regather=regather)
        self.fc2 = RowParallelLinear(full.fc2, group, sequence_parallel=sequence_parallel,
                                     leave=leave)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class ParallelAttention(nn.Module):
    """Heads split across ranks: the fused qkv projection column-parallel (q, k and v
    blocks sliced separately so each rank gets whole heads), attention local, the output
    projection row-parallel."""

    def __init__(self, full, group=None, sequence_parallel: bool = False,
                 regather: bool = False):
        super().__init__()
        size = group_rank_size(group)[1]
        _require_divisible(full.n_heads, size, "n_heads")
        self.local_heads, self.head_dim = full.n_heads // size, full.head_dim
        self.qkv = ColumnParallelLinear(full.qkv, group, chunks=3,
                                        sequence_parallel=sequence_parallel, regather=regather)
        self.proj = RowParallelLinear(full.proj, group, sequence_parallel=sequence_parallel)

    def forward(self, x):
        qkv = self.qkv(x)  # [b, s, 3 * local_heads * head_dim], full sequence
        b, s, _ = qkv.shape
        q, k, v = (t.view(b, s, self.local_heads, self.head_dim).transpose(1, 2)
                   for t in qkv.split(self.local_heads * self.head_dim, dim=-1))
        y = attention(q, k, v, causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, s, -1))


class ParallelBlock(nn.Module):
    """A pre-LN transformer block with TP attention and MLP: 2 all-reduces forward and
    2 backward; with ``sequence_parallel`` 2 all-gathers + 2 reduce-scatters each way,
    and LayerNorms/residuals on ``[batch, seq/t, d]`` shards. ``regather``: the
    column layers keep only input shards (see :class:`GatherLinearRegather`)."""

    def __init__(self, full, group=None, sequence_parallel: bool = False,
                 regather: bool = False):
        super().__init__()
        self.sequence_parallel = sequence_parallel
        self.ln1, self.ln2 = copy.deepcopy(full.ln1), copy.deepcopy(full.ln2)
        for ln in (self.ln1, self.ln2):
            for p in ln.parameters():
                p.tp_shard = None
                p.sequence_parallel = sequence_parallel
        self.attn = ParallelAttention(full.attn, group, sequence_parallel, regather)
        self.mlp = ParallelMLP(full.mlp, group, sequence_parallel, regather=regather)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def allreduce_sequence_parallel_grads(module: nn.Module, group=None) -> None:
    """Sum the gradients of parameters used on sequence shards (LayerNorms, the row
    layers' biases): each rank saw only its tokens. Megatron does the same."""
    for p in module.parameters():
        if getattr(p, "sequence_parallel", False) and p.grad is not None:
            p.grad = comm_log.all_reduce(p.grad, group, label="sp_param_grads")
