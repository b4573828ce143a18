"""Pipeline schedules on real ranks: measured vs predicted step time and utilisation.

Run:  .venv/bin/python benchmarks/pipeline.py [--quick]

For every schedule (naive, GPipe, 1F1B, interleaved 1F1B, ZB-H1, and the schedules after
1F1B: looped BFS, interleaved zero bubble, ZB-V, DualPipeV; two chunks per rank where a
schedule has chunks) at 2 and 4 stages, one training step of the pipelined TinyMLP runs on that many gloo ranks
(companion.pipeline.run_pipeline). Each op does its real math and then waits for its
emulated device time (F = B = W = T), so the numbers measure the schedule rather than
the contention of several ranks on few CPU cores (see notebook 04). Predicted: the
simulator with the same costs, and the closed-form utilisation. "peak act" is the most
micro-batches' activations a rank held at once (in whole-stage units): simulated, then
counted by the executor on the ranks. The last column is the
same step with raw CPU time (no emulation), for reference; it is dominated by message
latency and core sharing on a small machine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import companion
from companion.data import digits_batch
from companion.pipeline import (OpCosts, bubble_fraction, run_pipeline, simulate,
                                timeline_from_results)

SCHEDULES = [("naive", 1), ("gpipe", 1), ("1f1b", 1), ("interleaved", 2), ("zb-h1", 1),
             ("looped-bfs", 2), ("interleaved-zb", 2), ("zb-v", 2), ("dualpipev", 2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short ops, one repetition (< 60 s)")
    args = parser.parse_args()
    op_s = 0.010 if args.quick else 0.040
    reps = 1 if args.quick else 3
    m = 8
    batch = digits_batch(0, 32)
    device_time = {"F": op_s, "B": op_s, "W": op_s}
    print(f"micro-batches m={m}, emulated F=B=W={op_s * 1e3:.0f} ms, median of {reps} run(s); "
          f"{companion.launcher.cpu_cores()} CPU cores, load average {os.getloadavg()[0]:.1f} "
          "(other processes inflate the measured columns)\n")
    header = (f"{'p':>2} {'schedule':>18} | {'step ms':>8} {'predicted':>9} | {'bubble':>6} "
              f"{'simulated':>9} {'formula':>7} | {'peak act':>8} {'ranks':>5} | "
              f"{'raw CPU ms':>10}")
    print(header)
    print("-" * len(header))
    start = time.perf_counter()
    for p in (2, 4):
        for name, v in SCHEDULES:
            steps, bubbles, held = [], [], 0
            for _ in range(reps):
                res = companion.launch(run_pipeline, world_size=p, schedule=name, microbatches=m,
                                       chunks=v, batch=batch, device_time=device_time)
                tl = timeline_from_results(res)
                steps.append(tl.makespan)
                bubbles.append(tl.bubble_fraction)
                held = max(r["peak_held"] for r in res) / v
            raw = companion.launch(run_pipeline, world_size=p, schedule=name, microbatches=m,
                                   chunks=v, batch=batch)
            sim = simulate(name, p, m, chunks=v, costs=OpCosts(op_s * 1e3, op_s * 1e3, op_s * 1e3))
            formula = bubble_fraction(p, m, name, v)
            label = name + (f" v={v}" if v > 1 else "")
            print(f"{p:>2} {label:>18} | {statistics.median(steps):>8.1f} {sim.makespan:>9.1f} | "
                  f"{statistics.median(bubbles):>6.1%} {sim.bubble_fraction:>9.1%} "
                  f"{formula:>7.1%} | {max(sim.peak_activations()):>8g} {held:>5g} | "
                  f"{timeline_from_results(raw).makespan:>10.2f}")
    print(f"\n{time.perf_counter() - start:.1f} s in all")


if __name__ == "__main__":
    main()
