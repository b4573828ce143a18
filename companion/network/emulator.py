"""Put an emulated cluster between real ranks: every message pays the links it crosses.

Taught in notebook 11 (``notebooks/11_networks_and_topology.ipynb``); the whole-operation
version for one wide-area link is :mod:`companion.network.delayed` (notebook 08).

Inside ``with emulate(cluster):`` every message that goes through
:func:`companion.collectives.traffic.exchange` (every collective of
:mod:`companion.collectives` does) is

* **really sent** (gloo isend/irecv on loopback, the data are the real data), together
  with a 8-byte header carrying the emulated departure time;
* **withheld**: the round returns only once the emulated link has delivered every
  message it receives and pushed out every message it sends, by the model of
  :mod:`.links` (``alpha + bytes / beta`` per message, queueing on shared ports).

All ranks run on this machine and ``time.perf_counter`` (``CLOCK_MONOTONIC``) is one
clock for all of them, so a sender's departure time means the same to its receiver and
the recorded timelines of different ranks line up. Limits: the real loopback time and
the Python around each round are *added* (a round starts when the rank gets to it, not
when the emulated link would have let it), so choose links slow against loopback (the
:class:`~companion.topology.Cluster` defaults are); the header is real traffic, not
counted in :class:`~companion.collectives.Traffic`.

Under torchrun on real nodes there is nothing to emulate: the links are real, and
:func:`node_shape` reads the node structure from torchrun's environment.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import time

import torch
import torch.distributed as dist

from .cluster import Cluster
from .links import Ports

__all__ = ["emulate", "current", "node_shape", "Emulation"]

_HEADER_TAG = 0x70F0  # headers and payloads between one pair match in order, per tag
_ACTIVE: list["Emulation"] = []


@dataclasses.dataclass
class Emulation:
    """The emulated cluster as one rank sees it: the cluster, this rank, its ports."""

    cluster: Cluster
    rank: int
    ports: Ports
    started_at: float  # perf_counter when emulate() was entered: t = 0 of a timeline


@contextlib.contextmanager
def emulate(cluster: Cluster):
    """Inside a rank: ``with emulate(cluster): ...`` runs this package's collectives on
    ``cluster``'s links. Every rank enters it; the world size must be the cluster's."""
    if not isinstance(cluster, Cluster):
        raise TypeError(f"cluster must be a companion.topology.Cluster, got {cluster!r} "
                        f"({type(cluster).__name__}); build one with Cluster(nodes, ranks_per_node).")
    n = dist.get_world_size() if dist.is_initialized() else 1
    if cluster.world_size != n:
        raise ValueError(f"cluster has {cluster.nodes} x {cluster.ranks_per_node} = "
                         f"{cluster.world_size} ranks but this job has {n}; launch "
                         f"world_size=cluster.world_size.")
    emu = Emulation(cluster, dist.get_rank() if dist.is_initialized() else 0,
                    Ports(cluster), time.perf_counter())
    _ACTIVE.append(emu)
    try:
        yield emu
    finally:
        _ACTIVE.remove(emu)


def current() -> Emulation | None:
    """The innermost active emulation in this process, or None."""
    return _ACTIVE[-1] if _ACTIVE else None


def _env(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else None


def node_shape(ranks_per_node: int | None = None, argument: str = "ranks_per_node") -> int:
    """Ranks per node: the argument if given, else the emulated cluster's, else torchrun's
    ``LOCAL_WORLD_SIZE`` (when ``GROUP_RANK`` says torchrun grouped ranks into nodes).

    Checks that the shape divides the world size and, under torchrun, that ranks are
    numbered node by node (``RANK == GROUP_RANK * LOCAL_WORLD_SIZE + LOCAL_RANK``).
    """
    n = dist.get_world_size() if dist.is_initialized() else 1
    if ranks_per_node is None:
        emu = current()
        if emu is not None:
            ranks_per_node = emu.cluster.ranks_per_node
        elif _env("GROUP_RANK") is not None and _env("LOCAL_WORLD_SIZE") is not None:
            ranks_per_node = _env("LOCAL_WORLD_SIZE")
            expected = _env("GROUP_RANK") * ranks_per_node + (_env("LOCAL_RANK") or 0)
            if _env("RANK") is not None and _env("RANK") != expected:
                raise ValueError(
                    f"torchrun numbered this rank {_env('RANK')}, not GROUP_RANK * "
                    f"LOCAL_WORLD_SIZE + LOCAL_RANK = {expected}: the nodes run different "
                    f"numbers of processes; pass {argument}= explicitly, or start every "
                    "node with the same --nproc-per-node.")
        else:
            raise ValueError(
                f"{argument}=None but there is no node structure to read: no emulated "
                "cluster is active (with companion.topology.emulate(cluster): ...) and this "
                f"is not a multi-node torchrun job (no GROUP_RANK/LOCAL_WORLD_SIZE); pass "
                f"{argument}= explicitly.")
    from ..validation import divides, positive_int

    ranks_per_node = positive_int(argument, ranks_per_node, f"pass a divisor of the world size {n}.")
    divides("world_size", n, ranks_per_node, argument,
            f"pass a {argument} that divides the {n} ranks")
    return ranks_per_node


def _sleep_until(deadline: float) -> None:
    remaining = deadline - time.perf_counter()
    if remaining > 0:
        time.sleep(remaining)


def exchange(emu: Emulation, sends, recvs) -> tuple[list, list]:
    """One round through the emulated links (called by ``traffic.exchange``).

    Returns ``(depart, done)`` per send (``done``: its egress port is free again) and
    ``(depart, arrived)`` per receive, in the order given.
    """
    me, ports = emu.rank, emu.ports
    posted = time.perf_counter()
    work, sent, headers = [], [], []
    for peer, tensor, *_ in sends:
        depart, done = ports.depart(me, peer, tensor.numel() * tensor.element_size(), posted)
        # The departure time is a host clock reading the receiver reads back at once.
        header = torch.tensor([depart], dtype=torch.float64, device="cpu")
        work.append(dist.isend(header, dst=peer, tag=_HEADER_TAG))
        work.append(dist.isend(tensor.contiguous(), dst=peer))
        sent.append((depart, done))
    for peer, buffer, *_ in recvs:
        header = torch.empty(1, dtype=torch.float64, device="cpu")
        work.append(dist.irecv(header, src=peer, tag=_HEADER_TAG))
        work.append(dist.irecv(buffer, src=peer))
        headers.append(header)
    for w in work:
        w.wait()
    got = [None] * len(recvs)
    # The ingress port serves messages in the order they left their senders.
    for i in sorted(range(len(recvs)), key=lambda i: (headers[i].item(), recvs[i][0])):
        peer, buffer = recvs[i][0], recvs[i][1]
        depart = headers[i].item()
        got[i] = (depart, ports.arrive(peer, me, buffer.numel() * buffer.element_size(), depart))
    _sleep_until(max([d for _, d in sent] + [a for _, a in got], default=posted))
    return sent, got
