"""Exercise 12.expert-grads (notebook 12, section 6): diagnose and fix the gradient
averaging of an expert-parallel x data-parallel step, on 4 real ranks.

The run is section 7's (:mod:`companion.hybrid.expert`): notebook 06's MoE layer behind a
dense projection, ``init_device_mesh(("dp", "ep"))`` with EP innermost, 4 experts, one
SGD step. The student's function replaces the gradient averaging between backward and
the optimizer step; the checker trains on two meshes, EP 2 x DP 2 and EP 4 x DP 1, and
compares every parameter with the same run averaged correctly, then the bytes each
group's all-reduces carried. One step is enough: a wrong average shows in the first
update, in the very parameters it got wrong (after two, every parameter differs).
"""
from __future__ import annotations

import collections

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

# Section 7's model, data and byte counts, so that this run is that one with the
# averaging left to the student.
from ...hybrid.expert import _MoEModel, _data, _grad_bytes
from ...sequence_parallel.moe import ExpertParallelMoE
from ..exercise import Exercise, register

# ---- 12.expert-grads ------------------------------------------------------------------
WORLD = 4
MESHES = ((2, 2), (1, 4))          # (dp, ep) on the WORLD ranks
D_MODEL, D_FF, EXPERTS, TOP_K, CAPACITY = 16, 32, 4, 2, 1.25
TOKENS, STEPS, LR, SEED = 16, 1, 0.1, 0
EXPERT_PREFIX = "moe.experts."


def _label(dp: int, ep: int) -> str:
    return f"EP {ep} x DP {dp}"


def expert_grads_reference(model, mesh) -> None:
    """The package's averaging: dense gradients summed over every rank, an expert's over
    the ranks that hold a copy of it (the mesh's ``dp`` group); both divided by the world
    size, because an expert's local gradient already sums its whole EP group's tokens."""
    world, experts = dist.get_world_size(), mesh.get_group("dp")
    for name, p in model.named_parameters():
        dist.all_reduce(p.grad, group=experts if name.startswith(EXPERT_PREFIX) else None)
        p.grad.div_(world)


def _train(candidate, dp: int, ep: int) -> dict:
    mesh = init_device_mesh("cpu", (dp, ep), mesh_dim_names=("dp", "ep"))
    rank, world = dist.get_rank(), dist.get_world_size()
    model = _MoEModel(D_MODEL, D_FF, EXPERTS, TOP_K, CAPACITY, SEED)
    model.moe = ExpertParallelMoE(model.moe, mesh.get_group("ep"))   # keeps its own experts
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(STEPS):
        xs, ts = _data(step, world, TOKENS, D_MODEL, SEED)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(xs[rank]), ts[rank]).backward()
        candidate(model, mesh)
        opt.step()
    first = model.moe.first   # local expert i is global expert first + i
    out = {}
    for name, p in model.named_parameters():
        if name.startswith(EXPERT_PREFIX):
            local, rest = name[len(EXPERT_PREFIX):].split(".", 1)
            name = f"{EXPERT_PREFIX}{first + int(local)}.{rest}"
        out[name] = p.detach().clone()
    return out


def _train_meshes(candidate):
    return {_label(dp, ep): _train(candidate, dp, ep) for dp, ep in MESHES}


def _grads_pattern(calls_per_rank, world_size):
    """Gradient traffic: all-reduces only; per step the dense gradients over all ranks and
    the experts' over their DP group (a group of one may be skipped)."""
    want = collections.Counter()
    for dp, ep in MESHES:
        sizes = _grad_bytes(D_MODEL, D_FF, EXPERTS, ep)
        want[world_size] += STEPS * sizes["dense_grads"]
        if dp > 1:
            want[dp] += STEPS * sizes["expert_grads"]
    for rank, calls in enumerate(calls_per_rank):
        odd = sorted({c.name for c in calls} - {"all_reduce", "all_to_all", "all_to_all_single"})
        if odd:
            return (f"rank {rank} called {', '.join(odd)}; average the gradients with "
                    "all-reduces (the MoE layer's own all-to-alls are not yours)")
        got = {}
        for c in calls:
            if c.name == "all_reduce" and c.group_size > 1:
                got[c.group_size] = got.get(c.group_size, 0) + c.bytes
        for size, nbytes in sorted(want.items(), reverse=True):
            if got.get(size, 0) != nbytes:
                what = "the dense gradients" if size == world_size else "the experts' gradients"
                return (f"rank {rank} all-reduced {got.get(size, 0):,} bytes over groups of "
                        f"{size} ranks on the two meshes; {what} are {nbytes:,} bytes there")
        extra = sorted(set(got) - set(want))
        if extra:
            return f"rank {rank} all-reduced over groups of {extra} ranks, which no gradient needs"
    return None


EXPERT_GRADS = register(Exercise(
    id="12.expert-grads", level="core", kind="diagnose",
    title="the gradient averaging of expert parallelism",
    student_name="my_sync_grads",
    task=f"An EP x DP run on {WORLD} ranks: notebook 06's MoE layer ({EXPERTS} experts, "
         f"top-{TOP_K}) behind a dense projection, on `init_device_mesh('cpu', (dp, ep), "
         "mesh_dim_names=('dp', 'ep'))`, EP innermost, each rank with its own tokens and "
         f"{EXPERTS} / ep experts. Between backward and the optimizer step, "
         "`broken_sync_grads(model, mesh)` (in the notebook) sums every gradient over all "
         f"ranks and divides by {WORLD}; the parameters then differ from one process. Write "
         "`my_sync_grads(model, mesh)` that averages the gradients in place so that training "
         "equals one process; expert parameters are named `moe.experts.<i>...` with i the "
         "rank's *local* expert index. The checker trains on "
         + " and on ".join(_label(dp, ep) for dp, ep in MESHES)
         + ", compares every parameter with the same run averaged correctly (section 7's, "
         "which equals one process) and counts the bytes each group's all-reduces carried.",
    hints=("Run the check on `broken_sync_grads` and read which parameters differ. Then "
           "ask: is rank 0's `moe.experts.0` the same expert as rank 1's `moe.experts.0`? "
           "(`model.moe.first` is the global index of a rank's first expert.)",
           "A gradient may only be added to gradients of the same parameter. Which ranks "
           "hold a copy of this rank's experts? The mesh names that group.",
           "Now the divisor. Before any all-reduce, whose tokens does an expert's local "
           "gradient already include: this rank's only, or those of every rank that sent it "
           "tokens through the all-to-all? The loss is the mean of all ranks' losses."),
    reference=expert_grads_reference, adapter=_train_meshes, pattern=_grads_pattern,
    forbidden={"companion.learning.nb12.expert_grads_reference":
               "it is the package's solution to this exercise",
               "companion.hybrid.expert.train_ep_dp": "it is section 7's run, averaging included",
               "torch.nn.parallel.DistributedDataParallel":
               "DDP would average every gradient over its one group"},
    world_size=WORLD, rtol=1e-5, atol=1e-6, timeout=60.0,
    context="import torch\nimport torch.distributed as dist",
))
