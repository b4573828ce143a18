"""What a Chinese-first student reads from the checker and the prediction box is Chinese.

* every exercise's forbidden reasons, on the card and in the verdict;
* every pattern's problems, produced from the registry on made-up call lists (no calls;
  one call of each kind on every rank), framed as the pattern verdict frames them;
* every prediction verdict case, and the questions notebooks fill in with numbers;
* one real attempt on real ranks with the wrong communication, end to end;
* the table: no key the package no longer writes, the same fields in the Chinese.

"English" here is a run of 3 or more English words outside backticked code, identifiers
(dotted, with underscores or digits, torch.distributed's call names) and numbers.
"""
from __future__ import annotations

import ast
import importlib
import os
import re
from pathlib import Path

import nbformat
import pytest

from companion import i18n
from companion.i18n.checker_strings import CHECKER_ZH_CN, SAID_ZH_CN, WRITTEN_ZH_CN
from companion.learning import all_exercises
from companion.learning.recording import Call
from companion.learning.feedback import _FIELD, reworded
from companion.learning.verdict import forbidden
from companion.learning.watch import COMM_FUNCTIONS

predict = importlib.import_module("companion.learning.predict")
ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "companion"
_NAMES = set(COMM_FUNCTIONS) | {"batch_isend_irecv", "backward", "forward", "None", "True"}


@pytest.fixture
def chinese():
    i18n.set_language("zh-CN")
    yield
    i18n._chosen = None
    os.environ.pop(i18n.ENV, None)


def english_runs(text: str) -> list[str]:
    """The runs of 3 or more English words in ``text``, code and identifiers aside."""
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", " ", text)   # reprs of the student's values
    runs, run = [], []
    for token in re.split(r"[\s\u3000-\u303f\uff00-\uffef]+", text):
        word = token.strip("()[]{},;:.?!")
        if re.fullmatch(r"[A-Za-z][a-z]+(-[a-z]+)*", word) and word not in _NAMES:
            run.append(word)
            continue
        if len(run) >= 3:
            runs.append(" ".join(run))
        run = []
    if len(run) >= 3:
        runs.append(" ".join(run))
    return runs


def _calls(world_size: int, kinds) -> list[list[Call]]:
    return [[Call(k, phase, 16, (r + 1) % world_size, world_size, tuple(range(world_size)))
             for k in kinds for phase in ("forward", "backward")] for r in range(world_size)]


def _pattern_problems(ex) -> list[str]:
    n = ex.world_size
    shapes = [[], ["all_reduce"], ["isend", "irecv"], ["all_to_all"], ["all_gather"],
              ["reduce_scatter_tensor"], ["send", "recv", "broadcast"]]
    found = []
    for kinds in shapes:
        calls = _calls(n, kinds)
        try:
            problem = ex.pattern(calls, n)
        except Exception:   # a pattern that reads fields these made-up calls lack
            continue
        if problem:
            found.append(i18n._("the values are right, but the communication is not the "
                                "pattern asked for: {problem}.{where}").format(
                problem=reworded(problem).rstrip("."), where=""))
    return found


def _verdict_texts() -> dict[str, str]:
    texts = {}
    for ex_id, ex in all_exercises().items():
        for name, reason in ex.rules.items():
            texts[f"{ex_id} forbids {name}"] = forbidden([(name, reason)]).message
        card = ex._repr_markdown_()
        texts[f"{ex_id} card rules"] = "\n".join(
            line for line in card.splitlines() if line.startswith("- "))
        if ex.pattern is not None:
            for i, text in enumerate(_pattern_problems(ex)):
                texts[f"{ex_id} pattern {i}"] = text
    return texts


def _prediction_texts(capsys) -> dict[str, str]:
    cases = {"none": (None, 2.0, {}), "choice right": ("a", "a", {}),
             "choice wrong": ("a", "b", {}), "within": (2, 2.0, {}),
             "outside": (2, 9.0, {}), "within abs": (2, 2.5, {"abs_tol": 1}),
             "outside abs": (2, 9.0, {"abs_tol": 1})}
    texts = {}
    for name, (value, measured, kw) in cases.items():
        guess = predict.predict("多少？", choices=["a", "b"] if isinstance(value, str) else None)
        if value is not None:
            guess.lock(value)
        guess.reveal(measured, **kw)
        texts[f"prediction {name}"] = capsys.readouterr().out
    return texts


def test_verdicts_and_predictions_read_chinese(chinese, capsys):
    texts = {**_verdict_texts(), **_prediction_texts(capsys)}
    assert len(texts) > 300
    english = {k: english_runs(v) for k, v in texts.items() if english_runs(v)}
    assert not english, f"{len(english)} verdicts keep English: {english}"
    broken = {k: v for k, v in texts.items() if ".。" in v or "。。" in v}
    assert not broken, broken
    assert "（误差在 10% 或 1 以内；" in texts["prediction within abs"]


