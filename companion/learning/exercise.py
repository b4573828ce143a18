"""Exercises checked on real ranks: values, communication pattern, forbidden shortcuts.

Introduced in notebook 00; every notebook's exercises are :class:`Exercise` objects
registered by ``companion/learning/nbNN.py`` and fetched with :func:`exercise`::

    ring = exercise("01.ring")     # shows the task
    ring.hint()                    # the next hint, one at a time
    ring.check(my_ring_all_reduce) # runs it on real ranks and explains the verdict

A check is two launches on the recording process group (:mod:`.recording`). Ranks that
run only the package make the expected results (the reference, or ``expected``), once per
exercise and world size, kept in this process. The student's function runs in ranks of
its own (:mod:`.attempt`): rank 0 runs the ``precheck``, then every rank the function,
watched (:mod:`.watch`). This process judges, in this order: did it run (a crash names
the student's own line), did it switch the checker off, call a forbidden function or
change its inputs, are the values right (each rank, each entry by name), and is the
communication the pattern the lecture teaches.

What the checker guarantees, and what it cannot:

* The expected answer never exists in a process that runs student code, and this
  process never runs student code: it compares plain data (tensors, numbers, strings,
  containers) that it reads with ``torch.load(weights_only=True)`` after an unpickler
  that builds no object has read the rank's message. The grader passes the student's
  function as bytes that only a rank unpickles, so its marks never come from the
  student's kernel. (In a notebook, sending the function to the ranks pickles it in the
  kernel, which is the student's own.)
* Every collective and point-to-point message through ``torch.distributed`` is
  recorded by the process group, with its bytes, peer and member ranks, whichever
  thread, alias or helper issued it; every exercise forbids its own reference,
  ``expected`` and ``inputs``, and the checker's helpers they call.
* Switching the watcher off (``sys.setprofile``, ``threading.setprofile``), leaving a
  thread running, running operations on the group's gloo backend directly, making a
  group of another backend, or reaching for the call stack or the heap
  (``sys._getframe``, ``gc``) is its own verdict: the checker was switched off.
* It cannot stop code that deliberately subverts its own process (ctypes, the garbage
  collector, a frame reached through a traceback, a file descriptor, a side channel
  such as the rendezvous store, a file or a socket): such code can forge any record
  its own ranks make, here and in the grader alike. It can never make this process run
  its code, and the grader's marks come from the grader's own run, never from the
  student's kernel.

``check`` never raises for wrong student code; it prints a verdict and returns a
:class:`Verdict`, which is truthy only when the attempt passed.
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from typing import Any, Callable

from ..launcher import LaunchError, LaunchTimeout, launch
from ..validation import positive_int, positive_number
from . import feedback
from .attempt import attempt_rank, expected_rank, well_formed
from .patterns import summary
from .recording import BACKEND, Call
from .rules import answer_rules, codes_of, resolve
from .verdict import Verdict, forbidden, launch_failure, reworded, short_name, tampered
from ..i18n import _, exercise_text, get_language

__all__ = ["Exercise", "Verdict", "exercise", "register", "all_exercises", "LEVELS", "KINDS",
           "POINTS"]

LEVELS = ("warm-up", "core", "stretch")
# What an exercise asks of the student. "implement" builds the mechanism the lecture
# teaches; the other three need judgement: fix a given broken run (diagnose), choose a
# configuration and defend it (decide), or predict a measurement and explain it (predict).
KINDS = ("implement", "diagnose", "decide", "predict")
POINTS = {"warm-up": 1, "core": 2, "stretch": 3}
_REGISTRY: dict[str, "Exercise"] = {}
_EXPECTED: dict[tuple[str, int], list] = {}   # (exercise id, world size) -> per rank


@dataclasses.dataclass
class Exercise:
    """One exercise. Rank-side fields are called inside every rank, so they must be
    module-level functions of the package (never lambdas from a notebook).

    inputs(rank, world_size) -> tuple: the arguments, made the same way on every run.
    reference: the package's solution, run through ``adapter`` to make the expected
        result. ``expected(*args)`` replaces it when the answer is a measurement.
    adapter(candidate, *args): how a solution is exercised (default ``candidate(*args)``);
        e.g. an autograd Function is applied and back-propagated.
    forbidden: {"dotted.name": "why it is not allowed here"}; :attr:`rules` adds the
        reference, ``expected``, ``inputs`` and the checker's helpers they call.
    pattern: (calls_per_rank, world_size) -> problem or None (:mod:`.patterns`).
    pure: the student's code must not change its inputs.
    precheck(candidate) -> problem or None: run on rank 0 before the attempt (e.g.
        simulate a schedule); forbidden calls are watched there too.
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

    @property
    def rules(self) -> dict[str, str]:
        """Everything the student's code may not call: ``forbidden``, plus the functions
        that compute this exercise's answer (:func:`.rules.answer_rules`)."""
        taken = {c for name in self.forbidden for c in codes_of(resolve(name))}
        return {**self.forbidden, **{name: reason for name, reason in answer_rules(self).items()
                                     if not taken & set(codes_of(resolve(name)))}}

    # ---- what the student sees -------------------------------------------------------
    def _repr_markdown_(self) -> str:
        by_reason: dict[str, list[str]] = {}
        for k, v in self.rules.items():   # one line per reason: long lists stay short
            if not k.rpartition(".")[2].startswith("_"):   # the checker's private helpers
                by_reason.setdefault(reworded(v), []).append(f"`{short_name(k)}`")
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

    def expected_results(self) -> list:
        """The expected result of every rank, computed once in ranks that run only the
        package, and kept in this process (never sent to a rank)."""
        key = (self.id, self.world_size)
        if key not in _EXPECTED:
            _EXPECTED[key] = launch(expected_rank, self, world_size=self.world_size,
                                    backend=BACKEND, timeout=self.timeout)
        return _EXPECTED[key]

    def _judge(self, candidate) -> Verdict:
        if not callable(candidate):
            return Verdict("not_callable", _(
                "pass the {what} you wrote (the name, without parentheses); got {got}."
            ).format(what=self.student_name, got=type(candidate).__name__))
        try:
            results = launch(attempt_rank, self, candidate, get_language(),
                             feedback.cell_names(), world_size=self.world_size,
                             backend=BACKEND, timeout=self.timeout)
        except LaunchTimeout:
            return Verdict("timeout", _(
                "it did not finish within {seconds} s on {world_size} ranks. Some rank "
                "waits for a message no rank sends: check that every send has a matching "
                "recv, and that all ranks call the same collectives in the same order."
            ).format(seconds=f"{self.timeout:g}", world_size=self.world_size))
        except LaunchError as err:
            return launch_failure(err)
        if not well_formed(results, self.world_size):
            return Verdict("crash", _("a rank sent a result the checker cannot read."))
        for name, value in results[0]["state"].items():   # a subclass's precheck state
            if name in vars(self):
                setattr(self, name, value)
        if results[0]["stage"] == "precheck":
            first = results[0]
            return (tampered(first["tampered"]) if first["tampered"] else
                    forbidden(first["forbidden"]) if first["forbidden"] else
                    Verdict("precheck", reworded(first["problem"])))
        return self._judge_attempt(results)

    def _judge_attempt(self, results) -> Verdict:
        for key, verdict in (("tampered", tampered), ("forbidden", forbidden)):
            hits = [h for r in results for h in r[key]]
            if hits:
                return verdict(hits)
        for rank, r in enumerate(results):
            if r["changed_input"]:
                return Verdict("changed_input", _(
                    "rank {rank}: your code changed its input in place, so the caller's "
                    "tensor changed too. Work on a copy (x.clone()).").format(rank=rank))
        where = results[0]["where"]
        for rank, (r, expected) in enumerate(zip(results, self.expected_results())):
            problem = feedback.difference(r["got"], expected, self.rtol, self.atol)
            if problem:
                return Verdict("wrong_value", _("rank {rank}: the result {problem}.{where}"
                                                ).format(rank=rank, problem=problem,
                                                         where=where))
        calls = [[Call(*c) for c in r["calls"]] for r in results]
        if self.pattern is not None:
            problem = reworded(self.pattern(calls, self.world_size) or "").rstrip(".")
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
