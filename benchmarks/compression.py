"""Benchmark for notebook 07: bytes and time per step per compressor on 4 real ranks,
and single-process compression/decompression throughput.

    .venv/bin/python benchmarks/compression.py           # 4M-entry gradient (16 MB fp32)
    .venv/bin/python benchmarks/compression.py --quick   # 1M entries, fewer repetitions (< 60 s)
    .venv/bin/python benchmarks/compression.py --ablation   # + notebook 07's ablation with
                                      # 5 seeds, and the stacked engine's speed (~2 minutes)

Time per step is the exchange only (encode, collectives, decode, average) of one
random gradient matrix, median over repetitions, on gloo with every rank on this
machine's CPU cores: on 2 cores, 4 ranks share them, so absolute times are pessimistic;
the ratios between methods are the point.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

import companion
from companion.compression import (ABLATION, OneBit, TernGrad, Threshold, ablation,
                                   ablation_settings, make_compressor, split_digits, train_many,
                                   train_stacked)
from companion.compression.sparse import decode_topk, encode_topk
from companion.compression.wire import payload_bytes

METHODS = {
    "dense all-reduce": dict(method="dense"),
    "DGC 99.9% (sampled top-k)": dict(method="dgc", density=0.001),
    "top-k 99.9% (exact, no accumulation)": dict(method="topk_no_feedback", density=0.001),
    "PowerSGD rank 4": dict(method="powersgd", powersgd_rank=4),
    "1-bit SGD": dict(method="onebit"),
    "threshold (tau=2.5 sigma)": dict(method="threshold", tau=2.5),
    "TernGrad": dict(method="terngrad"),
}


def exchange_time(settings: dict, rows: int, cols: int, reps: int) -> dict:
    """Runs inside each rank: median seconds per exchange, and this rank's payload bytes."""
    torch.manual_seed(companion.rank())
    like = [torch.zeros(rows, cols)]
    comp = make_compressor(settings["method"], like,
                           **{k: v for k, v in settings.items() if k != "method"})
    times, sizes = [], []
    for step in range(reps + 2):
        g = [torch.randn(rows, cols)]
        torch.distributed.barrier()
        start = time.perf_counter()
        comp.exchange(g, step)
        if step >= 2:  # the first two warm up allocators and gloo's buffers
            times.append(time.perf_counter() - start)
            sizes.append(comp.last_bytes)
    return {"seconds": statistics.median(times), "bytes": statistics.mean(sizes)}


def throughput(rows: int, cols: int, reps: int) -> list[tuple]:
    """Single-process encode/decode speed in MB of fp32 gradient per second."""
    x = torch.randn(rows, cols)
    mb = x.numel() * 4 / 1e6
    gen = torch.Generator().manual_seed(0)
    codecs = {
        "top-k exact": (lambda: encode_topk(x, 0.001), lambda p: decode_topk(p, x)),
        "top-k sampled": (lambda: encode_topk(x, 0.001, sample_above=100_000, generator=gen),
                          lambda p: decode_topk(p, x)),
        "1-bit SGD": (lambda: OneBit().encode(x), lambda p: OneBit().decode(p, x)),
        "threshold": (lambda: Threshold(2.5).encode(x), lambda p: Threshold(2.5).decode(p, x)),
        "TernGrad": (lambda: TernGrad(gen).encode(x), lambda p: TernGrad(gen).decode(p, x)),
    }
    out = []
    for name, (enc, dec) in codecs.items():
        p = enc()
        t_enc = min(_timed(enc) for _ in range(reps))
        t_dec = min(_timed(lambda: dec(p)) for _ in range(reps))
        out.append((name, mb / t_enc, mb / t_dec, payload_bytes(p)))
    return out


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def ablation_table(seeds: int, steps: int, world_size: int) -> None:
    """Notebook 07's p.47 ablation (same settings) with more seeds, and its cost."""
    start = time.perf_counter()
    res = companion.launch(ablation, world_size=world_size, seeds=tuple(range(seeds)),
                           steps=steps, eval_every=steps, data=split_digits(), timeout=1800)[0]
    wall = time.perf_counter() - start
    dense = statistics.mean(r["test_acc"][-1] for r in res["dense"])
    print(f"\nDGC ablation at 99.9% sparsity: {steps} steps, {seeds} seeds, {world_size} ranks, "
          f"{wall:.0f} s ({1e3 * wall / steps:.1f} ms per step for all {len(res) * seeds} runs)")
    print(f"{'row':<24}{'mean %':>8}{'std':>6}{'vs dense':>9}  per seed")
    for row, runs in res.items():
        accs = [100 * r["test_acc"][-1] for r in runs]
        print(f"{row:<24}{statistics.mean(accs):>8.2f}{statistics.pstdev(accs):>6.2f}"
              f"{statistics.mean(accs) - 100 * dense:>+9.2f}  " + " ".join(f"{a:.1f}" for a in accs))


