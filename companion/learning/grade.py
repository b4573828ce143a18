"""Marks an instructor can put in a gradebook: every submitted notebook run afresh and
every exercise in it checked on real ranks (``make grade SUBMISSIONS=DIR``, or
``python -m companion grade DIR --out grades.csv``; the README's "Grading").

The exercises are the ones the notebooks teach, from notebook 00 on; which exercises a
notebook holds is read from the course notebook's nbgrader solution cells (``grade_id``
is the exercise id with the dot as a hyphen, ``00-broadcast``). ``DIR`` holds one folder
per student with the notebooks they filled in, under the student edition's names, a
subset if they like; a Chinese edition is recognised by its language metadata, or else
its text, and graded the same way, its feedback in its language.

For each (student, notebook): the notebook runs in a fresh kernel in a temporary folder
of its own with a time limit (:mod:`.grade_run`); a notebook that cannot run, kills its
kernel or runs out of time gets 0 for every exercise, with the reason, and grading goes
on. What the notebook printed, its own check cells included, is ignored: the functions
are taken out of the kernel as bytes and checked by a fresh process running only the
package's code (:mod:`.grade_check`), which opens them only inside the exercise's ranks
(:mod:`.grade_submitted`). The result is a CSV, one row per (student, exercise), and one
Markdown feedback file per student (:mod:`.grade_report`).
"""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import nbformat

from ..i18n import _
from ..validation import positive_number

__all__ = ["grade", "GradeRow"]

COURSE = Path(__file__).resolve().parents[2] / "notebooks"


@dataclasses.dataclass
class GradeRow:
    """One (student, exercise): the CSV's row, and the full verdict for the feedback."""

    student: str
    notebook: str
    exercise: str
    passed: bool
    points: int
    max_points: int
    feedback: str    # the verdict's first line
    verdict: str     # the whole verdict
    kind: str        # the verdict's kind: passed, wrong_value, not_implemented, ...
    language: str    # the notebook's edition: en, zh-CN or zh-TW
    note: str = ""   # about the whole notebook: the first cell that raised


def notebook_exercises(path: Path) -> list:
    """The exercises of the course notebook at ``path``, in order, from its nbgrader
    solution cells (``[]`` for a notebook without any, such as the cheatsheet)."""
    from .exercise import all_exercises
    by_grade_id = {ex.id.replace(".", "-"): ex for ex in all_exercises().values()}
    cells = nbformat.read(path, as_version=4).cells
    ids = [c.metadata["nbgrader"].get("grade_id", "") for c in cells
           if c.metadata.get("nbgrader", {}).get("solution")]
    unknown = [g for g in ids if g not in by_grade_id]
    if unknown:
        raise ValueError(f"course={str(path.parent)!r}: {path.name} has solution cells whose "
                         f"grade_id names no exercise: {unknown}; a grade_id is the exercise "
                         "id with the dot as a hyphen (00-broadcast)")
    return [by_grade_id[g] for g in ids]


