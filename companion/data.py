"""Small real data with checksums, and deterministic per-rank shards.

Used from notebook 02 on. Two data sets, both tiny enough for a laptop:

* **digits**: scikit-learn's 1,797 handwritten 8x8 digits (shipped inside
  scikit-learn), 64 features scaled to [0, 1], 10 classes. For the MLP experiments.
* **corpus**: ``corpus.txt``, a few kilobytes of English prose written for this
  project, as characters. For the tiny transformer.

Each load is checked against ``SHA256SUMS`` so that a changed file (or a changed
scikit-learn copy of digits) fails loudly instead of silently changing every result.
The files live in the repository's top-level ``data/`` with their checksums; a wheel
carries them as the package folder ``companion/_data/`` (``setup.py`` maps one onto the
other), read with :mod:`importlib.resources`, so they are found wherever the package is
installed: a clone, a wheel in site-packages (Colab, Binder), or a zip.

Sharding follows data parallelism's contract: the global batch for step ``t`` is the
same whatever the world size, and rank ``r`` takes the ``r``-th contiguous slice of it,
so concatenating the ranks' slices in rank order gives the single-process batch.
"""
from __future__ import annotations

import functools
import hashlib
import os
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from . import runtime
from .validation import nonnegative_int, positive_int

if TYPE_CHECKING:  # importlib.resources.abc is 3.11+; the package supports 3.10
    from importlib.abc import Traversable

__all__ = ["data_dir", "load_digits", "load_corpus", "CharCorpus", "global_batch_indices",
           "shard", "digits_batch", "verify_checksums"]


def data_dir() -> Path | Traversable:
    """The folder of the shipped data: the folder named by ``COMPANION_DATA`` (tests use it
    to plant a changed file), else the clone's ``data/``, else the installed package's
    ``_data/``. Every answer supports ``/``, ``read_bytes()`` and ``read_text()``."""
    override = os.environ.get("COMPANION_DATA")
    if override:
        return Path(override)
    clone = Path(__file__).resolve().parent.parent / "data"
    if (clone / "SHA256SUMS").is_file():  # a clone or an editable install
        return clone
    # A wheel's files may sit in a zip, and the repository's top-level folders never
    # reach site-packages: ask importlib.resources for the copy inside the package.
    return resources.files("companion") / "_data"


def _read(name: str) -> bytes:
    try:
        return (data_dir() / name).read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{name} is missing from {data_dir()}. The package data did not install: "
            "reinstall the package (pip install --force-reinstall --no-deps <the repository>), "
            "or unset COMPANION_DATA if it points elsewhere.") from None


def _expected_checksums() -> dict[str, str]:
    sums = {}
    for line in _read("SHA256SUMS").decode("utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split()
            sums[name] = digest
    return sums


def _check(name: str, payload: bytes) -> None:
    expected = _expected_checksums().get(name)
    actual = hashlib.sha256(payload).hexdigest()
    if expected != actual:
        raise RuntimeError(f"checksum mismatch for {name}: expected {expected}, got {actual}. "
                           "The data changed; restore it (git checkout data/) or, if "
                           "the change is intended, update data/SHA256SUMS.")


def load_digits() -> tuple[torch.Tensor, torch.Tensor]:
    """Digits as ``(X float32 [1797, 64] in [0, 1], y int64 [1797])``, checksum-verified."""
    from sklearn.datasets import load_digits as sk_digits

    raw = sk_digits()
    x = np.ascontiguousarray(raw.data, dtype=np.float32) / 16.0  # pixel values are 0..16
    y = np.ascontiguousarray(raw.target, dtype=np.int64)
    _check("digits", x.tobytes() + y.tobytes())
    return torch.from_numpy(x), torch.from_numpy(y)


def load_corpus() -> str:
    """The text of the shipped ``corpus.txt``, checksum-verified."""
    payload = _read("corpus.txt")
    _check("corpus.txt", payload)
    return payload.decode("utf-8")


class CharCorpus:
    """Character-level view of the corpus: a vocabulary and (input, target) windows."""

    def __init__(self, text: str | None = None):
        self.text = load_corpus() if text is None else text
        self.vocab = sorted(set(self.text))
        self.stoi = {c: i for i, c in enumerate(self.vocab)}
        # Kept on the CPU: a batch is gathered from it there and moved to the rank's device.
        self.ids = torch.tensor([self.stoi[c] for c in self.text], dtype=torch.long,
                                device="cpu")

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)

    def batch(self, step: int, batch_size: int, seq_len: int, seed: int = 0, device=None):
        """Global batch ``(inputs, targets)`` of shape ``[batch_size, seq_len]`` for ``step``,
        on ``device`` (default: :func:`companion.runtime.device`, the rank's own device)."""
        nonnegative_int("step", step, "pass the training step, counting from 0.")
        positive_int("batch_size", batch_size, "pass the number of windows, e.g. batch_size=8.")
        positive_int("seq_len", seq_len, f"pass a window length in 1..{len(self.ids) - 1}.")
        if seq_len >= len(self.ids):
            raise ValueError(f"seq_len must be in 1..{len(self.ids) - 1}, got {seq_len}.")
        gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
        starts = torch.randint(0, len(self.ids) - seq_len, (batch_size,), generator=gen,
                               device="cpu")
        offsets = torch.arange(seq_len, device="cpu")
        x = self.ids[starts[:, None] + offsets]
        y = self.ids[starts[:, None] + offsets + 1]
        where = runtime.device() if device is None else device
        return x.to(where), y.to(where)


