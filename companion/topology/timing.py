"""Time collectives on an emulated cluster, next to what the link model predicts.

Taught in notebook 11 (``notebooks/11_networks_and_topology.ipynb``); used by
``benchmarks/topology.py``. Also runs from a shell::

    python -m companion run topology_timing --world-size 4 --set nbytes=1000000
"""
from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist

from .. import runtime
from ..experiments import experiment
from ..i18n import gettext as tr
from ..validation import one_of, positive_int, preflight
from ..network.cluster import Cluster
from ..network.emulator import emulate
from .model import ALGORITHMS, predict

__all__ = ["time_collectives"]


def _call(algorithm: str, nbytes: int, n: int):
    from .. import collectives as C

    # On the CPU: the emulated links, not the machine's own, are what is timed.
    if algorithm in ("all_to_all", "torus_all_to_all"):
        blocks = [torch.ones(nbytes // 4, device="cpu") * dist.get_rank() for _ in range(n)]
        if algorithm == "all_to_all":
            return lambda: C.all_to_all(blocks, [b.shape for b in blocks])
        return lambda: C.torus_all_to_all(blocks)
    x = torch.ones(nbytes // 4, device="cpu")
    fn = {"ring": C.ring_all_reduce, "hierarchical": C.hierarchical_all_reduce,
          "torus": C.torus_all_reduce}[algorithm]
    return lambda: fn(x)


def _cluster(nodes, ranks_per_node, layout, intra, inter) -> Cluster:
    links = {k: v for k, v in (("intra", intra), ("inter", inter)) if v is not None}
    return Cluster(nodes, ranks_per_node, layout=layout, **links)


def _check(nodes, ranks_per_node, layout, intra, inter, algorithms, nbytes, repeats,
           world_size=None) -> None:
    cluster = _cluster(nodes, ranks_per_node, layout, intra, inter)
    for name in algorithms:
        one_of("algorithms", name, ALGORITHMS)
    positive_int("nbytes", nbytes, "pass bytes, a multiple of 4 (float32).", minimum=4)
    if nbytes % 4:
        raise ValueError(f"nbytes={nbytes} is not a whole number of float32 values; pass a multiple of 4.")
    positive_int("repeats", repeats, "pass how many timed runs, e.g. 3.")
    if world_size is not None and world_size != cluster.world_size:
        raise ValueError(f"world_size={world_size} but the cluster has nodes x ranks_per_node = "
                         f"{cluster.world_size} ranks; launch that many.")


def _table(results) -> str:
    rows = [f"{tr('algorithm'):<18}{tr('predicted'):>12}{tr('measured'):>12}{tr('ratio'):>8}"]
    for name, r in results[0].items():
        rows.append(f"{name:<18}{r['predicted'] * 1e3:>10.2f}ms{r['best'] * 1e3:>10.2f}ms"
                    f"{r['best'] / r['predicted']:>8.2f}")
    return "\n".join(rows)


@experiment("topology_timing", summarize=_table)
@runtime.cpu_by_design(runtime.EMULATED)
@preflight(_check)
def time_collectives(nodes: int = 2, ranks_per_node: int = 2, layout: str = "nodes",
                     intra=None, inter=None, algorithms=ALGORITHMS[:3],
                     nbytes: int = 1_000_000, repeats: int = 3) -> dict:
    """Best and median seconds of each collective on the emulated cluster, and the model's.

    Each run starts after a barrier and ends when the last rank is done (a MAX
    all-reduce of the ranks' durations); the first run of each warms up gloo's pair
    connections and is not timed. ``intra``/``inter``: ``(alpha_s, beta_bytes_per_s)``,
    ``None`` for :class:`Cluster`'s defaults. ``nbytes``: the tensor (all-reduce) or each block
    (all-to-all). Returns ``{algorithm: {"best", "median", "predicted", "traffic"}}``,
    ``traffic`` being this rank's record of the last run.
    """
    n = runtime.world_size()
    _check(nodes, ranks_per_node, layout, intra, inter, algorithms, nbytes, repeats, n)
    cluster = _cluster(nodes, ranks_per_node, layout, intra, inter)
    from ..collectives import traffic

    out = {}
    with emulate(cluster):
        for name in algorithms:
            run, times = _call(name, nbytes, n), []
            for i in range(repeats + 1):
                dist.barrier()
                with traffic() as t:
                    start = time.perf_counter()
                    run()
                    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64,
                                           device="cpu")  # a host clock reading
                dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
                if i:
                    times.append(elapsed.item())
            out[name] = {"best": min(times), "median": statistics.median(times),
                         "predicted": predict(name, nbytes, cluster), "traffic": t}
    return out
