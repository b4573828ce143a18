"""Step time and memory per rank of DDP and ZeRO-1/2/3, next to torch's implementations.

    .venv/bin/python benchmarks/zero.py           # d_model 256, 4 layers (~3.2M params), 2 and 4 ranks
    .venv/bin/python benchmarks/zero.py --quick   # d_model 128, 2 layers, fewer steps (< 60 s)

For each strategy (the package's ``ddp``, ``zero1``, ``zero2``, ``fsdp`` and torch's
``DistributedDataParallel``, ``ZeroRedundancyOptimizer`` (over DDP) and FSDP2
``fully_shard``) on a TinyTransformer trained with fp32 AdamW, every rank reports:

* step time: median over the timed steps of forward + backward + step, measured between
  barriers (so it is the slowest rank's time);
* model states: bytes of the parameters, gradients and optimizer state the rank holds
  after ``step()`` (the quantity ZeRO shards), and the ZeRO formula for it;
* peak: on a GPU, ``torch.cuda.max_memory_allocated`` above what was allocated before
  the model was built. On CPU there is no allocator statistic, so the column is the rise
  of the rank process's resident-set high-water mark (VmHWM, reset through
  /proc/self/clear_refs after a warm-up; fresh ranks per strategy; glibc told to mmap
  allocations above 16 KiB). Measured on 2 cores: ~95 MB for every strategy with --quick
  (states 2-7 MB) and 120-170 MB without (states 13-51 MB): runtime overhead (per-thread
  buffers, first-use workspaces, gloo, activations) dominates it at these sizes, so it is
  printed for honesty, not as a ZeRO result. The model-states column is the measurement
  that tracks ZeRO. Peaks per rank from the CUDA
  allocator need one GPU per rank (N >= 2 GPUs).

Expected (issue #4): model states shrink as the formula says (within 1%), and
communication grows 2x/2x/2x/3x; on 2 CPU cores gloo's collectives dominate the step
time, so FSDP's extra all-gather shows up as a slower step.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

import companion
from companion import memory as M

OURS = ["ddp", "zero1", "zero2", "fsdp"]
TORCH = {"ddp": "torch_ddp", "zero1": "torch_zero1", "fsdp": "torch_fsdp2"}
STAGE = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp": 3, "torch_ddp": 0, "torch_zero1": 1,
         "torch_fsdp2": 3}


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _rss_tracks_tensors() -> None:
    """Make glibc serve allocations above 16 KiB with mmap, so a freed tensor leaves the
    resident set at once and VmHWM follows the live tensors (and not malloc's pools)."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 16 * 1024)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 0)  # M_TRIM_THRESHOLD: give freed heap memory back at once
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # VmHWM := VmRSS
    except OSError:  # pragma: no cover - not Linux
        pass


def bench_rank(strategies, d_model, n_layers, batch, seq_len, steps, warmup):
    """Runs inside every rank: each strategy in turn on a freshly built model (the
    benchmark passes one strategy per launch, so peaks are not shared)."""
    from companion.data import CharCorpus, shard
    from companion.zero_runs import _wrap, build_model

    rank, n, dev = dist.get_rank(), dist.get_world_size(), companion.device()
    corpus, out = CharCorpus(), {}
    if dev.type == "cpu":
        _rss_tracks_tensors()
        warm = build_model(32, 1, seq_len, freeze=False)  # thread pools, autograd, gloo
        F.cross_entropy(warm(corpus.batch(0, 2, seq_len)[0]).reshape(-1, corpus.vocab_size),
                        corpus.batch(0, 2, seq_len)[1].reshape(-1)).backward()
        dist.all_reduce(torch.zeros(1 << 16))
        del warm
    for strategy in strategies:
        _reset_peak()
        base = _status("VmRSS")
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
            base = torch.cuda.memory_allocated(dev)
        model = build_model(d_model, n_layers, seq_len, freeze=False).to(dev)
        num_params = sum(p.numel() for p in model.parameters())
        net, opt, ledger, holdings = _wrap(strategy, model, "adamw", 1e-3, None, None)
        times = []
        for step in range(warmup + steps):
            x, y = corpus.batch(step, batch, seq_len)
            x, y = shard(x, rank, n).to(dev), shard(y, rank, n).to(dev)
            dist.barrier()
            t0 = time.perf_counter()
            loss = F.cross_entropy(net(x).reshape(-1, corpus.vocab_size), y.reshape(-1))
            loss.backward()
            if hasattr(net, "finish_gradient_synchronization"):
                net.finish_gradient_synchronization()
            opt.step()
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            dist.barrier()
            if step >= warmup:
                times.append(time.perf_counter() - t0)
            if step == warmup + steps - 1:
                params, grads, state = holdings()
                states = sum(M.held_bytes(group) for group in (params, grads, state))
            opt.zero_grad()
        if dev.type == "cuda":
            peak = torch.cuda.max_memory_allocated(dev) - base
        else:
            peak = _status("VmHWM") - base
        out[strategy] = {"step_s": statistics.median(times), "states": states, "peak": peak,
                         "num_params": num_params}
        del net, opt, model
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small model, few steps (< 60 s)")
    parser.add_argument("--world-sizes", default="2,4")
    args = parser.parse_args()
    d_model, n_layers, steps, warmup = (128, 2, 3, 1) if args.quick else (256, 4, 8, 2)
    batch, seq_len = 16, 64
    strategies = OURS + list(TORCH.values())
    print(f"TinyTransformer d_model={d_model}, {n_layers} layers, batch {batch} x {seq_len} "
          f"tokens, fp32 AdamW; {steps} timed steps after {warmup} warm-up")
    header = (f"{'N':>2} {'strategy':>12} {'step ms':>8} {'states MB':>10} {'formula MB':>11} "
              f"{'dev %':>6} {'RSS/GPU peak MB':>16}")
    print(header)
    print("-" * len(header))
    worst = 0.0
    for n in [int(w) for w in args.world_sizes.split(",")]:
        for strategy in strategies:
            results = companion.launch(bench_rank, [strategy], d_model, n_layers, batch,
                                       seq_len, steps, warmup, world_size=n, timeout=600)
            per_rank = [r[strategy] for r in results]
            num_params = per_rank[0]["num_params"]
            formula = M.zero_memory_per_gpu(num_params, n, STAGE[strategy], precision="fp32",
                                            optimizer="adamw")["total"]
            states = max(r["states"] for r in per_rank)
            dev = states / formula - 1
            if strategy in OURS:
                worst = max(worst, abs(dev))
            peak = max(r["peak"] for r in per_rank)
            print(f"{n:>2} {strategy:>12} {per_rank[0]['step_s'] * 1e3:8.1f} "
                  f"{states / 1e6:10.3f} {formula / 1e6:11.3f} {dev:6.2%} {peak / 1e6:16.1f}")
    print(f"\nlargest deviation of the package's model states from the ZeRO formula: {worst:.2%}"
          " (target: < 1%; padding of each tensor to a multiple of N and AdamW's step counters)")
    print("torch's ZeroRedundancyOptimizer shards whole tensors (greedy by size), so its ranks"
          " hold unequal shares; FSDP2 pads dim 0 of each tensor to a multiple of N.")


if __name__ == "__main__":
    main()