def test_every_table_entry_is_chinese_with_the_same_fields():
    for english, chinese in CHECKER_ZH_CN.items():
        assert set(_FIELD.findall(chinese)) == set(_FIELD.findall(english)), english
        assert not english_runs(_FIELD.sub(" ", chinese)), (english, chinese)
        assert not chinese.endswith("。") or english.endswith((".", "?")), english


def _written_by_the_package() -> set[str]:
    """Every string constant and f-string template (as the table keys them) of the
    package and the English notebooks' code."""
    def template(node):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(v.value)
                continue
            text = "{" + ast.unparse(v.value)
            text += "!" + chr(v.conversion) if v.conversion != -1 else ""
            if v.format_spec:
                text += ":" + "".join(x.value if isinstance(x, ast.Constant) else
                                      "{" + ast.unparse(x.value) + "}"
                                      for x in v.format_spec.values)
            out.append(text + "}")
        return "".join(out)

    sources = [p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py")
               if "i18n" not in p.parts]
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        sources += ["\n".join(line for line in c.source.splitlines()
                              if not line.lstrip().startswith(("%", "!")))
                    for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    found = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.JoinedStr):
                found.add(template(node))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
    return found


def test_every_key_is_still_written_by_the_package():
    written = _written_by_the_package()
    dead = [k for k in CHECKER_ZH_CN if k not in written]
    assert not dead, f"checker_strings.py has entries no code writes any more: {dead}"
    assert not set(SAID_ZH_CN) & set(WRITTEN_ZH_CN)


def test_every_forbidden_reason_and_why_has_a_translation(chinese):
    from companion.i18n.messages import ZH_CN
    missing = []
    for path in (PACKAGE / "learning").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "why":
                values = [node.value]
            elif isinstance(node, ast.keyword) and node.arg == "forbidden" and isinstance(
                    node.value, ast.Dict):
                values = node.value.values
            else:
                continue
            for v in values:
                if isinstance(v, ast.Constant) and v.value not in CHECKER_ZH_CN | ZH_CN:
                    missing.append(f"{path.name}:{v.lineno} {v.value}")
    assert not missing, missing


def test_the_notebooks_filled_in_questions_are_translated_whole(chinese):
    asked = 0
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code" or "question(" not in cell.source:
                continue
            code = "\n".join(line for line in cell.source.splitlines()
                             if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "question":
                    template = ast.literal_eval(node.args[0])
                    assert template in SAID_ZH_CN, f"{path.name}: {template}"
                    fields = {k.arg: 4 for k in node.keywords}
                    shown = predict.asked(predict.question(template, **fields))
                    assert not english_runs(shown), shown
                    asked += 1
    assert asked == 11


def test_a_wrong_pattern_on_real_ranks_reads_chinese(chinese, capsys):
    import torch.distributed as dist
    from companion.learning import exercise

    def my_average(x):
        y = x.clone()
        dist.all_reduce(y)
        dist.all_reduce(x.clone())   # one collective too many
        return y / dist.get_world_size()

    verdict = exercise("00.average").check(my_average)
    assert verdict.kind == "pattern", verdict.message
    text = verdict.message
    assert "数值正确" in text and "该模式需要 1 次（一次集合通信就够了）" in text, text
    assert not english_runs(text) and ".。" not in text, text


def test_a_package_error_inside_a_problem_reads_chinese(chinese):
    # A precheck quotes the simulator's own ValueError and then where the student's
    # function was defined, two fields in a row: both come out Chinese.
    from companion.pipeline.ops import Op, Schedule
    from companion.pipeline.simulate import simulate
    stuck = Schedule("stuck", 2, 1, ((Op("B", 0), Op("F", 0)), (Op("F", 0), Op("B", 0))))
    with pytest.raises(ValueError) as err:
        simulate(stuck)
    where = " (your my_1f1b, defined at Cell In[7], line 1)"
    made_in_a_rank = i18n.gettext(" (your {name}, defined at {where})").format(
        name="my_1f1b", where="Cell In[7], line 1")   # ranks speak the student's language
    for tail in ("", where, made_in_a_rank):
        text = reworded(f"at p=2, m=1 the simulator rejects your schedule: {err.value}{tail}")
        assert english_runs(text) == [], text
        assert ("my_1f1b" in text) == bool(tail), text


def test_a_prediction_refuses_a_word_in_chinese(chinese):
    from companion.i18n.errors import message_of
    for unit in ("", "ms"):
        with pytest.raises(ValueError) as err:
            predict.predict("How long?", unit=unit).lock("soon")
        assert english_runs(message_of(err.value)) == [], message_of(err.value)
