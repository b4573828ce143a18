"""The tiny transformer every hybrid run trains: its size, its single-process reference,
the checks of its arguments, and how the planner describes it.

Taught in notebooks 09 (``notebooks/09_hybrid_parallelism.ipynb``) and 12
(``notebooks/12_auto_parallelism.ipynb``, the 3D run).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import data, runtime
from ..models import TinyTransformer
from ..validation import positive_int, positive_number

__all__ = ["TRANSFORMER", "transformer_reference", "transformer_spec"]

TRANSFORMER = dict(d_model=32, n_heads=4, n_layers=2, max_seq_len=16)


def check_reference(steps, batch, lr) -> None:
    positive_int("steps", steps, "pass the number of SGD steps, e.g. steps=3.")
    positive_int("batch", batch, "pass the global batch size, e.g. batch=8.")
    positive_number("lr", lr, "pass a learning rate such as lr=0.5.")


def check_heads(tp) -> None:
    heads = TRANSFORMER["n_heads"]
    if heads % tp:
        raise ValueError(f"tp={tp} does not divide the model's {heads} attention heads; "
                         f"use a tp that divides {heads}.")


def transformer_reference(*, steps: int, batch: int, lr: float, seed: int = 0,
                          tie_weights: bool = True) -> dict:
    """Single-process training on the full batch: the reference for every hybrid run.

    After the last step each parameter's ``.grad`` still holds that step's gradient. It
    runs on :func:`companion.runtime.device`, the device of the rank it is compared with."""
    check_reference(steps, batch, lr)
    dev = runtime.device()
    corpus = data.CharCorpus()
    model = TinyTransformer(vocab_size=corpus.vocab_size, tie_weights=tie_weights, seed=seed,
                            **TRANSFORMER).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        x, y = corpus.batch(step, batch, TRANSFORMER["max_seq_len"], seed, device=dev)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "params": dict(model.named_parameters()), "model": model}


def transformer_spec(tied: bool):
    """The tiny transformer as the planner sees it (biases, LayerNorms, learned
    positions; ``tied`` for DP x TP, untied for pipeline stages)."""
    from ..planner import ModelSpec

    if not isinstance(tied, bool):
        raise TypeError(f"tied must be True (DP x TP: one embedding table for input and "
                        f"output) or False (pipeline stages), got {tied!r}.")
    cfg = TRANSFORMER
    return ModelSpec("tiny", layers=cfg["n_layers"], hidden=cfg["d_model"], heads=cfg["n_heads"],
                     seq_len=cfg["max_seq_len"], vocab=data.CharCorpus().vocab_size,
                     tied_embeddings=tied, biases=True, layernorm=True, learned_positions=True)
