"""Tensor and sequence parallelism as DTensor plans, for :mod:`.torch_memory`.

Taught in notebook 09 ("Will it fit?"); notebook 05 builds the same split by hand.
Megatron's layout (Shoeybi et al. 2019) with Korthikanti et al. 2022's sequence
parallelism, written as torchtitan writes it for Llama: Q, K, V and the MLP's input
matrices split by columns, the attention output and the MLP's output matrix by rows;
the norms run on sequence shards; the embedding is split by rows of the vocabulary and
the output head by columns, with a vocabulary-parallel cross-entropy, so neither the
full logits nor a replicated embedding ever exists on one rank.
"""
from __future__ import annotations

__all__ = ["apply_tensor_parallel"]


def apply_tensor_parallel(model, tp_mesh, first: bool, last: bool) -> None:
    """Split ``model`` (a :class:`~companion.planner.decoder.Decoder` stage) over
    ``tp_mesh`` in place."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput,
                                                   RowwiseParallel, SequenceParallel,
                                                   parallelize_module)
    top = {}
    if first:
        top["embed"] = RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1))
    if last:
        top["norm"] = SequenceParallel()
        top["head"] = ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1),
                                      use_local_output=False)
    if top:
        parallelize_module(model, tp_mesh, top)
    gather = PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),))
    for block in model.blocks:
        plan = {"norm1": SequenceParallel(), "attn": gather,
                "attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(),
                "attn.v": ColwiseParallel(), "attn.o": RowwiseParallel(output_layouts=Shard(1)),
                "norm2": SequenceParallel(), "mlp": gather,
                "mlp.w1": ColwiseParallel(), "mlp.w2": RowwiseParallel(output_layouts=Shard(1))}
        if block.mlp.w3 is not None:
            plan["mlp.w3"] = ColwiseParallel()
        parallelize_module(block, tp_mesh, plan)
