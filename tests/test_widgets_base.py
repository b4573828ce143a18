"""Widget callbacks show their errors instead of swallowing them."""
from __future__ import annotations

import ipywidgets as widgets

from companion.widgets import guarded


def test_value_error_is_shown_as_a_one_line_message(capsys):
    out = widgets.Output()

    @guarded(out)
    def callback(change=None):
        raise ValueError("size must be positive; got -3")

    callback()  # must not raise: a slider callback that raises looks dead in the browser
    # Outside a kernel an Output widget cannot capture, so the text reaches stdout.
    assert "Invalid input: size must be positive; got -3" in capsys.readouterr().out


def test_other_errors_show_their_traceback(capsys):
    out = widgets.Output()

    @guarded(out)
    def callback(change=None):
        return {}["missing"]

    callback()
    text = capsys.readouterr().out
    assert "Traceback (most recent call last)" in text and "KeyError" in text


def test_a_working_callback_returns_its_value():
    out = widgets.Output()
    assert guarded(out)(lambda: 42)() == 42


def test_every_widget_factory_is_exported():
    import companion.widgets as w

    assert "planner" in w.__all__ and callable(w.planner)
