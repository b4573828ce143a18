"""``companion.launch`` with one rank on the GPU: NCCL, cuda:0, errors, the CLI.

Time on one GPU (estimates; not measured, no GPU was available when written): the first
launch pays for the forkserver (imports torch, ~5-10 s); each NCCL launch after that
~3-6 s (CUDA context, one NCCL communicator). About 30 s for the module.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import companion
from companion import launcher
from companion.backends import choose_backend
from gpu_setup import BACKEND, DEVICE, GPUS, MODE, skip_without_cuda

skip_without_cuda()

TIMEOUT = 120.0  # the first NCCL launch on a cold machine loads the CUDA libraries


def test_launch_one_rank_runs_on_cuda_0():
    def probe():
        import torch.distributed as dist

        from companion import runtime

        x = torch.full((4,), 1.0 + runtime.rank(), device=runtime.device())
        dist.all_reduce(x)
        return {"backend": runtime.backend(), "device": str(runtime.device()),
                "tensor_device": str(x.device), "sum": x,
                "current": torch.cuda.current_device() if x.is_cuda else None,
                "local_rank": os.environ["LOCAL_RANK"]}

    (r,) = companion.launch(probe, world_size=1, backend=BACKEND, timeout=TIMEOUT)
    assert r["backend"] == BACKEND
    assert r["device"] == r["tensor_device"] == DEVICE
    assert r["current"] == (0 if MODE == "cuda" else None)
    assert r["local_rank"] == "0"
    # the launcher hands results back detached and on the CPU, whatever the rank used
    assert r["sum"].device.type == "cpu" and torch.equal(r["sum"], torch.ones(4))
    info = launcher.last_launch
    assert info.backend == BACKEND and info.world_size == 1
    if BACKEND == "nccl":
        assert info.threads_per_rank == 1  # a GPU rank needs no CPU threads of its own


def test_auto_backend_picks_nccl_with_a_gpu_per_rank():
    chosen, reason = choose_backend("auto", 1)
    if MODE == "cuda":
        assert chosen == "nccl", reason
        # one rank more than there are GPUs: back to gloo, and it says why
        chosen, reason = choose_backend("auto", GPUS + 1)
        assert chosen == "gloo" and "GPU" in reason, reason
    else:
        assert chosen in ("gloo", "nccl")  # dry run: whatever this machine has


def test_a_failing_gpu_rank_is_reported_not_hung():
    def boom():
        from companion import runtime

        torch.ones(1, device=runtime.device())  # the rank did touch its GPU first
        raise ValueError("boom on the GPU rank")

    with pytest.raises(companion.LaunchError, match="boom on the GPU rank"):
        companion.launch(boom, world_size=1, backend=BACKEND, timeout=TIMEOUT)
    # and the next launch still works: nothing of the failed one is left holding the GPU
    (r,) = companion.launch(lambda: companion.device().type, world_size=1, backend=BACKEND,
                            timeout=TIMEOUT)
    assert r == DEVICE.split(":")[0]


def test_cli_runs_an_experiment_on_the_gpu():
    # `python -m companion run` is what torchrun starts on a cluster; here on one GPU.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-m", "companion", "run", "all_reduce",
                          "--world-size", "1", "--backend", BACKEND, "--timeout", str(TIMEOUT)],
                         capture_output=True, text=True, env=env, timeout=TIMEOUT + 60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"[launch] {BACKEND} backend" in out.stdout, out.stdout
    assert ": OK" in out.stdout, out.stdout


def _two_rank_probe():
    import torch.distributed as dist

    from companion import runtime

    x = torch.full((1024,), 1.0 + runtime.rank(), device=runtime.device())
    dist.all_reduce(x)
    parts = [torch.empty(4, device=runtime.device()) for _ in range(2)]
    dist.all_gather(parts, torch.full((4,), float(runtime.rank()), device=runtime.device()))
    return {"device": str(x.device), "sum": x[:2], "gathered": torch.cat(parts),
            "bad_fork": torch.cuda._is_in_bad_fork() if x.is_cuda else False}


def test_two_ranks_on_two_gpus_or_two_cpu_ranks():
    """The first multi-rank NCCL job is this test, not a notebook cell: an all-reduce and
    an all-gather across 2 GPUs (2 gloo ranks in the dry run; skipped on one GPU)."""
    if MODE == "cuda" and GPUS < 2:
        pytest.skip(f"{GPUS} GPU: two NCCL ranks need two GPUs")
    results = companion.launch(_two_rank_probe, world_size=2, backend=BACKEND, timeout=TIMEOUT)
    assert [r["device"] for r in results] == ([f"cuda:{r}" for r in range(2)] if MODE == "cuda"
                                              else ["cpu", "cpu"])
    for r in results:
        assert torch.equal(r["sum"], torch.full((2,), 3.0))
        assert torch.equal(r["gathered"], torch.tensor([0.0] * 4 + [1.0] * 4))
        assert not r["bad_fork"]


def test_torchrun_two_processes_per_node():
    """`torchrun --nproc-per-node 2 -m companion run all_reduce`, as notebook 00 runs it:
    NCCL on two GPUs (gloo in the dry run; skipped on one GPU)."""
    if MODE == "cuda" and GPUS < 2:
        pytest.skip(f"{GPUS} GPU: torchrun with two NCCL processes needs two GPUs")
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    cmd = ([torchrun] if os.path.exists(torchrun) else [sys.executable, "-m", "torch.distributed.run"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (
        os.path.dirname(os.path.dirname(companion.__file__)), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([*cmd, "--standalone", "--nproc-per-node", "2", "-m", "companion",
                           "run", "all_reduce", "--backend", BACKEND], capture_output=True,
                          text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert BACKEND in done.stdout, done.stdout[-2000:]
