"""The rank-side half of exercise ``10.prefetch-order``, taught in notebook 10
(``notebooks/10_when_parallelism_pays.ipynb``): an FSDP forward pass that prefetches.

A toy FSDP model of ``UNITS`` tanh layers; rank r holds the r-th of ``world`` equal
pieces of each unit's flattened ``WIDTH x WIDTH`` weights. The student writes the
forward pass with real asynchronous all-gathers; :func:`observe_forward` runs it and
records, on the rank, what each unit's compute (the ``layer`` callback) found when it
started: which all-gathers had been issued and not yet waited for (in flight), whether
its own had been waited for, and how many units' gathered weights were still alive.
So prefetching is told from its absence by the order the rank really issued its
all-gathers and waits in, not by a list the student describes; and gathering every unit
up front, which also overlaps, shows as the memory it holds. The exercise itself is
registered in :mod:`.nb10`.
"""
from __future__ import annotations

import weakref

from unittest import mock

import torch
import torch.distributed as dist

from .recording import settled

# Pieces of notebook 10's exercise: companion.learning.nb10 imports them; students call
# exercise("10.prefetch-order").check(...), so nothing here is public API.
__all__: list[str] = []

UNITS, WIDTH = 4, 8
_WORK_WAIT = dist.Work.wait


def _weights():
    gen = torch.Generator().manual_seed(10)
    return [torch.randn(WIDTH, WIDTH, generator=gen) / WIDTH ** 0.5 for _ in range(UNITS)]


def _input():
    return torch.randn(3, WIDTH, generator=torch.Generator().manual_seed(11))


def prefetch_inputs(rank, world_size):
    """This rank's input and its shard of every unit's flattened weights."""
    return _input(), [w.flatten().chunk(world_size)[rank].clone() for w in _weights()]


def layer(k, x, weight):
    """Unit ``k``'s compute on its gathered ``[WIDTH, WIDTH]`` weights."""
    return torch.tanh(x @ weight.T)


def prefetch_forward_reference(x, shards, layer):
    world = dist.get_world_size()

    def gather(k):
        full = torch.empty(shards[k].numel() * world)
        return full, dist.all_gather_single(full, shards[k], async_op=True)

    ahead = gather(0)
    for k in range(len(shards)):
        full, work = ahead
        ahead = gather(k + 1) if k + 1 < len(shards) else None
        work.wait()
        x = layer(k, x, full.view(WIDTH, WIDTH))
        del full, work   # unit k's full weights go as soon as it has computed
    return x


def single_process_forward():
    x = _input()
    for w in _weights():
        x = torch.tanh(x @ w.T)
    return x


def observe_forward(candidate, x, shards):
    """The adapter: run ``candidate(x, shards, layer)`` and record, at each unit's
    compute, the all-gathers in flight, its own wait and the gathered weights alive.

    For the run the process group's all-gather methods (which ``dist.all_gather_single``
    and ``dist.all_gather`` reach, however imported) and ``Work.wait`` are wrapped; the
    profile hook is the checker's watcher's."""
    unit_of, waited, alive, seen = {}, set(), [], []
    group_type = type(dist.distributed_c10d._get_default_group())
    originals = {name: getattr(group_type, name) for name in ("all_gather_single", "allgather")}

    def unit(shard):
        return next((k for k, s in enumerate(shards) if s.shape == shard.shape
                     and torch.equal(s, shard)), None)

    def issued(name, outputs, shard, *args, **kwargs):
        work = originals[name](*args, **kwargs)
        unit_of[id(work)] = k = unit(shard)
        for out in outputs:   # weakly: only the student's references keep them alive
            base = out if out._base is None else out._base
            alive.append((weakref.ref(base), base.numel() * base.element_size(), k))
        return work

    def all_gather_single(group, output, shard, *rest, **kwargs):
        return issued("all_gather_single", [output], shard, group, output, shard, *rest,
                      **kwargs)

    def allgather(group, output_lists, shards_in, *rest, **kwargs):
        outputs = [t for lst in output_lists for t in lst]
        return issued("allgather", outputs, shards_in[0], group, output_lists, shards_in,
                      *rest, **kwargs)

    def work_wait(work, *args, **kwargs):
        waited.add(unit_of.get(id(work)))
        return _WORK_WAIT(work, *args, **kwargs)

    def held(k):
        """The live gathered weights; a unit waited for, and not the one computing, may
        still be held by gloo's worker thread, so it is looked at again (``settled``)."""
        def read():
            return {id(r()): (n, u) for r, n, u in alive if r() is not None}
        live = settled(read, lambda got: not any(u in waited and u != k
                                                  for _n, u in got.values()))
        return sum(n for n, _u in live.values())

    def observed_layer(k, x_, weight):
        in_flight = {u for u in unit_of.values() if u is not None and u not in waited}
        seen.append((k, in_flight, k in waited, held(k)))
        return layer(k, x_, weight)

    with mock.patch.object(group_type, "all_gather_single", all_gather_single), \
            mock.patch.object(group_type, "allgather", allgather), mock.patch.object(dist.Work, "wait", work_wait):
        out = candidate(x, shards, observed_layer)
    unit_bytes = WIDTH * WIDTH * 4
    # Computing on weights still on the wire comes first: it explains a wrong output.
    return {"units computed before their own all-gather was waited for":
                _units({k for k, _f, own, _h in seen if not own}),
            "output": out,
            "all-gathers in flight while the unit before them computed":
                _units({k + 1 for k, flying, _o, _h in seen if k + 1 in flying}),
            "most units' gathered weights alive at once":
                max((h for *_rest, h in seen), default=0) / unit_bytes}


def _units(found) -> str:
    """{3, 1, 2} -> "units 1, 2, 3"; empty -> "none" (one leaf, whatever was found)."""
    return "units " + ", ".join(map(str, sorted(found))) if found else "none"
