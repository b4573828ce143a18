"""The replay widget of notebook 01 redraws from a recorded run when its slider moves."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402
import torch  # noqa: E402

import companion  # noqa: E402
from companion import collectives as C  # noqa: E402
from companion import widgets  # noqa: E402


def _ring():
    with C.traffic() as t:
        C.ring_all_reduce(torch.ones(6))
    return t


def test_replay_widget_redraws_and_reports_bad_frames():
    w = widgets.collective_replay(companion.launch(_ring, world_size=3), title="ring")
    assert w.slider.max == 4 and w.play.max == 4  # 2(N-1) steps + the start
    first = w.last_title
    w.slider.value = 2
    assert w.last_title != first and "step 2 of 4" in w.last_title
    with pytest.raises(ValueError, match="frame must be in 0..4"):
        widgets.draw_replay_frame(w.replay, 9)


def test_plot_rank_tensors_accepts_missing_rows():
    ax = widgets.plot_rank_tensors([torch.arange(3.0), None], title="gather")
    assert ax.get_title() == "gather"


def test_partial_sums_follow_the_replay():
    import matplotlib.pyplot as plt

    w = widgets.collective_replay(companion.launch(_ring, world_size=3), title="ring",
                                  values=[torch.full((6,), 10.0 ** r) for r in range(3)])
    fig, ax = plt.subplots()
    widgets.draw_replay_frame(w.replay, 4, ax, values=[torch.full((6,), 10.0 ** r) for r in range(3)])
    assert {t.get_text() for t in ax.texts} - {""} == {"0+1+2\n111, 111"}  # "": arrows
    with pytest.raises(ValueError, match="one tensor per rank"):
        widgets.draw_replay_frame(w.replay, 0, values=[torch.ones(6)])
    plt.close("all")
