"""Tensor parallelism (Megatron-LM) and Megatron sequence parallelism.

Taught in notebook 05 (``notebooks/05_tensor_parallelism.ipynb``).

* :mod:`.regions`: the conjugate operators f and g and their sequence-parallel
  counterparts (autograd functions at the edges of a TP region);
* :mod:`.layers`: column- and row-parallel linears and the TP MLP, attention and
  transformer block, each built from the full single-process module.
* :mod:`.checks`: rank functions that compare them with the single-process modules
  (outputs, gradients, post-step weights, collectives issued, activation memory) and
  with ``torch.distributed.tensor.parallel``.
"""
from .layers import (ColumnParallelLinear, CopyToTensorParallelRegion,
                     GatherFromSequenceParallelRegion, GatherLinearRegather, ParallelAttention,
                     ParallelBlock, ParallelMLP, ReduceFromTensorParallelRegion,
                     ReduceScatterToSequenceParallelRegion, RowParallelLinear,
                     allreduce_sequence_parallel_grads, f, g, group_rank_size, shard_like,
                     sp_all_gather, sp_reduce_scatter)
from .checks import (activation_bytes, compare_with_reference, dtensor_mlp_compare,
                     run_mlp)

__all__ = ["CopyToTensorParallelRegion", "ReduceFromTensorParallelRegion",
           "GatherFromSequenceParallelRegion", "ReduceScatterToSequenceParallelRegion",
           "GatherLinearRegather", "f", "g", "sp_all_gather", "sp_reduce_scatter",
           "ColumnParallelLinear", "RowParallelLinear", "ParallelMLP", "ParallelAttention",
           "ParallelBlock", "shard_like", "allreduce_sequence_parallel_grads", "group_rank_size",
           "compare_with_reference", "dtensor_mlp_compare", "activation_bytes",
           "run_mlp"]
