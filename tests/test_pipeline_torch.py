"""Our executor and torch.distributed.pipelining compute the same step, bit for bit."""
from __future__ import annotations

import torch

import companion
from companion.data import digits_batch
from companion.pipeline import run_pipeline
from companion.pipeline.torch_reference import run_torch_pipelining


def test_matches_torch_pipelining_1f1b():
    batch = digits_batch(0, 32)
    theirs = companion.launch(run_torch_pipelining, world_size=2, schedule="1f1b", batch=batch,
                              timeout=120)
    ours = companion.launch(run_pipeline, world_size=2, schedule="1f1b", batch=batch)
    for t, o in zip(theirs, ours):
        for vs, grads in t["grads"].items():
            for key, g in grads.items():
                # exact: both sum the same per-micro-batch terms in micro-batch order
                assert torch.equal(g, o["grads"][vs][key]), (vs, key)
                assert torch.equal(t["params"][vs][key], o["params"][vs][key])
    assert theirs[-1]["losses"] == ours[-1]["losses"]
