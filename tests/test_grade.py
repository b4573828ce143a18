"""`make grade`: marks an instructor can put in a gradebook, whatever the notebooks say.

Five students submit notebook 00 (small synthetic notebooks named like it, built from its
solution cells, so that a test takes seconds, not the minutes of the full notebooks):
the instructor's solutions (in the zh-CN edition), the student edition untouched, a
cheat who rewrote the check cells and patched the checker while one function is wrong,
a notebook that kills its kernel and one that never ends. One grader run grades them
all; the tests read its rows, its CSV and its feedback files. The grader must put every
student's marks down and go on past the broken notebooks; nothing a notebook does may
reach another submission, the gradebook or the instructor's files.
"""
from __future__ import annotations

import copy
import csv
import glob
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import cloudpickle
import nbformat
import pytest

from companion import launch
from companion.learning import all_exercises, exercise
from companion.learning.grade import GradeRow, grade, notebook_exercises
from companion.learning.grade_report import COLUMNS, edition, speaking
from companion.learning.grade_submitted import Submitted
from companion.learning.verdict import not_implemented
from companion.tools.release import is_solution_cell, student_notebook
from companion.i18n import _

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
NB00 = NOTEBOOKS / "00_launching_ranks.ipynb"
EXERCISES_00 = notebook_exercises(NB00)
TIME_LIMIT = 10   # seconds per notebook: the synthetic ones need about 3
LEAK = "companion-grade-leak.txt"


def synthetic(language=None, wrong=None, checks=None, extra=()):
    """A notebook named like 00 that defines notebook 00's functions from its solution
    cells (``wrong``: {exercise id: source} replaces some), each followed by a check cell
    (``checks``: {exercise id: source}, default a line that prints success)."""
    course = nbformat.read(NB00, as_version=4)
    nb = nbformat.v4.new_notebook(metadata=copy.deepcopy(course.metadata))
    if language:
        nb.metadata["companion"] = {"language": language}
    nb.cells = [nbformat.v4.new_code_cell(
        "import torch\nimport torch.distributed as dist\nfrom companion.learning import exercise")]
    for cell in (c for c in course.cells if is_solution_cell(c)):
        ex = exercise(cell.metadata["nbgrader"]["grade_id"].replace("-", ".", 1))
        solution = copy.deepcopy(cell)
        solution.source = (wrong or {}).get(ex.id, solution.source)
        check = (checks or {}).get(ex.id, f"print('✓ {ex.id} passed')")
        nb.cells += [nbformat.v4.new_code_cell(f"{ex.short} = exercise({ex.id!r})"), solution,
                     nbformat.v4.new_code_cell(check)]
    nb.cells += [nbformat.v4.new_code_cell(source) for source in extra]
    return nb


CHEAT = ("from companion.learning.exercise import Exercise\n"
         "from companion.learning.verdict import Verdict\n"
         "Exercise.check = lambda self, candidate, quiet=False: Verdict('passed', '✓ passed')\n"
         "print(average.check(my_average))")
SNOOP = (f"import os\nopen({LEAK!r}, 'w').write('cwd')\n"
         f"open(os.path.join(os.path.expanduser('~'), {LEAK!r}), 'w').write('home')")
STUDENTS = {   # sorted by name: the two broken notebooks come first, so grading must go on
    "ana": lambda: synthetic(extra=["import os\nos._exit(1)"]),
    "ben": lambda: synthetic(extra=["while True:\n    pass"]),
    "chen": lambda: synthetic(language="zh-CN"),
    "dora": lambda: student_notebook(synthetic()),
    "eve": lambda: synthetic(wrong={"00.average": "def my_average(x):\n    return x.clone()\n"},
                             checks={"00.average": CHEAT}, extra=[SNOOP]),
}


