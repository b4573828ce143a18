"""Time per step of synchronous SGD, FedAvg and DGA behind an emulated latency, 4 ranks.

    .venv/bin/python benchmarks/dga.py            # latencies 0, 1, 10, 50, 150 ms
    .venv/bin/python benchmarks/dga.py --quick    # 0 and 50 ms, fewer steps (< 60 s)

Each step computes TinyMLP's real gradient on its digits shard and is padded to
``--compute-ms`` of emulated device time (0 for the raw CPU step); every message goes
through ``companion.network.delayed.DelayedComm`` (the real all-reduce, then alpha withheld).
Prints measured ms/step (median over ranks), the schedule model's prediction for the
same number of steps, and the speedups over synchronous SGD. The target from notebook 08:
DGA faster than synchronous SGD at 50 ms latency.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import companion
from companion import dga
from companion.data import load_digits
from companion.dga.model import modeled_step_times
from companion.models import TinyMLP, count_parameters


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two latencies, 16 steps")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--compute-ms", type=float, default=10.0)
    parser.add_argument("--delay", type=int, default=10, help="DGA delay D")
    parser.add_argument("--local-steps", type=int, default=10, help="FedAvg K")
    parser.add_argument("--world-size", type=int, default=4)
    args = parser.parse_args(argv)
    latencies = [0, 50] if args.quick else [0, 1, 10, 50, 150]
    steps = args.steps or (16 if args.quick else 30)
    algos = {"sync": dict(algorithm="sync"),
             f"fedavg K={args.local_steps}": dict(algorithm="fedavg", local_steps=args.local_steps),
             f"dga D={args.delay}": dict(algorithm="dga", delay=args.delay)}
    data = load_digits()
    companion.launch(dga.sweep, runs=[], data=data, world_size=args.world_size)  # warm start
    print(f"{args.world_size} ranks, {steps} steps, {args.compute_ms:g} ms compute per step "
          f"(emulated device time), {4 * count_parameters(TinyMLP()):,} bytes per message")
    header = (f"{'latency':>8} | " + " | ".join(f"{name:>22}" for name in algos)
              + " | speedup fedavg, dga")
    print(header)
    print("-" * len(header))
    start, ok = time.perf_counter(), True
    for lat in latencies:
        runs = [dict(cfg, alpha_ms=lat, compute_ms=args.compute_ms, steps=steps)
                for cfg in algos.values()]
        res = companion.launch(dga.sweep, runs=runs, data=data, world_size=args.world_size,
                               timeout=300)
        measured = [1e3 * statistics.median(r[k]["seconds_per_step"] for r in res)
                    for k in range(len(runs))]
        model = [modeled_step_times(c["algorithm"], steps, args.compute_ms, lat,
                                    delay=c.get("delay", 0), local_steps=c.get("local_steps", 1)
                                    )[-1][2] / steps for c in runs]
        cells = " | ".join(f"{m:7.1f} ms (model {p:6.1f})" for m, p in zip(measured, model))
        print(f"{lat:5g} ms | {cells} | {measured[0] / measured[1]:5.1f}x, "
              f"{measured[0] / measured[2]:5.1f}x")
        if lat >= 50 and not measured[2] < measured[0]:
            ok = False
    print(f"total {time.perf_counter() - start:.1f} s; target (DGA faster than sync at >= 50 ms): "
          f"{'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
