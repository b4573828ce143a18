"""Exercises checked on real ranks: values, communication pattern, forbidden shortcuts.

Introduced in notebook 00; every notebook's exercises are :class:`Exercise` objects
registered by ``companion/learning/nbNN.py`` and fetched with :func:`exercise`::

    ring = exercise("01.ring")     # shows the task
    ring.hint()                    # the next hint, one at a time
    ring.check(my_ring_all_reduce) # runs it on real ranks and explains the verdict

One :meth:`Exercise.check` is one :func:`companion.launch`. On every rank the package
first computes the expected result (the reference solution, or a measurement), then
runs the student's code under :func:`~companion.learning.watch.watching`, which records
each ``torch.distributed`` call and each forbidden call. The parent then judges, in
this order: did it run (a crash is reported at the student's own line), did it call a
forbidden function, did it change its inputs, are the values right (each rank, each
entry by name), and is the communication the pattern the lecture teaches.

``check`` never raises for wrong student code; it prints a verdict and returns a
:class:`Verdict`, which is truthy only when the attempt passed.
"""
from __future__ import annotations

import copy
import dataclasses
import importlib
import pkgutil
import re
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch.utils._pytree import tree_flatten

from ..launcher import LaunchError, LaunchTimeout, launch
from . import feedback
from .patterns import summary
from ..validation import positive_int, positive_number
from .feedback import defined_at
from .verdict import FORBIDDEN_TAG, Verdict, crash, forbidden, not_implemented, short_name
from .watch import watching
from ..i18n import _, exercise_text

__all__ = ["Exercise", "Verdict", "exercise", "register", "all_exercises", "LEVELS", "KINDS",
           "POINTS"]

LEVELS = ("warm-up", "core", "stretch")
# What an exercise asks of the student. "implement" builds the mechanism the lecture
# teaches; the other three need judgement: fix a given broken run (diagnose), choose a
# configuration and defend it (decide), or predict a measurement and explain it (predict).
KINDS = ("implement", "diagnose", "decide", "predict")
POINTS = {"warm-up": 1, "core": 2, "stretch": 3}
_REGISTRY: dict[str, "Exercise"] = {}


