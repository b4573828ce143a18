"""Exercise 12.megatron-placements (notebook 12, section 3): DTensor placements for a
column-then-row MLP, checked on 4 ranks with ``CommDebugMode``."""
from __future__ import annotations

import torch
import torch.distributed as dist

from ..exercise import Exercise, register

# ---- 12.megatron-placements -------------------------------------------------------------
# An MLP relu(x @ W1.T) @ W2.T small enough to print, on a 1D mesh of the 4 ranks.
D, FFN, TOKENS = 8, 16, 4


def _mlp_inputs(rank, world_size):
    g = torch.Generator().manual_seed(12)
    w1 = torch.randn(FFN, D, generator=g)
    w2 = torch.randn(D, FFN, generator=g)
    return w1, w2


def megatron_placements_reference(w1, w2, mesh):
    """The package's answer: W1 split by its rows (the hidden units, a column-parallel
    layer in Megatron's words) and W2 by its columns (row-parallel)."""
    from torch.distributed.tensor import Shard, distribute_tensor
    return (distribute_tensor(w1, mesh, [Shard(0)]), distribute_tensor(w2, mesh, [Shard(1)]))


COLLECTIVES = ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor",
               "all_to_all_single")


def comm_counts(mode) -> dict[str, int]:
    """``CommDebugMode``'s counts by collective name (``all_reduce``), not by op object;
    every collective DTensor can issue is listed, so a difference names the one that
    differs rather than a missing key."""
    counts = {str(op).split(".")[-1]: n for op, n in mode.get_comm_counts().items() if n}
    return {**{name: 0 for name in COLLECTIVES}, **counts}


def run_sharded_mlp(candidate, w1, w2):
    """Distribute the weights as ``candidate`` says, run forward and backward under
    ``CommDebugMode``, and return the values and the collectives of each pass."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Replicate, distribute_tensor
    from torch.distributed.tensor.debug import CommDebugMode

    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    x = torch.randn(TOKENS, D, generator=torch.Generator().manual_seed(1))
    d1, d2 = candidate(w1, w2, mesh)
    for name, d in (("w1", d1), ("w2", d2)):
        if not isinstance(d, DTensor):
            raise TypeError(f"my_megatron_placements returned {type(d).__name__} for {name}; "
                            "return DTensors made with distribute_tensor(w, mesh, [placement])")
    d1, d2 = d1.detach().requires_grad_(), d2.detach().requires_grad_()
    dx = distribute_tensor(x, mesh, [Replicate()])
    with CommDebugMode() as forward:
        out = torch.relu(dx @ d1.T) @ d2.T
        # The layer's caller wants the whole output on every rank, as nn.Linear gives it.
        out = out.redistribute(mesh, [Replicate()])
    with CommDebugMode() as backward:
        (out.to_local() ** 2).sum().backward()
    return {"weight elements on this rank": d1.to_local().numel() + d2.to_local().numel(),
            "output": out.to_local(), "W1 gradient": d1.grad.full_tensor(),
            "W2 gradient": d2.grad.full_tensor(),
            "collectives in forward": comm_counts(forward),
            "collectives in backward": comm_counts(backward)}


PLACEMENTS = register(Exercise(
    id="12.megatron-placements", level="warm-up", kind="implement",
    title="DTensor placements for a column-then-row MLP",
    student_name="my_megatron_placements",
    task=f"The MLP `relu(x @ W1.T) @ W2.T` (W1: [{FFN}, {D}], W2: [{D}, {FFN}]) runs on a "
         "1D mesh of 4 ranks with torch's DTensor. Write `my_megatron_placements(w1, w2, "
         "mesh)` returning `(W1, W2)` as DTensors made with `distribute_tensor(w, mesh, "
         "[placement])`, where a placement is `Shard(dim)` or `Replicate()`. Whatever you "
         "choose, DTensor computes the right output: the placements decide only the "
         "communication and the memory. The checker runs forward and backward on 4 ranks under "
         "`CommDebugMode` and wants the values of one process **and** Megatron's traffic: "
         "one all-reduce in forward, none in backward, with each rank holding "
         "a quarter of the weights.",
    hints=("In x @ W1.T each row of W1 makes one hidden unit; in W2 each column consumes "
           "one. If a rank holds some hidden units end to end, what does it need from the "
           "others before the last sum?",
           "Shard(dim) splits a tensor's dimension dim over the mesh. Look at w1.shape and "
           "w2.shape: in each matrix, which dimension counts the hidden units?",
           "Check your pair against the three numbers the checker wants. A split that cuts "
           "the dimension a matmul contracts over leaves partial sums (an all-reduce); a "
           "split whose result the next matmul needs whole makes DTensor gather it first."),
    inputs=_mlp_inputs, reference=megatron_placements_reference, adapter=run_sharded_mlp,
    forbidden={"companion.learning.nb12.megatron_placements_reference":
               "it is the package's solution to this exercise",
               "torch.distributed.tensor.parallel.parallelize_module":
               "its ColwiseParallel/RowwiseParallel styles choose the placements for you"},
    pure=True, rtol=1e-5, atol=1e-5, timeout=60.0,
    context="import torch\nfrom torch.distributed.tensor import Replicate, Shard, distribute_tensor",
))
