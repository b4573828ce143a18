"""Time per step and bytes per layer: TP, TP+SP, Ulysses and ring attention (gloo, CPU).

    .venv/bin/python benchmarks/tensor_parallel.py           # 2 and 4 ranks, s = 256 and 1024
    .venv/bin/python benchmarks/tensor_parallel.py --quick   # 2 and 4 ranks, s = 256 (< 60 s)

One transformer block (``companion.models.Block``, d_model 128, 8 heads, batch 2),
forward + backward, median of a few steps after a warm-up, timed on every rank
(``companion.sequence_parallel.benchmark_layer``); the table shows rank 0. "bytes/layer"
is what one rank sends for activations per step (forward + backward, ring-algorithm
accounting from ``companion.collectives.log``); weight-gradient synchronisation is not
included (TP needs none for its sharded weights; Ulysses/ring replicate the weights and
sum their gradients once per step, like data parallelism). "max diff" is the output's
largest difference from the single-process block (float32).

What to expect: TP and TP+SP move the same bytes (all-reduce = reduce-scatter
+ all-gather); Ulysses moves 4(P-1)/P^2 of the activation size each way, less than TP
and shrinking with P; ring attention moves 2(P-1)/P times the activation size forward
(K and V) and about twice that backward (dK and dV travel with them) whatever P is, but
in point-to-point hops that a GPU implementation overlaps with compute. On a 2-core CPU the times mostly show gloo latency and oversubscription (4
ranks on 2 cores), not what GPUs with NVLink would show: compare bytes, not seconds.
"""
from __future__ import annotations

import argparse
import time

import companion
from companion import sequence_parallel as sp

METHODS = ["single", "tp", "tp_sp", "ulysses", "ring"]


def run(world_sizes, seqs, steps):
    rows = []
    for n in world_sizes:
        for s in seqs:
            for m in METHODS:
                r = companion.launch(sp.benchmark_layer, world_size=n, method=m, seq=s,
                                     steps=steps, timeout=300)[0]
                rows.append((n, s, m, r))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="s = 256 only, 3 steps (< 60 s)")
    args = parser.parse_args(argv)
    seqs = [256] if args.quick else [256, 1024]
    steps = 3 if args.quick else 5
    start = time.perf_counter()
    rows = run([2, 4], seqs, steps)
    b, d, item = 2, 128, 4
    print(f"{'ranks':>5} {'seq':>5} {'method':>8} {'ms/step':>9} {'KiB/layer':>10} "
          f"{'x activation':>13} {'max diff':>9}")
    for n, s, m, r in rows:
        activation = b * s * d * item  # one [b, s, d] float32 tensor
        print(f"{n:>5} {s:>5} {m:>8} {1e3 * r['seconds']:>9.1f} {r['bytes'] / 1024:>10.1f} "
              f"{r['bytes'] / activation:>13.3f} {r['max_diff']:>9.1e}")
    by = {(n, s, m): r for n, s, m, r in rows}
    for n in (2, 4):
        for s in seqs:
            assert by[(n, s, "tp")]["bytes"] == by[(n, s, "tp_sp")]["bytes"], "SP changes the bytes"
            assert by[(n, s, "ulysses")]["bytes"] <= by[(n, s, "tp")]["bytes"]
    print(f"\nTP == TP+SP bytes at every size; Ulysses <= TP. Total {time.perf_counter() - start:.1f} s.")


if __name__ == "__main__":
    main()