def global_batch_indices(n: int, batch_size: int, step: int, seed: int = 0) -> torch.Tensor:
    """Indices of the global batch for ``step``: a fresh permutation every epoch.

    Depends only on (n, batch_size, step, seed), never on the world size, which is what
    makes a data-parallel run comparable with the single-process one.
    """
    positive_int("n", n, "pass the data set's size.")
    positive_int("batch_size", batch_size, f"pass a batch size in 1..{n}.")
    nonnegative_int("step", step, "pass the training step, counting from 0.")
    if batch_size > n:
        raise ValueError(f"batch_size must be in 1..{n}, got {batch_size}.")
    per_epoch = n // batch_size
    epoch, within = divmod(step, per_epoch)
    return _epoch_permutation(n, seed, epoch)[within * batch_size:(within + 1) * batch_size]


@functools.lru_cache(maxsize=256)
def _epoch_permutation(n: int, seed: int, epoch: int) -> torch.Tensor:
    # Cached: notebook 07's lockstep runs ask for dozens of batches per step, and a
    # fresh generator and permutation each time cost more than the step's arithmetic.
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1_000_003 + epoch),
                          device="cpu")
    return perm


def shard(batch: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Rank ``rank``'s contiguous slice of a global batch (dimension 0)."""
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"need 0 <= rank < world_size, got rank={rank}, world_size={world_size}.")
    if batch.shape[0] % world_size:
        raise ValueError(f"global batch of {batch.shape[0]} does not split evenly over "
                         f"{world_size} ranks; use a batch size that is a multiple of {world_size}.")
    per_rank = batch.shape[0] // world_size
    return batch[rank * per_rank:(rank + 1) * per_rank]


def digits_batch(step: int, batch_size: int, rank: int = 0, world_size: int = 1,
                 seed: int = 0, data=None, device=None):
    """``(x, y)`` for this rank at ``step``: its shard of the global digits batch, on
    ``device`` (default: :func:`companion.runtime.device`, the rank's own device). The
    digits and the batch's indices stay on the CPU; only the shard moves."""
    positive_int("batch_size", batch_size, "pass the global batch size, e.g. batch_size=64.")
    x, y = load_digits() if data is None else data
    idx = shard(global_batch_indices(len(y), batch_size, step, seed), rank, world_size)
    idx = idx.to(x.device)
    where = runtime.device() if device is None else device
    return x[idx].to(where), y[idx].to(where)


def verify_checksums() -> dict[str, bool]:
    """Check every shipped data set; returns ``{name: True}`` or raises RuntimeError."""
    load_digits()
    for name in _expected_checksums():
        if name != "digits":  # the others are shipped files, checked byte for byte
            _check(name, _read(name))
    return {name: True for name in _expected_checksums()}
