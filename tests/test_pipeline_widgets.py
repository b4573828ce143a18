"""The pipeline widgets redraw when a control moves and survive bad input."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from companion.pipeline import simulate  # noqa: E402
from companion.widgets import schedule_explorer, timeline_player  # noqa: E402


def test_explorer_follows_its_controls(capsys):
    w = schedule_explorer(stages=4, microbatches=1, schedule="gpipe")
    assert w.timeline.utilization == pytest.approx(0.25)
    assert "utilisation 25.0%" in w.title
    w.microbatches.value = 4
    assert w.timeline.utilization == pytest.approx(4 / 7)
    assert "utilisation 57.1%" in w.title
    w.schedule.value = "zb-h1"
    assert w.timeline.split_backward and "zb-h1" in w.title
    before = w.timeline.makespan
    w.send.value = 0.5
    assert w.timeline.makespan > before and "ignores latency" in w.title
    draws = w.draws
    w.frame.value = 10  # one animation step redraws
    assert w.draws == draws + 1
    # outside a kernel an Output widget passes prints through: no callback may have failed
    assert "Traceback" not in capsys.readouterr().out


def test_explorer_survives_bad_input(capsys):
    w = schedule_explorer(stages=4, microbatches=6)
    w.schedule.value = "interleaved"  # with chunks=1 this is plain 1F1B
    good = w.timeline
    w.chunks.value = 2  # 6 micro-batches do not split into groups of 4: shown, not raised
    assert w.timeline is good
    shown = capsys.readouterr().out
    assert "Invalid input" in shown and "multiple of 4" in shown and "Traceback" not in shown
    w.microbatches.value = 8
    assert w.timeline.chunks == 2 and w.timeline.name == "interleaved"


def test_timeline_player(capsys):
    tls = [simulate("gpipe", 2, 4), simulate("1f1b", 2, 4)]
    w = timeline_player(tls, titles=["GPipe", "1F1B"])
    assert w.title == "GPipe | 1F1B"
    w.frame.value = 5
    assert w.draws == 2
    assert "Traceback" not in capsys.readouterr().out
    with pytest.raises(ValueError, match="one each"):
        timeline_player(tls, titles=["only one"])


def test_explorer_offers_the_schedules_after_1f1b(capsys):
    w = schedule_explorer(stages=4, microbatches=8, schedule="1f1b")
    assert {"looped-bfs", "interleaved-zb", "zb-v", "dualpipev"} <= set(w.schedule.options)
    w.schedule.value = "zb-v"  # two chunks in a V, whatever the chunks slider says
    assert w.timeline.chunks == 2 and w.timeline.split_backward and "zb-v" in w.title
    assert "closed form 5.9%" in w.title  # (p-1)/(6m+p-1) at F = B = W
    w.chunks.value = 3
    w.schedule.value = "interleaved-zb"  # the slider sets its chunks
    assert w.timeline.chunks == 3
    w.schedule.value = "dualpipev"
    w.microbatches.value = 6  # DualPipeV needs m >= 2p: shown, not raised
    assert w.timeline.name == "dualpipev" and w.timeline.chunks == 2
    shown = capsys.readouterr().out
    assert "Invalid input" in shown and "at least 2 x stages" in shown
    assert "Traceback" not in shown


@pytest.mark.parametrize("name, ranks", [("looped-bfs", [0, 1, 2, 3, 0, 1, 2, 3]),
                                         ("zb-v", [0, 1, 2, 3, 3, 2, 1, 0])])
def test_the_placement_drawing_follows_a_micro_batch_down_the_loop_or_the_v(name, ranks):
    import matplotlib.pyplot as plt
    from companion.pipeline import make_schedule
    from companion.pipeline.plot import draw_placement
    fig, ax = plt.subplots()
    draw_placement(ax, make_schedule(name, 4, 8))
    path = ax.lines[0]
    assert list(path.get_xdata()) == list(range(8)) and list(path.get_ydata()) == ranks
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"rank {s}" for s in range(4)]
    plt.close(fig)
