"""Rank functions behind the demonstrations of notebooks 01 and 02.

Each runs inside ranks (``companion.launch(fn, world_size=N)``) and returns data for
the notebook to draw; the registered ones also run as
``python -m companion run collectives_<name> --world-size N``.
"""
from __future__ import annotations

from ..i18n import gettext as tr

import torch
import torch.distributed as dist

from .. import runtime
from ..experiments import experiment
from .all_reduce import ALL_REDUCE_ALGORITHMS
from .primitives import (all_gather, all_to_all, broadcast, gather, reduce, reduce_scatter,
                         scatter)
from .traffic import chunk_sizes, traffic
from ..validation import one_of, positive_int, preflight

__all__ = ["rank_values", "primitives_demo", "all_reduce_demo", "record", "traffic_sweep"]


def _check_numel(numel) -> None:
    positive_int("numel", numel, "pass the number of elements, e.g. numel=4.")


def _check_record(names, numel) -> None:
    for name in names:
        one_of("names", name, [*ALL_REDUCE_ALGORITHMS, "reduce_scatter", "all_gather"])
    _check_numel(numel)


@preflight(_check_numel)
def rank_values(numel: int = 4) -> torch.Tensor:
    """Rank r's demo tensor ``[10r+1, 10r+2, ...]``: sums stay readable and exact."""
    _check_numel(numel)
    dev = runtime.device()
    return torch.arange(1, numel + 1, dtype=torch.float32, device=dev) + 10 * dist.get_rank()


def _table(results) -> str:
    rows = [f"{tr('collective'):<28}{tr('result on rank 0'):<40}{tr('msgs'):>6}{tr('steps'):>7}"]
    for name, (out, t) in results[0].items():
        shown = [o.tolist() for o in out] if isinstance(out, list) else (
            None if out is None else out.tolist())
        rows.append(f"{name:<28}{str(shown)[:38]:<40}{t['messages']:>6}{t['steps']:>7}")
    return "\n".join(rows)


@experiment("collectives_primitives", summarize=_table)
@preflight(_check_numel)
def primitives_demo(numel: int = 4) -> dict:
    """Every primitive once on :func:`rank_values`; per primitive (result, traffic summary)."""
    x, n = rank_values(numel), dist.get_world_size()  # rank_values checks numel
    calls = {
        "broadcast": lambda: broadcast(x, src=0),
        "reduce": lambda: reduce(x, dst=0),
        "scatter": lambda: scatter(x, src=0),
        "gather": lambda: gather(x, dst=0),
        "all_gather": lambda: all_gather(x),
        "reduce_scatter": lambda: reduce_scatter(x),
        "all_to_all": lambda: all_to_all(list(x.tensor_split(n))),
    }
    out = {}
    for name, call in calls.items():
        with traffic() as t:
            result = call()
        out[name] = (result, t.summary())
    return out


@experiment("collectives_all_reduce", summarize=_table)
@preflight(_check_numel)
def all_reduce_demo(numel: int = 4) -> dict:
    """Every all-reduce algorithm and ``dist.all_reduce`` on :func:`rank_values`."""
    x = rank_values(numel)
    out = {}
    for name, fn in ALL_REDUCE_ALGORITHMS.items():
        with traffic() as t:
            result = fn(x)
        out[name] = (result, t.summary())
    y = x.clone()
    dist.all_reduce(y)
    out["torch"] = (y, {"messages": 0, "steps": 0, "bytes_sent": 0, "bytes_received": 0})
    return out


@preflight(_check_record)
def record(*names: str, numel: int = 8):
    """The :class:`Traffic` of the named collectives run one after another on one tensor.

    Names are all-reduce algorithms, or "reduce_scatter" then "all_gather" (the second
    gathers the chunks the first produced), so notebook 01 can replay any of them.
    """
    _check_record(names, numel)
    x = rank_values(numel)
    n = dist.get_world_size()
    with traffic() as t:
        for name in names:
            if name == "reduce_scatter":
                x = reduce_scatter(x)
            elif name == "all_gather":
                sizes = chunk_sizes(numel, n)  # the chunks reduce_scatter left
                mine = x if x.numel() == sizes[dist.get_rank()] else x.tensor_split(n)[dist.get_rank()]
                x = torch.cat(all_gather(mine, sizes=sizes))
            else:
                x = ALL_REDUCE_ALGORITHMS[name](x)
    return t


@experiment("collectives_traffic_sweep")
@preflight(_check_numel)
def traffic_sweep(numel: int = 4096) -> dict:
    """Per algorithm, this rank's traffic summary for one all-reduce of ``numel`` floats."""
    _check_numel(numel)
    dev = runtime.device()
    x = torch.ones(numel, device=dev)
    out = {}
    for name, fn in ALL_REDUCE_ALGORITHMS.items():
        with traffic() as t:
            fn(x)
        out[name] = t.summary()
    return out
