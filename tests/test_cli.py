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
    with pytest.raises(ValueError, match="key=value"):   # main() shows it as a usage error
        _parse_settings(["oops"])


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["grade", "--help"]])
def test_the_help_speaks_chinese_and_english_is_argparse_own(argv, monkeypatch, capsys):
    import companion.__main__ as cli
    from companion.tools.english_runs import english_runs
    monkeypatch.setenv("COMPANION_LANG", "zh-CN")
    with pytest.raises(SystemExit):
        cli.main(argv)
    shown = capsys.readouterr().out
    commands = cli.__doc__.split("\n\n")[1]   # the example command lines: code, as written
    assert shown.startswith("用法：") and "选项" in shown, shown
    assert english_runs(shown.replace(commands, "")) == [], shown
    monkeypatch.setenv("COMPANION_LANG", "en")
    with pytest.raises(SystemExit):
        cli.main(argv)
    shown = capsys.readouterr().out
    assert shown.startswith("usage: ") and "show this help message and exit" in shown
    if argv == ["--help"]:
        assert cli.__doc__ in shown   # the description is the docstring, byte for byte


def test_every_module_of_the_package_imports():
    experiments.names()
    assert experiments.load_errors == {}


def test_every_registered_experiment_has_a_description():
    for name in experiments.names():
        assert experiments.get(name).description, f"experiment {name} needs a docstring"


# ---- python -m companion grade / make grade (the grader itself: tests/test_grade.py) ----
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_grade_refuses_a_missing_folder_before_anything_runs(tmp_path):
    out = run(PY, "-m", "companion", "grade", str(tmp_path / "nowhere"),
              "--out", str(tmp_path / "grades.csv"))
    assert out.returncode == 2, out.stderr
    assert "submissions=" in out.stderr and "one folder per student" in out.stderr
    assert not (tmp_path / "grades.csv").exists()


def test_grade_refuses_a_bad_time_limit():
    out = run(PY, "-m", "companion", "grade", "submissions", "--timeout", "0")
    assert out.returncode == 2 and "timeout" in out.stderr


def test_make_grade_runs_the_grader_on_submissions():
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    planned = run(make, "-C", ROOT, "-n", "grade", "SUBMISSIONS=subs", "OUT=hw1.csv")
    assert '-m companion grade "subs" --out "hw1.csv" --timeout 600' in planned.stdout
    assert "needs SUBMISSIONS=DIR" in run(make, "-C", ROOT, "-n", "grade").stdout
    assert "make grade SUBMISSIONS=DIR" in run(make, "-C", ROOT, "help").stdout


def test_fit_prints_the_prediction_and_the_verdict():
    out = run(PY, "-m", "companion", "fit", "Llama-3 405B", "--gpus", "8", "--no-measure")
    assert out.returncode == 0, out.stderr
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("fits on H100 (80 GB): no - predicted "), last


def test_fit_refuses_a_tp_degree_that_splits_a_head_before_measuring():
    out = run(PY, "-m", "companion", "fit", "Llama-3 8B", "--gpus", "12", "--tp", "3")
    assert out.returncode == 2 and "tp=3 does not divide" in out.stderr
