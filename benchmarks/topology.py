"""Flat ring vs hierarchical vs 2D (torus) all-reduce, and all-to-all on a switch vs a
ring or torus, on the emulated cluster of ``companion.topology``: measured and predicted.

    .venv/bin/python benchmarks/topology.py           # 4-8 ranks, 1 MB, 5 timed runs each
    .venv/bin/python benchmarks/topology.py --quick   # fewer clusters, 3 runs (< 60 s)

Every message really moves between real ranks (gloo on loopback) and is withheld until
the emulated link would have delivered it (``alpha + bytes / beta`` per message,
queueing on shared ports; companion/network/links.py). "predicted" is the same link
model playing the algorithm's messages with no computation and no loopback
(``companion.topology.predict``); "measured" is the best of the timed runs, from a
barrier to the last rank done. measured/predicted above 1 is this machine's own cost
(Python, gloo, the additions, the ranks sharing 2 cores) on top of the links.
"vs ring" is the flat ring's time over this algorithm's: the speed-up.

Target: on the 2-node clusters the hierarchical all-reduce beats the flat
ring, measured, by about the factor the model predicts.
"""
from __future__ import annotations

import argparse
import time

import companion
from companion import topology as T

MB = 10**6
# GPU-like: NVLink-ish inside a node, one NIC per GPU between nodes (Cluster's defaults)
GPU = {}
# TPU-like: one kind of link everywhere (the same parameters for both classes), as slow
# as the defaults' inter-node link so that loopback stays small against it
UNIFORM = {"intra": (1e-3, 20e6), "inter": (1e-3, 20e6)}

ALL_REDUCE = ("ring", "hierarchical", "torus")
CASES = [  # (label, nodes, ranks per node, layout, links, algorithms, bytes)
    ("2 nodes x 2, switch", 2, 2, "nodes", GPU, ALL_REDUCE, MB),
    ("3 nodes x 2, switch", 3, 2, "nodes", GPU, ALL_REDUCE, MB),
    ("2 nodes x 4, switch", 2, 4, "nodes", GPU, ALL_REDUCE, 4 * MB),
    ("2 x 3 torus, uniform", 2, 3, "torus", UNIFORM, ALL_REDUCE, MB),
    ("8 ranks, switch", 8, 1, "nodes", UNIFORM, ("all_to_all",), MB // 10),
    ("8 ranks, ring", 8, 1, "ring", UNIFORM, ("torus_all_to_all",), MB // 10),
    ("2 x 4 torus, uniform", 2, 4, "torus", UNIFORM, ("torus_all_to_all",), MB // 10),
]
QUICK = [CASES[0], CASES[3], CASES[4], CASES[5]]
SCALING = (16, 64, 256)  # model only: all-to-all on a switch against a square torus


def measure(case, repeats: int) -> dict:
    label, nodes, k, layout, links, algorithms, nbytes = case
    return companion.launch(T.time_collectives, nodes, k, layout, links.get("intra"),
                            links.get("inter"), algorithms, nbytes, repeats,
                            world_size=nodes * k, timeout=300)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 clusters, 3 timed runs")
    args = parser.parse_args()
    cases, repeats = (QUICK, 3) if args.quick else (CASES, 5)
    print(f"{'cluster':<22}{'collective':<18}{'bytes':>9}{'predicted':>11}{'measured':>10}"
          f"{'median':>9}{'meas/pred':>10}{'speed-up: pred':>16}{'meas':>7}")
    started = time.perf_counter()
    switch = None  # the all-to-all behind a switch: the others' baseline
    for case in cases:
        label, nbytes = case[0], case[-1]
        res = measure(case, repeats)
        if "all_to_all" in res:
            switch = res["all_to_all"]
        for name, r in res.items():
            base = res.get("ring") if name in ALL_REDUCE else switch
            speed = (f"{base['predicted'] / r['predicted']:>15.2f}x"
                     f"{base['best'] / r['best']:>6.2f}x") if base else f"{'-':>16}{'-':>7}"
            print(f"{label:<22}{name:<18}{nbytes:>9}{r['predicted'] * 1e3:>9.1f}ms"
                  f"{r['best'] * 1e3:>8.1f}ms{r['median'] * 1e3:>7.1f}ms"
                  f"{r['best'] / r['predicted']:>10.2f}{speed}")
    print(f"\n{time.perf_counter() - started:.0f} s. bytes: the tensor (all-reduce) or each "
          "block (all-to-all). speed-up: the flat ring's time (all-to-all: the switch's)\nover "
          "this one's. Times on a shared 2-core machine are inflated by its load.\n")
    print("model only, all-to-all of 100 kB blocks, uniform links: switch vs square torus")
    for n in SCALING:
        side = int(n ** 0.5)
        flat = T.predict("all_to_all", MB // 10, T.Cluster(n, 1, **UNIFORM))
        torus = T.predict("torus_all_to_all", MB // 10, T.Cluster(side, side, layout="torus", **UNIFORM))
        print(f"  {n:>4} ranks: switch {flat * 1e3:8.1f} ms, {side} x {side} torus "
              f"{torus * 1e3:8.1f} ms ({torus / flat:.2f}x)")


if __name__ == "__main__":
    main()
