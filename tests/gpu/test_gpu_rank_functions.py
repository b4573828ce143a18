"""Notebook 00's and 03's rank functions on a machine with a GPU, and the CPU-only lessons.

The package's ranks compute on ``companion.runtime.device()``: their own GPU under NCCL,
else the CPU. A few lessons stay on the CPU on every machine (``CPU_ONLY``: they time
loopback or emulate a node or a link, and say so in the launch banner). This module
checks three things:

1. notebook 00's first experiments run on cuda:0 at world size 1 under NCCL, and notebook
   03's trainings there end where the same training on the CPU ends;
2. the notebook cells that launch ONE rank with the launcher's default backend ("auto",
   which picks NCCL as soon as one GPU is visible) still work on such a machine;
3. every CPU-only rank function runs under ``backend="auto"`` on gloo where CUDA is
   visible.

Where every other rank function computes is checked by ``test_gpu_placement.py``; that
every experiment is in exactly one table, by ``tests/test_gpu_tables.py`` on every machine.

Time on one GPU (estimates; not measured): (1) ~40 s (three NCCL launches; eight small
trainings), (2) ~30 s (four launches plus two gloo references), (3) five gloo launches of
1-5 s each. Whole module ~1.5 min.
"""
from __future__ import annotations

import math

import pytest
import torch

import companion
from companion import experiments, launcher
from gpu_setup import BACKEND, DEVICE, MODE, skip_without_cuda
from gpu_tables import CPU_ONLY

skip_without_cuda()

TIMEOUT = 180.0


# ---- 1. the device-aware rank functions on cuda:0 ------------------------------------
def test_whoami_and_first_all_reduce_on_the_gpu():
    (who,) = companion.launch(experiments.get("whoami").fn, world_size=1, backend=BACKEND,
                              timeout=TIMEOUT)
    assert who["backend"] == BACKEND and who["device"] == DEVICE, who
    (red,) = companion.launch(experiments.get("all_reduce").fn, world_size=1, backend=BACKEND,
                              timeout=TIMEOUT)
    assert red == {"rank": 0, "before": 1.0, "after": 1.0}


STRATEGIES = ("single", "ddp", "zero1", "zero2", "fsdp", "torch_ddp", "torch_zero1",
              "torch_fsdp2")


def test_notebook_03_trainings_on_the_gpu_end_where_the_cpu_ends():
    from companion.data_parallel.runs import train, train_many

    configs = [dict(strategy=s, dtype="float64", steps=3) for s in STRATEGIES]
    (runs,) = companion.launch(train_many, configs, world_size=1, backend=BACKEND,
                               timeout=TIMEOUT)
    cpu = train(strategy="single", dtype="float64", steps=3)  # this process, on the CPU
    for run in runs:
        s = run["strategy"]
        if MODE == "cuda":
            assert run["held"]["cuda_allocated"] > 0, s  # the states really live on the GPU
        assert all(math.isfinite(x) for x in run["losses"]), s
        # float64 on both sides; the GPU's kernels sum in another order than the CPU's
        # (cuBLAS vs. MKL), ~1e-16 relative per operation, and AdamW's division by
        # sqrt(v) + eps amplifies that in the first steps: 1e-8 leaves four orders of
        # magnitude above what was seen between orders of summation on the CPU (test_zero:
        # 1e-9 atol between ranks) and is far below any real mistake (lr 1e-2 steps).
        assert run["losses"] == pytest.approx(cpu["losses"], abs=1e-8), s
        for name, p in run["params"].items():
            assert torch.allclose(p, cpu["params"][name], rtol=0, atol=1e-8), (s, name)


# ---- 2. notebook cells that launch one rank with backend="auto" ------------------------
def _nb00_first_all_reduce():  # notebook 00: companion.basics.launch_overhead((1, ...))
    from companion.basics import first_all_reduce
    return first_all_reduce, {}


def _nb03_train_many():  # notebook 03: train_many(MEASURE) for n in WORLD_SIZES, n = 1 first
    from companion.data_parallel.runs import train_many
    return train_many, {"configs": [dict(strategy=s, steps=1, d_model=64, freeze=False)
                                    for s in ("ddp", "zero1", "zero2", "fsdp")]}


def _nb05_tp_at_t_1():  # notebook 05: `for t in (1, 2, 4): launch(call_many, ...)`
    from companion import tensor_parallel as tp
    return experiments.call_many, {"calls": [(tp.compare_with_reference, {"kind": k})
                                    for k in ("mlp", "attention", "block")]}


def _nb07_densification_at_n_1():  # notebook 07: `for n in [1, 2, 4, 8]: launch(densification...`
    from companion.compression import densification
    return densification, {"steps": 15, "density": 0.001}


WORLD_SIZE_1_CELLS = {"00-first-all-reduce": _nb00_first_all_reduce,
                      "03-train-many": _nb03_train_many,
                      "05-tp-at-t-1": _nb05_tp_at_t_1,
                      "07-densification-at-n-1": _nb07_densification_at_n_1}


def _plain(x):
    """Results with tensors turned into lists, so == compares values."""
    if isinstance(x, torch.Tensor):
        return x.tolist()
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items() if k not in ("timeline",)}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


@pytest.mark.parametrize("cell", list(WORLD_SIZE_1_CELLS))
def test_one_rank_notebook_cell_under_the_default_backend(cell):
    """On a one-GPU machine (Colab, a workstation) ``launch(fn, world_size=1)`` picks NCCL;
    the cell must still run there, on the GPU (``test_gpu_placement.py`` checks where)."""
    fn, kwargs = WORLD_SIZE_1_CELLS[cell]()
    try:
        (got,) = companion.launch(fn, world_size=1, timeout=TIMEOUT, **kwargs)
    except companion.LaunchError as err:
        pytest.fail(f"notebook cell {cell}: launch(world_size=1) under the default backend "
                    f"({launcher.last_launch.backend if launcher.last_launch else '?'}) "
                    f"failed on this machine: {str(err).splitlines()[0]}")
    assert launcher.last_launch.backend == (BACKEND if MODE == "cuda" else
                                            launcher.choose_backend("auto", 1)[0])
    if MODE == "cpu":  # the dry run: both launches are gloo on the CPU, so the same bits
        (ref,) = companion.launch(fn, world_size=1, backend="gloo", timeout=TIMEOUT, **kwargs)
        assert _plain(got) == _plain(ref)


# ---- 3. CPU-only rank functions under the default backend -------------------------------
@pytest.mark.parametrize("name", sorted(CPU_ONLY))
def test_cpu_only_rank_function_runs_on_gloo_under_auto(name):
    """``backend="auto"`` is what a notebook cell uses: a lesson marked ``cpu_by_design``
    runs on gloo even where there is a GPU per rank, and torch APIs that default to CUDA
    where it exists would show up here."""
    world_size, kwargs = CPU_ONLY[name]
    results = companion.launch(experiments.get(name).fn, world_size=world_size,
                               timeout=TIMEOUT, **kwargs)
    assert len(results) == world_size and results[0] is not None
    assert launcher.last_launch.backend == "gloo"
