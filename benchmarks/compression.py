"""Benchmark for notebook 07: bytes and time per step per compressor on 4 real ranks,
and single-process compression/decompression throughput.

    .venv/bin/python benchmarks/compression.py           # 4M-entry gradient (16 MB fp32)
    .venv/bin/python benchmarks/compression.py --quick   # 1M entries, fewer repetitions (< 60 s)
    .venv/bin/python benchmarks/compression.py --long-ablation   # + notebook 07's ablation
                                                  # at 5x its budget (about a minute)

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
from companion.compression import (OneBit, TernGrad, Threshold, ablation, make_compressor,
                                   split_digits)
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


def long_ablation(steps: int, world_size: int) -> None:
    """Dense vs gradient dropping vs full DGC with notebook 07's settings, longer."""
    rows = ["dense", "gradient dropping", "+ warm-up"]
    start = time.perf_counter()
    res = companion.launch(ablation, world_size=world_size, seeds=(0, 1, 2), rows=rows,
                           density=0.001, clip_norm=0.5, warmup_steps=30, steps=steps, lr=0.05,
                           momentum=0.95, eval_every=steps, data=split_digits(), timeout=900)[0]
    print(f"\nablation at 99.9% sparsity, {steps} steps, 3 seeds "
          f"({time.perf_counter() - start:.0f} s):")
    for row in rows:
        accs = [r["test_acc"][-1] for r in res[row]]
        print(f"  {row:<20} mean {100 * statistics.mean(accs):5.1f}%  seeds "
              + "  ".join(f"{100 * a:.1f}" for a in accs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller gradient, fewer reps (< 60 s)")
    parser.add_argument("--world-size", type=int, default=4)
    parser.add_argument("--long-ablation", type=int, nargs="?", const=1500, default=0,
                        metavar="STEPS", help="also run the ablation for STEPS (1500) steps")
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
    if args.long_ablation:
        long_ablation(args.long_ablation, n)


if __name__ == "__main__":
    main()
