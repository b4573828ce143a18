"""Learning-rate schedules shared by the training loops of notebooks 07 and 08.

Taught in notebook 07 (``notebooks/07_gradient_compression.ipynb``), where the compressed
runs first need a schedule; notebook 08's delayed-averaging runs (``companion.dga``) train
with the same one, so the comparison between the two notebooks is like for like.
"""
from __future__ import annotations

import math

from ..validation import positive_int

__all__ = ["lr_at", "SCHEDULES"]

SCHEDULES = ("constant", "cosine")


def lr_at(lr: float, step: int, steps: int, schedule: str = "constant") -> float:
    """Learning rate of ``step``: constant, or cosine-decayed to zero over ``steps``.

    A decay lets noisy updates settle: DGA's corrected steps (notebook 08) and DGC's
    late lumps of accumulated velocity (notebook 07) would otherwise leave the final
    accuracy mid-swing.
    """
    positive_int("steps", steps, "pass the length of the run in steps, e.g. steps=300.")
    if schedule == "constant":
        return lr
    if schedule == "cosine":
        return 0.5 * lr * (1 + math.cos(math.pi * step / steps))
    raise ValueError(f"schedule must be 'constant' or 'cosine', got {schedule!r}.")
