"""`python -m companion` and torchrun run the same registered experiments."""
from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys

import pytest

from companion import experiments
from companion.__main__ import _parse_settings

PY = sys.executable


def run(*args, timeout=120):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)


def test_list_names_the_foundation_experiments():
    out = run(PY, "-m", "companion", "list")
    assert out.returncode == 0, out.stderr
    assert "whoami" in out.stdout and "all_reduce" in out.stdout


def test_run_with_world_size_writes_per_rank_results(tmp_path):
    target = tmp_path / "results.pkl"
    out = run(PY, "-m", "companion", "run", "all_reduce", "--world-size", "3", "--out", str(target))
    assert out.returncode == 0, out.stderr
    assert "OK" in out.stdout
    results = pickle.loads(target.read_bytes())
    assert [r["after"] for r in results] == [6.0, 6.0, 6.0]


def test_unknown_experiment_is_a_clear_error():
    out = run(PY, "-m", "companion", "run", "no_such_thing")
    assert out.returncode != 0
    assert "no experiment named 'no_such_thing'" in out.stderr


def test_torchrun_reads_rank_and_world_size_from_its_environment():
    torchrun = shutil.which("torchrun", path=os.path.dirname(PY))
    if torchrun is None:
        pytest.skip("torchrun is not installed next to this Python")
    out = run(torchrun, "--standalone", "--nproc-per-node", "2", "-m", "companion", "run", "whoami")
    assert out.returncode == 0, out.stderr
    assert "[torchrun] 2 ranks" in out.stdout
    table = [line.split() for line in out.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [row[0] for row in table] == ["0", "1"]


def test_hierarchical_all_reduce_runs_from_the_shell_with_a_node_shape(tmp_path):
    target = tmp_path / "results.pkl"
    out = run(PY, "-m", "companion", "run", "hierarchical_all_reduce", "--world-size", "4",
              "--set", "ranks_per_node=2", "--out", str(target))
    assert out.returncode == 0, out.stderr
    assert "OK: hierarchical all-reduce equals dist.all_reduce" in out.stdout
    results = pickle.loads(target.read_bytes())
    assert [r["intra_group"] for r in results] == [[0, 1], [0, 1], [2, 3], [2, 3]]
    assert [r["inter_group"] for r in results] == [[0, 2], [1, 3], [0, 2], [1, 3]]


def test_settings_are_python_literals():
    assert _parse_settings(["steps=10", "lr=0.5", "name=ring", "sizes=[1, 2]"]) == {
        "steps": 10, "lr": 0.5, "name": "ring", "sizes": [1, 2]}
    with pytest.raises(SystemExit, match="key=value"):
        _parse_settings(["oops"])


def test_every_module_of_the_package_imports():
    experiments.names()
    assert experiments.load_errors == {}


def test_every_registered_experiment_has_a_description():
    for name in experiments.names():
        assert experiments.get(name).description, f"experiment {name} needs a docstring"
