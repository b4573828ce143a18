"""The package's ValueError/TypeError messages read as Chinese in the Chinese editions.

The catalogue (companion/i18n/data/errors.zh-CN.json) has a translation for every message
template the package raises, and no stale one; every bad-input case of
tests/test_bad_input.py, shown in zh-CN and zh-TW, holds no run of English words and
still names its argument; English is untouched; and a kernel in notebooks/zh-CN shows a
bad call's traceback in Chinese.
"""
from __future__ import annotations

import contextlib
import io
import json
import multiprocessing.process
import re
import subprocess
from pathlib import Path

import pytest

from companion.i18n import errors
from companion.tools import error_templates
from companion.tools.english_runs import english_runs

import test_bad_input as bad

ROOT = Path(__file__).resolve().parents[1]
# Cases whose regex is English prose, not an argument's name: what the Chinese names instead.
PROSE = {
    "grade/unknown-notebook": r"homework1\.ipynb", "colab_url/absolute": r"path",
    "replay/nothing": r"traffic\(\)", "collective_replay/nothing": r"traffic\(\)",
    "fit_alpha_beta/one-size": r"alpha", "split_stages/parts-too-many": r"TinyMLP",
    "op_differences/rank-count": r"ours", "fit_from_collectives/too-few": r"",
    "plan/gpus-not-power-of-two": r"24", "shard/not-divisible": r"3",
    "grid_player/empty": r"grid_player", "frame_player/n_frames-zero": r"",
    "launch/compression.train-split": r"global_batch=",
    "launch/train_stacked": r"global_batch=", "Cluster/inter-beta-zero": r"inter.*beta",
    "Cluster/intra-alpha-nan": r"intra.*alpha", "simulate/wrong-count": r"rank",
    "split_batch/dp-exceeds-batch": r"dp=16", "gradient_accumulation_demo/more-ranks-than-batch":
    r"dp=4", "measure_memory/moe": r"GQA", "Decoder/moe": r"GQA",
}
# Every case, argparse's own refusals of a command line included ("invalid choice: ...",
# found in the catalogue's "<argparse>" section): none is left English.
CASES = bad.CASES


def test_every_raised_template_has_a_translation_and_none_is_stale():
    assert error_templates.catalogue_problems() == []
    outside_tools = error_templates.templates(tools=False)
    assert sum(map(len, outside_tools.values())) > 700   # the walk still finds the raise sites


def test_the_traditional_catalogue_is_generated_from_the_simplified_one():
    catalogue = json.loads(error_templates.CATALOGUE.read_text(encoding="utf-8"))
    assert error_templates.TRADITIONAL.read_text(encoding="utf-8") == \
        error_templates.traditional(catalogue), "run python -m companion.tools.error_templates --update"


@pytest.fixture(scope="module")
def messages():
    """Each case's message, raised once with every way to start a process refused."""
    def refuse(*args, **kwargs):
        raise bad.RankStarted("a bad-input case tried to start a process")

    found = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("companion.launcher._get_context", refuse)
        mp.setattr(multiprocessing.process.BaseProcess, "start", refuse)
        mp.setattr(subprocess.Popen, "__init__", refuse)
        for case in CASES:
            err = io.StringIO()
            try:
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    case.fn(*case.args, **case.kwargs)
            except SystemExit:   # argparse printed "prog: error: <the package's message>"
                found[case.id] = err.getvalue().rstrip("\n").split(": error: ", 1)[-1]
            except Exception as exc:  # noqa: BLE001
                found[case.id] = str(exc)
    return found


def _named(case, text: str) -> bool:
    if case.id in PROSE:
        return re.search(PROSE[case.id], text) is not None
    head = case.match.split(".*")[0]   # 'submissions=.*no student folder': the argument
    return re.search(head, text) is not None


@pytest.mark.parametrize("language", ["zh-CN", "zh-TW"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_bad_input_message_reads_as_chinese(case, language, messages):
    english = messages[case.id]
    shown = errors.translate_message(english, language)
    assert shown != english, f"no template matches {english!r}"
    assert english_runs(shown) == [], f"{shown!r} still has English"
    assert _named(case, shown), f"{shown!r} no longer names {case.match!r}"


def test_every_bad_input_case_is_held_to_chinese():
    assert len(CASES) == len(bad.CASES) and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("argv, named", [
    (["run", "whoami", "--backend", "mpi"], "--backend"),
    (["run", "whoami", "--set", "steps"], "--set"),
    (["train"], "train"),
    (["run"], "name"),
    (["run", "whoami", "--bogus"], "--bogus"),
])
def test_the_command_line_refuses_in_chinese(argv, named, monkeypatch, capsys):
    from companion.__main__ import main
    monkeypatch.setenv("COMPANION_LANG", "zh-CN")
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "用法：python -m companion" in err and "：错误：" in err, err
    assert english_runs(err) == [] and named in err, err
    monkeypatch.setenv("COMPANION_LANG", "en")
    with pytest.raises(SystemExit):
        main(argv)
    assert ": error: " in capsys.readouterr().err   # argparse's own English, unchanged


def test_english_is_unchanged(messages):
    for case in CASES[:50]:
        assert errors.translate_message(messages[case.id], "en") == messages[case.id]
    exc = ValueError("world_size must be an integer >= 1, got 0.")
    assert errors.translated(exc) is exc or errors.message_of(exc) == str(exc)


def test_a_tail_and_a_kind_are_translated_inside_the_sentence():
    text = "timeout must be a positive number (finite), got nan; pass seconds such as 300."
    assert errors.translate_message(text, "zh-CN") == \
        "timeout 必须是正数（有限），实际为 nan；请传入秒数，例如 300。"
    assert errors.translate_message("no template says this", "zh-CN") == "no template says this"


def _run_in_kernel(folder: Path, source: str) -> list[dict]:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import companion"),
                                         nbformat.v4.new_code_cell(source)])
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    return nb.cells[1].outputs


@pytest.mark.parametrize("folder, expected", [
    ("zh-CN", "t=-1.0：请传入以秒计的时长，>= 0"),
    ("", "t=-1.0: pass a duration in seconds, >= 0"),
])
def test_a_kernel_in_the_chinese_folder_shows_the_traceback_in_chinese(folder, expected):
    outputs = _run_in_kernel(ROOT / "notebooks" / folder, "companion.units.fmt_seconds(-1.0)")
    error = next(o for o in outputs if o.get("output_type") == "error")
    traceback = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error["traceback"]))
    assert error["ename"] == "ValueError"
    assert expected in traceback and "fmt_seconds" in traceback, traceback[-600:]
