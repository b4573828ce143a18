"""What the grader writes: the gradebook CSV and one feedback file per student, each in
the student's language.

Part of the instructor's grader (:mod:`companion.learning.grade`, the README's "Grading";
the exercises are taught from notebook 00 on). :func:`edition` tells which edition a
submitted notebook is (English, zh-CN or zh-TW): the Chinese editions carry it in their
metadata (``metadata.companion.language``, written by ``make translations``); a notebook
whose metadata was lost is told by its prose: mostly Chinese characters, and among them
the ones written differently in Simplified and Traditional Chinese.
"""
from __future__ import annotations

import contextlib
import csv
import os
from pathlib import Path

import nbformat

from .. import i18n
from ..i18n import _

__all__: list[str] = []

COLUMNS = ("student", "notebook", "exercise", "passed", "points", "max_points", "feedback")
# Common characters written differently in the two scripts (Simplified, Traditional).
_PAIRS = ("这這", "个個", "们們", "时時", "说說", "为為", "会會", "过過", "对對", "进進", "数數",
          "据據", "计計", "记記", "体體", "络絡", "练練", "习習", "请請", "运運", "网網", "现現",
          "发發", "还還", "样樣", "应應", "该該", "实實", "间間", "问問", "题題", "写寫", "调調",
          "图圖", "单單")
_SIMPLIFIED, _TRADITIONAL = {p[0] for p in _PAIRS}, {p[1] for p in _PAIRS}


def edition(path: Path) -> str | None:
    """"en", "zh-CN" or "zh-TW" for the notebook at ``path``; None if it cannot be read."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception:   # the grader reports the unreadable file itself
        return None
    stated = nb.metadata.get("companion", {}).get("language")
    if stated in i18n.LANGUAGES:
        return stated
    text = "".join(c.source for c in nb.cells if c.cell_type == "markdown")
    chinese = sum("\u4e00" <= ch <= "\u9fff" for ch in text)
    latin = sum(ch.isascii() and ch.isalpha() for ch in text)
    # The Chinese editions' prose is about 60% Chinese characters (code and terms stay
    # Latin); an English notebook with a student's note in Chinese stays English.
    if chinese < 0.25 * (chinese + latin) or not chinese:
        return "en"
    traditional = sum(ch in _TRADITIONAL for ch in text)
    return "zh-TW" if traditional > sum(ch in _SIMPLIFIED for ch in text) else "zh-CN"


@contextlib.contextmanager
def speaking(language: str | None):
    """The package's messages in ``language`` inside the block, as before it after."""
    chosen, env = i18n._chosen, os.environ.get(i18n.ENV)
    if language:
        i18n.set_language(language)
    try:
        yield
    finally:
        if chosen is not None:
            i18n.set_language(chosen)
        i18n._chosen = chosen
        if env is None:
            os.environ.pop(i18n.ENV, None)
        else:
            os.environ[i18n.ENV] = env


def write_csv(out: Path, rows) -> None:
    """The gradebook: one row per (student, exercise), the columns of :data:`COLUMNS`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for r in rows:
            writer.writerow([r.student, r.notebook, r.exercise, "yes" if r.passed else "no",
                             r.points, r.max_points, r.feedback])


def feedback_path(out: Path, student: str) -> Path:
    """Where ``student``'s feedback goes: ``<out stem>-feedback/<student>.md``."""
    return out.with_name(out.stem + "-feedback") / f"{student}.md"


def _language_of(rows) -> str:
    """The student's language: that of their first Chinese-edition notebook, else English."""
    return next((r.language for r in rows if r.language != "en"), "en")


def write_feedback(out: Path, student: str, rows) -> Path:
    """``student``'s feedback file: each notebook, each exercise, its points and verdict."""
    from .exercise import exercise

    path = feedback_path(out, student)
    path.parent.mkdir(parents=True, exist_ok=True)
    with speaking(_language_of(rows)):
        lines = [_("# Feedback for {student}").format(student=student), "",
                 _("{points} of {max_points} points.").format(
                     points=sum(r.points for r in rows),
                     max_points=sum(r.max_points for r in rows)), "",
                 _("Each notebook ran from top to bottom in a fresh kernel; then every "
                   "function you wrote was checked on real ranks. What your notebook's own "
                   "check cells printed does not count."), ""]
        for notebook in dict.fromkeys(r.notebook for r in rows):
            mine = [r for r in rows if r.notebook == notebook]
            lines += [_("## {notebook}: {points} of {max_points} points").format(
                notebook=notebook, points=sum(r.points for r in mine),
                max_points=sum(r.max_points for r in mine)), ""]
            if mine[0].note:
                lines += [_("Note: {note}; the notebook ran on, as the grader runs every "
                            "cell.").format(note=mine[0].note), ""]
            for r in mine:
                with speaking(r.language):
                    title = exercise(r.exercise).shown("title")
                    level = _(exercise(r.exercise).level)
                lines += [_("### {id} ({level}): {title}").format(
                              id=r.exercise, level=level, title=title), "",
                          (_("Passed: {points} of {max_points} points.") if r.passed else
                           _("Not passed: {points} of {max_points} points.")).format(
                              points=r.points, max_points=r.max_points), "",
                          "```text", r.verdict.replace("```", "'''"), "```", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
