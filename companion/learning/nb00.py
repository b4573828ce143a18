"""Notebook 00's exercises (``notebooks/00_launching_ranks.ipynb``): first collectives.

Exercise ids are "00.<name>"; :func:`companion.learning.exercise` fetches them.

* ``00.broadcast`` (warm-up): every rank ends with rank 0's tensor (one broadcast).
* ``00.average`` (core, the course's worked example): the mean over ranks (one all-reduce).
* ``00.healthy-average`` (stretch, a diagnosis): a given average that skips a rank whose
  tensor overflowed hangs, because that rank's collectives no longer line up with the
  others'; the fix takes the mean over the finite ranks with every rank making the same
  calls, in the same order, with tensors of the same size.
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
    id="00.average", level="core", kind="implement", title="average a tensor across ranks",
    student_name="my_average",
    task="Rank r holds x = (r+1)·[0, 1, 2, 3]. Write `my_average(x)` so that **every** "
         "rank returns the element-wise mean over all ranks, with one collective.",
    hints=("Every rank must end with the same tensor, built from every rank's x: that "
           "is what one all-reduce does.",
           "`dist.all_reduce(t)` sums t in place over the ranks; a mean is that sum "
           "divided by how many ranks contributed.",
           "Every rank can work out the divisor on its own, without a message: section 2's "
           "`greet` printed it. And the checker looks at what every rank returns, not only "
           "rank 0."),
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
    id="00.broadcast", level="warm-up", kind="implement",
    title="start every rank from rank 0's tensor",
    student_name="my_broadcast",
    task="Rank r holds x = (r+1)·[3, 1, 4]. Write `my_broadcast(x)` so that **every** rank "
         "returns rank 0's x, with one collective, without changing the x it was given "
         "(DDP, PyTorch's DistributedDataParallel, starts this way: rank 0's initial weights "
         "are copied to every replica).",
    hints=("One rank has the data and every rank needs it: which collective of section 3's "
           "table has a single source?",
           "Collectives work in place: the tensor you hand over is overwritten on the "
           "receiving ranks.",
           "The checker compares the caller's x before and after your function runs. "
           "Which tensor may the collective overwrite, then?"),
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


def _same_calls_everywhere(calls_per_rank, world_size):
    """Every rank issues the same collectives, in the same order, on tensors of the same
    size: collectives are matched by position, so any difference hangs or mixes data."""
    first = [(c.name, c.bytes) for c in calls_per_rank[0]]
    for rank, calls in enumerate(calls_per_rank[1:], start=1):
        mine = [(c.name, c.bytes) for c in calls]
        if mine != first:
            return (f"rank {rank} called {mine} and rank 0 called {first} (name, bytes); "
                    "every rank must make the same collective calls in the same order, "
                    "with tensors of the same size")
    return None


HEALTHY_AVERAGE = register(Exercise(
    id="00.healthy-average", level="stretch", kind="diagnose",
    title="fix the average that hangs when one rank overflowed",
    student_name="my_healthy_average",
    task=f"Rank r holds x = (r+1)·[0, 1, 2, 3], except that rank {SICK_RANK}'s x overflowed "
         "to an infinity. `broken_healthy_average(x)` in the notebook means to return, on "
         "every rank, the mean over the ranks whose x is all finite, the overflowed rank "
         "sitting the step out; on 4 ranks it never finishes. Find out why, then write "
         "`my_healthy_average(x)`: every rank, the overflowed one too, returns the mean "
         "over the ranks whose x is all finite (a rank with a NaN or an infinity "
         "contributes nothing and is not counted), and x is left unchanged. The checker "
         "allows only all-reduces, two at most, and checks that every rank makes the same "
         "calls, in the same order, with tensors of the same size.",
    hints=("Run the broken version and read what happens. Then write down, rank by rank, "
           "the collectives each one calls, in order, and the size of the tensor each "
           "time. Do the lists agree?",
           "Collectives are matched by their position in each rank's sequence, not by the "
           "variable they sum: rank 1's first all-reduce meets the others' first one. A "
           "rank with nothing to contribute must still take part, handing over something "
           "that leaves the sums unchanged.",
           "inf x 0 and NaN x 0 are NaN: multiplying x by a 0/1 flag does not remove an "
           "overflow, so the unhealthy rank's contribution must be built without its x. "
           "And the overflowed rank needs the mean too."),
    inputs=_sick_values, reference=healthy_average_reference, pure=True,
    forbidden={"companion.learning.nb00.healthy_average_reference":
               "it is the package's solution to this exercise",
               "torch.distributed.all_gather":
               "gathering every rank's tensor moves N times the data; the sum can skip a rank",
               "torch.distributed.all_gather_object":
               "gathering every rank's tensor moves N times the data; the sum can skip a rank"},
    pattern=all_of(only("all_reduce", why="a sum over ranks is an all-reduce"),
                   per_rank(_at_most_two), _same_calls_everywhere),
    timeout=10.0,
    context="import torch\nimport torch.distributed as dist\nimport companion",
))
