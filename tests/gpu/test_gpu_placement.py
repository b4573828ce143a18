"""Every rank function the notebooks launch computes on the rank's device.

Each one runs under ``companion.learning.placement.audit``: every module with weights must have
been moved to ``companion.runtime.device()`` before its forward, every tensor the package
makes must name its device, and every float tensor handed to a collective must be on the
rank's device. On a GPU machine that device is cuda:r under NCCL; in the dry run
(``COMPANION_GPU_CHECK_DEVICE=cpu``, which CI runs) it is the CPU, where the first two
checks still tell a function that follows the device from one that would stay behind.

With fewer GPUs than a function's world size, it runs on as many as there are when it
accepts that world size; otherwise it is skipped, naming the GPUs it needs.

Time: the dry run ~1-2 s per function (about 35 of them); on one GPU about the same, most
at world size 1 (estimates for the GPU; not measured, no GPU was lent when written).
"""
from __future__ import annotations

import functools
import importlib

import pytest

import companion
from companion import experiments
from companion.learning import placement
from gpu_setup import DEVICE, GPUS, MODE, skip_without_cuda
from gpu_tables import DEVICE_AWARE, UNREGISTERED

skip_without_cuda()

TIMEOUT = 180.0


def _resolve(target: str):
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def _kwargs(value):
    """The table's keyword arguments, with "module:function" calls of call_many resolved."""
    if isinstance(value, dict) and "calls" in value:
        return {**value, "calls": [(_resolve(fn), kw) for fn, kw in value["calls"]]}
    return value


def _unregistered(target, world_size, kwargs, args=()):
    fn = functools.partial(_resolve(target), *args) if args else _resolve(target)
    return fn, world_size, _kwargs(kwargs)


def _runs(table):
    return {name: ((experiments.get(name).fn, *entry) if ":" not in name
                   else _unregistered(name, *entry)) for name, entry in table.items()}


RUNS = {**_runs(DEVICE_AWARE), **_runs(UNREGISTERED)}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_rank_function_computes_on_the_ranks_device(name):
    fn, world_size, kwargs = RUNS[name]
    if MODE == "cuda":
        world_size = min(world_size, GPUS)
    try:
        reports = companion.launch(placement.audit, fn, kwargs, world_size=world_size,
                                   timeout=TIMEOUT)
    except ValueError as err:  # refused before any rank started: not this many ranks
        if MODE == "cuda" and world_size < RUNS[name][1]:
            pytest.skip(f"needs {RUNS[name][1]} GPUs at this size ({err})")
        raise
    for rank, report in enumerate(reports):
        expected = DEVICE.replace("cuda:0", f"cuda:{rank}")
        assert report["device"] == expected, (name, rank, report)
        assert report["problems"] == [], (name, rank, report["problems"])
    # something was checked: a model ran forward, or tensors went to a collective
    # (whoami only reports the rank's identity and device)
    if name != "whoami":
        assert sum(r["modules"] + r["collective_tensors"] for r in reports) > 0, name

