"""Every exercise of every notebook, attempted four ways on real ranks ((a), (c) and (d)
run under CI: ``ci``-marked; in a student's make test the notebook itself checks its
solutions on real ranks and asserts they pass, which a test here holds).

For each registered exercise:
(a) the solution in its notebook (the nbgrader solution cell), read from a file as the
    grader reads a submission, passes;
(b) the student's stub (that cell after ``make student``) fails as "not implemented";
(c) a solution that calls the package's reference or a forbidden built-in fails, saying so;
(d) a deliberately wrong answer fails with feedback naming the student's own line.

The attempts for (c) and (d) are in ``tests/exercise_cases/nbNN.py``, one per notebook.
The solution and stub are read from the notebook itself, so what is tested is what a
student gets. Each attempt is written to a file and imported, as a notebook cell would
be compiled, so the student's line can be found in a rank's traceback.
"""
from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

from companion.learning import all_exercises, exercise
from companion.learning.exercise import LEVELS
from companion.tools.release import BEGIN, clear_solution, is_solution_cell

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
EXERCISES = all_exercises()


def _cells(path):
    return json.loads(path.read_text())["cells"]


def solution_cells() -> dict[str, tuple[Path, str]]:
    """{exercise id: (notebook, solution source)} from the nbgrader marks."""
    out = {}
    for path in NOTEBOOKS:
        for cell in _cells(path):
            if is_solution_cell(cell):
                grade_id = cell["metadata"]["nbgrader"]["grade_id"]
                ex_id = grade_id.replace("-", ".", 1)
                assert ex_id not in out, f"two solution cells for {ex_id}"
                out[ex_id] = (path, "".join(cell["source"]))
    return out


SOLUTIONS = solution_cells()


def cases(ex_id: str) -> dict:
    module = importlib.import_module(f"exercise_cases.nb{ex_id[:2]}")
    return module.CASES[ex_id]


def attempt(tmp_path, ex, source: str, tag: str):
    """Define the student's object from ``source`` (a file, like a notebook cell)."""
    path = tmp_path / f"attempt_{ex.id.replace('.', '_')}_{tag}.py"
    path.write_text(ex.context + "\n\n" + source + "\n")
    namespace = {"__name__": f"attempt_{tag}"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    assert ex.student_name in namespace, f"{ex.id}: the {tag} does not define {ex.student_name}"
    return namespace[ex.student_name], path


def test_every_exercise_has_its_solution_cell_and_cases():
    assert set(SOLUTIONS) == set(EXERCISES), (
        f"exercises without a solution cell: {sorted(set(EXERCISES) - set(SOLUTIONS))}; "
        f"solution cells without an exercise: {sorted(set(SOLUTIONS) - set(EXERCISES))}")
    for ex_id in EXERCISES:
        c = cases(ex_id)
        assert {"cheat", "wrong", "wrong_kind"} <= set(c), f"{ex_id}: incomplete cases"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_each_notebook_has_a_ladder_of_three_exercises(notebook):
    mine = [ex for ex in EXERCISES.values() if ex.id[:2] == notebook.name[:2]]
    assert len(mine) >= 3, f"{notebook.name}: {len(mine)} exercises, need >= 3"
    assert set(LEVELS) <= {ex.level for ex in mine}, "a warm-up, a core and a stretch"
    text = "".join("".join(c["source"]) for c in _cells(notebook))
    for ex in mine:
        assert f'exercise("{ex.id}")' in text, f"{ex.id} is never fetched in {notebook.name}"
        assert re.search(rf"\.check\({ex.student_name}\b", text), f"{ex.id} is never checked"


@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_first_hint_is_not_the_answer(ex_id):
    ex = exercise(ex_id)
    _, solution = SOLUTIONS[ex_id]
    body = solution.split(BEGIN, 1)[-1]
    lines = {l.strip() for l in body.splitlines()
             if len(l.strip()) >= 12 and not l.strip().startswith(("#", "def ", "return"))}
    assert not any(l in ex.hints[0] for l in lines), f"{ex_id}: hint 1 quotes the solution"
    assert len(ex.hints) >= 2


def test_every_notebook_checks_its_exercises_solutions_and_asserts_they_pass():
    """A student's make test runs every notebook, whose solution cells are checked on real
    ranks and asserted in its self-check: that is where the solutions pass in make test
    (the same solutions attempted from a file, as the grader reads them, run under CI)."""
    for ex_id in EXERCISES:
        notebook = next(p for p in NOTEBOOKS if p.name[:2] == ex_id[:2])
        code = "\n".join("".join(c["source"]) for c in _cells(notebook)
                         if c["cell_type"] == "code")
        found = re.search(r"(\w+)\s*=\s*exercise\(\"" + re.escape(ex_id) + r"\"\)", code)
        assert found, f"{notebook.name} never builds exercise({ex_id!r})"
        var = re.escape(found.group(1))
        assert re.search(var + r"\.check\(", code), f"{notebook.name} never checks {ex_id}"
        assert re.search(var + r"\.passed", code), f"{notebook.name} never asserts {ex_id} passed"


@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_exercise_stub_is_not_implemented(ex_id, tmp_path):
    ex = exercise(ex_id)
    _, solution = SOLUTIONS[ex_id]
    fn, _ = attempt(tmp_path, ex, clear_solution(solution), "stub")
    verdict = ex.check(fn)
    assert verdict.kind == "not_implemented", f"(b) the stub: {verdict.kind}: {verdict.message}"
    assert "not implemented" in verdict.message


@pytest.mark.ci
@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_exercise_solution_passes_from_a_file(ex_id, tmp_path):
    ex = exercise(ex_id)
    _, solution = SOLUTIONS[ex_id]
    fn, _ = attempt(tmp_path, ex, solution, "solution")
    verdict = ex.check(fn)
    assert verdict, f"(a) the notebook's solution fails: {verdict.message}"


# The refusals take as many launches again; tests/test_checker_bypass.py keeps the
# checker's own refusals in a student's make test, and CI runs these for every exercise.
@pytest.mark.ci
@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_exercise_refuses_its_shortcut_and_names_the_wrong_line(ex_id, tmp_path):
    ex = exercise(ex_id)
    c = cases(ex_id)

    fn, _ = attempt(tmp_path, ex, c["cheat"], "cheat")
    verdict = ex.check(fn)
    assert verdict.kind == "forbidden", f"(c) the shortcut: {verdict.kind}: {verdict.message}"
    assert "does not allow" in verdict.message

    fn, path = attempt(tmp_path, ex, c["wrong"], "wrong")
    verdict = ex.check(fn)
    assert verdict.kind == c["wrong_kind"], f"(d) {verdict.kind}: {verdict.message}"
    assert path.name in verdict.message, f"(d) the student's file is not named: {verdict.message}"
    if verdict.kind == "crash":
        assert c["wrong_line"] in (verdict.line or ""), verdict.message
