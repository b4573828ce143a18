"""The "predict, then run" input: a question, a number or a choice, and a Lock-in button.

Used in every notebook (introduced in notebook 00); the logic lives in
:mod:`companion.learning.predict`. ``guess = prediction("...", unit="ms")`` returns a
displayable box that is also the prediction: ``guess.value = 3`` works in a cell as
well as the button does, and ``guess.reveal(measured)`` compares later.
"""
from __future__ import annotations

import ipywidgets as widgets

from ..learning.predict import Prediction, asked, predict
from ..i18n import _
from ._base import guarded, showing

__all__ = ["prediction"]


class PredictionBox(widgets.VBox):
    """A VBox that forwards to its :class:`Prediction`."""

    def __init__(self, model: Prediction, children):
        super().__init__(children)
        self._model = model

    @property
    def prediction(self) -> Prediction:
        return self._model

    @property
    def value(self):
        return self._model.value

    @value.setter
    def value(self, v):
        self._model.lock(v)
        # Typed in a cell instead of the box: show the box locked too.
        self._field.value = v if self._model.choices is not None else str(v)
        self._field.disabled = self._button.disabled = True

    def reveal(self, measured, rel_tol: float = 0.1, abs_tol: float = 0.0,
               computed: bool = False):
        return self._model.reveal(measured, rel_tol=rel_tol, abs_tol=abs_tol,
                                  computed=computed)


def prediction(question: str, unit: str = "", choices=None) -> PredictionBox:
    """An input for the student's prediction, locked in with a button."""
    model = predict(question, unit=unit, choices=choices)
    if model.choices is not None:
        field = widgets.Dropdown(options=[(_("choose ..."), None)] + [(_(str(c)), c) for c in
                                                                   model.choices],
                                 value=None, description="")
    else:
        field = widgets.Text(value="", placeholder=_("your number"), description="",
                             layout=widgets.Layout(width="12em"))
    button = widgets.Button(description=_("Lock in"), button_style="primary")
    status = widgets.Output()
    # The question is the notebook's (English) code; messages.NOTEBOOK_ZH_CN translates it.
    label = _("<b>Predict:</b> {question}").format(question=asked(question)) + (
        f" <i>({_(unit)})</i>" if unit else "")

    @guarded(status)   # a typo (ValueError) shows as "Invalid input: ...", not a traceback
    def lock(_click):
        if field.value in (None, ""):
            raise ValueError(_("type or choose your prediction first"))
        model.lock(field.value)
        field.disabled = button.disabled = True
        with showing(status):
            shown = repr(_(model.value)) if isinstance(model.value, str) else repr(model.value)
            print(_("Locked in: {value}").format(value=shown)
                  + (f" {_(unit)}" if unit else "") + _(". Now run the cells below."))

    button.on_click(lock)
    box = PredictionBox(model, [widgets.HTML(label), widgets.HBox([field, button]), status])
    box.add_class("companion-prediction")   # the browser tests answer it like a student
    box._field, box._button = field, button
    return box
