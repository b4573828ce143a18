"""What a student reads when an attempt fails: their own line, and the values that differ.

Used by every exercise checker (:mod:`companion.learning.exercise`), introduced in
notebook 00.

* :func:`student_frame` finds, in a rank's traceback, the last frame that belongs to the
  student's code (a notebook cell or their own file, not this package, torch or the
  standard library) and names it the way IPython does: ``Cell In[7], line 5``.
* :func:`difference` compares a result with the reference, leaf by leaf, naming each
  leaf by its path (``['grads']['fc1.weight']``, ``[2]``). Small tensors are shown
  whole; large ones as the positions that differ.
* :func:`defined_at` says where the student's function was defined. It runs in the
  ranks, never in the notebook or the grader (which run no student code): a candidate
  may be an object that turns into the student's function only there, so when it is
  not a function it names the first code of the student's the watcher saw run.
"""
from __future__ import annotations

import functools
import inspect
import math
import os
import re
import sys
import sysconfig

import torch
from torch.utils._pytree import keystr, tree_flatten_with_path

from ..i18n import _, get_language
from ..i18n.errors import translate_message
from ..validation import positive_number

__all__ = ["student_frame", "location", "defined_at", "difference", "show_tensor"]

SMALL = 16          # tensors up to this many elements are printed whole
SHOWN_WRONG = 6     # positions listed for a large tensor

_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>.+)$')
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY = tuple({os.path.realpath(p) for p in (
    sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"],
    sysconfig.get_paths()["platlib"], sys.prefix, sys.base_prefix) if p})


def is_students(filename: str) -> bool:
    """Whether code from ``filename`` is the student's: not this package, torch or the
    standard library."""
    if filename.startswith("<") and not filename.startswith("<student"):
        return False   # <frozen ...>, <string>
    path = os.path.realpath(filename)
    if path.startswith(_PACKAGE + os.sep):
        return False
    return not path.startswith(_LIBRARY)


_is_students = is_students
# Where cells are, in a rank: the notebook's names for its cells, sent by the checker,
# since a rank has no IPython to ask; and the first student code the watcher saw run.
_cells: dict[str, str] = {}
_seen: list = []


def _cell_name(filename: str) -> str | None:
    """``"Cell In[7]"`` when this process is a kernel that compiled ``filename``."""
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:  # pragma: no cover - IPython ships with ipykernel
        shell = None
    if shell is not None:
        try:
            kind, name = shell.compile.format_code_name(filename) or (None, None)
        except Exception:  # an IPython without the helper: fall back to the file name
            kind = None
        if kind:
            return f"{kind} {name}"
    return _cells.get(filename)


def cell_names() -> dict:
    """``{file: "Cell In[7]"}`` for the notebook cells this kernel compiled (IPython
    keeps them in ``linecache`` without an mtime), for :func:`use_cell_names` in a rank."""
    import linecache
    names = {}
    for filename, entry in list(linecache.cache.items()):
        if len(entry) == 4 and entry[1] is None and _cell_name(filename):
            names[filename] = _cell_name(filename)
    return names


def use_cell_names(names: dict) -> None:
    _cells.update(names)


def saw_student_code(filename: str, line: int, name: str) -> None:
    """The watcher's note of the first function of the student's that ran here."""
    if not _seen:
        _seen.append((filename, line, name))


def location(filename: str, line: int) -> str:
    """``Cell In[7], line 5`` for a notebook cell, ``file.py, line 5`` otherwise."""
    cell = _cell_name(filename)
    return f"{cell or os.path.basename(filename)}, line {line}"


def student_frame(traceback_text: str) -> tuple[str, int, str] | None:
    """``(where, line number, source line)`` of the student's last frame, or None."""
    lines = traceback_text.splitlines()
    found = None
    for i, text in enumerate(lines):
        m = _FRAME.match(text)
        if m and _is_students(m["file"]):
            source = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(
                lines[i + 1]) else ""
            found = (location(m["file"], int(m["line"])), int(m["line"]), source)
    return found


