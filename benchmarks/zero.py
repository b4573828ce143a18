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

Expected: model states shrink as the formula says (within 1%), and
communication grows 2x/2x/2x/3x; on 2 CPU cores gloo's collectives dominate the step
time, so FSDP's extra all-gather shows up as a slower step.

Speed: the package's ``ddp`` runs with torch's default bucket cap (25 MiB) and
``fsdp`` with ``prefetch=True`` (FSDP2 prefetches by default), so each is compared with
torch's in the same configuration; the last table compares their step times with torch's
(target: at most 1.5x) in paired runs: the package's and torch's models live in the same
ranks and take turns, one step each, so that a neighbour's load on a shared machine hits
both alike (separate launches, as in the first table, differed by up to 3x from run to
run on the loaded 2-core machine). Two more rows show where the time went before: ``ddp/tensor``
(one all-reduce per parameter, ``bucket_size_mb=None``) and ``fsdp/no-pf`` (no prefetch).
On 2 loaded cores a gloo collective at 4 ranks costs a few milliseconds whatever its size
(each ring step waits for the next rank's thread to get a core), so the number of calls per
step, not the bytes, decided the step time: a TinyTransformer's ~30 parameters meant ~30
all-reduces for DDP (torch: 1-2 buckets), measured 140-160 ms against 40-48 ms with one
bucket, and ~30 reduce-scatters for FSDP (torch: one per block; the package now does the
same, with or without prefetch).
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

import companion
from companion.data_parallel import memory as M

OURS = ["ddp", "zero1", "zero2", "fsdp"]
TORCH = {"ddp": "torch_ddp", "zero1": "torch_zero1", "fsdp": "torch_fsdp2"}
STAGE = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp": 3, "torch_ddp": 0, "torch_zero1": 1,
         "torch_fsdp2": 3}
# label -> (strategy, bucket_size_mb, prefetch); a label without an entry is its strategy
VARIANTS = {"ddp": ("ddp", 25, False), "ddp/tensor": ("ddp", None, False),
            "fsdp": ("fsdp", None, True), "fsdp/no-pf": ("fsdp", None, False)}
ROWS = [*OURS, *TORCH.values()]
TARGET = 1.5  # the package's DDP and FSDP within 1.5x of torch's


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


def _timed_step(net, opt, corpus, step, batch, seq_len, dev):
    """One training step between barriers (the slowest rank's time); grads left in place."""
    from companion.data import shard

    rank, n = dist.get_rank(), dist.get_world_size()
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
    return time.perf_counter() - t0


def paired_rank(labels, d_model, n_layers, batch, seq_len, rounds, warmup):
    """Runs inside every rank: one model per label, trained in alternating steps (one step
    of each per round, the order reversed every round), so that the package and torch
    see the same load on a shared machine. Returns {label: [step s per round]}."""
    from companion.data import CharCorpus
    from companion.data_parallel.runs import _wrap, build_model

    dev, corpus = companion.device(), CharCorpus()
    nets = {}
    for label in labels:
        strategy, bucket_size_mb, prefetch = VARIANTS.get(label, (label, None, False))
        model = build_model(d_model, n_layers, seq_len, freeze=False).to(dev)
        nets[label] = _wrap(strategy, model, "adamw", 1e-3, bucket_size_mb, None, prefetch)[:2]
    times = {label: [] for label in labels}
    for step in range(warmup + rounds):
        for label in labels if step % 2 == 0 else labels[::-1]:
            net, opt = nets[label]
            step_s = _timed_step(net, opt, corpus, step, batch, seq_len, dev)
            opt.zero_grad()
            if step >= warmup:
                times[label].append(step_s)
    return times