@dataclasses.dataclass
class Exercise:
    """One exercise. Rank-side fields are called inside every rank, so they must be
    module-level functions of the package (never lambdas from a notebook).

    inputs(rank, world_size) -> tuple: the arguments, made the same way on every run.
    reference: the package's solution, run through ``adapter`` to make the expected
        result. ``expected(*args)`` replaces it when the answer is a measurement.
    adapter(candidate, *args): how a solution is exercised (default ``candidate(*args)``);
        e.g. an autograd Function is applied and back-propagated.
    forbidden: {"dotted.name": "why it is not allowed here"}.
    pattern: (calls_per_rank, world_size) -> problem or None (:mod:`.patterns`).
    pure: the student's code must not change its inputs.
    precheck(candidate) -> problem or None: run in the notebook before any rank starts
        (e.g. simulate a schedule); forbidden calls are watched there too.
    """

    id: str
    title: str
    level: str
    task: str
    student_name: str
    hints: tuple[str, ...]
    inputs: Callable[[int, int], tuple] = lambda rank, world_size: ()
    reference: Any = None
    expected: Callable | None = None
    adapter: Callable | None = None
    forbidden: dict = dataclasses.field(default_factory=dict)
    pattern: Callable | None = None
    pure: bool = False
    precheck: Callable | None = None
    world_size: int = 4
    kind: str = "implement"
    rtol: float = 0.0
    atol: float = 0.0
    timeout: float = 30.0
    context: str = ""   # imports the solution cell relies on (used by the tests)
    _hints_shown: int = dataclasses.field(default=0, repr=False)
    passed: bool = dataclasses.field(default=False, repr=False)

    def __post_init__(self):
        if not isinstance(self.id, str) or not re.fullmatch(r"\d\d\.[a-z0-9-]+", self.id):
            raise ValueError(f"id={self.id!r}: use 'NN.name' (notebook number, lower-case name)")
        positive_int("world_size", self.world_size, "ranks to run the exercise on, e.g. 4")
        positive_number("timeout", self.timeout, "seconds, e.g. 30")
        for name in ("rtol", "atol"):
            positive_number(name, getattr(self, name), f"{name}=0.0 means exact", zero=True)
        if self.level not in LEVELS:
            raise ValueError(f"level={self.level!r}: use one of {LEVELS}")
        if self.kind not in KINDS:
            raise ValueError(f"kind={self.kind!r}: use one of {KINDS}")
        if len(self.hints) < 2:
            raise ValueError(f"{self.id}: give at least 2 graduated hints")

    @property
    def points(self) -> int:
        """Marks for a passing attempt, by level (shown on the card; used by the grader)."""
        return POINTS[self.level]

    # ---- what the student sees -------------------------------------------------------
    def _repr_markdown_(self) -> str:
        by_reason: dict[str, list[str]] = {}
        for k, v in self.forbidden.items():   # one line per reason: long lists stay short
            by_reason.setdefault(v, []).append(f"`{short_name(k)}`")
        rules = "".join(_("\n- not allowed: {names} ({reason})").format(
            names=", ".join(names), reason=reason) for reason, names in by_reason.items())
        return (_("**Exercise {id} ({level}, {kind}, {points} points): {title}**").format(
                    id=self.id, level=_(self.level), kind=_(self.kind), points=self.points,
                    title=self.shown("title"))
                + f"\n\n{self.shown('task')}\n{rules}\n\n"
                + _("Stuck? `{short}.hint()` shows the next of {count} hints, one at a "
                    "time.").format(short=self.short, count=len(self.hints)))

    def __repr__(self) -> str:
        return _("Exercise {id} ({level}): {title}").format(
            id=self.id, level=_(self.level), title=self.shown("title"))

    def shown(self, field: str):
        """``title``, ``task`` or ``hints`` in the student's language: the
        translators' text when the language is Chinese, else the English field."""
        return exercise_text(self.id, field, getattr(self, field))

    @property
    def short(self) -> str:
        """The variable the notebook keeps the exercise in (a valid Python name)."""
        name = self.id.split(".", 1)[1].replace("-", "_")
        return name if name.isidentifier() else f"ex_{name}"

    def hint(self) -> None:
        """Print the next hint (the first ones point the way; none is the solution)."""
        if self._hints_shown >= len(self.hints):
            print(_("No more hints for {id}. Re-read the last one, then compare your "
                    "code with the lecture's figure; the instructor's notebook has the "
                    "solution in a collapsed cell.").format(id=self.id))
            return
        self._hints_shown += 1
        print(_("Hint {n} of {count}: ").format(n=self._hints_shown, count=len(self.hints))
              + self.shown("hints")[self._hints_shown - 1])

    # ---- checking --------------------------------------------------------------------
    def check(self, candidate, quiet: bool = False) -> Verdict:
        """Run ``candidate`` on real ranks and print the verdict (see the module doc)."""
        verdict = self._judge(candidate)
        self.passed = bool(verdict)
        if not quiet:
            print(("✓ " if verdict else "… " if verdict.kind == "not_implemented" else "✗ ")
                  + verdict.message)
            if not verdict and self._hints_shown < len(self.hints):
                print(_("   (a hint: {short}.hint())").format(short=self.short))
        return verdict

    def _judge(self, candidate) -> Verdict:
        if not callable(candidate):
            return Verdict("not_callable", _(
                "pass the {what} you wrote (the name, without parentheses); got {got}."
            ).format(what=self.student_name, got=type(candidate).__name__))
        if self.precheck is not None:
            with watching(self.forbidden) as w, w.student():
                try:
                    problem = self.precheck(candidate)
                except NotImplementedError:
                    return not_implemented()
                except Exception as exc:  # the student's code raised in the notebook
                    return crash(exc, None)
            if w.forbidden:
                return forbidden(w.forbidden)
            if problem:
                return Verdict("precheck", problem)
        try:
            results = launch(_attempt, self.id, candidate, world_size=self.world_size,
                             timeout=self.timeout)
        except LaunchTimeout:
            return Verdict("timeout", _(
                "it did not finish within {seconds} s on {world_size} ranks. Some rank "
                "waits for a message no rank sends: check that every send has a matching "
                "recv, and that all ranks call the same collectives in the same order."
            ).format(seconds=f"{self.timeout:g}", world_size=self.world_size))
        except LaunchError as err:
            first = str(err).splitlines()[0]
            if FORBIDDEN_TAG in first:
                name, reason = first.split(FORBIDDEN_TAG, 1)[1].split("::", 1)
                return forbidden([(name, reason)])
            if "NotImplementedError" in first:
                return not_implemented()
            return crash(err, err.rank)
        hits = [h for r in results for h in r["forbidden"]]
        if hits:
            return forbidden(hits)
        for rank, r in enumerate(results):
            if r["changed_input"]:
                return Verdict("changed_input", _(
                    "rank {rank}: your code changed its input in place, so the caller's "
                    "tensor changed too. Work on a copy (x.clone()).").format(rank=rank))
        where = defined_at(candidate)
        for rank, r in enumerate(results):
            problem = feedback.difference(r["got"], r["expected"], self.rtol, self.atol)
            if problem:
                return Verdict("wrong_value", _("rank {rank}: the result {problem}.{where}"
                                                ).format(rank=rank, problem=problem,
                                                         where=where))
        calls = [r["calls"] for r in results]
        if self.pattern is not None:
            problem = self.pattern(calls, self.world_size)
            if problem:
                # Like a wrong value, a wrong pattern points at the student's code.
                return Verdict("pattern", _("the values are right, but the communication "
                                            "is not the pattern asked for: {problem}.{where}"
                                            ).format(problem=problem, where=where))
        ranks = (_("{n} real rank") if self.world_size == 1 else _("{n} real ranks")).format(
            n=self.world_size)
        return Verdict("passed", _("{id} passed on {ranks}: values equal the reference; "
                                   "rank 0's communication: {summary}.").format(
            id=self.id, ranks=ranks, summary=summary(calls[0])))


