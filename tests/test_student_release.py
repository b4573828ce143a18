"""`make student`: solution-free notebooks that still run up to the first check.

The release (``companion.tools.release``) follows nbgrader's convention. These tests
check the rule itself against nbgrader's documented behaviour, then the real release:
no solution text survives anywhere in a student notebook, the solution cells are
expanded again, and a student's notebook executes up to its first exercise check,
which reports "not implemented" instead of passing.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from companion.tools.release import (BEGIN, END, clear_solution, is_solution_cell,
                                        release, student_notebook)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_clear_solution_follows_nbgrader():
    src = "def f(x):\n    '''doc'''\n    ### BEGIN SOLUTION\n    y = x + 1\n    return y\n    ### END SOLUTION\n"
    assert clear_solution(src) == ("def f(x):\n    '''doc'''\n    # YOUR CODE HERE\n"
                                   "    raise NotImplementedError()")
    assert clear_solution("x = 1") == "# YOUR CODE HERE\nraise NotImplementedError()"
    assert clear_solution("the answer", "markdown") == "YOUR ANSWER HERE"
    two = f"a = 1\n{BEGIN}\nb = 2\n{END}\nc = 3\n{BEGIN}\nd = 4\n{END}"
    assert clear_solution(two).count("raise NotImplementedError()") == 2
    assert "b = 2" not in clear_solution(two) and "c = 3" in clear_solution(two)
    for broken in (f"{BEGIN}\nx", f"x\n{END}", f"{BEGIN}\n{BEGIN}\n{END}"):
        with pytest.raises(ValueError):
            clear_solution(broken)


def test_student_notebook_refuses_a_bad_grade_id():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(f"{BEGIN}\nx = 1\n{END}")
    cell.metadata["nbgrader"] = {"solution": True, "grade_id": "has space"}
    nb.cells = [cell]
    with pytest.raises(ValueError, match="grade_id"):
        student_notebook(nb)


def _solution_lines(nb) -> set[str]:
    lines = set()
    for cell in nb["cells"]:
        if is_solution_cell(cell):
            inside = False
            for line in "".join(cell["source"]).splitlines():
                s = line.strip()
                if s in (BEGIN, END):
                    inside = s == BEGIN
                elif inside and len(s) >= 10 and not s.startswith("#"):
                    lines.add(s)
    return lines


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    done = subprocess.run([sys.executable, "-m", "companion.tools.release",
                           str(ROOT / "notebooks"), str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


def test_release_writes_every_notebook_without_solutions(released):
    for path in NOTEBOOKS:
        original = json.loads(path.read_text())
        student = json.loads((released / path.name).read_text())
        assert len(student["cells"]) == len(original["cells"]), "no cell added or lost"
        text = "\n".join("".join(c["source"]) for c in student["cells"])
        assert BEGIN not in text and END not in text
        # Code only: a task's prose may name the call to use, e.g. dist.all_to_all(out, in).
        code = "\n".join("".join(c["source"]) for c in student["cells"]
                         if c["cell_type"] == "code")
        # A diagnosis gives the broken code in a visible cell: a line the student already
        # reads there (outside every solution region) is not a leak of the solution.
        given = "\n".join("".join(c["source"]) for c in original["cells"]
                          if c["cell_type"] == "code" and BEGIN not in "".join(c["source"]))
        leaked = [l for l in _solution_lines(original) if l in code and l not in given]
        assert not leaked, f"{path.name}: solution text survives: {leaked[:3]}"
        for cell in student["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None
            if is_solution_cell(cell):
                assert "raise NotImplementedError()" in "".join(cell["source"])
                assert not cell["metadata"].get("jupyter", {}).get("source_hidden")


def test_release_refuses_a_folder_without_notebooks(tmp_path):
    with pytest.raises(ValueError, match="source_dir"):
        release(tmp_path, tmp_path / "out")


def _first_check(cells) -> int | None:
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "code" and ".check(" in "".join(cell["source"]):
            return i
    return None


@pytest.mark.ci   # about 90 s for the ten notebooks: CI runs it, a student's make test not
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_student_notebook_runs_to_its_first_check_and_fails_it(notebook, released):
    nb = nbformat.read(released / notebook.name, as_version=4)
    first = _first_check(nb.cells)
    assert first is not None, f"{notebook.name} has no exercise check"
    nb.cells = nb.cells[: first + 1]
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    shown = "".join(o.get("text", "") for o in nb.cells[first].outputs)
    assert "not implemented yet" in shown, shown
    assert "✓" not in shown
