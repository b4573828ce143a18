"""Activation recomputation on real ranks: stored bytes, step time and throughput for no,
selective and full recomputation (notebook 10; ``companion.batch_size.recompute``).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/recompute.py           # 2 ranks, micro-batches 1..32
    PYTHONPATH=$PWD .venv/bin/python benchmarks/recompute.py --quick   # micro-batches 1..8, fewer repeats

Each rank trains a TinyTransformer (fp32, no dropout) wrapped in the package's DDP, on
its own windows of the corpus. Columns:

* stored/layer: bytes a block keeps alive from forward to backward, measured by
  ``companion.batch_size.recompute.ActivationMeter`` (every storage an operation creates during the
  step, by weak reference), next to Korthikanti et al.'s formula for this model
  (``expected_bytes_per_layer``: fp32, no dropout) and as printed for 16-bit with dropout
  (``memory.activation_memory_per_layer``);
* peak: the most bytes created by the step alive at once (recomputed activations,
  gradients and DDP's bucket included);
* step: median forward + backward time under ``no_sync`` (computation only), and its
  ratio to no recomputation, next to the prediction (2F + B) / (F + B) from the measured
  forward F (4/3 when backward = 2 forward);
* tokens/s over all ranks.

Then the CS336 L8 argument: in the memory budget that holds micro-batch ``--budget-mb``
without recomputation, the largest micro-batch each policy fits and its throughput.

Timing on a shared 2-core machine is noisy (we saw step ratios for the same setting vary
by 2x between runs under load); the byte columns are exact and repeat bit for bit.
"""
from __future__ import annotations

import argparse

from companion.batch_size.recompute import fit_in_budget, recompute_table
from companion.units import fmt_bytes


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="micro-batches 1..8, 3 repeats")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--budget-mb", type=int, default=4,
                        help="the budget is what this micro-batch stores without recomputation")
    args = parser.parse_args(argv)
    micro = (1, 2, 4, 8) if args.quick else (1, 2, 4, 8, 16, 32)
    rows = recompute_table(args.world_size, micro, args.seq_len, args.d_model, 4, args.layers,
                           repeats=3 if args.quick else 7)
    print(f"\nTinyTransformer d_model={args.d_model}, 4 heads, {args.layers} layers, "
          f"seq {args.seq_len}, {args.world_size} ranks (DDP), fp32\n")
    head = ("policy", "mb", "stored/layer", "formula (fp32)", "paper 16-bit", "peak",
            "step", "ratio", "predicted", "tokens/s", "bit-exact")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print(f"| {r['policy']} | {r['micro_batch']} | {fmt_bytes(r['stored_per_layer'])} | "
              f"{fmt_bytes(r['expected_per_layer'])} | {fmt_bytes(r['paper_per_layer'])} | "
              f"{fmt_bytes(r['peak'])} | {r['step_s'] * 1e3:.2f} ms | {r['step_ratio']:.2f} | "
              f"{r['predicted_ratio']:.2f} | {r['tokens_per_s']:,.0f} | {r['bit_exact']} |")
    budget_row = [r for r in rows if r["policy"] == "none" and r["micro_batch"] == args.budget_mb]
    if not budget_row:
        raise SystemExit(f"--budget-mb {args.budget_mb} is not one of the micro-batches {micro}")
    budget = budget_row[0]["stored_total"]
    print(f"\nBudget: {fmt_bytes(budget)} of stored activations per rank "
          f"(micro-batch {args.budget_mb} without recomputation)\n")
    print("| policy | largest micro-batch that fits | stored | tokens/s |")
    print("|---|---|---|---|")
    for policy, r in fit_in_budget(rows, budget).items():
        if r is None:
            print(f"| {policy} | none fits | | |")
        else:
            print(f"| {policy} | {r['micro_batch']} | {fmt_bytes(r['stored_total'])} | "
                  f"{r['tokens_per_s']:,.0f} |")


if __name__ == "__main__":
    main()
