"""Exposed vs total communication of DDP (by bucket size) and FSDP (with and without
prefetch) on real ranks behind an emulated link, and the batch at which it stops showing.

    .venv/bin/python benchmarks/overlap.py            # 4 ranks, 3 batches, crossover sweeps
    .venv/bin/python benchmarks/overlap.py --quick    # one batch, DDP crossover only (~20 s)

Model and link: ``companion.overlap.runs`` (a TinyMLP of 4 square 512x512 layers, fp32,
every collective through ``DelayedComm`` at ``--bandwidth`` bytes/s per rank and direction,
charged the bytes a ring sends). Per configuration, the medians over the timed steps of
each rank, averaged over the ranks:

* comm: the time the link is busy during a step;
* exposed: the part of it the rank spent waiting (added to the step); hidden = comm - exposed;
* compute: the step minus all waiting.

Expected: at a fixed batch, exposed falls as DDP's buckets shrink from one
bucket (nothing starts before backward ends) to one per layer, and FSDP with prefetch
exposes less than without; over a batch sweep, exposure falls to a floor (DDP: the last
bucket, which nothing is left to hide; FSDP: the square layers next to the thin first
one) near the predicted T* = (N-1)/N * 4 * F / (2 * bandwidth) rows. On a shared 2-core
machine each collective also waits for the other ranks' threads to get a core, so the
numbers move from run to run: compare several runs.
"""
from __future__ import annotations

import argparse

import companion
from companion.overlap import measure_crossover, measure_overlap


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.1f}"


def overlap_table(batches, bandwidth, world_size):
    configs = [(f"ddp, bucket {b} MiB" if b else "ddp, per tensor",
                {"strategy": "ddp", "bucket_size_mb": b}) for b in (None, 1.5, 25)]
    configs += [(f"fsdp, prefetch {p}", {"strategy": "fsdp", "prefetch": p})
                for p in (False, True)]
    runs = [{**config, "batch": batch} for batch in batches for _, config in configs]
    rows = companion.launch(measure_overlap, configs=runs, bandwidth_bytes_s=bandwidth,
                            world_size=world_size, timeout=600)[0]
    print(f"{'configuration':>22} {'batch':>6} {'step ms':>8} {'compute':>8} {'comm':>8} "
          f"{'exposed':>8} {'hidden':>8} {'exposed %':>9}")
    for (label, _), row in zip(configs * len(batches), rows):
        print(f"{label:>22} {row['batch']:>6} {_ms(row['step_s'])} {_ms(row['compute_s'])} "
              f"{_ms(row['comm_s'])} {_ms(row['exposed_s'])} {_ms(row['hidden_s'])} "
              f"{row['exposed_s'] / row['comm_s']:9.0%}")


def crossover_table(strategy, batches, bandwidth, world_size):
    r = companion.launch(measure_crossover, strategy=strategy, batches=batches,
                         bandwidth_bytes_s=bandwidth, world_size=world_size, timeout=600)[0]
    measured = r["measured_batch"]
    print(f"\n{strategy} crossover: CPU {r['flops_per_s'] / 1e9:.1f} GFLOP/s on the slowest rank "
          f"during the steps (one matmul alone: {r['matmul_flops_per_s'] / 1e9:.1f}), link "
          f"{r['effective_bandwidth_bytes_s'] / 1e6:.0f} MB/s effective ({bandwidth / 1e6:g} "
          f"emulated) -> predicted T* = {r['predicted_batch']:.0f} rows per rank "
          f"({r['predicted_batch_nominal_link']:.0f} at the emulated rate); measured (knee of "
          f"the exposure beyond the slowest rank): "
          f"{'none' if measured is None else f'{measured:.0f}'}")
    print(f"(batches swept{' after re-centring on the steps' if r['recentred'] else ''}: "
          f"{[row['batch'] for row in r['rows']]})")
    print(f"{'batch':>6} {'slowest':>8} {'comm':>8} {'exposed':>8} {'beyond':>8} {'GFLOP/s':>8}")
    for row in r["rows"]:
        print(f"{row['batch']:>6} {_ms(row['slowest_compute_s'])} {_ms(row['comm_s'])} "
              f"{_ms(row['exposed_s'])} {_ms(row['slowest_exposed_s'])} "
              f"{row['achieved_flops_per_s'] / 1e9:8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one batch, DDP crossover only")
    parser.add_argument("--bandwidth", type=float, default=50e6,
                        help="emulated link, bytes/s per rank and direction (default 50e6)")
    parser.add_argument("--world-size", type=int, default=4)
    args = parser.parse_args()
    batches = (512,) if args.quick else (128, 512, 1024)
    print(f"{args.world_size} ranks, emulated link {args.bandwidth / 1e6:g} MB/s per direction; "
          "times in ms (medians of 2 steps per rank, averaged over ranks)")
    overlap_table(batches, args.bandwidth, args.world_size)
    sweep = None  # 0.35 .. 2 T*, a factor sqrt(2) apart (measure_crossover)
    for strategy in ("ddp",) if args.quick else ("ddp", "fsdp"):
        crossover_table(strategy, sweep, args.bandwidth, args.world_size)


if __name__ == "__main__":
    main()
