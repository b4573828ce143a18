"""Launch overhead: time from ``companion.launch()`` to results, next to torch's spawn.

    .venv/bin/python benchmarks/launcher.py            # world sizes 1, 2, 4, 8
    .venv/bin/python benchmarks/launcher.py --quick    # fewer repeats

Both launchers run the same work: join a gloo process group over a file rendezvous and
all-reduce one number. ``torch.multiprocessing.spawn`` starts fresh interpreters that
import torch (the cost the forkserver avoids) and returns nothing, so its results come
back through a queue.

Targets on 2 idle cores: a warm launch of 4 ranks under 0.2 s; the first launch of 4 ranks
in a fresh process (forkserver start and the ranks' imports included) at most 2.5 s. The
first launch is measured in a fresh interpreter twice: cold (``launch`` right after
``import companion``), and as a Jupyter kernel runs it, where ``import companion`` has
started the forkserver in the background (``companion.warm_up()``) and the student's next
cell comes a moment later.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as tmp

import companion
from companion import basics


def _spawn_worker(rank, world_size, init_file, queue):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world_size)
    x = torch.tensor([rank + 1.0])
    dist.all_reduce(x)
    queue.put((rank, x.item()))
    dist.destroy_process_group()


def spawn_once(world_size: int) -> float:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmpdir:
        queue = tmp.get_context("spawn").SimpleQueue()
        tmp.spawn(_spawn_worker, args=(world_size, os.path.join(tmpdir, "store"), queue),
                  nprocs=world_size, join=True)
        results = sorted(queue.get() for _ in range(world_size))
    assert all(v == world_size * (world_size + 1) / 2 for _, v in results)
    return time.perf_counter() - start


_FIRST = """
import sys, time
import companion
from companion import basics
if sys.argv[1] == "warm":
    companion.warm_up()
    time.sleep(float(sys.argv[2]))  # the student reads the next cell
start = time.perf_counter()
companion.launch(basics.first_all_reduce, world_size=4)
print(time.perf_counter() - start)
"""


def first_launch(mode: str, pause_s: float = 0.0) -> float:
    """Seconds of the first 4-rank launch in a fresh interpreter (``cold`` or ``warm``)."""
    out = subprocess.run([sys.executable, "-c", _FIRST, mode, str(pause_s)], check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats, spawn once")
    parser.add_argument("--sizes", type=int, nargs="*", default=[1, 2, 4, 8])
    args = parser.parse_args(argv)
    repeats, spawn_repeats = (3, 1) if args.quick else (10, 3)

    cold = statistics.median(first_launch("cold") for _ in range(repeats))
    warm = statistics.median(first_launch("warm", 2.0) for _ in range(repeats))
    companion.launch(basics.first_all_reduce, world_size=1)  # this process's forkserver
    launch_times = basics.launch_overhead(tuple(args.sizes), repeats=repeats)

    print(f"\ncores: {companion.launcher.cpu_cores()}   first launch of 4 ranks in a fresh "
          f"process: {cold:.2f} s cold, {warm:.2f} s after the background warm-up "
          f"(median of {repeats})")
    print(f"{'ranks':>5} | {'launch median':>13} | {'launch max':>10} | "
          f"{'mp.spawn median':>15} | {'speed-up':>8}")
    print("-" * 64)
    for n in args.sizes:
        ours = statistics.median(launch_times[n])
        theirs = statistics.median(spawn_once(n) for _ in range(spawn_repeats))
        print(f"{n:>5} | {ours * 1000:>10.0f} ms | {max(launch_times[n]) * 1000:>7.0f} ms | "
              f"{theirs * 1000:>12.0f} ms | {theirs / ours:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