def show_tensor(t: torch.Tensor) -> str:
    """A tensor shown whole when small, else its shape, dtype and a few values."""
    if t.numel() <= SMALL:
        return f"{t.tolist()}" + (f" (dtype {t.dtype})" if t.dtype != torch.float32 else "")
    flat = t.flatten()
    head = ", ".join(f"{v:.4g}" for v in flat[:4].tolist())
    return _("tensor of shape {shape}, dtype {dtype}: [{head}, ...]").format(
        shape=tuple(t.shape), dtype=t.dtype, head=head)


def _tensor_difference(g, e, rtol, atol) -> str | None:
    if not isinstance(g, torch.Tensor):
        return _("is {type} {got}, expected a tensor {expected}").format(
            type=type(g).__name__, got=f"{g!r:.80}", expected=show_tensor(e))
    if g.shape != e.shape:
        return _("has shape {got}, expected shape {expected}").format(
            got=tuple(g.shape), expected=tuple(e.shape))
    g2 = g.detach().to(e.dtype)
    close = torch.isclose(g2, e, rtol=rtol, atol=atol, equal_nan=True)
    if bool(close.all()):
        return None
    if e.numel() <= SMALL:
        return _("is {got}, expected {expected}").format(got=show_tensor(g2),
                                                         expected=show_tensor(e))
    wrong = (~close).nonzero().tolist()
    listed = "; ".join(
        _("[{index}] got {got} expected {expected}").format(
            index=", ".join(map(str, idx)), got=f"{g2[tuple(idx)].item():.6g}",
            expected=f"{e[tuple(idx)].item():.6g}") for idx in wrong[:SHOWN_WRONG])
    more = (_("; ... ({wrong} of {total} positions wrong)") if len(wrong) > SHOWN_WRONG
            else _(" ({wrong} of {total} positions wrong)")).format(wrong=len(wrong),
                                                                    total=e.numel())
    return _("differs at {listed}{more}").format(listed=listed, more=more)


def _align(got, expected):
    """``got`` with its dicts' keys in ``expected``'s order: key order is not an error."""
    if isinstance(got, dict) and isinstance(expected, dict) and set(got) == set(expected):
        return {k: _align(got[k], expected[k]) for k in expected}
    if isinstance(got, (list, tuple)) and isinstance(expected, (list, tuple)) \
            and type(got) is type(expected) and len(got) == len(expected):
        return type(got)(_align(g, e) for g, e in zip(got, expected))
    return got


def _entry(path) -> str:
    """``['name']`` of a result's entry; a named one (what a probe measures, a problem's
    name) in the current language."""
    return "".join(f"[{reworded(k.key)!r}]" if isinstance(getattr(k, "key", None), str)
                   else keystr((k,)) for k in path)


def difference(got, expected, rtol: float = 0.0, atol: float = 0.0) -> str | None:
    """None when ``got`` matches ``expected``, else which leaf differs and how."""
    for name, value in (("rtol", rtol), ("atol", atol)):
        positive_number(name, value, f"pass {name}=0.0 for exact equality", zero=True)
    got = _align(got, expected)
    exp_leaves, exp_spec = tree_flatten_with_path(expected)
    got_leaves, got_spec = tree_flatten_with_path(got)
    if got_spec != exp_spec:
        if isinstance(expected, dict) and isinstance(got, dict):
            missing = [k for k in expected if k not in got]
            extra = [k for k in got if k not in expected]
            return _("keys differ: missing {missing}, unexpected {extra}").format(
                missing=missing, extra=extra)
        if isinstance(expected, torch.Tensor) or not isinstance(got, type(expected)):
            shown = show_tensor(got) if isinstance(got, torch.Tensor) else f"{got!r:.80}"
            return _("returned {type} {shown}, expected ").format(
                type=type(got).__name__, shown=shown) + (
                show_tensor(expected) if isinstance(expected, torch.Tensor)
                else f"{type(expected).__name__} {expected!r:.80}")
        return _("returned {n} values in the shape {spec}, expected {n_expected} in the "
                 "shape {spec_expected}").format(n=len(got_leaves), spec=got_spec,
                                                 n_expected=len(exp_leaves),
                                                 spec_expected=exp_spec)
    for (path, g), (_path, e) in zip(got_leaves, exp_leaves):
        where = _("entry {path} ").format(path=_entry(path)) if path else ""
        if isinstance(e, torch.Tensor):
            problem = _tensor_difference(g, e, rtol, atol)
        elif isinstance(e, float) and isinstance(g, (int, float)):
            problem = None if math.isclose(g, e, rel_tol=rtol, abs_tol=atol) else \
                _("is {got}, expected {expected}").format(got=f"{g!r}", expected=f"{e!r}")
        else:
            problem = None if g == e else _("is {got}, expected {expected}").format(
                got=f"{g!r:.80}", expected=f"{e!r:.80}")
        if problem:
            return f"{where}{problem}".strip()
    return None


