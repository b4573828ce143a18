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
