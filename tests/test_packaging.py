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


def test_readmes_first_screen_starts_a_student():
    """What it is, the two commands, the first notebook and the table of every notebook fit
    in the first 60 lines; Colab/Binder and the verification details live in docs/."""
    first = "\n".join((ROOT / "README.md").read_text().splitlines()[:60])
    for needed in ("make lab", "make test", "00_launching_ranks", "docs/colab-and-binder.md",
                   *(f"| {n:02d} |" for n in range(13))):
        assert needed in first, f"README's first 60 lines lack {needed!r}"
    assert "colab.research.google.com" not in first


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


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the course's venv is 3.11
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_pyproject_names_ranges_that_the_exact_pins_satisfy():
    """pyproject.toml is what a `pip install` of the repository resolves (Colab): ranges.
    requirements.txt is what `make` installs: exact pins inside those ranges."""
    from packaging.requirements import Requirement

    pins = _pins((ROOT / "requirements.txt").read_text().splitlines())
    deps = {r.name.lower(): r for r in map(Requirement, _pyproject()["project"]["dependencies"])}
    for name, req in deps.items():
        assert name in pins, f"{name} is a dependency but requirements.txt does not pin it"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"requirements.txt's {name}=={pins[name]} is outside pyproject's {req}")
    assert deps["torch"].specifier and not any(
        s.operator in ("==", "===", "~=") for s in deps["torch"].specifier), (
        "torch must stay a range in pyproject.toml, so that Colab's own torch satisfies it")


def test_shipped_data_sit_at_the_top_with_checksums_and_go_into_the_wheel():
    folder = ROOT / "data"
    files = {p.name for p in folder.iterdir()}
    named = {line.split()[1] for line in (folder / "SHA256SUMS").read_text().splitlines()
             if line.strip() and not line.startswith("#")}
    assert files - {"SHA256SUMS"} == named - {"digits"}, "every shipped file has a checksum"
    assert '"companion._data": "data"' in (ROOT / "setup.py").read_text()
    assert _pyproject()["tool"]["setuptools"]["package-data"]["companion._data"] == ["*"]


def test_binder_installs_the_package_from_environment_yml():
    env = (ROOT / "environment.yml").read_text()
    assert re.search(r"^\s*-\s*(-e\s+)?\.\s*$", env, re.M), "environment.yml must install the package"


def test_every_notebook_starts_with_the_current_bootstrap_cell():
    from companion.tools import bootstrap

    lacking = bootstrap.apply_to_paths([ROOT / "notebooks"], check=True)
    if len(lacking) == len(NOTEBOOKS):
        pytest.skip("no notebook has the Colab/Binder cell yet: python -m companion.tools.bootstrap notebooks/")
    assert not lacking, f"run `python -m companion.tools.bootstrap notebooks/` for {[p.name for p in lacking]}"


def test_readme_links_every_notebook_on_colab_and_binder():
    from companion.tools import bootstrap

    table = bootstrap.links_table([ROOT / "notebooks"], root=ROOT)
    assert table in (ROOT / "docs" / "colab-and-binder.md").read_text(), (
        "docs/colab-and-binder.md's table is stale: paste `python -m companion.tools.bootstrap --links notebooks/`")