def bench_rank(strategies, d_model, n_layers, batch, seq_len, steps, warmup):
    """Runs inside every rank: each strategy in turn on a freshly built model (the
    benchmark passes one strategy per launch, so peaks are not shared)."""
    from companion.data import CharCorpus
    from companion.data_parallel.runs import _wrap, build_model

    dev = companion.device()
    corpus, out = CharCorpus(), {}
    if dev.type == "cpu":
        _rss_tracks_tensors()
        warm = build_model(32, 1, seq_len, freeze=False)  # thread pools, autograd, gloo
        F.cross_entropy(warm(corpus.batch(0, 2, seq_len)[0]).reshape(-1, corpus.vocab_size),
                        corpus.batch(0, 2, seq_len)[1].reshape(-1)).backward()
        dist.all_reduce(torch.zeros(1 << 16))
        del warm
    for label in strategies:
        strategy, bucket_size_mb, prefetch = VARIANTS.get(label, (label, None, False))
        _reset_peak()
        base = _status("VmRSS")
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
            base = torch.cuda.memory_allocated(dev)
        model = build_model(d_model, n_layers, seq_len, freeze=False).to(dev)
        num_params = sum(p.numel() for p in model.parameters())
        net, opt, ledger, holdings = _wrap(strategy, model, "adamw", 1e-3, bucket_size_mb, None,
                                           prefetch)
        times = []
        for step in range(warmup + steps):
            step_s = _timed_step(net, opt, corpus, step, batch, seq_len, dev)
            if step >= warmup:
                times.append(step_s)
            if step == warmup + steps - 1:
                params, grads, state = holdings()
                states = sum(M.held_bytes(group) for group in (params, grads, state))
            opt.zero_grad()
        if dev.type == "cuda":
            peak = torch.cuda.max_memory_allocated(dev) - base
        else:
            peak = _status("VmHWM") - base
        out[label] = {"step_s": statistics.median(times), "states": states, "peak": peak,
                         "num_params": num_params}
        del net, opt, model
    return out


def _verdict(label: str, ratio: float) -> str:
    if label in VARIANTS and label not in ("ddp", "fsdp"):
        return "(for comparison)"
    return "ok" if ratio <= TARGET else "OVER"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small model, few steps (< 60 s)")
    parser.add_argument("--world-sizes", default="2,4")
    args = parser.parse_args()
    d_model, n_layers, steps, warmup = (128, 2, 3, 1) if args.quick else (256, 4, 8, 2)
    rounds = 8 if args.quick else 12
    batch, seq_len = 16, 64
    print(f"TinyTransformer d_model={d_model}, {n_layers} layers, batch {batch} x {seq_len} "
          f"tokens, fp32 AdamW; {steps} timed steps after {warmup} warm-up")
    header = (f"{'N':>2} {'strategy':>12} {'step ms':>8} {'states MB':>10} {'formula MB':>11} "
              f"{'dev %':>6} {'RSS/GPU peak MB':>16}")
    print(header)
    print("-" * len(header))
    worst = 0.0
    sizes = [int(w) for w in args.world_sizes.split(",")]
    for n in sizes:
        for label in ROWS:
            strategy = VARIANTS.get(label, (label,))[0]
            results = companion.launch(bench_rank, [label], d_model, n_layers, batch,
                                       seq_len, steps, warmup, world_size=n, timeout=600)
            per_rank = [r[label] for r in results]
            num_params = per_rank[0]["num_params"]
            formula = M.zero_memory_per_gpu(num_params, n, STAGE[strategy], precision="fp32",
                                            optimizer="adamw")["total"]
            states = max(r["states"] for r in per_rank)
            dev = states / formula - 1
            if strategy in OURS:
                worst = max(worst, abs(dev))
            peak = max(r["peak"] for r in per_rank)
            print(f"{n:>2} {label:>12} {per_rank[0]['step_s'] * 1e3:8.1f} "
                  f"{states / 1e6:10.3f} {formula / 1e6:11.3f} {dev:6.2%} {peak / 1e6:16.1f}")
    print(f"\nlargest deviation of the package's model states from the ZeRO formula: {worst:.2%}"
          " (target: < 1%; padding of each tensor to a multiple of N and AdamW's step counters)")
    print("torch's ZeroRedundancyOptimizer shards whole tensors (greedy by size), so its ranks"
          " hold unequal shares; FSDP2 pads dim 0 of each tensor to a multiple of N.")
    print(f"\nStep time over torch's, paired: one launch per group, the models trained in "
          f"alternating steps\n({rounds} rounds after {warmup} warm-up), so both see the same "
          f"load; ratio = median over rounds of ours / torch's. Target <= {TARGET}x.")
    print(f"{'N':>2} {'ours':>11} {'ms':>7} {'torch':>12} {'ms':>7} {'ratio':>6}")
    for n in sizes:
        for group in (["ddp", "ddp/tensor", "torch_ddp"], ["fsdp", "fsdp/no-pf", "torch_fsdp2"]):
            runs = companion.launch(paired_rank, group, d_model, n_layers, batch, seq_len,
                                    rounds, warmup, world_size=n, timeout=600)
            times, theirs = runs[0], group[-1]
            for ours in group[:-1]:
                ratio = statistics.median(a / b for a, b in zip(times[ours], times[theirs]))
                print(f"{n:>2} {ours:>11} {1e3 * statistics.median(times[ours]):7.1f} "
                      f"{theirs:>12} {1e3 * statistics.median(times[theirs]):7.1f} "
                      f"{ratio:5.2f}x {_verdict(ours, ratio)}")


if __name__ == "__main__":
    main()
