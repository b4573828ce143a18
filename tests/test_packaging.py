"""Set-up stays honest: pins in step, notebooks committed clean, CI calls make test."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _pins(lines):
    return {m.group(1).lower(): m.group(2) for line in lines
            if (m := re.match(r"\s*(?:-\s*)?([A-Za-z0-9_.\-]+)==([^\s#]+)", line))}


def test_requirements_and_environment_yml_pin_the_same_versions():
    req = _pins((ROOT / "requirements.txt").read_text().splitlines())
    env = _pins((ROOT / "environment.yml").read_text().splitlines())
    assert req == env
    assert req["torch"] == "2.13.0", "torch must stay pinned exactly (its CPU wheel is on disk)"


def test_ci_runs_make_test_and_readme_shows_both_commands():
    assert "make test" in (ROOT / ".ci/run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert readme.index("make lab") < readme.index("make test") < 2000


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_are_committed_without_outputs(path):
    nb = json.loads(path.read_text())
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, (
                f"{path.name} cell {i} has outputs; clear them before committing")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_use_the_package_and_end_with_self_checks(path):
    nb = json.loads(path.read_text())
    source = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert "companion" in source
    last_code = [c for c in nb["cells"] if c["cell_type"] == "code"][-1]
    assert "assert" in "".join(last_code["source"]), f"{path.name} must end with a self-check cell"


def test_modules_stay_small_and_name_their_notebook():
    for module in (ROOT / "companion").rglob("*.py"):
        lines = module.read_text().splitlines()
        assert len(lines) <= 400, f"{module.name} has {len(lines)} lines; split it by concept"