def engine_speed(steps: int, world_size: int) -> None:
    """ms per step of the 30-run ablation: stacked engine vs one compressor object per run."""
    runs = [dict(seed=s, **ablation_settings(row, clip_norm=0.5, warmup_steps=48, density=0.001))
            for row in ["dense", *ABLATION] for s in range(5)]
    data = split_digits()
    print(f"\n{len(runs)} ablation runs, {steps} steps on {world_size} ranks (launch included):")
    for name, fn in (("train_stacked (one stacked model)", train_stacked),
                     ("train_many (a Python loop over runs)", train_many)):
        start = time.perf_counter()
        companion.launch(fn, runs, world_size=world_size, steps=steps, eval_every=steps,
                         data=data, timeout=900)
        print(f"  {name:<40}{1e3 * (time.perf_counter() - start) / steps:8.1f} ms/step")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller gradient, fewer reps (< 60 s)")
    parser.add_argument("--world-size", type=int, default=4)
    parser.add_argument("--ablation", type=int, nargs="?", const=5, default=0, metavar="SEEDS",
                        help="also run notebook 07's ablation with SEEDS (5) seeds, and time "
                             "the stacked engine against train_many")
    parser.add_argument("--ablation-steps", type=int, default=2000)
    args = parser.parse_args()
    rows, cols, reps = (1024, 1024, 5) if args.quick else (2048, 2048, 10)
    n = args.world_size
    dense = 4 * rows * cols
    print(f"gradient: one {rows}x{cols} fp32 matrix ({dense / 1e6:.1f} MB); {n} ranks, gloo on CPU")
    print(f"{'method':<38}{'payload B/rank':>15}{'ratio':>8}{'ms/step':>9}{'vs dense':>9}")
    base = None
    for name, settings in METHODS.items():
        r = companion.launch(exchange_time, settings, rows, cols, reps, world_size=n, timeout=300)[0]
        base = base or r["seconds"]
        print(f"{name:<38}{r['bytes']:>15,.0f}{dense / r['bytes']:>7.0f}x"
              f"{1e3 * r['seconds']:>9.1f}{r['seconds'] / base:>8.2f}x")
    print("\n(all-gather exchanges make every rank receive N-1 payloads; the dense ring all-reduce"
          f"\n sends 2(N-1)/N = {2 * (n - 1) / n:.2f}x its payload)")
    print("\nsingle-process throughput on the same matrix (MB of fp32 gradient per second):")
    print(f"{'codec':<16}{'encode MB/s':>12}{'decode MB/s':>12}{'payload B':>12}")
    for name, enc, dec, nbytes in throughput(rows, cols, reps):
        print(f"{name:<16}{enc:>12,.0f}{dec:>12,.0f}{nbytes:>12,}")
    if args.ablation:
        engine_speed(200, n)
        ablation_table(args.ablation, args.ablation_steps, n)


if __name__ == "__main__":
    main()
