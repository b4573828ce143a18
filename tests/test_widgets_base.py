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


def test_showing_replaces_the_outputs_in_order_and_echoes_outside_a_kernel(capsys):
    from companion.widgets._base import showing

    out = widgets.Output()
    with showing(out):
        print("old")
    with showing(out):
        print("one")
        print("two")
    assert out.outputs == ({"output_type": "stream", "name": "stdout", "text": "one\ntwo\n"},)
    # Outside a kernel nobody shows the widget, so scripts and tests still see the text.
    assert capsys.readouterr().out == "old\none\ntwo\n"


def test_showing_keeps_what_was_drawn_before_an_error(capsys):
    from companion.widgets._base import showing

    out = widgets.Output()
    try:
        with showing(out):
            print("partial")
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert out.outputs[0]["text"] == "partial\n"


def test_displayed_images_are_stored_as_base64_text():
    from companion.widgets._base import _Recorder

    recorder = _Recorder()
    recorder.display({"image/png": b"\x89PNG", "text/plain": "<Figure>"})
    data = recorder.outputs[0]["data"]
    # bytes would be sent as a binary buffer, which an Output widget cannot render
    assert data == {"image/png": "iVBORw==", "text/plain": "<Figure>"}
