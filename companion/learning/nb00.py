"""Notebook 00's exercises (``notebooks/00_launching_ranks.ipynb``): first collectives.

Exercise ids are "00.<name>"; :func:`companion.learning.exercise` fetches them.

* ``00.broadcast`` (warm-up): every rank ends with rank 0's tensor (one broadcast).
* ``00.average`` (core, the course's worked example): the mean over ranks (one all-reduce).
* ``00.healthy-average`` (stretch): the mean over the ranks whose tensor is finite, a
  rank with an infinity still taking part in every collective (or the others would hang).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .exercise import Exercise, register
from .patterns import all_of, counts, only, per_rank


def _values(rank: int, world_size: int) -> tuple:
    return ((rank + 1.0) * torch.arange(4.0),)


def average_reference(x: torch.Tensor) -> torch.Tensor:
    """Sum over ranks with one all-reduce, then divide by the world size."""
    y = x.clone()
    dist.all_reduce(y, op=dist.ReduceOp.SUM)
    return y / dist.get_world_size()


AVERAGE = register(Exercise(
    id="00.average", level="core", title="average a tensor across ranks",
    student_name="my_average",
    task="Rank r holds x = (r+1)·[0, 1, 2, 3]. Write `my_average(x)` so that **every** "
         "rank returns the element-wise mean over all ranks, with one collective.",
    hints=("Every rank must end with the same tensor, built from every rank's x: that "
           "is what one all-reduce does.",
           "`dist.all_reduce(t)` sums t in place over the ranks; a mean is that sum "
           "divided by how many ranks contributed.",
           "The number of ranks is `dist.get_world_size()`; divide after the all-reduce, "
           "on every rank."),
    inputs=_values, reference=average_reference,
    forbidden={"companion.basics.average_across_ranks_reference":
               "it is the package's solution to this exercise",
               "companion.learning.nb00.average_reference":
               "it is the package's solution to this exercise"},
    pattern=counts({"all_reduce": 1}, why="one collective is enough"),
    context="import torch\nimport torch.distributed as dist\nimport companion",
))


# ---- 00.broadcast -------------------------------------------------------------------
def _own_values(rank: int, world_size: int) -> tuple:
    return ((rank + 1.0) * torch.tensor([3.0, 1.0, 4.0]),)


def broadcast_reference(x: torch.Tensor) -> torch.Tensor:
    """Every rank returns rank 0's x; the caller's x is left alone."""
    y = x.clone()
    dist.broadcast(y, src=0)
    return y


BROADCAST = register(Exercise(
    id="00.broadcast", level="warm-up", title="start every rank from rank 0's tensor",
    student_name="my_broadcast",
    task="Rank r holds x = (r+1)·[3, 1, 4]. Write `my_broadcast(x)` so that **every** rank "
         "returns rank 0's x, with one collective, without changing the x it was given "
         "(DDP, PyTorch's DistributedDataParallel, starts this way: rank 0's initial weights "
         "are copied to every replica).",
    hints=("One rank has the data and every rank needs it: that is a broadcast, the "
           "collective whose source is a single rank.",
           "Collectives work in place: the tensor you hand over is overwritten on the "
           "receiving ranks. Hand over a copy.",
           "`dist.broadcast(t, src=0)` copies rank 0's t into t on every rank."),
    inputs=_own_values, reference=broadcast_reference, pure=True,
    forbidden={"companion.learning.nb00.broadcast_reference":
               "it is the package's solution to this exercise",
               "torch.distributed.broadcast_object_list":
               "it pickles Python objects; broadcast the tensor itself"},
    pattern=counts({"broadcast": 1}, why="one rank sends, all receive: one broadcast"),
    context="import torch\nimport torch.distributed as dist\nimport companion",
))


# ---- 00.healthy-average -------------------------------------------------------------
SICK_RANK = 1   # as in the notebook's failure demo, rank 1's gradients went bad


def _sick_values(rank: int, world_size: int) -> tuple:
    x = (rank + 1.0) * torch.arange(4.0)
    if rank == SICK_RANK:
        x[2] = float("inf")   # an overflow (an infinity, not a NaN: see the pure check)
    return (x,)


def healthy_average_reference(x: torch.Tensor) -> torch.Tensor:
    """Mean over the ranks whose x is all finite: one all-reduce of the zeroed values
    with a healthy-rank count appended. Every rank takes part, healthy or not."""
    healthy = bool(torch.isfinite(x).all())
    packed = torch.cat([x if healthy else torch.zeros_like(x),
                        torch.tensor([1.0 if healthy else 0.0])])
    dist.all_reduce(packed, op=dist.ReduceOp.SUM)
    return packed[:-1] / packed[-1]


def _at_most_two(rank, world_size, calls):
    if len(calls) > 2:
        return (f"{len(calls)} all-reduces; the values and the count of healthy ranks need "
                "two at most (one, if the count travels in the same tensor)")
    return None


HEALTHY_AVERAGE = register(Exercise(
    id="00.healthy-average", level="stretch", title="average, skipping a rank that overflowed",
    student_name="my_healthy_average",
    task=f"Rank r holds x = (r+1)·[0, 1, 2, 3], except that rank {SICK_RANK}'s x overflowed "
         "to an infinity. "
         "Write `my_healthy_average(x)` so that every rank returns the mean over the ranks "
         "whose x is all finite (a rank with a NaN or an infinity contributes nothing and is "
         "not counted), without changing x. Every rank, healthy or not, must make the same "
         "collective calls: a rank that skips one leaves the others waiting (section 4).",
    hints=("A mean over a subset of ranks is (sum of their values) / (how many there are). "
           "Both can be summed over all ranks if an unhealthy rank contributes zero to each.",
           "Careful: inf x 0 and NaN x 0 are NaN, so multiplying x by a 0/1 flag does not "
           "remove them. Replace the tensor instead (e.g. torch.zeros_like, or torch.where).",
           "`torch.isfinite(x).all()` says whether this rank is healthy. Append the 0/1 "
           "count to the values (torch.cat) and one all-reduce sums both."),
    inputs=_sick_values, reference=healthy_average_reference, pure=True,
    forbidden={"companion.learning.nb00.healthy_average_reference":
               "it is the package's solution to this exercise",
               "torch.distributed.all_gather":
               "gathering every rank's tensor moves N times the data; the sum can skip a rank",
               "torch.distributed.all_gather_object":
               "gathering every rank's tensor moves N times the data; the sum can skip a rank"},
    pattern=all_of(only("all_reduce", why="a sum over ranks is an all-reduce"),
                   per_rank(_at_most_two)),
    context="import torch\nimport torch.distributed as dist\nimport companion",
))
