"""The link model of the emulated cluster: when a message leaves and when it arrives.

Taught in notebook 11 (``notebooks/11_networks_and_topology.ipynb``). The same
arithmetic runs inside the ranks (:mod:`.emulator`, where each rank keeps its own
ports) and in the parent (:func:`companion.topology.simulate`, one :class:`Ports` for
the whole cluster), so a recorded run and its prediction cannot drift apart.

A message of ``n`` bytes crossing hops ``h_1 .. h_m`` (one hop in the "nodes" layout):

* it **departs** when the sender posts it and the sender's egress port for the first
  hop is free: ``depart = max(posted, egress_free)``; the port is then busy for
  ``n / beta_1`` (messages on one port go one after another: bandwidth serialises);
* it **arrives** ``end = max(depart + alpha_1 + .. + alpha_m, ingress_free) + n /
  beta_min``: the latencies add up hop by hop (cut-through, as switches forward), the
  bytes stream at the slowest hop's bandwidth, and they queue behind earlier messages
  at the receiver's ingress port for the last hop.

Ports: in the "nodes" layout a rank has one egress and one ingress port per link class
(its NVLink side and its NIC), shared by every peer it talks to over that class; on a
ring or torus every directed link is a port of its own. What is *not* modelled: links
in the middle of a multi-hop route are not reserved (two routes crossing one middle
link do not slow each other down; the neighbour-only algorithms of this package never
route through a middle link), and a port serves the messages of one round in the order
of their departure (ties: lower sender rank first).
"""
from __future__ import annotations

import math

from .cluster import Cluster, Hop

__all__ = ["Ports"]


class Ports:
    """Busy-until times of the ports one rank (or the whole cluster, in a simulation) owns."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.free: dict[tuple, float] = {}

    def _egress(self, hop: Hop) -> tuple:
        if self.cluster.layout == "nodes":
            return ("out", hop.src, hop.link)
        return ("out", hop.src, hop.dst)

    def _ingress(self, hop: Hop) -> tuple:
        if self.cluster.layout == "nodes":
            return ("in", hop.dst, hop.link)
        return ("in", hop.src, hop.dst)

    def _seconds(self, nbytes: int, beta: float) -> float:
        return nbytes / beta if math.isfinite(beta) else 0.0

    def depart(self, src: int, dst: int, nbytes: int, posted: float) -> tuple[float, float]:
        """``(depart, egress_done)`` of a message posted at ``posted``; books the egress port."""
        first = self.cluster.route(src, dst)[0]
        key = self._egress(first)
        depart = max(posted, self.free.get(key, -math.inf))
        done = depart + self._seconds(nbytes, self.cluster.params(first.link)[1])
        self.free[key] = done
        return depart, done

    def arrive(self, src: int, dst: int, nbytes: int, depart: float) -> float:
        """When the message that left ``src`` at ``depart`` is all at ``dst``; books the ingress port."""
        hops = self.cluster.route(src, dst)
        alpha = sum(self.cluster.params(h.link)[0] for h in hops)
        beta = min(self.cluster.params(h.link)[1] for h in hops)
        key = self._ingress(hops[-1])
        end = max(depart + alpha, self.free.get(key, -math.inf)) + self._seconds(nbytes, beta)
        self.free[key] = end
        return end
