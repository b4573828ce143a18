"""An emulated cluster with a topology, for real ranks on one machine.

Taught in notebook 11 (``notebooks/11_networks_and_topology.ipynb``)::

    from companion import topology, collectives as C
    cluster = topology.Cluster(2, 2, intra=(2e-4, 200e6), inter=(1e-3, 20e6))

    def job(cluster):                       # runs in every rank
        x = torch.ones(250_000)
        with topology.emulate(cluster), C.traffic() as t:
            C.hierarchical_all_reduce(x)
        return t

    traffics = companion.launch(job, cluster, world_size=cluster.world_size)
    topology.timeline(traffics)             # every message: link, hops, start, end
    topology.simulate(traffics, cluster)    # the same messages through the link model
"""
from ..network.cluster import LAYOUTS, LINK_CLASSES, Cluster, Hop
from ..network.emulator import current, emulate, node_shape
from ..network.links import Ports
from .model import ALGORITHMS, predict, schedule, schedule_time, simulate, timeline
from .timing import time_collectives

__all__ = ["Cluster", "Hop", "LAYOUTS", "LINK_CLASSES", "emulate", "current", "node_shape",
           "Ports", "timeline", "simulate", "predict", "schedule", "schedule_time", "ALGORITHMS",
           "time_collectives"]
