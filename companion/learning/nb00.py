"""Notebook 00's exercises (``notebooks/00_launching_ranks.ipynb``): first collectives.

Exercise ids are "00.<name>"; :func:`companion.learning.exercise` fetches them.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .exercise import Exercise, register
from .patterns import counts


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
