"""Emulated networks under the real ranks: a slow link, a cluster of links, its ports.

Shared by notebooks 08, 10 and 11, and below the collectives that run over it:

* :mod:`.delayed`: :class:`~.delayed.DelayedComm`, one link of latency ``alpha`` and
  bandwidth ``beta`` between the ranks (notebooks 08 and 10);
* :mod:`.cluster`: :class:`~.cluster.Cluster`, nodes and ranks with intra- and inter-node
  links, as a ring or a torus (notebook 11);
* :mod:`.links`: the egress and ingress ports where messages queue;
* :mod:`.emulator`: ``emulate(cluster)``, the context under which the package's
  collectives hold every message until the link model says it arrived.
"""
