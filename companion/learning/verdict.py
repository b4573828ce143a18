"""What an attempt at an exercise gets back: a :class:`Verdict`, and how each is worded.

Used by :mod:`companion.learning.exercise` (introduced in notebook 00). The wording is
part of the lesson: a crash names the student's own line, a forbidden call says why it
is not allowed, a wrong value says where the student's function was defined, and an
attempt that switched the checker off (:mod:`.watch`) says what it did.
"""
from __future__ import annotations

import ast
import dataclasses
import traceback

from . import feedback
from .feedback import reworded
from ..i18n import _

__all__ = ["Verdict", "FORBIDDEN_TAG", "short_name", "not_implemented", "crash", "forbidden",
           "tampered", "launch_failure"]


@dataclasses.dataclass
class Verdict:
    """The outcome of one attempt. ``kind`` is one of: passed, not_implemented, crash,
    timeout, tampered, forbidden, changed_input, wrong_value, pattern, precheck,
    not_callable."""

    kind: str
    message: str
    line: str | None = None   # "Cell In[7], line 5: <source>" for a crash

    def __bool__(self) -> bool:
        return self.kind == "passed"

    def __repr__(self) -> str:
        return f"Verdict({self.kind!r})"

    def __str__(self) -> str:
        return self.message

    def _ipython_display_(self) -> None:
        # check() has already printed the verdict; a check cell should not echo it again.
        pass


def short_name(dotted: str) -> str:
    """``torch.distributed.all_reduce`` -> ``dist.all_reduce``; keeps ``Class.method`` and
    the package module (``collectives.all_gather``), so torch's and ours differ."""
    parts = dotted.split(".")
    if dotted.startswith("torch.distributed.") and len(parts) == 3:
        return "dist." + parts[-1]
    if len(parts) >= 2 and (parts[-2][:1].isupper() or parts[0] == "companion"):
        return ".".join(parts[-2:])   # DGC.encode, collectives.all_gather
    return parts[-1]


FORBIDDEN_TAG = "companion-forbidden-call::"


def not_implemented() -> Verdict:
    return Verdict("not_implemented", _("not implemented yet: replace the "
                   "`raise NotImplementedError` with your code, then run this cell again."))


def crash(err, rank) -> Verdict:
    text = getattr(err, "traceback", "") or "".join(
        traceback.format_exception(err))
    first = str(err).splitlines()[0] if str(err) else type(err).__name__
    if rank is None:
        first = f"{type(err).__name__}: {first}"
    found = feedback.student_frame(text)
    summary = getattr(err, "summary", None)
    if summary:   # the launcher's own "rank r raised ...", in whichever language
        first = summary.splitlines()[0]
    elif first.startswith(f"rank {rank} raised "):
        first = first[len(f"rank {rank} raised "):]
    who = (_("rank {rank} raised").format(rank=rank) if rank is not None
           else _("your code raised"))
    if found is None:
        return Verdict("crash", f"{who} {first}")
    place, _line, source = found
    line = f"{place}: {source}" if source else place
    return Verdict("crash", f"{who} {first}\n" + _("   at your line {line}").format(line=line),
                   line=line)


def forbidden(hits) -> Verdict:
    name, reason = hits[0]
    return Verdict("forbidden", _("your code called `{name}`, which this exercise does not "
                                  "allow: {reason}").format(name=name, reason=reworded(reason)))


def _tampering(what: str, detail: str) -> str:
    if what == "setprofile":
        return _("your code called `{name}`, which would replace the checker's profile "
                 "hook").format(name=detail)
    if what == "hook":
        return _("the checker's profile hook was replaced while your code ran")
    if what == "thread":
        return _("a thread your code started was still running when your function "
                 "returned, where nothing watches it; join every thread before returning")
    if what == "gloo":
        return _("your code ran operations on the process group's gloo backend directly, "
                 "past the group that records every message")
    if what == "group":
        return _("your code made a process group of another backend ({name}), which sends "
                 "its messages directly, past the group that records every message").format(
                     name=detail or "?")
    return _("your code called `{name}`, which reaches into the checker's own frames "
             "and objects").format(name=detail)


def tampered(hits) -> Verdict:
    """The checker was switched off (``hits``: the watcher's ``(what, detail)`` pairs)."""
    what, detail = hits[0]
    return Verdict("tampered", _("the checker was switched off: {what}. An attempt that "
                                 "switches the checker off does not count; remove that "
                                 "code and check again.").format(what=_tampering(what, detail)))


def launch_failure(err) -> Verdict:
    """The verdict for an attempt whose launch a rank ended by raising (or dying): the
    shortcut or the tampering when the rank tagged it so, else the crash itself."""
    first = str(err).splitlines()[0] if str(err) else ""
    if FORBIDDEN_TAG in first:
        try:
            hits, tamper = ast.literal_eval(first.split(FORBIDDEN_TAG, 1)[1])
        except (ValueError, SyntaxError, TypeError):   # not the checker's own tag
            return crash(err, err.rank)
        if not all(isinstance(h, tuple) and len(h) == 2 and all(isinstance(x, str) for x in h)
                   for h in [*hits, *tamper]) or not (hits or tamper):
            return crash(err, err.rank)
        return tampered(tamper) if tamper else forbidden(hits)
    if "NotImplementedError" in first:
        return not_implemented()
    return crash(err, err.rank)
