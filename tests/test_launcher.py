"""companion.launch: results, rank order, cell-defined functions, every failure mode."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch
import torch.distributed as dist

import companion
from companion import LaunchError, LaunchTimeout, launch
from companion.launcher import choose_backend, cpu_cores, max_world_size

PY = sys.executable


def test_results_come_back_in_rank_order_with_any_picklable_type():
    def work(scale):
        r = companion.rank()
        return {"rank": r, "world": companion.world_size(), "t": torch.full((2,), r * scale),
                "list": [r, str(r)]}

    results = launch(work, 10.0, world_size=4)
    assert [r["rank"] for r in results] == [0, 1, 2, 3]
    assert all(r["world"] == 4 for r in results)
    for r, res in enumerate(results):
        assert torch.equal(res["t"], torch.full((2,), r * 10.0))
        assert res["list"] == [r, str(r)]


def test_collective_inside_ranks_and_kwargs():
    def reduce_sum(offset, *, factor):
        x = torch.tensor([companion.rank() + offset]) * factor
        dist.all_reduce(x)
        return x.item()

    assert launch(reduce_sum, 1.0, world_size=3, factor=2.0) == [12.0] * 3


def test_world_size_one_is_the_identity_path():
    def one():
        x = torch.tensor([5.0])
        dist.all_reduce(x)
        return companion.rank(), companion.world_size(), x.item()

    assert launch(one, world_size=1) == [(0, 1, 5.0)]


def test_returned_tensors_are_detached():
    def grad_tensor():
        w = torch.ones(3, requires_grad=True)
        return w * 2  # a non-leaf that requires grad cannot be pickled as is

    (out,) = launch(grad_tensor, world_size=1)
    assert not out.requires_grad and torch.equal(out, torch.full((3,), 2.0))


def test_output_of_every_rank_is_prefixed(capfd):
    def talk():
        print(f"hello from {companion.rank()}")
        print(f"warning from {companion.rank()}", file=sys.stderr)

    launch(talk, world_size=2)
    out, err = capfd.readouterr()
    for r in range(2):
        assert f"[rank {r}] hello from {r}" in out
        assert f"[rank {r}] warning from {r}" in err


def test_function_defined_in_main_of_python_c_runs():
    # A function in __main__ is what a notebook cell defines; mp.spawn cannot ship it.
    code = textwrap.dedent("""
        import torch, torch.distributed as dist, companion
        def cell_fn(base):
            x = torch.tensor([base + companion.rank()])
            dist.all_reduce(x)
            return x.item()
        print("RESULT", companion.launch(cell_fn, 1.0, world_size=2))
    """)
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "RESULT [3.0, 3.0]" in out.stdout


def test_threads_per_rank_share_the_cores():
    def threads():
        return torch.get_num_threads()

    cores = cpu_cores()
    assert launch(threads, world_size=1) == [cores]
    assert launch(threads, world_size=2) == [max(1, cores // 2)] * 2


def test_gloo_listens_only_on_loopback():
    def listening_sockets():
        inodes = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                link = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
        dist.barrier()  # all sockets of the group exist now
        found = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as f:
                for line in f.readlines()[1:]:
                    cols = line.split()
                    if cols[3] == "0A" and cols[9] in inodes:  # 0A = LISTEN
                        found.append(cols[1].split(":")[0])
        return found

    loopback = {"0100007F", "00000000000000000000000001000000"}  # 127.0.0.1, ::1
    for addresses in launch(listening_sockets, world_size=2):
        assert addresses, "expected gloo to listen on at least one socket"
        assert set(addresses) <= loopback, f"non-loopback listener: {addresses}"


@pytest.mark.ci  # ~15 s: two Python processes each launching ranks; CI runs it
def test_concurrent_launches_from_two_processes_do_not_collide():
    code = textwrap.dedent("""
        import torch, torch.distributed as dist, companion
        def f():
            x = torch.ones(1000)
            for _ in range(20):
                dist.all_reduce(x)
            return x[0].item()
        print("RESULT", companion.launch(f, world_size=2))
    """)
    procs = [subprocess.Popen([PY, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert f"RESULT [{2.0 ** 20}, {2.0 ** 20}]" in out


# ---------------------------------------------------------------- failures


def test_a_rank_that_raises_gives_launch_error_promptly():
    def fails():
        if companion.rank() == 1:
            raise ValueError("rank one is unhappy")
        dist.barrier()  # rank 0 would wait here forever if nobody stopped it

    start = time.perf_counter()
    with pytest.raises(LaunchError) as info:
        launch(fails, world_size=3, timeout=60)
    assert time.perf_counter() - start < 15  # seconds, not the 60 s timeout
    err = info.value
    assert isinstance(err, RuntimeError)
    assert err.rank == 1
    assert "ValueError: rank one is unhappy" in str(err)
    assert "rank one is unhappy" in err.traceback and "Traceback" in err.traceback


@pytest.mark.parametrize("how, code", [("os._exit", 3), ("segfault", -signal.SIGSEGV)])
def test_a_rank_that_dies_without_raising_gives_launch_error(how, code):
    def dies(how):
        if companion.rank() == 1:
            if how == "os._exit":
                os._exit(3)
            import ctypes
            ctypes.string_at(0)  # read address 0: SIGSEGV
        dist.barrier()

    start = time.perf_counter()
    with pytest.raises(LaunchError) as info:
        launch(dies, how, world_size=2, timeout=60)
    assert time.perf_counter() - start < 15
    assert info.value.rank == 1 and info.value.exitcode == code
    assert "died without reporting" in str(info.value)


def test_a_hang_past_timeout_gives_launch_timeout():
    def hangs():
        if companion.rank() == 0:
            dist.barrier()  # rank 1 never joins
        else:
            time.sleep(600)

    start = time.perf_counter()
    with pytest.raises(LaunchTimeout) as info:
        launch(hangs, world_size=2, timeout=2)
    assert isinstance(info.value, TimeoutError)
    assert time.perf_counter() - start < 10


@pytest.mark.ci  # ~14 s: a child process interrupted mid-launch; CI runs it
def test_keyboard_interrupt_stops_every_rank():
    # The child restores Python's own SIGINT handler, as a Jupyter kernel installs its own:
    # a process started in the background by a non-interactive shell (a CI runner, `cmd &`)
    # inherits SIGINT *ignored*, and then no KeyboardInterrupt could ever arrive.
    code = textwrap.dedent("""
        import os, signal, time, companion
        signal.signal(signal.SIGINT, signal.default_int_handler)
        def sleeper():
            print("PID", os.getpid(), flush=True)
            time.sleep(600)
        try:
            companion.launch(sleeper, world_size=2, timeout=300)
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
    """)
    # Its own session, so that whatever happens here nothing it started outlives the test.
    proc = subprocess.Popen([PY, "-u", "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        pids, lines = [], []
        deadline = time.monotonic() + 60
        while len(pids) < 2 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break  # the child exited
            lines.append(line)
            if "PID" in line:
                pids.append(int(line.split()[-1]))
        assert len(pids) == 2, f"ranks did not start: {lines}"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert "INTERRUPTED" in out, err
        time.sleep(0.2)
        for pid in pids:
            assert not os.path.exists(f"/proc/{pid}"), f"rank process {pid} survived the interrupt"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.parametrize("kwargs, match", [
    ({"world_size": 0}, "world_size must be an integer >= 1"),
    ({"world_size": -2}, "world_size must be an integer >= 1"),
    ({"world_size": 2.0}, "world_size must be an integer >= 1"),
    ({"world_size": 10_000}, "CPU core"),
    ({"timeout": 0}, "timeout must be a positive"),
    ({"backend": "mpi"}, "not one of"),
])
def test_bad_arguments_raise_value_error_naming_the_fix(kwargs, match):
    with pytest.raises(ValueError, match=match):
        launch(print, **kwargs)


def test_nccl_without_gpus_is_refused_with_a_hint():
    if torch.cuda.is_available():
        pytest.skip("this machine has GPUs; the refusal is for machines without")
    with pytest.raises(ValueError, match="gloo"):
        launch(print, world_size=2, backend="nccl")


def test_auto_backend_explains_its_choice():
    backend, reason = choose_backend("auto", 2)
    if not torch.cuda.is_available():
        assert backend == "gloo" and "CPU" in reason
    assert max_world_size() >= 8


def test_gpus_that_cuda_cannot_start_fall_back_to_gloo_with_the_reason(monkeypatch):
    """NVML can count GPUs that CUDA cannot use (a driver older than the wheel's CUDA):
    'auto' then stays on gloo and says why, and an explicit 'nccl' is refused up front."""
    from companion import backends

    error = "RuntimeError: The NVIDIA driver on your system is too old"
    monkeypatch.setattr(backends, "_visible_gpus", lambda: 4)
    monkeypatch.setattr(backends.dist, "is_nccl_available", lambda: True)
    monkeypatch.setattr(backends, "_cuda_start_error", lambda: error)
    backend, reason = backends.choose_backend("auto", 2)
    assert backend == "gloo" and "CUDA cannot start" in reason and "too old" in reason
    with pytest.raises(ValueError, match="CUDA cannot start.*too old.*backend='gloo'"):
        backends.choose_backend("nccl", 2)
    monkeypatch.setattr(backends, "_cuda_start_error", lambda: None)
    assert backends.choose_backend("auto", 2)[0] == "nccl"


def test_building_a_model_leaves_every_random_stream_and_cuda_alone():
    """models.seeded forks the CPU generator only: the caller's stream is untouched, and
    the CUDA generators, which forking them would initialise, are never named."""
    from unittest import mock

    from companion.models import TinyMLP, seeded

    real, asked = torch.random.fork_rng, []

    def recording_fork_rng(devices=None, **kwargs):
        asked.append(devices)
        return real(devices=devices, **kwargs)

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    with mock.patch("torch.random.fork_rng", recording_fork_rng):
        a = TinyMLP(seed=5)
        with seeded(5):
            drawn = torch.rand(2)
    assert asked == [[], []], f"fork_rng must be told devices=[]; got {asked}"
    assert torch.equal(torch.rand(3), expected)
    b = TinyMLP(seed=5)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    with seeded(5):
        assert torch.equal(torch.rand(2), drawn)


class _Doubling:
    """A result codec: what a rank returns travels as bytes, read back by ``decode``."""

    def encode(self, result):
        return repr(result * 2).encode()

    def reader(self, conn):
        return conn

    def decode(self, rank, data):
        return (rank, data.decode())


def test_a_rank_function_may_bring_its_own_result_codec():
    def rank_times_ten():
        return companion.rank() * 10
    rank_times_ten.result_codec = _Doubling()
    assert launch(rank_times_ten, world_size=2) == [(0, "0"), (1, "20")]


def test_a_backend_registered_with_torch_runs_the_ranks():
    from companion import launcher
    from companion.learning.recording import BACKEND

    def which():
        return dist.get_backend(), type(dist.group.WORLD).__name__
    assert launch(which, world_size=2, backend=BACKEND) == [(BACKEND, "RecordingGroup")] * 2
    info = launcher.last_launch
    assert info.backend == BACKEND and "registered with torch.distributed" in info.reason
