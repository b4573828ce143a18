"""What every run on a device mesh checks and measures: that the mesh fits the ranks
launched, and the gradient bytes DDP all-reduced on its group.

Taught in notebooks 09 (``notebooks/09_hybrid_parallelism.ipynb``) and 12
(``notebooks/12_auto_parallelism.ipynb``).
"""
from __future__ import annotations

from ..data_parallel.ddp import DDP

# Helpers of the mesh runs in this folder, not entry points of their own.
__all__: list[str] = []


def check_mesh(degrees: dict, world_size: int) -> None:
    """``degrees`` ({"DP": 2, "TP": 2}) must multiply to the number of ranks launched."""
    total = 1
    for value in degrees.values():
        total *= value
    if total != world_size:
        names = " x ".join(degrees)
        shape = "x".join(str(v) for v in degrees.values())
        raise ValueError(f"a {names} mesh of {shape} needs world_size={total}, "
                         f"not {world_size}; launch with world_size={total}.")


def ledger_bytes(ddp: DDP) -> float:
    """Payload bytes ``ddp`` handed to gradient all-reduces (its start-up broadcast excluded)."""
    return float(ddp.ledger.bytes(kind="all_reduce", wire=False))
