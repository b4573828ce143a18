"""The model of exercise ``03.fsdp-forward``, taught in notebook 03
(``notebooks/03_zero_memory.ipynb``): three tanh layers whose weights every rank holds
only as zero-padded shards (``companion.data_parallel.zero``'s layout), and a
:class:`Layers` callable that counts how many full weights are alive at each call.
The exercise itself is registered in :mod:`.nb03`.
"""
from __future__ import annotations

import time
import weakref

import torch

# Pieces of notebook 03's exercises: companion.learning.nb03 imports them; students call
# exercise("03.fsdp-forward").check(...), so nothing here is public API.
__all__: list[str] = []

LAYER_SHAPES = ((6, 5), (7, 6), (3, 7))   # (out, in): 30, 42, 21 elements, none divisible by 4
BATCH = 2
GRACE_S = 0.25   # see Layers._alive


def layer_weights():
    """The input batch and the three full weights, deterministic, in float64."""
    g = torch.Generator().manual_seed(2304_11277)  # the PyTorch FSDP paper's arXiv number
    x = torch.randn(BATCH, LAYER_SHAPES[0][1], generator=g, dtype=torch.float64)
    ws = [torch.randn(s, generator=g, dtype=torch.float64) / s[1] ** 0.5 for s in LAYER_SHAPES]
    return x, ws


def shard_of(weight: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Rank ``rank``'s chunk of the flattened weight, zero-padded: companion.data_parallel.zero's layout."""
    c = -(-weight.numel() // world_size)
    flat = torch.nn.functional.pad(weight.reshape(-1), (0, c * world_size - weight.numel()))
    return flat[rank * c:(rank + 1) * c].clone()


class Layers:
    """The model's layers, ``layers(i, x, weight) = tanh(x @ weight.T)``, which also count
    how many full weights handed to them are still alive (not freed) at each call."""

    def __init__(self, shapes=LAYER_SHAPES):
        self.shapes = tuple(tuple(s) for s in shapes)
        self.calls = 0
        self.most_alive = 0
        self._seen = []   # weak references: holding them must not keep a weight alive

    def _alive_now(self) -> int:
        ptrs = set()
        for ref in self._seen:
            t = ref()
            if t is not None and t.untyped_storage().nbytes() > 0:
                ptrs.add(t.untyped_storage().data_ptr())
        return len(ptrs)

    def _alive(self) -> int:
        """Full weights still alive: dropped by the student (no reference left) or freed
        in place (storage resized to 0, as torch's FSDP does) count as gone. gloo's worker
        thread may hold an all-gather's output a moment after the call returned, so a
        count above 1 is re-read for up to GRACE_S before it is believed."""
        deadline = time.monotonic() + GRACE_S
        alive = self._alive_now()
        while alive > 1 and time.monotonic() < deadline:
            time.sleep(0.001)
            alive = self._alive_now()
        return alive

    def __call__(self, i: int, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if not 0 <= i < len(self.shapes):
            raise IndexError(f"layer {i} does not exist: the model has {len(self.shapes)} "
                             "layers, 0 to " + str(len(self.shapes) - 1))
        if tuple(weight.shape) != self.shapes[i]:
            raise ValueError(f"layer {i} needs a weight of shape {self.shapes[i]}, got "
                             f"{tuple(weight.shape)}")
        base = weight._base if weight._base is not None else weight
        self._seen.append(weakref.ref(base))
        self.calls += 1
        self.most_alive = max(self.most_alive, self._alive())
        return torch.tanh(x @ weight.T)
