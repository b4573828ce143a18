"""The Colab/Binder path: the bootstrap cell, the wheel's data, a fresh install.

The last test is the student's path as far as this machine allows: a fresh virtual
environment holding only torch and Jupyter, notebooks 00 and 02 copied into an empty
folder with the bootstrap cell, the cell pointed at a copy of this checkout (installed as
a regular, non-editable package), both notebooks under nbval. Colab itself cannot be
reached from here; docs/colab-and-binder.md says what that leaves unverified.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from companion.tools import bootstrap as B

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
# Notebook 02 trains on digits (the data a wheel used to lose) and is the quickest that does;
# 00 is where everyone starts.
FRESH_INSTALL_NOTEBOOKS = ("00_launching_ranks.ipynb", "02_parameter_server_vs_allreduce.ipynb")
TORCH = "2.13.0"  # requirements.txt's pin, whose CPU wheel lies on the course machines
# Jupyter for a kernel and nbval to run it; requirements.txt's pins, nothing else.
JUPYTER = ("ipykernel==7.4.0", "nbval==0.11.0", "pytest==9.2.0")


def _python_of(cell_source: str) -> str:
    return TransformerManager().transform_cell(cell_source)


def _run_cell(source: str, companion_found: bool, pip_makes_it_importable: bool = False):
    """Run the cell's Python with IPython's %pip replaced by a recorder."""
    calls = []
    state = {"found": companion_found}
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        if name == "companion":
            return object() if state["found"] else None
        return real_find_spec(name, *args, **kwargs)

    namespace = {}

    class Shell:
        def run_line_magic(self, magic, line):
            calls.append((magic, line.format(**namespace)))  # IPython expands {names} too
            state["found"] = pip_makes_it_importable

    namespace["get_ipython"] = lambda: Shell()
    original = importlib.util.find_spec
    importlib.util.find_spec = find_spec
    try:
        exec(compile(_python_of(source), "<bootstrap>", "exec"), namespace)
    finally:
        importlib.util.find_spec = original
    return calls


def test_the_cell_does_nothing_where_companion_is_installed():
    assert _run_cell(B.bootstrap_source(), companion_found=True) == []


def test_the_cell_installs_from_the_repository_and_pins_the_torch_already_there(monkeypatch):
    import torch

    monkeypatch.delenv("COMPANION_INSTALL_SOURCE", raising=False)
    calls = _run_cell(B.bootstrap_source(), companion_found=False, pip_makes_it_importable=True)
    assert calls == [("pip", f'install --quiet "{B.INSTALL_SOURCE}" "torch=={torch.__version__}"')]
    monkeypatch.setenv("COMPANION_INSTALL_SOURCE", "/some/checkout")
    calls = _run_cell(B.bootstrap_source(), companion_found=False, pip_makes_it_importable=True)
    assert calls[0][1].startswith('install --quiet "/some/checkout" ')


def test_a_failed_install_stops_the_notebook_at_the_cell(monkeypatch):
    monkeypatch.setenv("COMPANION_INSTALL_SOURCE", "/nowhere")
    with pytest.raises(RuntimeError, match="could not install companion from /nowhere"):
        _run_cell(B.bootstrap_source(), companion_found=False, pip_makes_it_importable=False)


def _copy(tmp_path, name="08_delayed_gradient_averaging.ipynb"):
    """A course notebook as it was before the tool ran: its bootstrap cell removed."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nb.cells = [c for c in nb.cells if B.TAG not in c.metadata.get("tags", [])]
    nbformat.write(nb, tmp_path / name)
    return tmp_path / name


def test_apply_inserts_first_keeps_every_other_cell_and_is_idempotent(tmp_path):
    path = _copy(tmp_path)
    before = nbformat.read(path, as_version=4)
    B.bootstrap_cell()  # built before any notebook is read: no hidden state
    assert B.apply_to_paths([tmp_path]) == [path]
    text = path.read_text()
    after = nbformat.read(path, as_version=4)
    nbformat.validate(after)
    first = after.cells[0]
    assert first.id == B.CELL_ID and first.cell_type == "code"
    assert first.outputs == [] and first.execution_count is None
    assert B.TAG in first.metadata.tags and "nbval-ignore-output" in first.metadata.tags
    assert first.metadata.slideshow.slide_type == "skip"
    assert after.cells[1:] == before.cells  # ids, sources, metadata: untouched
    assert B.apply_to_paths([tmp_path]) == [] and path.read_text() == text
    assert B.apply_to_paths([path], check=True) == []


def test_an_old_or_moved_cell_is_replaced_not_duplicated(tmp_path):
    path = _copy(tmp_path)
    nb = nbformat.read(path, as_version=4)
    stale = B.bootstrap_cell("git+https://example.invalid/old.git")
    nb.cells.insert(3, stale)
    nbformat.write(nb, path)
    assert B.apply_to_paths([path], check=True) == [path]
    assert B.find_bootstrap(nbformat.read(path, as_version=4)) == [3]  # check wrote nothing
    B.apply_to_paths([path])
    nb = nbformat.read(path, as_version=4)
    assert B.find_bootstrap(nb) == [0] and "example.invalid" not in nb.cells[0].source
    assert len({c.id for c in nb.cells}) == len(nb.cells)


def test_the_command_line_checks_and_applies(tmp_path, capsys):
    _copy(tmp_path)
    assert B.main(["--check", str(tmp_path)]) == 1
    assert B.main([str(tmp_path)]) == 0
    assert B.main(["--check", str(tmp_path)]) == 0
    assert "every notebook starts with the current bootstrap cell" in capsys.readouterr().out


