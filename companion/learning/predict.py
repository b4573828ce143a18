"""Predict, then run: a student commits to a number or a choice before a cell measures it.

Introduced in notebook 00 and used in every notebook. In a notebook::

    guess = predict("What fraction of the time is the pipeline idle?", unit="fraction")
    # the widget (companion.widgets.prediction) shows an input and a "Lock in" button;
    # a student can also write   guess.value = 0.3   in a cell
    ...                           # the cell that measures
    guess.reveal(measured, rel_tol=0.15)

``reveal`` compares the measurement with the locked prediction and says how far off it
was; without a prediction it says so and shows the measurement, so "Run All" (and CI)
still go through.
"""
from __future__ import annotations

import dataclasses
import math

from ..i18n import _
from ..validation import positive_number
from .feedback import say

__all__ = ["Prediction", "predict"]

# One whole sentence per case, so a translation keeps its own word order.
_VERDICTS = {
    (True, False): "You predicted {value}; measured {shown} (within {tol}; your number is "
                   "{ratio}x the measurement).",
    (False, False): "You predicted {value}; measured {shown} (outside {tol}; your number is "
                    "{ratio}x the measurement).",
    (True, True): "You predicted {value}; measured {shown} (within {tol} or {abs_tol}; your "
                  "number is {ratio}x the measurement).",
    (False, True): "You predicted {value}; measured {shown} (outside {tol} or {abs_tol}; "
                   "your number is {ratio}x the measurement).",
}


# The same sentences for a value the course computes (a model, a closed form, a published
# figure): calling it "measured" would misstate where the number comes from.
_COMPUTED_VERDICTS = {
    (True, False): "You predicted {value}; computed {shown} (within {tol}; your number is "
                   "{ratio}x the computed value).",
    (False, False): "You predicted {value}; computed {shown} (outside {tol}; your number is "
                    "{ratio}x the computed value).",
    (True, True): "You predicted {value}; computed {shown} (within {tol} or {abs_tol}; your "
                  "number is {ratio}x the computed value).",
    (False, True): "You predicted {value}; computed {shown} (outside {tol} or {abs_tol}; "
                   "your number is {ratio}x the computed value).",
}


class Question(str):
    """A question a cell fills in with its numbers (:func:`question`): the English text,
    which also carries its template, so the Chinese edition translates the whole question
    and fills in the same numbers."""

    template: str = ""
    fields: dict = {}


def question(template: str, **fields) -> Question:
    """``template.format(**fields)``, translatable as a whole: use it instead of an
    f-string for a prediction question that states the cell's numbers, e.g.
    ``prediction(question("On P={P} ranks, ...", P=P), unit="x")``."""
    if not isinstance(template, str) or not template.strip():
        raise ValueError("template: pass the question as text with {name} fields, e.g. "
                         "question('On P={P} ranks ...?', P=4)")
    try:
        found = Question(template.format(**fields))
    except (KeyError, IndexError, ValueError) as err:
        raise ValueError(f"template={template!r}: its fields and the values passed differ "
                         f"({err!r}); pass one keyword per {{name}}") from None
    found.template, found.fields = template, dict(fields)
    return found


def asked(text: str) -> str:
    """The question in the current language (a :func:`question` translated whole)."""
    if isinstance(text, Question):
        return say(text.template, **text.fields)
    return _(text)


@dataclasses.dataclass
class Prediction:
    question: str
    unit: str = ""
    choices: tuple | None = None
    value: object = None
    locked: bool = False

    def lock(self, value) -> None:
        """Commit to ``value`` (the widget's button calls this)."""
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"value={value!r}: choose one of {list(self.choices)}")
        if self.choices is None:
            try:
                value = float(value)
            except (TypeError, ValueError):
                if self.unit:
                    raise ValueError(f"value={value!r}: type a number (in {self.unit})") from None
                raise ValueError(f"value={value!r}: type a number") from None
        self.value, self.locked = value, True

    def reveal(self, measured, rel_tol: float = 0.1, abs_tol: float = 0.0,
               computed: bool = False) -> bool | None:
        """Print the measurement beside the prediction; True when within tolerance,
        None when nothing was predicted. ``computed=True`` when the answer is computed
        (a model's, a closed form's), not measured: the printed words say so."""
        positive_number("rel_tol", rel_tol, "use e.g. rel_tol=0.1 for 10%", zero=True)
        positive_number("abs_tol", abs_tol, "use abs_tol=0 or a small number", zero=True)
        shown = _fmt(measured, self.unit)
        if self.value is None:
            text = (_("Computed: {shown}. (No prediction was locked in: next time commit to "
                      "one first; being wrong is where the learning happens.)") if computed
                    else _("Measured: {shown}. (No prediction was locked in: next time commit "
                           "to one first; being wrong is where the learning happens.)"))
            print(text.format(shown=shown))
            return None
        if self.choices is not None:
            ok = self.value == measured
            print(say("You predicted {value}; the answer is {measured}. Right." if ok else
                      "You predicted {value}; the answer is {measured}. Not this time: read "
                      "on for why.", value=_shown_choice(self.value),
                      measured=_shown_choice(measured)))
            return ok
        value = float(self.value)
        ok = math.isclose(value, float(measured), rel_tol=rel_tol, abs_tol=abs_tol)
        ratio = value / measured if measured else math.inf
        verdicts = _COMPUTED_VERDICTS if computed else _VERDICTS
        print(say(verdicts[ok, bool(abs_tol)], value=_fmt(value, self.unit), shown=shown,
                  tol=f"{rel_tol:.0%}", abs_tol=f"{abs_tol:g}", ratio=f"{ratio:.2f}"))
        return ok


def _shown_choice(choice) -> str:
    """A choice as the student reads it: its text in the current language (the English
    choice stays the value compared), quoted like its repr."""
    return repr(_(choice)) if isinstance(choice, str) else repr(choice)


def _fmt(x, unit: str) -> str:
    if isinstance(x, float):
        text = f"{x:.3g}"
    else:
        text = _shown_choice(x) if not isinstance(x, (int,)) else f"{x}"
    return f"{text} {_(unit)}".strip() if unit and unit != "fraction" else text


def predict(question: str, unit: str = "", choices=None) -> Prediction:
    """A :class:`Prediction` without a widget (scripts, tests); notebooks use
    ``companion.widgets.prediction``, which returns the same object."""
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question: pass the question the student answers, as text")
    if choices is not None:
        choices = tuple(choices)
        if len(choices) < 2:
            raise ValueError(f"choices={list(choices)!r}: give at least two options")
    return Prediction(question, unit, choices)