def defined_at(candidate) -> str:
    """' (your f, defined at Cell In[7], line 1)' for a student's function, else ''.
    Call it in a rank (see the module doc)."""
    try:
        fn = inspect.unwrap(candidate)
        found = (fn.__code__.co_filename, fn.__code__.co_firstlineno, fn.__name__)
    except AttributeError:   # a class, or a candidate that loads the function lazily
        found = _seen[0] if _seen else None
    if found is None or not is_students(found[0]):
        return ""
    return _(_WHERE).format(name=found[2], where=location(found[0], found[1]))


# ---- the checker's texts in the current language ----------------------------------------
_FIELD = re.compile(r"(\{[^{}]+\})")


def say(template: str, **fields) -> str:
    """``template`` in the current language (:mod:`companion.i18n.checker_strings`), then
    filled in: the Chinese is one whole sentence, not fragments joined in English order."""
    return _(template).format(**fields)


@functools.lru_cache(maxsize=None)
def _templates() -> tuple:
    """(regex, fields, key) for each f-string template of the checker table, the most
    specific (longest fixed text) first."""
    from ..i18n.checker_strings import WRITTEN_ZH_CN
    found = []
    for key in WRITTEN_ZH_CN:
        parts = _FIELD.split(key)
        if len(parts) == 1:
            continue
        regex = "".join(re.escape(p) if i % 2 == 0 else "(.*?)" for i, p in enumerate(parts))
        found.append((len(key) - sum(map(len, parts[1::2])),
                      re.compile(regex + r"\Z", re.S), parts[1::2], key))
    return tuple(t[1:] for t in sorted(found, key=lambda t: -t[0]))


_WHERE = " (your {name}, defined at {where})"


@functools.lru_cache(maxsize=None)
def _suffix(template: str):
    """A regex for a text that ends in :func:`defined_at`'s ``template``, filled in."""
    fixed = [re.escape(p) for p in re.split(r"\{name\}|\{where\}", template)]
    return re.compile(rf"(?P<text>.+){fixed[0]}(?P<name>[\w.]+){fixed[1]}(?P<where>.+?){fixed[2]}\Z",
                      re.S)


def reworded(text):
    """A problem the exercise modules wrote as an English f-string, in the current
    language: found again by the f-string's template (its key in the checker table), its
    fields reworded the same way, so a "why" inside it is translated too. The exercise
    modules keep writing plain f-strings; English passes through unchanged."""
    if not isinstance(text, str) or get_language() == "en":
        return text
    if _(text) != text:
        return _(text)
    # defined_at's suffix follows a field directly ("...: {exc}{where}"), where the
    # template's lazy fields cannot tell them apart: reword the text before it alone.
    for suffix in (_suffix(_WHERE), _suffix(_(_WHERE))):   # made in English or in a rank
        found = suffix.match(text)
        if found:
            return reworded(found["text"]) + _(_WHERE).format(name=found["name"],
                                                             where=found["where"])
    for regex, fields, key in _templates():
        found = regex.match(text)
        if found:
            values = {f: reworded(v) for f, v in reversed(list(zip(fields, found.groups())))}
            return _FIELD.sub(lambda m: values.get(m.group(1), m.group(1)), _(key))
    # A check may pass on a package function's own ValueError text (a precheck does).
    return translate_message(text)
