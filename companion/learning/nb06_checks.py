"""Counting the arithmetic a student's attention does: notebook 06's causal ring must skip
the K/V blocks the mask hides entirely, and values alone cannot tell a skipped block from
one computed and then masked away.

Used by :mod:`companion.learning.nb06` (``notebooks/06_sequence_parallelism.ipynb``).
:class:`MatmulFlops` is a ``TorchFunctionMode``: it sees every matrix product issued
through torch's Python API (``@``, ``matmul``, ``mm``, ``bmm``, ``baddbmm``, ``einsum``,
``scaled_dot_product_attention``), however the student spells it, and adds its
multiply-adds. A dispatch-level counter (``torch.utils.flop_counter``) would also see
products written as library calls, but its first use costs a fresh rank seconds; code
that writes a product as an elementwise multiply and a sum is not counted.
"""
from __future__ import annotations

import math

import torch
from torch.overrides import TorchFunctionMode

# Pieces of notebook 06's exercises: companion.learning.nb06 imports them; students call
# exercise("06.ring-attention").check(...), so nothing here is public API.
__all__: list[str] = []

_PRODUCTS = {"matmul", "__matmul__", "mm", "bmm"}


def _einsum_flops(equation: str, operands, out) -> int:
    """2 x (output entries) x (sizes of the summed-over letters)."""
    inputs = equation.replace(" ", "").split("->")[0].split(",")
    sizes = {}
    for letters, t in zip(inputs, operands):
        sizes.update(zip(letters, t.shape))
    summed = set("".join(inputs)) - set(equation.split("->")[1]) if "->" in equation else set()
    return 2 * out.numel() * math.prod(sizes[c] for c in summed)


class MatmulFlops(TorchFunctionMode):
    """``with MatmulFlops() as f: ...``; ``f.flops`` is the multiply-adds of every matrix
    product inside, times 2."""

    def __init__(self):
        super().__init__()
        self.flops = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        try:
            if name in _PRODUCTS and isinstance(out, torch.Tensor):
                self.flops += 2 * out.numel() * args[0].shape[-1]
            elif name in ("baddbmm", "addmm") and isinstance(out, torch.Tensor):
                self.flops += 2 * out.numel() * args[1].shape[-1]
            elif name == "einsum" and isinstance(out, torch.Tensor):
                operands = args[1] if len(args) == 2 and isinstance(args[1], (list, tuple)) \
                    else args[1:]
                self.flops += _einsum_flops(args[0], operands, out)
            elif name == "scaled_dot_product_attention":
                self.flops += 4 * args[0].numel() * args[1].shape[-2]
        except (AttributeError, IndexError, KeyError, TypeError):
            pass   # an unusual call form: counted as nothing rather than breaking the run
        return out