def _tensors(tree):
    return [x for x in tree_flatten(tree)[0] if isinstance(x, torch.Tensor)]


def _attempt(exercise_id: str, candidate):
    """Runs on every rank: the expected result first, then the student's, watched."""
    ex = exercise(exercise_id)
    rank, world = dist.get_rank(), dist.get_world_size()
    args = ex.inputs(rank, world)
    run = ex.adapter or (lambda fn, *a: fn(*a))
    if ex.expected is not None:
        expected = ex.expected(*copy.deepcopy(args))
    else:
        expected = run(ex.reference, *copy.deepcopy(args))
    dist.barrier()  # no student message can meet a reference message
    before = [t.detach().clone() for t in _tensors(args)]
    with watching(ex.forbidden) as w, w.student():
        try:
            got = run(candidate, *args)
        except Exception as exc:
            if w.forbidden:   # the shortcut is the verdict, not where it then crashed
                name, reason = w.forbidden[0]
                raise RuntimeError(f"{FORBIDDEN_TAG}{name}::{reason}") from exc
            raise
    changed = ex.pure and any(not _same(a, b) for a, b in zip(_tensors(args), before))
    return {"got": _detach(got), "expected": _detach(expected), "calls": w.calls,
            "forbidden": w.forbidden, "changed_input": changed}


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Unchanged, with NaN equal to NaN (an input may hold one on purpose)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True)
    return torch.equal(a, b)


def _detach(tree):
    from torch.utils._pytree import tree_map
    return tree_map(lambda x: x.detach().clone() if isinstance(x, torch.Tensor) else x, tree)


# ---- the registry ---------------------------------------------------------------------
def register(ex: Exercise) -> Exercise:
    """Add ``ex`` to the registry (each nbNN module registers its notebook's exercises)."""
    if not isinstance(ex, Exercise):
        raise TypeError(f"ex: pass an Exercise, got {type(ex).__name__}")
    if ex.id in _REGISTRY and _REGISTRY[ex.id] is not ex:
        raise ValueError(f"exercise {ex.id!r} is registered twice")
    _REGISTRY[ex.id] = ex
    return ex


def exercise(exercise_id: str) -> Exercise:
    """The exercise ``"NN.name"`` of notebook NN (its module is imported on first use)."""
    if not isinstance(exercise_id, str) or "." not in exercise_id:
        raise ValueError(f"exercise_id={exercise_id!r}: use 'NN.name', e.g. '01.ring'")
    if exercise_id not in _REGISTRY:
        try:
            importlib.import_module(f"{__package__}.nb{exercise_id.split('.')[0]}")
        except ModuleNotFoundError:
            pass
    if exercise_id not in _REGISTRY:
        raise ValueError(f"exercise_id={exercise_id!r} is not an exercise; known: "
                         f"{sorted(all_exercises())}")
    return _REGISTRY[exercise_id]


def all_exercises() -> dict[str, Exercise]:
    """Every exercise of every notebook, by id."""
    from . import __path__ as here
    for info in pkgutil.iter_modules(here):
        if info.name.startswith("nb"):
            importlib.import_module(f"{__package__}.{info.name}")
    return dict(sorted(_REGISTRY.items()))
