"""The topology drawing of notebook 11: layouts, messages in flight, bytes delivered.

The notebook feeds it messages recorded on the emulated cluster; here the records are
written by hand so that what must be in flight at each moment is known exactly."""
from types import SimpleNamespace

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from companion.widgets.topology import draw_topology, positions, topology_player  # noqa: E402

MESSAGES = [dict(src=0, dst=1, link="intra", bytes=1000, start=10.0, end=11.0),
            dict(src=1, dst=3, link="inter", bytes=4000, start=10.5, end=12.0)]


def cluster(layout="nodes", nodes=2, ranks_per_node=2):
    return SimpleNamespace(nodes=nodes, ranks_per_node=ranks_per_node, layout=layout)


@pytest.mark.parametrize("layout", ["nodes", "ring", "torus"])
def test_every_rank_has_a_place_and_the_switch_only_in_nodes(layout):
    pos = positions(cluster(layout, 3, 3))
    assert set(range(9)) <= set(pos)
    assert ("switch" in pos) == (layout == "nodes")
    assert len({pos[r] for r in range(9)}) == 9


def test_in_flight_and_delivered_follow_the_recorded_times():
    fig, ax = plt.subplots()
    try:
        assert draw_topology(cluster(), MESSAGES, at=0.7, ax=ax) == {
            "in_flight": 2, "delivered": {}}
        assert draw_topology(cluster(), MESSAGES, at=1.2, ax=ax) == {
            "in_flight": 1, "delivered": {"intra": 1000}}
        assert draw_topology(cluster(), MESSAGES, at=2.0, ax=ax) == {
            "in_flight": 0, "delivered": {"intra": 1000, "inter": 4000}}
    finally:
        plt.close(fig)


def test_player_ends_with_everything_delivered():
    box = topology_player(cluster(), MESSAGES, frames=5, title="ring")
    box.slider.value = 4
    assert "0 in flight" in box.last_title and "inter 4 kB" in box.last_title


@pytest.mark.parametrize("kwargs, word", [({"messages": []}, "messages"),
                                          ({"messages": MESSAGES, "frames": 1}, "frames")])
def test_bad_input_names_the_argument(kwargs, word):
    with pytest.raises(ValueError, match=word):
        topology_player(cluster(), **kwargs)


def _arrows(ax):
    """The (tail, head, colour) of every arrow drawn for a message in flight."""
    out = []
    for a in ax.texts:
        props = getattr(a, "arrowprops", None)
        if props and props.get("arrowstyle") == "-|>":
            out.append((tuple(a.xyann), tuple(a.xy), props["color"]))
    return out


def test_a_multi_hop_route_is_drawn_hop_by_hop_in_each_hop_class():
    """On a ring of 2 nodes x 2, rank 0 -> rank 2 crosses 0 -> 1 (intra) and 1 -> 2
    (inter): two arrows, coloured by their own class, not one straight line."""
    from companion.widgets.topology import LINK_COLORS

    ring = cluster("ring")
    pos = positions(ring)
    msg = dict(src=0, dst=2, link="inter", bytes=8, start=0.0, end=1.0,
               hops=((0, 1, "intra"), (1, 2, "inter")))
    fig, ax = plt.subplots()
    try:
        assert draw_topology(ring, [msg], at=0.5, ax=ax)["in_flight"] == 1
        assert _arrows(ax) == [(pos[0], pos[1], LINK_COLORS["intra"]),
                               (pos[1], pos[2], LINK_COLORS["inter"])]
    finally:
        plt.close(fig)


def test_between_nodes_a_message_goes_through_the_switch():
    pos = positions(cluster())
    fig, ax = plt.subplots()
    try:
        draw_topology(cluster(), [dict(src=1, dst=3, link="inter", bytes=8, start=0.0,
                                       end=1.0, hops=((1, 3, "inter"),))], at=0.5, ax=ax)
        assert [(a, b) for a, b, _ in _arrows(ax)] == [(pos[1], pos["switch"]),
                                                       (pos["switch"], pos[3])]
    finally:
        plt.close(fig)


@pytest.mark.parametrize("layout", ["nodes", "ring", "torus"])
def test_the_player_takes_the_topology_packages_records(layout):
    """The records of companion.topology (here the link model's, which have the same keys
    as timeline()'s) play to the end with every byte delivered, per link class."""
    from companion import topology

    cl = topology.Cluster(2, 3, layout=layout)
    algorithm = "torus_all_to_all" if layout != "nodes" else "hierarchical"
    messages = topology.schedule_time(topology.schedule(algorithm, 1200, cl), cl)["messages"]
    box = topology_player(cl, messages, frames=3)
    box.slider.value = 2
    assert "0 in flight" in box.last_title
    totals = {}
    for m in messages:
        totals[m["link"]] = totals.get(m["link"], 0) + m["bytes"]
    fig, ax = plt.subplots()
    try:
        shown = draw_topology(cl, messages, at=1e9, ax=ax)
        assert shown == {"in_flight": 0, "delivered": totals}
    finally:
        plt.close(fig)


def test_a_record_without_times_is_named():
    with pytest.raises(ValueError, match=r"messages\[0\] has no start, end"):
        topology_player(cluster(), [dict(src=0, dst=1, link="intra", bytes=4)])
