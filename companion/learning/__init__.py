"""The learning loop: exercises checked on real ranks, hints, predictions, a student release.

Introduced in notebook 00 and used by every notebook. ``exercise("01.ring")`` fetches an
exercise (:mod:`.exercise`); ``companion.widgets.prediction`` asks for a prediction
(:mod:`.predict`); ``make student`` writes the notebooks without solutions
(:mod:`.release`). Each notebook's exercises live in ``nbNN.py`` beside this file.
"""
from .exercise import Exercise, Verdict, all_exercises, exercise, register
from .predict import Prediction, predict

__all__ = ["Exercise", "Verdict", "exercise", "register", "all_exercises", "Prediction",
           "predict"]