def test_student_release_keeps_the_cell(tmp_path):
    from companion.tools.release import student_notebook

    path = _copy(tmp_path)
    B.apply_to_paths([path])
    student = student_notebook(nbformat.read(path, as_version=4))
    assert student.cells[0].source == B.bootstrap_source()


def test_links_name_the_repository_and_the_notebook():
    path = "notebooks/08_delayed_gradient_averaging.ipynb"
    assert B.colab_url(path) == (f"https://colab.research.google.com/github/{B.COURSE_REPO}"
                                 f"/blob/{B.BRANCH}/{path}")
    assert B.binder_url(path).endswith("?labpath=notebooks%2F08_delayed_gradient_averaging.ipynb")
    table = B.links_table([NOTEBOOKS], root=ROOT)
    assert table.count("\n") == 1 + len(list(NOTEBOOKS.glob("*.ipynb")))


def _checkout_copy(dest: Path) -> Path:
    """The checkout without its venv, caches or notebooks: pip builds in the source tree,
    and its build/ and egg-info must not land in the working copy."""
    ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", "build",
                                    "dist", "artifacts", ".pytest_cache", "notebooks")
    shutil.copytree(ROOT, dest, ignore=ignore)
    return dest


def test_the_wheel_carries_the_data(tmp_path):
    src = _checkout_copy(tmp_path / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp_path / "wheels"), str(src)],
                   check=True, timeout=300)
    (wheel,) = (tmp_path / "wheels").glob("companion-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"companion/_data/{p.name}" for p in (ROOT / "data").iterdir()}
    assert shipped <= names, f"missing from the wheel: {sorted(shipped - names)}"
    assert {"companion/_data/SHA256SUMS", "companion/_data/corpus.txt"} <= shipped
    assert not any(n.startswith("data/") for n in names)


def _pip_config_find_links() -> list[Path]:
    """Folders pip looks in for wheels here (PIP_FIND_LINKS, pip's config files)."""
    dirs = os.environ.get("PIP_FIND_LINKS", "").split()
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], text=True,
                             capture_output=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        if "find-links" in line and "=" in line:
            dirs += line.split("=", 1)[1].strip().strip("'\"").split()
    return [Path(d.removeprefix("file://")) for d in dirs]


def torch_wheel() -> Path | None:
    """The CPU wheel of torch 2.13.0 on disk, or None (COMPANION_TORCH_WHEEL names one)."""
    if os.environ.get("COMPANION_TORCH_WHEEL"):
        return Path(os.environ["COMPANION_TORCH_WHEEL"])
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for folder in _pip_config_find_links():
        for wheel in sorted(folder.glob(f"torch-{TORCH}*-{tag}-*.whl")):
            return wheel
    return None


def _clean_env(**extra) -> dict:
    """This process's environment less what would let the kernel see this checkout or
    this venv: the fresh venv must find companion only where the bootstrap put it."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "COMPANION_DATA", "VIRTUAL_ENV", "JUPYTER_PATH",
                        "PYTEST_ADDOPTS", "PYTHONHOME")}
    env.update(extra)
    return env


@pytest.mark.ci  # minutes: a fresh venv (about 2 min, mostly pip), then two notebooks
@pytest.mark.timeout(1500)
def test_fresh_environment_runs_notebooks_through_the_bootstrap_cell(tmp_path):
    wheel = torch_wheel()
    if wheel is None or not wheel.is_file():
        pytest.skip(f"no CPU wheel of torch {TORCH} for this Python on disk (looked in pip's "
                    "find-links folders; set COMPANION_TORCH_WHEEL=/path/to/torch-....whl): "
                    "installing torch otherwise downloads GBs")
    venv = tmp_path / "venv"
    try:
        _fresh_install_run(wheel, venv, tmp_path)
    finally:  # about 1.4 GB: pytest keeps its last three temporary folders
        shutil.rmtree(venv, ignore_errors=True)


def _fresh_install_run(wheel: Path, venv: Path, tmp_path: Path) -> None:
    t0 = time.monotonic()
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    env = _clean_env(PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel), *JUPYTER],
                   check=True, timeout=900, env=env)
    assert not _has(python, "companion", env) and not _has(python, "numpy", env), (
        "the fresh environment must hold only torch and Jupyter")
    t_env = time.monotonic() - t0

    work = tmp_path / "student"
    work.mkdir()
    for name in FRESH_INSTALL_NOTEBOOKS:
        shutil.copy(NOTEBOOKS / name, work / name)
    B.apply_to_paths([work])
    src = _checkout_copy(tmp_path / "checkout")
    run = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
         "--nbval-cell-timeout=300", *FRESH_INSTALL_NOTEBOOKS],
        cwd=work, env=_clean_env(PATH=env["PATH"], COMPANION_INSTALL_SOURCE=str(src)),
        capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]

    # Installed as a regular package into the fresh venv, torch untouched.
    show = subprocess.run([str(python), "-c", (
        "import json, importlib.metadata as m, companion, torch; d = m.distribution('companion');"
        "print(json.dumps([companion.__file__, torch.__version__,"
        " d.read_text('direct_url.json')]))")], cwd=tmp_path, env=_clean_env(), text=True,
        capture_output=True, check=True).stdout
    where, torch_version, direct_url = json.loads(show)
    assert Path(where).is_relative_to(venv), where
    assert torch_version.split("+")[0] == TORCH
    assert not json.loads(direct_url or "{}").get("dir_info", {}).get("editable", False)
    print(f"fresh venv with torch and Jupyter: {t_env:.0f} s; "
          f"two notebooks through the bootstrap cell: {time.monotonic() - t0 - t_env:.0f} s")


def _has(python, module, env) -> bool:
    return subprocess.run([str(python), "-c", f"import {module}"], env=env,
                          capture_output=True).returncode == 0
