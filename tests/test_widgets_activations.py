"""The activation-memory calculator that notebooks 03 and 05 share: the controls a notebook
names are the ones shown, the hidden ones still drive the bars, and every bar is
Korthikanti et al.'s formula (companion.data_parallel.memory)."""
from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from companion.data_parallel.memory import activation_memory_per_layer as amp  # noqa: E402
from companion.units import GB  # noqa: E402
from companion.widgets import activation_memory  # noqa: E402

ALL = ("seq_len", "batch", "hidden", "heads", "tp", "sequence_parallel", "recompute", "layers")


def _shown(box):
    return [child for row in box.children[:-3] for child in row.children]


def test_every_control_shows_by_default_in_rows_of_four():
    box = activation_memory()
    assert _shown(box) == [getattr(box, name) for name in ALL]
    assert [len(row.children) for row in box.children[:-3]] == [4, 4]
    assert box.children[-3:] == (box.output, box.image, box.text)
    assert box.tp.options == (1, 2, 4, 8, 16, 32, 64)
    assert bytes(box.image.value).startswith(b"\x89PNG")


def test_only_the_named_controls_show_and_the_others_still_count():
    box = activation_memory(seq_len=4096, hidden=4096, heads=32, layers=32,
                            tp_degrees=(1, 2, 4, 8), controls=("tp", "seq_len"))
    assert _shown(box) == [box.tp, box.seq_len]
    assert box.tp.options == (1, 2, 4, 8)
    box.batch.value = 2    # not shown, still an attribute, still drawn
    assert box.values["no parallelism"] == amp(4096, 2, 4096, 32)
    assert "for 32 layers" in box.text.value


def test_the_bars_are_the_formula_and_the_selection_is_highlighted_in_the_text():
    box = activation_memory()
    args = (2048, 1, 12288, 96)
    assert box.values == {
        "no parallelism": amp(*args), "TP": amp(*args, tp=8),
        "TP+SP": amp(*args, tp=8, sequence_parallel=True),
        "TP + selective": amp(*args, tp=8, recompute="selective"),
        "TP+SP + selective": amp(*args, tp=8, sequence_parallel=True, recompute="selective"),
        "full recompute": amp(*args, tp=8, recompute="full")}
    assert box.selected == box.values["TP"]
    box.sequence_parallel.value, box.recompute.value = True, "selective"
    assert box.selected == box.values["TP+SP + selective"]
    assert f"{box.selected / GB:,.3f} GB per layer" in box.text.value
    box.tp.value = 1       # SP over one rank is no SP: the selection equals no parallelism's bars
    assert box.values["TP"] == box.values["TP+SP"] == box.values["no parallelism"]


@pytest.mark.parametrize("kwargs, name", [
    (dict(controls=()), "controls"), (dict(controls="tp"), "controls"),
    (dict(tp=16, tp_degrees=(1, 2, 4, 8)), "tp"), (dict(tp_degrees=(8, 0)), "tp_degrees"),
])
def test_bad_options_are_refused_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        activation_memory(**kwargs)