def _plan(submissions, course) -> tuple[dict, list[tuple[str, list[Path]]], list[str]]:
    """Check the folders before anything runs; the exercises per notebook, the students'
    notebooks, and the students skipped (a folder without notebooks)."""
    course = Path(COURSE if course is None else course)
    if not course.is_dir() or not any(course.glob("[0-9][0-9]_*.ipynb")):
        raise ValueError(f"course={str(course)!r} holds no course notebooks: pass the "
                         "course's notebooks/ folder (the default when run from the repository)")
    if not isinstance(submissions, (str, os.PathLike)):
        raise ValueError(f"submissions={submissions!r}: pass the folder that holds one folder "
                         "per student, e.g. submissions/")
    root = Path(submissions)
    if not root.is_dir():
        raise ValueError(f"submissions={str(root)!r} is no folder: pass the folder that holds "
                         "one folder per student (submissions/<student>/00_launching_ranks.ipynb)")
    loose = sorted(p.name for p in root.glob("*.ipynb"))
    if loose:
        raise ValueError(f"submissions={str(root)!r} holds notebooks directly "
                         f"({', '.join(loose[:3])}): put each student's notebooks in a folder "
                         f"named after the student, {root}/<student>/{loose[0]}")
    known = {p.name: p for p in course.glob("*.ipynb")}
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    unknown = [f"{f.name}/{p.name}" for f in folders for p in sorted(f.glob("*.ipynb"))
               if p.name not in known]
    if unknown:
        raise ValueError(f"submissions={str(root)!r}: {', '.join(unknown)} "
                         f"{'is' if len(unknown) == 1 else 'are'} no course notebook; submit "
                         "under the student edition's names, e.g. "
                         f"{min(n for n in known if n[:2].isdigit())}")
    submitted = {p.name for f in folders for p in f.glob("*.ipynb")}
    exercises = {name: notebook_exercises(known[name]) for name in sorted(submitted)}
    students, skipped = [], []
    for folder in folders:
        graded = [p for p in sorted(folder.glob("*.ipynb")) if exercises[p.name]]
        (students.append((folder.name, graded)) if graded else skipped.append(folder.name))
    if not students:
        raise ValueError(f"submissions={str(root)!r}: no student folder holds a course "
                         "notebook; expected <student>/00_launching_ranks.ipynb and so on")
    return exercises, students, skipped


def grade(submissions, out="grades.csv", timeout: float = 600.0, course=None,
          progress=print) -> list[GradeRow]:
    """Grade every student folder in ``submissions``; write the CSV ``out`` and the
    feedback files beside it (``<out stem>-feedback/<student>.md``); return the rows.

    ``timeout``: seconds each notebook may run (its cells together). ``course``: the
    course's notebooks (default: the repository's notebooks/). ``progress``: called with
    one line per notebook graded (None for silence). Bad input raises ValueError before
    anything runs."""
    positive_number("timeout", timeout, "seconds one notebook may run, e.g. 600")
    if progress is not None and not callable(progress):
        raise ValueError(f"progress={progress!r}: pass a function that takes one line "
                         "(print, the default), or None for silence")
    out = Path(out)
    if out.is_dir() or out.suffix.lower() != ".csv":
        raise ValueError(f"out={str(out)!r}: pass the CSV file to write, e.g. grades.csv")
    exercises, students, skipped = _plan(submissions, course)
    from .grade_report import write_csv, write_feedback
    say = progress or (lambda line: None)
    for name in skipped:
        say(_("{student}: no course notebook in the folder; nothing graded").format(student=name))
    rows = []
    for student, notebooks in students:
        mine = []
        for path in notebooks:
            mine += _grade_notebook(student, path, exercises[path.name], timeout, say)
        rows += mine
        write_feedback(out, student, mine)
        write_csv(out, rows)   # after each student: a stopped run keeps what it graded
    say(_("wrote {csv} ({rows} rows) and the feedback of {students} students to {folder}/"
          ).format(csv=out, rows=len(rows), students=len(students),
                   folder=out.with_name(out.stem + "-feedback")))
    return rows


def _grade_notebook(student: str, path: Path, exercises, timeout: float, say) -> list[GradeRow]:
    from .grade_check import check_functions
    from .grade_report import edition, speaking
    from .grade_run import run_notebook

    started = time.monotonic()
    language = edition(path) or "en"   # unreadable: run_notebook says why, in English
    with speaking(language):
        ran = run_notebook(path, [ex.student_name for ex in exercises], timeout, language)
        if ran.failure is None:
            verdicts = check_functions(exercises, ran, language)
        else:
            verdicts = {ex.id: ("notebook_failed", ran.failure) for ex in exercises}
    rows = []
    for ex in exercises:
        kind, message = verdicts[ex.id]
        passed = kind == "passed"
        rows.append(GradeRow(student, path.name, ex.id, passed, ex.points if passed else 0,
                             ex.points, message.splitlines()[0] if message else kind,
                             message, kind, language, ran.note or ""))
    say(_("{student} / {notebook}: {points} of {max_points} points ({seconds} s)").format(
        student=student, notebook=path.name, points=sum(r.points for r in rows),
        max_points=sum(r.max_points for r in rows),
        seconds=f"{time.monotonic() - started:.0f}"))
    return rows
