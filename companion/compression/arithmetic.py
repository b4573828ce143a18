"""Compression-ratio arithmetic for the lecture's models (L20 p.49-51).

Taught in notebook 07 (``notebooks/07_gradient_compression.ipynb``).

The lecture reports AlexNet's gradient shrinking from 232.56 MB to 0.39 MB (597x) and
another network at 277x at 99.9% sparsity, and asks why not 1000x. The parameter
counts are rebuilt here layer by layer from the architectures (original two-GPU Caffe
AlexNet with grouped convolutions; ResNet-50 with batch norm), so the notebook can
recompute the ratios under different wire formats:

* every sparse entry costs a value *and* an index (32-bit value + 32-bit index is 8 B,
  so 1000x fewer entries is only 500x fewer bytes);
* vectors (biases, batch-norm scales and shifts) are not pruned and go dense.

The lecture's "MB" is MiB, 2**20 bytes (AlexNet's 60,965,224 fp32 numbers are 232.56
MiB); the course otherwise counts decimal bytes (:mod:`companion.units`).

A 16-bit index names one of 65,536 positions, fewer than most of AlexNet's tensors hold
(fc6 has 37.7M entries), so a 16-bit format cannot be absolute: it is *relative* (each
index the gap from the previous kept entry, with an escape word for a gap of 2**16 or
more) or *blocked* (positions within blocks of 2**16 entries, each block headed by its
count). :func:`index_block_bytes` is what the blocks' headers add; it is also the most a
relative format's escapes can add, since a tensor's gaps sum to less than its size.
"""
from __future__ import annotations

import math

from ..units import MiB
from ..validation import fraction, positive_int

__all__ = ["alexnet_shapes", "resnet50_shapes", "split_counts", "sparse_bytes",
           "index_block_bytes", "MiB"]


def alexnet_shapes() -> list[tuple]:
    """Parameter shapes of Krizhevsky et al.'s AlexNet (conv2, conv4, conv5 in 2 groups)."""
    convs = [(96, 3, 11, 11), (256, 48, 5, 5), (384, 256, 3, 3), (384, 192, 3, 3), (256, 192, 3, 3)]
    fcs = [(4096, 256 * 6 * 6), (4096, 4096), (1000, 4096)]
    shapes = []
    for w in convs + fcs:
        shapes += [w, (w[0],)]
    return shapes


def resnet50_shapes() -> list[tuple]:
    """Parameter shapes of ResNet-50 (He et al.): convs without bias, BN gamma/beta, fc."""
    shapes = [(64, 3, 7, 7), (64,), (64,)]
    width_in = 64
    for width, blocks in ((64, 3), (128, 4), (256, 6), (512, 3)):
        for b in range(blocks):
            out = 4 * width
            for conv in ((width, width_in, 1, 1), (width, width, 3, 3), (out, width, 1, 1)):
                shapes += [conv, (conv[0],), (conv[0],)]
            if b == 0:  # projection shortcut
                shapes += [(out, width_in, 1, 1), (out,), (out,)]
            width_in = out
    return shapes + [(1000, 2048), (1000,)]


def split_counts(shapes: list[tuple]) -> tuple[int, int]:
    """(numbers in tensors with >= 2 dims, numbers in vectors)."""
    matrices = sum(math.prod(s) for s in shapes if len(s) >= 2)
    vectors = sum(math.prod(s) for s in shapes if len(s) < 2)
    return matrices, vectors


def sparse_bytes(shapes: list[tuple], density: float, value_bytes: int = 4, index_bytes: int = 4,
                 prune_vectors: bool = False) -> int:
    """Bytes of one sparse gradient: ``ceil(density * numel)`` (value, index) pairs per
    pruned tensor; unpruned vectors cost ``value_bytes`` per number."""
    fraction("density", density, "99.9% sparsity is density=0.001.")
    total = 0
    for s in shapes:
        numel = math.prod(s)
        if len(s) >= 2 or prune_vectors:
            total += math.ceil(density * numel) * (value_bytes + index_bytes)
        else:
            total += numel * value_bytes
    return total


def index_block_bytes(shapes: list[tuple], index_bits: int = 16, header_bytes: int = 2,
                      prune_vectors: bool = False) -> int:
    """What a blocked ``index_bits`` index format adds to :func:`sparse_bytes`: one
    ``header_bytes`` count per block of ``2**index_bits`` entries of each pruned tensor.

    The same number bounds a relative (gap) format's escape words of ``header_bytes``
    each: a tensor of ``n`` entries has at most ``ceil(n / 2**index_bits)`` gaps that
    long. Tensors of at most ``2**index_bits`` entries need no header (one block, whose
    count is k, known to every rank).
    """
    positive_int("index_bits", index_bits, "16-bit indices are index_bits=16.")
    positive_int("header_bytes", header_bytes, "a 16-bit count is header_bytes=2.")
    span, total = 2**index_bits, 0
    for s in shapes:
        numel = math.prod(s)
        if (len(s) >= 2 or prune_vectors) and numel > span:
            total += header_bytes * math.ceil(numel / span)
    return total
