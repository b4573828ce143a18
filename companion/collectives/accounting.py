"""How many bytes one rank sends in a ring collective: the package's single formula.

Taught in notebook 01 (``notebooks/01_collectives.ipynb``), where the ring all-reduce is
built and its traffic measured; every later count of communication (ZeRO and FSDP in 03,
tensor and sequence parallelism in 05-06, the overlap model in 10, the topology checks
in 11, the cheat-sheet) calls :func:`ring_bytes` rather than restating it.
"""
from __future__ import annotations

import math
import numbers

__all__ = ["ring_bytes"]

# kind -> how many times (N - 1) / N of the buffer one rank sends; None: the buffer once
_RINGS = {"all_reduce": 2,        # a reduce-scatter, then an all-gather
          "all_gather": 1, "reduce_scatter": 1,
          "all_to_all": 1,        # every piece but the rank's own leaves
          "broadcast": None,      # a ring (pipeline) broadcast forwards it once
          "send": None}


def ring_bytes(kind: str, nbytes, world_size: int) -> float:
    """Bytes one rank sends for a ring ``kind`` collective over ``world_size`` = N ranks.

    ``nbytes`` is the full logical buffer, the unsharded size: an all-reduce's tensor, an
    all-gather's output, a reduce-scatter's input, an all-to-all's whole local input, a
    broadcast's or a send's tensor. Callers holding a per-rank piece multiply it by N
    first. All-gather, reduce-scatter and all-to-all send (N - 1) / N of it, all-reduce
    2 (N - 1) / N, broadcast and send 1x. On N = 1 nothing leaves the rank: 0.
    """
    if kind not in _RINGS:
        raise ValueError(f"kind must be one of {sorted(_RINGS)}, got {kind!r}; pass the "
                         "collective's name, e.g. 'all_reduce'.")
    if (isinstance(world_size, bool) or not isinstance(world_size, numbers.Integral)
            or world_size < 1):
        raise ValueError(f"world_size must be an integer >= 1 (the ranks in the group), got "
                         f"{world_size!r}; pass e.g. world_size=4.")
    if (isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Real)
            or not math.isfinite(nbytes) or nbytes < 0):
        raise ValueError(f"nbytes must be a finite number >= 0 (the full buffer's bytes), got "
                         f"{nbytes!r}; pass e.g. tensor.numel() * tensor.element_size().")
    n, times = int(world_size), _RINGS[kind]
    if n == 1:
        return 0.0
    # whole numbers first, one division last: exact whenever the answer is whole
    return float(nbytes) if times is None else times * nbytes * (n - 1) / n
