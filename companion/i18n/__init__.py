"""The language a student reads: English (the default), Simplified or Traditional Chinese.

The Chinese edition. A notebook in ``notebooks/zh-CN/`` or ``notebooks/zh-TW/``
speaks its language without any call: the kernel runs in that folder (JupyterLab and
nbval start it there) and :func:`get_language` reads the folder's name. Anywhere else,
one call in the first cell chooses::

    import companion
    companion.set_language("zh-CN")     # or "zh-TW", or "en"

What is translated: every string the package routes through :func:`_` (the checker's
verdicts, hints' frame, predictions, widget labels, the launcher's explanations, plot
labels), looked up in a message table keyed by the English text (``messages.py``;
``notebook_strings.py`` for the questions the notebooks' code passes in,
gettext's convention: an untranslated string falls back to the English one, so English
output stays byte-identical), each exercise's title, task and hints, taken from the
translators' files by ``python -m companion.tools.i18n_build`` (``data/exercises.json``).
Why a table and not gettext ``.po``/``.mo`` files: ``.mo`` is a compiled binary that a
build step must regenerate and git cannot diff, while the table is reviewed as code, its
zh-TW half (``data/messages.zh-TW.json``) is generated from the zh-CN half in Taiwan usage
(:mod:`companion.tools.zh_tw`), and
tests/test_translations.py
checks that every ``_("...")`` in the package has both. The ValueError/TypeError messages
of public functions stay English where they are raised and are shown in Chinese by
:mod:`.errors` (a catalogue of their source templates).
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path

__all__ = ["LANGUAGES", "set_language", "get_language"]

LANGUAGES = ("en", "zh-CN", "zh-TW")
_ALIASES = {"en": "en", "en-us": "en", "en-gb": "en", "zh": "zh-CN", "zh-cn": "zh-CN",
            "zh_cn": "zh-CN", "zh-hans": "zh-CN", "zh-tw": "zh-TW", "zh_tw": "zh-TW",
            "zh-hant": "zh-TW"}
ENV = "COMPANION_LANG"   # set by set_language, so the ranks a notebook starts inherit it
_chosen: str | None = None


def _normalise(language, argument: str = "language") -> str:
    key = language.strip().lower() if isinstance(language, str) else None
    if key not in _ALIASES:
        raise ValueError(f"{argument}={language!r}: use one of {list(LANGUAGES)} "
                         "(e.g. companion.set_language('zh-CN'))")
    return _ALIASES[key]


def set_language(language: str) -> str:
    """Speak ``language`` ("en", "zh-CN" or "zh-TW") from now on; returns it.

    Whoever follows the language (:func:`on_language_change`; ``companion.plotting``
    registers the CJK font for Chinese) is told."""
    global _chosen
    _chosen = _normalise(language)
    os.environ[ENV] = _chosen
    _tell(_chosen)
    return _chosen


_listeners: list = []
_told: str | None = None


def on_language_change(callback) -> None:
    """Call ``callback(language)`` now, and again whenever the language is set or found.

    This is how a layer above follows the language without this package knowing it:
    ``companion.plotting`` registers the CJK font with matplotlib when it turns Chinese.
    """
    _listeners.append(callback)
    callback(get_language())


def _tell(language: str) -> None:
    global _told
    _told = language
    for callback in list(_listeners):
        callback(language)


def _from_folder() -> str | None:
    """zh-CN / zh-TW when the notebook (JupyterLab's session path) or the kernel's working
    directory is one of the Chinese edition's folders."""
    candidates = [os.environ.get("JPY_SESSION_NAME", "")]
    try:
        candidates.append(os.path.join(os.getcwd(), "x"))
    except OSError:   # a deleted working directory
        pass
    for path in candidates:
        folder = os.path.basename(os.path.dirname(path)) if path else ""
        if folder in ("zh-CN", "zh-TW"):
            return folder
    return None


def get_language() -> str:
    """The language in force: set_language's, else $COMPANION_LANG, else the Chinese
    edition's folder the kernel runs in, else English."""
    if _chosen is not None:
        return _chosen
    env = os.environ.get(ENV)
    if env:
        try:
            return _normalise(env, ENV)
        except ValueError:
            return "en"   # a typo in the environment must not break every message
    found = _from_folder() or "en"
    if found != _told and _listeners:   # a kernel just opened in a Chinese edition's folder
        _tell(found)
    return found


@functools.lru_cache(maxsize=None)
def _table(language: str) -> dict:
    if language == "zh-CN":
        from .messages import ZH_CN
        from .notebook_strings import NOTEBOOK_ZH_CN
        from .checker_strings import CHECKER_ZH_CN
        return {**NOTEBOOK_ZH_CN, **CHECKER_ZH_CN, **ZH_CN}
    if language == "zh-TW":
        generated = json.loads(TRADITIONAL.read_text(encoding="utf-8"))
        return {**generated["notebook"], **generated.get("checker", {}),
                **generated["messages"]}
    return {}


def gettext(message: str) -> str:
    """``message`` in the current language (the English text when untranslated)."""
    return _table(get_language()).get(message, message)


_ = gettext
DATA = Path(__file__).with_name("data") / "exercises.json"
# zh-TW tables, generated from the zh-CN tables by the build (companion.tools.zh_tw)
TRADITIONAL = Path(__file__).with_name("data") / "messages.zh-TW.json"


@functools.lru_cache(maxsize=1)
def _exercise_table() -> dict:
    try:
        return json.loads(DATA.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def exercise_text(exercise_id: str, field: str, english):
    """An exercise's title, task or hints in the current language; the English ones when
    the translators' file has none (or a different number of hints)."""
    language = get_language()
    if language == "en":
        return english
    found = _exercise_table().get(language, {}).get(exercise_id, {}).get(field)
    if field == "hints" and (not isinstance(found, list) or len(found) != len(english)):
        return english
    return found if found else english


# A Jupyter kernel that speaks Chinese shows the package's ValueError/TypeError messages
# in Chinese (.errors); imported last, as it reads get_language from this module.
from . import errors as _errors  # noqa: E402

on_language_change(_errors.follow)
