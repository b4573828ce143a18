"""The ValueError/TypeError messages of the package, shown in the student's language.

Why translate where the message is shown, not where it is raised: the raise sites (about
four hundred, and every ``fix`` handed to :mod:`companion.validation`) stay plain
English f-strings, so English output and the tests' ``pytest.raises(match=...)`` cannot
change, nobody writes a message twice, and a new check needs no i18n call to be correct.
The catalogue ``data/errors.zh-CN.json`` maps each message's source template (an
f-string's text with its fields as written: ``{name} must be {kind}, got
{value!r}{_tail(fix)}``) to its Chinese; ``python -m companion.tools.error_templates``
reads the templates from the source by an AST walk and writes the keys, so the catalogue
holds one translation per message and a test fails on a missing or stale one. Shown in
Chinese, a message is found again by its template (the most specific first), its fields'
values are translated the same way (a ``fix`` or a ``kind`` is a template too) and put
into the Chinese template, so the sentence is Chinese as a whole, not fragments in English
order. A message no template matches stays English. This is the checker's own design for
its problems (:func:`companion.learning.feedback.reworded`), applied to exceptions.

Where: in a Jupyter kernel that speaks Chinese, an IPython exception handler shows a
ValueError/TypeError's traceback with the message translated (the exception itself is
left as raised); the launcher calls :func:`message_of` for a rank's error. The zh-TW
catalogue is generated from the zh-CN one (``data/errors.zh-TW.json``).
"""
from __future__ import annotations

import ast
import copy
import functools
import json
import re
import sys
from pathlib import Path

from . import get_language

__all__ = ["translate_message"]

DATA = Path(__file__).with_name("data")
# A field whose text has a fixed shape: validation's tail is "." or "; " and the fix.
_SHAPES = {"_tail(": r"(\.|; .*)"}
_PUNCTUATION = (("; ", "；"), (": ", "："))
_DEPTH = 4
_PAIR = re.compile(r"(?<![\w.])[a-z]{2,} [a-z]{2,}\b")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")


def parts(template: str) -> list[str]:
    """``template`` split into fixed text and fields, alternately (``{{`` is a brace;
    fields may nest braces, as ``{_tail(fix or f'use {parts}')}`` does)."""
    out, text, i = [], "", 0
    while i < len(template):
        if template.startswith(("{{", "}}"), i):
            text, i = text + template[i], i + 2
        elif template[i] == "{":
            depth, j = 0, i
            while j < len(template):
                depth += {"{": 1, "}": -1}.get(template[j], 0)
                if depth == 0:
                    break
                j += 1
            out += [text, template[i:j + 1]]
            text, i = "", j + 1
        else:
            text, i = text + template[i], i + 1
    return out + [text]


def fields(template: str) -> list[str]:
    return parts(template)[1::2]