def _strays(since: float) -> list[str]:
    """Processes started after ``since`` (epoch seconds) whose HOME is one of the grader's
    temporary folders: a submission's, or a grading process's, still alive."""
    with open("/proc/stat") as f:
        boot = next(float(line.split()[1]) for line in f if line.startswith("btime"))
    found = []
    for pid in (p.split("/")[2] for p in glob.glob("/proc/[0-9]*")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                ours = re.search(rb"(^|\0)HOME=[^\0]*companion-grade-\w+-%d-" % os.getpid(),
                                 f.read())
            with open(f"/proc/{pid}/stat") as f:
                ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        except (OSError, ValueError, IndexError):
            continue
        if ours and boot + ticks / os.sysconf("SC_CLK_TCK") >= since - 1:
            found.append(pid)
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    submissions = tmp_path_factory.mktemp("submissions")
    for student, make in STUDENTS.items():
        (submissions / student).mkdir()
        nbformat.write(make(), submissions / student / NB00.name)
    before = sorted(p.relative_to(submissions) for p in submissions.rglob("*"))
    out = tmp_path_factory.mktemp("gradebook") / "grades.csv"
    lines, started = [], time.time()
    rows = grade(submissions, out, timeout=TIME_LIMIT, progress=lines.append)
    return SimpleNamespace(rows=rows, out=out, lines=lines, submissions=submissions,
                           before=before, started=started)


def rows_of(graded, student) -> dict[str, GradeRow]:
    return {r.exercise: r for r in graded.rows if r.student == student}


@pytest.mark.ci   # the five students: about a minute on 2 cores
def test_the_instructors_solutions_pass_every_exercise_in_the_chinese_edition(graded):
    mine = rows_of(graded, "chen")
    assert set(mine) == {ex.id for ex in EXERCISES_00}
    for ex in EXERCISES_00:
        r = mine[ex.id]
        assert r.passed and r.kind == "passed", r.verdict
        assert (r.points, r.max_points) == (ex.points, ex.points)
        assert r.language == "zh-CN" and re.search("[\u4e00-\u9fff]", r.feedback), r.feedback


@pytest.mark.ci   # the five students: about a minute on 2 cores
def test_the_untouched_student_edition_is_not_implemented(graded):
    expected = not_implemented().message.splitlines()[0]
    for r in rows_of(graded, "dora").values():
        assert not r.passed and r.points == 0
        assert r.kind == "not_implemented" and r.feedback == expected


@pytest.mark.ci   # the five students: about a minute on 2 cores
def test_rewritten_check_cells_and_a_patched_checker_do_not_count(graded):
    mine = rows_of(graded, "eve")
    assert not mine["00.average"].passed and mine["00.average"].points == 0
    assert mine["00.average"].kind == "wrong_value", mine["00.average"].verdict
    assert mine["00.broadcast"].passed and mine["00.healthy-average"].passed


@pytest.mark.ci   # the five students: about a minute on 2 cores
def test_a_notebook_that_kills_its_kernel_gets_zero_and_grading_goes_on(graded):
    for r in rows_of(graded, "ana").values():
        assert not r.passed and r.points == 0 and r.kind == "notebook_failed"
        last = f"Cell In[{len(synthetic().cells) + 1}]"   # every cell is code: In[n] is cell n
        assert f"kernel died in {last} (`import os`)" in r.feedback, r.feedback
    assert [line.split(" / ")[0] for line in graded.lines[:5]] == sorted(STUDENTS)


@pytest.mark.ci   # the five students: about a minute on 2 cores
def test_an_endless_notebook_stops_at_the_time_limit_and_grading_goes_on(graded):
    for r in rows_of(graded, "ben").values():
        assert not r.passed and r.points == 0 and r.kind == "notebook_failed"
        assert f"time limit of {TIME_LIMIT} s" in r.feedback and "while True:" in r.feedback
    seconds = int(re.search(r"\((\d+) s\)", graded.lines[1])[1])
    assert TIME_LIMIT <= seconds < TIME_LIMIT + 60, graded.lines[1]   # + kernel start


@pytest.mark.ci   # the five students: about a minute on 2 cores
def test_the_csv_has_a_row_per_student_and_exercise(graded):
    with open(graded.out, newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    assert tuple(table[0]) == COLUMNS
    assert len(table) - 1 == len(STUDENTS) * len(EXERCISES_00) == len(graded.rows)
    for line, r in zip(table[1:], graded.rows):
        assert line == [r.student, r.notebook, r.exercise, "yes" if r.passed else "no",
                        str(r.points), str(r.max_points), r.feedback]
    full, average = sum(ex.points for ex in EXERCISES_00), exercise("00.average").points
    assert sum(r.points for r in graded.rows) == full + (full - average)   # chen's, eve's


@pytest.mark.ci   # the five students: about a minute on 2 cores
def test_each_student_gets_a_feedback_file_in_their_language(graded):
    folder = graded.out.with_name("grades-feedback")
    assert sorted(p.stem for p in folder.glob("*.md")) == sorted(STUDENTS)
    eve = (folder / "eve.md").read_text(encoding="utf-8")
    assert "# Feedback for eve" in eve and rows_of(graded, "eve")["00.average"].verdict in eve
    chen = (folder / "chen.md").read_text(encoding="utf-8")
    with speaking("zh-CN"):
        heading = _("## {notebook}: {points} of {max_points} points").format(
            notebook=NB00.name, points=6, max_points=6)
        title = exercise("00.broadcast").shown("title")
    assert heading in chen and title in chen


@pytest.mark.ci   # the five students: about a minute on 2 cores
def test_nothing_a_notebook_does_reaches_the_instructor_or_outlives_its_turn(graded):
    after = sorted(p.relative_to(graded.submissions) for p in graded.submissions.rglob("*"))
    assert after == graded.before, "a notebook wrote into the submissions"
    for folder in (Path.home(), ROOT, Path.cwd(), graded.out.parent):
        assert not (folder / LEAK).exists(), f"a notebook wrote {folder / LEAK}"
    left = glob.glob(os.path.join(tempfile.gettempdir(), f"companion-grade-*-{os.getpid()}-*"))
    assert not left, f"temporary folders left behind: {left}"
    assert not _strays(graded.started), "a process of a graded notebook is still alive"


@pytest.fixture
def no_process_may_start(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("bad input started a process")
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


@pytest.mark.parametrize("case", ["missing", "empty", "loose", "unknown", "timeout", "out"])
def test_bad_input_is_refused_before_anything_runs(case, tmp_path, no_process_may_start):
    submissions, kwargs, match = tmp_path / "submissions", {}, "submissions="
    (submissions / "ana").mkdir(parents=True)
    if case == "missing":
        submissions = tmp_path / "no-such-folder"
    elif case == "loose":
        nbformat.write(synthetic(), submissions / NB00.name)
    elif case == "unknown":
        nbformat.write(synthetic(), submissions / "ana" / "homework1.ipynb")
        match = r"ana/homework1\.ipynb is no course notebook"
    elif case == "timeout":
        nbformat.write(synthetic(), submissions / "ana" / NB00.name)
        kwargs, match = {"timeout": 0}, "timeout"
    elif case == "out":
        nbformat.write(synthetic(), submissions / "ana" / NB00.name)
        kwargs, match = {"out": tmp_path}, "out="   # a folder, not a CSV file
    kwargs.setdefault("out", tmp_path / "grades.csv")
    with pytest.raises(ValueError, match=match):
        grade(submissions, **kwargs)
    assert not (tmp_path / "grades.csv").exists()


@pytest.mark.parametrize("folder", ["", "zh-CN", "zh-TW"])
def test_every_solution_cell_is_one_exercise_by_its_grade_id(folder):
    """nbgrader's grade_id is the exercise id with the dot as a hyphen; the grader finds
    a notebook's exercises by it, in every edition."""
    by_grade_id = {ex.id.replace(".", "-"): ex.id for ex in all_exercises().values()}
    seen = []
    for path in sorted((NOTEBOOKS / folder).glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if is_solution_cell(cell):
                grade_id = cell.metadata["nbgrader"]["grade_id"]
                assert grade_id in by_grade_id, f"{path.name}: {grade_id} names no exercise"
                assert grade_id[:2] == path.name[:2], f"{path.name}: {grade_id}"
                seen.append(by_grade_id[grade_id])
    assert sorted(seen) == sorted(by_grade_id.values()), "each exercise: one solution cell"


def test_the_edition_is_told_by_its_metadata_or_its_text(tmp_path):
    for name, nb, want in [
            ("en", nbformat.read(NB00, as_version=4), "en"),
            ("cn", nbformat.read(NOTEBOOKS / "zh-CN" / NB00.name, as_version=4), "zh-CN"),
            ("tw", nbformat.read(NOTEBOOKS / "zh-TW" / NB00.name, as_version=4), "zh-TW")]:
        nbformat.write(nb, tmp_path / f"{name}.ipynb")
        assert edition(tmp_path / f"{name}.ipynb") == want
        nb.metadata.pop("companion", None)   # a notebook whose metadata was lost
        nbformat.write(nb, tmp_path / f"{name}-bare.ipynb")
        assert edition(tmp_path / f"{name}-bare.ipynb") == want
    noted = nbformat.read(NB00, as_version=4)   # an English notebook, a note in Chinese
    noted.cells.append(nbformat.v4.new_markdown_cell("我的笔记：这个练习要先把张量复制一份。"))
    nbformat.write(noted, tmp_path / "noted.ipynb")
    assert edition(tmp_path / "noted.ipynb") == "en"
    (tmp_path / "broken.ipynb").write_text("{not json")
    assert edition(tmp_path / "broken.ipynb") is None


class _OpensWithASideEffect:
    def __reduce__(self):   # unpickling marks the process, then yields a function
        return (eval, ("__import__('os').environ.setdefault('GRADE_OPENED', 'yes') "
                       "and (lambda x: x + 1)",))


def test_the_grading_process_never_opens_a_students_bytes():
    submitted = Submitted("my_f", cloudpickle.dumps(_OpensWithASideEffect()))
    travelled = cloudpickle.loads(cloudpickle.dumps(submitted))   # as launch ships it
    with pytest.raises(RuntimeError, match="only in the exercise's ranks"):
        travelled(1)
    assert "GRADE_OPENED" not in os.environ
    opened = launch(lambda f: (f(41), os.environ.get("GRADE_OPENED")), submitted,
                    world_size=1)
    assert opened == [(42, "yes")] and "GRADE_OPENED" not in os.environ


def _solution(ex_id: str):
    """Exercise ``ex_id``'s solution from its notebook, compiled as a cell would be."""
    ex = exercise(ex_id)
    path = next(NOTEBOOKS.glob(f"{ex_id[:2]}_*.ipynb"))
    source = next(c.source for c in nbformat.read(path, as_version=4).cells
                  if is_solution_cell(c) and c.metadata["nbgrader"]["grade_id"]
                  == ex_id.replace(".", "-"))
    namespace = {"__name__": "submitted_cell"}
    exec(compile(ex.context + "\n" + source, "<submitted cell>", "exec"), namespace)
    return namespace[ex.student_name]


def test_an_exercise_with_a_precheck_calls_the_function_only_in_its_ranks():
    # A precheck (simulate a schedule, try a placement on several shapes) calls the
    # function before the real run; with bytes, only a rank can do that.
    ex = min((e for e in all_exercises().values() if e.precheck is not None),
             key=lambda e: (e.timeout, e.id))
    verdict = ex.check(Submitted(ex.student_name, cloudpickle.dumps(_solution(ex.id))),
                       quiet=True)
    assert verdict.kind == "passed", verdict.message