def _catalogue(language: str) -> dict:
    name = "errors.zh-CN.json" if language == "zh-CN" else "errors.zh-TW.json"
    try:
        modules = json.loads((DATA / name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {k: v for module, table in modules.items() if not module.startswith("_")
            for k, v in table.items() if v}


def _shape(field: str) -> str:
    """The regex of a field's value: a choice between strings (``{'' if inf else ' (finite)'}``)
    matches one of them, a validation tail its shape, anything else any text."""
    for start, shape in _SHAPES.items():
        if field[1:].startswith(start):
            return shape
    try:
        node = ast.parse(field[1:-1].split("!")[0], mode="eval").body
    except SyntaxError:
        return "(.*?)"
    if isinstance(node, ast.IfExp) and all(isinstance(n, ast.Constant) and isinstance(n.value, str)
                                           for n in (node.body, node.orelse)):
        options = sorted({node.body.value, node.orelse.value}, key=len, reverse=True)
        return "(" + "|".join(map(re.escape, options)) + ")"
    return "(.*?)"


@functools.lru_cache(maxsize=None)
def _patterns(language: str) -> tuple:
    """(regex, fields, translation) per template, the most fixed text first."""
    found = []
    for key, zh in _catalogue(language).items():
        pieces = parts(key)
        regex = "".join(re.escape(p) if i % 2 == 0 else _shape(p) for i, p in enumerate(pieces))
        fixed = sum(map(len, pieces[::2]))
        found.append((-fixed, key, re.compile(regex, re.S), pieces[1::2], zh))
    return tuple(t[2:] for t in sorted(found, key=lambda t: t[:2]))


def _fill(template: str, values: dict) -> str:
    pieces = parts(template)
    return "".join(p if i % 2 == 0 else values.get(p, p) for i, p in enumerate(pieces))


def _english(text: str) -> int:
    """How many pairs of English words ``text`` still holds outside quotes: of the
    templates that match a message, the one whose fields translate best wins."""
    return len(_PAIR.findall(_QUOTED.sub(" ", text)))


def _translate(text: str, language: str, depth: int) -> str | None:
    best = None
    for regex, names, zh in _patterns(language):
        found = regex.fullmatch(text)
        if found:
            values = {}
            for name, value in zip(names, found.groups()):
                values.setdefault(name, _fragment(value, language, depth + 1))
            result = _fill(zh, values)
            if best is None or _english(result) < _english(best):
                best = result
            if not _english(best):
                break
    return best


def _fragment(value: str, language: str, depth: int) -> str:
    """A field's value: a template's text translated, a tail's punctuation made Chinese."""
    if depth > _DEPTH or not value:
        return value
    if value == ".":
        return "。"
    for english, chinese in _PUNCTUATION:
        if value.startswith(english):
            rest = _translate(value[len(english):], language, depth)
            return chinese + rest if rest is not None else value
    found = _translate(value, language, depth)
    return value if found is None else found


def translate_message(message: str, language: str | None = None) -> str:
    """``message`` (a ValueError/TypeError text of the package) in ``language`` (the
    current one by default); unchanged in English or when no template matches it."""
    if not isinstance(message, str):
        raise TypeError(f"message must be a str, got {type(message).__name__}")
    language = get_language() if language is None else language
    if language == "en":
        return message
    found = _translate(message, language, 0)
    return message if found is None else found


def message_of(exc: BaseException) -> str:
    """``str(exc)``, translated when ``exc`` is a ValueError or TypeError."""
    if isinstance(exc, (ValueError, TypeError)) and len(exc.args) == 1 \
            and isinstance(exc.args[0], str):
        return translate_message(exc.args[0])
    return str(exc)


def translated(exc: BaseException) -> BaseException:
    """A copy of ``exc`` whose message is :func:`message_of`'s (``exc`` if the same)."""
    text = message_of(exc)
    if text == str(exc) or type(exc).__str__ is not BaseException.__str__:
        return exc
    try:
        shown = copy.copy(exc)
        shown.args = (text,)
    except Exception:  # noqa: BLE001 - an exception class that cannot be copied
        return exc
    for attribute in ("__cause__", "__context__", "__suppress_context__", "__traceback__"):
        setattr(shown, attribute, getattr(exc, attribute))
    return shown


def _show(shell, etype, value, tb, tb_offset=None):
    """IPython's handler for ValueError/TypeError: the usual traceback, message translated."""
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb
    shown = translated(value)
    stb = shell.InteractiveTB.structured_traceback(etype, shown, tb, tb_offset=tb_offset)
    shell._showtraceback(etype, shown, stb)
    return stb


def follow(language: str) -> None:
    """Install :func:`_show` in the running IPython kernel while the language is Chinese
    (a listener of :func:`companion.i18n.on_language_change`); never imports IPython,
    and leaves another handler in place."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return
    ours = getattr(shell, "_companion_errors", False)
    if language != "en" and not shell.custom_exceptions:
        shell.set_custom_exc((ValueError, TypeError), _show)
        shell._companion_errors = True
    elif language == "en" and ours:
        shell.set_custom_exc((), None)
        shell._companion_errors = False
