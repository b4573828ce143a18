"""The Chinese edition stays in step with the English one.

* messages: every ``_("...")`` of the package has zh-CN and zh-TW, with the same
  placeholders; English output is unchanged; Chinese is chosen by one call or by the
  notebook's folder;
* fonts: Chinese figure text renders with no "Glyph ... missing" warning;
* drift: each failure the issue lists is shown on an edited COPY of notebook 00 with a
  small translation file written here (the translators' real files are not used);
* the real repository: every notebook has an up-to-date translation and zh-CN / zh-TW
  editions with identical code (fails, naming the notebook and cell, until the
  translators' files land and ``make translations`` has run);
* the glossary's key terms are used where the English uses them;
* CI (marked ``ci``): zh-CN 00 and 03 run end to end, with no missing glyph.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import warnings
from pathlib import Path

import nbformat
import pytest

import companion
from companion import i18n
from companion.tools import i18n_build as build
from companion.tools import drift
from companion.tools import glossary
from companion.i18n.messages import ZH_CN
from companion.i18n.notebook_strings import NOTEBOOK_ZH_CN

_TW = json.loads(i18n.TRADITIONAL.read_text(encoding="utf-8"))
ZH_TW, NOTEBOOK_ZH_TW = _TW["messages"], _TW["notebook"]
from companion.tools.scan import literal_messages, placeholders

ROOT = Path(__file__).resolve().parent.parent
ENGLISH = sorted((ROOT / "notebooks").glob("*.ipynb"))
NB00 = ROOT / "notebooks" / "00_launching_ranks.ipynb"


@pytest.fixture
def language():
    """Restores English (and the environment) after a test that switches language."""
    yield i18n.set_language
    i18n._chosen = None
    os.environ.pop(i18n.ENV, None)


# ---- the message table ------------------------------------------------------------------
def test_every_message_has_both_translations_with_the_same_placeholders():
    used = literal_messages()
    missing = {m: where for m, where in used.items() if m not in ZH_CN or m not in ZH_TW}
    assert not missing, f"messages without a translation (add them to messages.py, then " \
                        f"make translations): {missing}"
    assert set(ZH_CN) == set(ZH_TW), "data/messages.zh-TW.json is stale: run make translations"
    unused = set(ZH_CN) - set(used)
    assert not unused, f"messages.py has entries no code uses: {unused}"
    for table in (ZH_CN, ZH_TW):
        for english, chinese in table.items():
            assert chinese.strip(), english
            assert placeholders(chinese) == placeholders(english), (english, chinese)


def _prediction_questions(path: Path, choices: bool = False) -> list[str]:
    """The literal questions and units (and, with ``choices``, choices) a notebook passes
    to prediction(...)."""
    import ast
    found = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code" or "prediction(" not in cell.source:
            continue
        code = "\n".join(line for line in cell.source.splitlines()
                         if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                    node.func, "id", None)) == "prediction":
                values = node.args[:1] + [k.value for k in node.keywords if k.arg == "unit"]
                if choices:
                    values += [e for k in node.keywords if k.arg == "choices"
                               and isinstance(k.value, (ast.List, ast.Tuple)) for e in k.value.elts]
                found += [v.value for v in values if isinstance(v, ast.Constant)]
    return found


def _code_strings(path: Path, calls=None) -> set[str]:
    """Every string literal of a notebook's code, or (with ``calls``) only the literal
    arguments of those calls: what a cell passes to ``gettext`` to show in the student's
    language while it keeps the English text as the key it looks values up by."""
    import ast
    found = set()
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                         for line in cell.source.splitlines())
        for node in ast.walk(ast.parse(code)):
            if calls is None and isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
            elif (calls is not None and isinstance(node, ast.Call)
                  and getattr(node.func, "id", getattr(node.func, "attr", None)) in calls):
                found |= {a.value for a in node.args[:1] if isinstance(a, ast.Constant)}
    return found


def test_every_literal_prediction_question_is_translated_and_still_exists():
    used = {q for p in ENGLISH for q in _prediction_questions(p, choices=True)}
    # display names a notebook shows through gettext(name): keys of NOTEBOOK_ZH_CN too
    used |= {s for p in ENGLISH for s in _code_strings(p)} & set(NOTEBOOK_ZH_CN)
    for path in ENGLISH:
        untranslated = _code_strings(path, {"gettext"}) - set(NOTEBOOK_ZH_CN) - set(ZH_CN)
        assert not untranslated, f"{path.name}: add to NOTEBOOK_ZH_CN: {untranslated}"
    gone = [k for k in NOTEBOOK_ZH_CN if k not in used]
    assert not gone, f"NOTEBOOK_ZH_CN keys no notebook uses any more: {gone}"
    same_in_chinese = {"%", "GB", "MB"}
    for path in ENGLISH:
        missing = [q for q in _prediction_questions(path)
                   if q not in NOTEBOOK_ZH_CN and q not in same_in_chinese]
        assert not missing, f"{path.name}: add to messages.NOTEBOOK_ZH_CN: {missing}"
    assert set(NOTEBOOK_ZH_CN) == set(NOTEBOOK_ZH_TW)
    for english, chinese in NOTEBOOK_ZH_CN.items():
        assert placeholders(chinese) == placeholders(english)


def test_the_traditional_table_is_opencc_s2twp_of_the_simplified_one():
    pytest.importorskip("opencc", reason="opencc is pinned in requirements.txt")
    convert = build.converter()
    assert ZH_TW == {k: convert(v) for k, v in ZH_CN.items()}
    assert NOTEBOOK_ZH_TW == {k: convert(v) for k, v in NOTEBOOK_ZH_CN.items()}
    assert convert("每个参数的激活重计算，参数服务器") == "每個參數的激活重計算，參數伺服器"


def test_english_is_the_default_and_unchanged(monkeypatch, tmp_path):
    monkeypatch.delenv(i18n.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert i18n.get_language() == "en"
    from companion.learning.verdict import not_implemented
    assert not_implemented().message.startswith("not implemented yet: replace the")


def test_set_language_refuses_an_unknown_language():
    with pytest.raises(ValueError, match="language="):
        companion.set_language("fr")


def test_the_chinese_folders_speak_chinese_without_a_call(monkeypatch, tmp_path):
    monkeypatch.delenv(i18n.ENV, raising=False)
    for language in ("zh-CN", "zh-TW"):
        (tmp_path / language).mkdir()
        monkeypatch.chdir(tmp_path / language)
        assert i18n.get_language() == language


def test_the_checker_hints_and_predictions_speak_chinese(language, capsys):
    language("zh-CN")
    from companion.learning import exercise
    from companion.learning.predict import predict
    from companion.learning.verdict import forbidden, not_implemented
    assert not_implemented().message.startswith("尚未实现")
    assert "本练习不允许" in forbidden([("dist.broadcast", "你要自己实现它")]).message
    guess = predict("多少？")
    guess.lock(2)
    guess.reveal(2.0)
    assert "你的预测是 2；测量值为 2（误差在 10% 以内" in capsys.readouterr().out
    ex = exercise("00.average")
    ex._hints_shown = 0
    ex.hint()
    assert capsys.readouterr().out.startswith("提示 1/")
    assert repr(ex).startswith("练习 00.average（")
    language("zh-TW")
    assert not_implemented().message.startswith("尚未實作")   # Taiwan: 實作 (implement)


def test_exercise_text_comes_from_the_translation_table(language, monkeypatch, capsys):
    table = {"zh-CN": {"00.average": {"title": "求平均", "task": "任务文本",
                                      "hints": ["第一条", "第二条", "第三条"][:len(
                                          companion.learning.exercise("00.average").hints)]}}}
    monkeypatch.setattr(i18n, "_exercise_table", lambda: table)
    ex = companion.learning.exercise("00.average")
    assert "求平均" not in ex._repr_markdown_()          # English until asked
    language("zh-CN")
    card = ex._repr_markdown_()
    assert "**练习 00.average（核心，实现，2 分）：求平均**" in card and "任务文本" in card
    ex._hints_shown = 0
    ex.hint()
    assert capsys.readouterr().out == "提示 1/%d：第一条\n" % len(ex.hints)


def test_a_widget_speaks_chinese(language):
    language("zh-CN")
    from companion.widgets.prediction import prediction
    box = prediction("多少字节？", unit="GB")
    assert box._button.description == "锁定"
    from companion.widgets.zero import zero_memory
    calc = zero_memory()
    assert calc.gpus.description == "GPU 数（N）" and "每个参数" in calc.text.value


# ---- fonts --------------------------------------------------------------------------------
def test_chinese_figure_text_has_no_missing_glyph(language):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    language("zh-CN")
    companion.plotting.use_style()
    text = "".join([*ZH_CN.values(), *ZH_TW.values(), *NOTEBOOK_ZH_CN.values(),
                    *NOTEBOOK_ZH_TW.values()]) + "数据并行 張量並行 流水線"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig, ax = plt.subplots()
        for i in range(0, len(text), 60):
            ax.set_title(text[i:i + 60].replace("$", ""))
            ax.set_xlabel("每个 GPU 上的模型状态（GB）")
            fig.canvas.draw()
        plt.close(fig)
    glyphs = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    assert not glyphs, glyphs[:3]


def test_the_font_covers_every_message_and_ships_its_licence():
    from fontTools.ttLib import TTFont
    font = companion.plotting.CJK_FONT
    assert (font.parent / "OFL.txt").read_text().startswith("Copyright")
    cmap = TTFont(font).getBestCmap()
    text = "".join([*ZH_CN.values(), *ZH_TW.values(), *NOTEBOOK_ZH_CN.values(),
                    *NOTEBOOK_ZH_TW.values()])
    # what notebook code prints and draws in the Chinese editions (zh-CN; zh-TW's forms are
    # in the TC subset, which tests/test_zh_tw.py holds)
    text += "".join(zh for path in sorted((ROOT / "translations" / "zh-CN").glob("*.json"))
                    for pairs in drift.code_strings(drift.load_translation(path)).values()
                    for _, zh in pairs)
    missing = sorted({c for c in text if ord(c) > 0x2E7F and ord(c) not in cmap})
    assert not missing, f"re-run python -m companion.tools.fontsubset: {missing}"


# ---- drift, shown on copies -------------------------------------------------------------
def synthetic_translation(english_path: Path) -> dict:
    """A stand-in for the translators' file: every markdown cell 'translated'."""
    english = nbformat.read(english_path, as_version=4)
    cells = [{"id": c.id, "en_sha": drift.sha(c.source),
              "zh": f"（中文译文，单元 {c.id}）\n\n" + c.source}
             for c in english.cells if c.cell_type == "markdown"]
    exercises = {ex_id: {"title": f"练习 {ex_id}", "task": "任务",
                         "hints": [f"提示 {k}" for k in range(n)]}
                 for ex_id, n in build.exercise_hints(english_path.stem)}
    return {"notebook": english_path.name, "cells": cells, "exercises": exercises}


@pytest.fixture
def repo(tmp_path):
    """A scratch repository: notebook 00 and its translation file."""
    (tmp_path / "notebooks").mkdir()
    shutil.copy(NB00, tmp_path / "notebooks" / NB00.name)
    tdir = tmp_path / "translations" / "zh-CN"
    tdir.mkdir(parents=True)
    (tdir / "00_launching_ranks.json").write_text(
        json.dumps(synthetic_translation(NB00), ensure_ascii=False, indent=1))
    return tmp_path


def _tw(text):   # a converter for the tests that need no OpenCC
    return text.replace("译", "譯")


def _check(root: Path) -> list[str]:
    outputs, found = build.plan(build.Paths(root), _tw, check=True)
    return found + build.stale(outputs)


def _write(root: Path) -> None:
    outputs, found = build.plan(build.Paths(root), _tw)
    assert not found, found
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_build_writes_editions_with_identical_code(repo):
    _write(repo)
    assert _check(repo) == []
    english = nbformat.read(repo / "notebooks" / NB00.name, as_version=4)
    for language in ("zh-CN", "zh-TW"):
        nb = nbformat.read(repo / "notebooks" / language / NB00.name, as_version=4)
        assert [c.id for c in nb.cells] == [c.id for c in english.cells]
        assert all(a.source == b.source for a, b in zip(nb.cells, english.cells)
                   if a.cell_type == "code")
        assert nb.metadata["companion"]["language"] == language
    tw = nbformat.read(repo / "notebooks" / "zh-TW" / NB00.name, as_version=4)
    title = next(c for c in tw.cells if c.cell_type == "markdown")
    assert "中文譯文" in title.source


def _translate_a_print(repo: Path, en: str, zh: str) -> str:
    """Give the first code cell that contains ``en`` a translated fragment; its id."""
    english = nbformat.read(repo / "notebooks" / NB00.name, as_version=4)
    cid = next(c.id for c in english.cells if c.cell_type == "code" and en in c.source)
    path = repo / "translations" / "zh-CN" / "00_launching_ranks.json"
    data = json.loads(path.read_text())
    data["code"] = {cid: [[en, zh]]}
    path.write_text(json.dumps(data, ensure_ascii=False))
    return cid


def test_a_code_cell_prints_its_translated_strings_and_nothing_else_changes(repo):
    cid = _translate_a_print(repo, "world size {info.world_size}, backend",
                             "进程总数 {info.world_size}，后端译")
    _write(repo)
    assert _check(repo) == []
    english = {c.id: c.source for c in nbformat.read(repo / "notebooks" / NB00.name, as_version=4).cells}
    for language, zh in (("zh-CN", "进程总数 {info.world_size}，后端译"),
                         ("zh-TW", "进程总数 {info.world_size}，后端譯")):
        nb = nbformat.read(repo / "notebooks" / language / NB00.name, as_version=4)
        for cell in nb.cells:
            if cell.id == cid:
                assert cell.source == english[cid].replace("world size {info.world_size}, backend", zh)
            elif cell.cell_type == "code":
                assert cell.source == english[cell.id]


def test_drift_a_translated_fragment_gone_from_the_english_code_is_named(repo):
    cid = _translate_a_print(repo, "world size {info.world_size}, backend", "进程总数 {info.world_size}，后端")
    _write(repo)
    _edit_english(repo, lambda nb: [setattr(c, "source", c.source.replace("world size {", "ranks {"))
                                    for c in nb.cells if c.id == cid])
    assert any(f"cell {cid}: the English code no longer contains" in p for p in _check(repo))


def test_drift_a_fragment_that_fills_in_other_fields_is_named(repo):
    cid = _translate_a_print(repo, "world size {info.world_size}, backend", "进程总数 {world}，后端")
    assert any(f"cell {cid}: the translation of" in p and "{fields}" in p for p in _check(repo))


# What a translated fragment may sit in: text the student reads, never a string the code
# compares, looks up or passes on as a name.
SHOWN_BY = {"print", "set_title", "set_xlabel", "set_ylabel", "suptitle", "text", "annotate"}
SHOWN_AS = {"title", "xlabel", "ylabel", "label"}
# Also the message of an exception the notebook's own code raises (notebook 00's failing
# rank: ``raise ValueError("rank 1 found a NaN in its gradients")``), which the student
# reads in the LaunchError and its traceback. Translated in the code rather than through
# gettext so the English cell stays the two-line failure it teaches, with no i18n call in
# the lesson's code; the package's catalogue cannot know a notebook's own sentence. Safe
# only while no self-check reads the text, so every string an assert of the notebook
# compares that such a message holds must survive in its translation ("NaN" does).
RAISED = re.compile(r"\w*(Error|Exception)")


def _shown_strings(code: str) -> list[tuple[int, int]]:
    """(start, end) offsets in ``code`` of every string literal a student sees printed or
    drawn: the arguments of print and of matplotlib's text calls, and title=/label= etc."""
    import ast
    lines = code.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    spans = []

    def at(line: int, col: int) -> int:   # ast's columns count UTF-8 bytes, not characters
        return starts[line - 1] + len(lines[line - 1].encode("utf-8")[:col].decode("utf-8", "ignore"))

    def add(node):
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Constant, ast.JoinedStr)) and (
                    isinstance(sub, ast.JoinedStr) or isinstance(sub.value, str)):
                spans.append((at(sub.lineno, sub.col_offset), at(sub.end_lineno, sub.end_col_offset)))
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Raise):
            for arg in _raised_messages(node):
                add(arg)
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            if name in SHOWN_BY:
                for arg in node.args:
                    add(arg)
            for kw in node.keywords:
                if kw.arg in SHOWN_AS:
                    add(kw.value)
    return spans


def _raised_messages(node) -> list:
    """The literal arguments of ``raise SomeError("...")``."""
    import ast
    call = node.exc
    if not isinstance(call, ast.Call):
        return []
    name = getattr(call.func, "attr", getattr(call.func, "id", None)) or ""
    return [a for a in call.args if isinstance(a, (ast.Constant, ast.JoinedStr))] \
        if RAISED.fullmatch(name) else []


def _raised_texts(code: str) -> list[str]:
    import ast
    return [ast.unparse(arg) for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Raise)
            for arg in _raised_messages(node)]


def _compared_strings(sources) -> set[str]:
    """Every string literal inside an assert of a notebook's code: what its self-checks read."""
    import ast
    found = set()
    for code in sources:
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Assert):
                found |= {c.value for c in ast.walk(node.test)
                          if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return found


def _raised_text_problems(code: str, translated: str, compared: set[str]) -> list[str]:
    """The strings a self-check compares that a raised message held in English and lost in
    its translation."""
    return [f"{text!r} of {english}" for english, chinese in
            zip(_raised_texts(code), _raised_texts(translated))
            for text in sorted(compared) if text in english and text not in chinese]


def test_a_raised_message_may_be_translated_only_keeping_what_a_self_check_reads():
    code = 'def f():\n    raise ValueError("rank 1 found a NaN in its gradients")\n'
    at = code.index("rank 1")
    assert any(a <= at < b for a, b in _shown_strings(code))
    assert not _shown_strings('raise KeyError\nx = "rank 1 found"\n')   # not a message
    keeps = code.replace("rank 1 found a NaN in its gradients", "rank 1 在它的梯度中发现了 NaN")
    drops = code.replace("rank 1 found a NaN in its gradients", "rank 1 的梯度中出现了非数")
    compared = _compared_strings(['assert "NaN" in str(caught), "the failing rank is named"'])
    assert _raised_text_problems(code, keeps, compared) == []
    assert _raised_text_problems(code, drops, compared) == [
        "'NaN' of 'rank 1 found a NaN in its gradients'"]


def test_every_translated_code_fragment_is_text_the_student_reads():
    import ast
    for path in ENGLISH:
        translation = drift.load_translation(ROOT / "translations" / "zh-CN" / f"{path.stem}.json")
        codes = {c.id: "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                                 for line in c.source.split("\n"))
                 for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"}
        compared = _compared_strings(codes.values())
        for cid, pairs in drift.code_strings(translation).items():
            code = codes[cid]
            spans = _shown_strings(code)
            for en, _ in pairs:
                at, hits = 0, []
                while (i := code.find(en, at)) >= 0:
                    hits.append(i)
                    at = i + 1
                outside = [i for i in hits if not any(a <= i and i + len(en) <= b for a, b in spans)]
                assert not outside, (f"{path.name} cell {cid}: {en!r} also occurs outside the "
                                     "strings a student reads (print, titles, labels); "
                                     "translate a longer, unique fragment")
            ast.parse(drift.translated_code(code, pairs))   # still Python
            lost = _raised_text_problems(code, drift.translated_code(code, pairs), compared)
            assert not lost, f"{path.name} cell {cid}: a self-check reads {lost}; keep it"


def _edit_english(repo: Path, change) -> None:
    path = repo / "notebooks" / NB00.name
    nb = nbformat.read(path, as_version=4)
    change(nb)
    nbformat.write(nb, path)


def test_drift_a_changed_english_cell_is_named(repo):
    _write(repo)
    target = {}

    def change(nb):
        cell = next(c for c in nb.cells if c.cell_type == "markdown")
        cell.source += "\nOne more English sentence."
        target["id"] = cell.id
    _edit_english(repo, change)
    found = _check(repo)
    assert any(f"cell {target['id']}: the English source changed" in p for p in found), found


def test_drift_metadata_only_changes_are_not_drift(repo):
    _write(repo)

    def change(nb):
        for cell in nb.cells:
            cell.metadata["slideshow"] = {"slide_type": "slide"}
    _edit_english(repo, change)
    assert _check(repo) == []


def test_drift_an_added_and_a_removed_english_cell_are_named(repo):
    _write(repo)
    removed = {}

    def change(nb):
        new = nbformat.v4.new_markdown_cell("A new English paragraph.")
        new.id = "newcell1"
        nb.cells.insert(2, new)
        gone = [c for c in nb.cells if c.cell_type == "markdown"][-1]
        removed["id"] = gone.id
        nb.cells.remove(gone)
    _edit_english(repo, change)
    found = _check(repo)
    assert any("cell newcell1 (markdown cell" in p and "added in English" in p for p in found)
    assert any(f"cell {removed['id']}: translated" in p and "removed" in p for p in found)
    assert any("(zh-CN): cells differ" in p and "newcell1" in p for p in found), found


def test_drift_code_that_differs_in_the_chinese_notebook_is_named(repo):
    _write(repo)
    path = repo / "notebooks" / "zh-CN" / NB00.name
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code")
    cell.source += "\nprint('edited in the Chinese copy')"
    nbformat.write(nb, path)
    found = _check(repo)
    assert any(f"cell {cell.id}: code differs between English and zh-CN" in p
               for p in found), found


def test_drift_a_notebook_without_translation_is_named(repo):
    _write(repo)
    shutil.copy(NB00, repo / "notebooks" / "99_new_topic.ipynb")
    found = _check(repo)
    assert any(p.startswith("99_new_topic.ipynb: no translation file") for p in found), found


def test_drift_an_untranslated_exercise_is_named(repo):
    path = repo / "translations" / "zh-CN" / "00_launching_ranks.json"
    data = json.loads(path.read_text())
    data["exercises"].pop("00.average")
    path.write_text(json.dumps(data, ensure_ascii=False))
    assert any("exercise 00.average has no translated" in p for p in _check(repo))


# ---- the real repository ----------------------------------------------------------------
def _real(name):
    path = ROOT / "notebooks" / name
    english = nbformat.read(path, as_version=4)
    tpath = ROOT / "translations" / "zh-CN" / f"{path.stem}.json"
    translation = drift.load_translation(tpath)
    editions = {}
    for language in ("zh-CN", "zh-TW"):
        p = ROOT / "notebooks" / language / name
        editions[language] = nbformat.read(p, as_version=4) if p.exists() else None
    expected = None
    if translation is not None and not drift.translation_problems(
            english, translation, name, "x"):
        zh = {c["id"]: drift.localise_markdown(c["zh"]) for c in translation["cells"]}
        expected = {"zh-CN": zh}
    return drift.problems(english, translation, editions, name,
                          f"translations/zh-CN/{path.stem}.json",
                          build.exercise_hints(path.stem), expected), editions


@pytest.mark.parametrize("path", ENGLISH, ids=lambda p: p.stem)
def test_every_notebook_has_an_up_to_date_chinese_edition(path):
    found, _ = _real(path.name)
    assert not found, "\n".join(found)


def test_the_generated_files_are_up_to_date():
    pytest.importorskip("opencc", reason="opencc is pinned in requirements.txt")
    outputs, _ = build.plan(build.Paths(ROOT), build.converter())
    assert not build.stale(outputs), build.stale(outputs)


# ---- the glossary -----------------------------------------------------------------------
# English phrase in the English notebook -> the glossary row whose zh-CN term must then
# appear in the zh-CN notebook (once per notebook: a translator may shorten later uses).
KEY_TERMS = {r"\bdata parallelism\b": "DP", r"\btensor parallelism\b": "TP",
             r"\bpipeline parallelism\b": "PP", r"\bbubble": "bubble",
             r"\bparameter server\b": "parameter server", r"\ball-reduce\b": "all-reduce",
             r"\breduce-scatter\b": "reduce-scatter", r"\ball-gather\b": "all-gather",
             r"\ball-to-all\b": "all-to-all", r"\bmicro-batch": "micro-batch",
             r"\bactivation recomputation\b": "activation recomputation",
             r"\bDelayed Gradient Averaging\b": "DGA", r"\bmixture of experts\b": "MoE",
             r"\bexpert parallelism\b": "EP", r"\bcontext parallelism\b": "CP",
             r"\bsequence parallelism\b": "SP (Megatron-SP)",
             r"\bfat-tree\b": "fat-tree", r"\bmixed precision\b": "mixed precision",
             r"\bworld size\b": "world size", r"\bprocess group\b": "process group",
             r"\brecursive doubling\b": "recursive doubling", r"\bring all-reduce\b": "ring all-reduce",
             r"\bhierarchical all-reduce\b": "hierarchical all-reduce", r"\bflat ring\b": "flat ring",
             r"\boptimizer state": "optimizer state", r"\bgradient accumulation\b": "gradient accumulation",
             r"\berror feedback\b": "error feedback", r"\bcritical batch size\b": "critical batch size",
             r"\broofline\b": "roofline", r"\barithmetic intensity\b": "arithmetic intensity",
             r"\bring attention\b": "ring attention", r"\btorus\b": "torus"}

# One concept, one Simplified-Chinese name, everywhere a zh-CN student reads: concept ->
# (the chosen term, the renderings that must not occur). A pattern is a regular
# expression; an English variant is searched for in running text only (see _running_text),
# so the English name in parentheses after a term's first use is allowed.
ONE_TERM = {
    "all-to-all": ("全对全", ["全交换", "all-to-all"]),
    "all-reduce / reduce": ("全规约 / 规约", ["归约"]),
    "reduce-scatter": ("规约散射", ["规约-散射"]),
    "recursive doubling": ("递归倍增", ["递归加倍"]),
    "recursive halving": ("递归减半", ["递归折半"]),
    "flat ring": ("扁平环", ["平坦环"]),
    "tree all-reduce": ("二项树全规约", ["树形全规约", "二叉树全规约"]),
    "ring all-reduce": ("环形全规约", [r"(?<![回形])环全规约"]),   # 回环全规约: loopback
    "aggregate NIC bandwidth": ("聚合网卡带宽", ["网卡聚合带宽"]),
    "world size": ("进程总数", ["世界大小", "世界规模"]),
    "the default group (world)": ("包含全部 rank 的默认组", ["整个世界"]),
    "memory (GPU or CPU)": ("内存", ["显存"]),
    "activations": ("激活值", [r"激活(?!值|内存|量|重计算|字节|检查点)"]),
    "batch size": ("批大小", [r"(?<!微)批次大小", "批量大小"]),
    "per device": ("每个设备", ["每设备"]),
    "collective": ("集合通信", ["集合操作"]),
    "widget": ("控件", ["小部件", "小组件"]),
    "hang": ("卡住", ["挂起"]),
    "charge (the cost model)": ("计入 / 计入代价", ["计费"]),
    "commit to a number": ("先写下你预测的数字", ["先认定一个数字", "先给出一个数字"]),
    "a tempting mistake": ("一个容易犯的错误", ["诱人的错误"]),
    "for honesty": ("如实起见", ["以示诚实"]),
    "behind a link / switch": ("经过……链路", [r"链路(?:背后|后面)", r"(?:胖树|交换机)(?:之后|后面)"]),
    "training sweep": ("训练扫描", ["扫描训练"]),
    # The cheat-sheet defines the notation once: "L19 p.58" is page 58 of lecture 19's PDF.
    "page reference": ("p.N", [r"(?<!PDF 的)第 ?\d+(?:[-–]\d+)? ?页"]),
    # {ranks} reads "4 个真实 rank": a Latin word, so a space before the Chinese after it
    "the ranks a check ran on": ("{ranks} 上", [r"\{ranks\}上"]),
}


def _zh_cn_texts():
    """(where, text) for every zh-CN text a student or reader meets, the files read as they
    are (not the generated editions): translations, message tables, glossary, README."""
    for path in sorted((ROOT / "translations" / "zh-CN").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for cell in data["cells"]:
            yield f"{path.name} cell {cell['id']}", cell["zh"]
        for ex_id, ex in data.get("exercises", {}).items():
            for field in ("title", "task"):
                yield f"{path.name} exercise {ex_id} {field}", ex[field]
            for k, hint in enumerate(ex["hints"]):
                yield f"{path.name} exercise {ex_id} hint {k + 1}", hint
    tables = [("companion/i18n/messages.py", ZH_CN),
              ("companion/i18n/notebook_strings.py", NOTEBOOK_ZH_CN)]
    import importlib.util
    if importlib.util.find_spec("companion.i18n.checker_strings"):
        from companion.i18n.checker_strings import CHECKER_ZH_CN
        tables.append(("companion/i18n/checker_strings.py", CHECKER_ZH_CN))
    for name, table in tables:
        for english, chinese in table.items():
            yield f"{name} [{english[:40]!r}]", chinese


def _reference_texts():
    """The glossary's zh-CN column and README.zh-CN.md, line by line."""
    for row in glossary.terms((ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")):
        yield f"docs/glossary.md row {row['Term']!r}", row["zh-CN"]
    for n, line in enumerate((ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
                             .splitlines(), 1):
        yield f"README.zh-CN.md line {n}", line


_NOT_RUNNING_TEXT = re.compile(r"```.*?```|`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]*\$|\]\([^)]*\)"
                               r"|https?://\S+|（[^（）\u3400-\u9fff]*）|\([^()\u3400-\u9fff]*\)",
                               re.S)


def _running_text(text: str) -> str:
    """``text`` without code, math, link targets and glosses (a parenthesis with no Chinese
    in it, such as the English name after a term's first use)."""
    return _NOT_RUNNING_TEXT.sub(" ", text)


def test_zh_cn_uses_one_term_per_concept():
    hits = []
    for where, text in [*_zh_cn_texts(), *_reference_texts()]:
        running = _running_text(text)
        for concept, (chosen, variants) in ONE_TERM.items():
            for variant in variants:
                # only a bare English name needs the glosses removed; a Chinese variant is
                # wrong in a parenthesis too
                searched = running if variant.isascii() else text
                for m in re.finditer(variant, searched):
                    context = searched[max(0, m.start() - 12):m.end() + 12].replace("\n", " ")
                    hits.append(f"{where}: {concept} is {chosen}, not {m.group()!r} (…{context}…)")
    assert not hits, "\n".join(hits)


def _without_glosses(text: str) -> str:
    return re.sub(r"（[^（）]*）", "", text).replace("“", "").replace("”", "")


def test_every_glossary_term_occurs_in_the_zh_cn_edition():
    """The glossary lists the terms the course uses, no others: each '/'-separated
    alternative of a zh-CN cell occurs in a translation or a message (a qualifier in
    parentheses, such as the English or the paper's name, may be left out)."""
    corpus = "\n".join(text for _, text in _zh_cn_texts())
    bare = _without_glosses(corpus)
    absent = []
    for row in glossary.terms((ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")):
        for alternative in (a.strip() for a in row["zh-CN"].split("/")):
            if alternative not in corpus and _without_glosses(alternative).strip() not in bare:
                absent.append(f"{row['Term']}: {alternative}")
    assert not absent, f"glossary terms no zh-CN text uses: {absent}"


def test_the_glossary_has_both_chinese_columns_filled():
    rows = glossary.terms((ROOT / "docs" / "glossary.md").read_text())
    assert rows and all(r["zh-CN"] and r["zh-TW"] for r in rows), \
        [r["Term"] for r in rows if not (r["zh-CN"] and r["zh-TW"])]
    assert set(KEY_TERMS.values()) <= {r["Term"] for r in rows}


def _markdown(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


@pytest.mark.parametrize("path", ENGLISH, ids=lambda p: p.stem)
def test_the_glossary_terms_are_used(path):
    chinese = ROOT / "notebooks" / "zh-CN" / path.name
    if not chinese.exists():
        pytest.skip("no zh-CN edition yet (the drift test above fails for it)")
    rows = {r["Term"]: r["zh-CN"] for r in glossary.terms(
        (ROOT / "docs" / "glossary.md").read_text())}
    english, zh = _markdown(path), _markdown(chinese)
    missing = [f"{pattern.strip(chr(92) + 'b')} -> {rows[term]}"
               for pattern, term in KEY_TERMS.items()
               if re.search(pattern, english, re.I)
               and not any(alt.strip() in zh or _without_glosses(alt).strip() in zh
                           for alt in rows[term].split("/"))]
    assert not missing, f"{path.name}: zh-CN lacks the glossary's terms: {missing}"


# ---- CI: representative Chinese notebooks run end to end ----------------------------------
@pytest.mark.ci   # about a minute each on 2 cores; the rest are proven code-identical above
@pytest.mark.parametrize("name", ["00_launching_ranks.ipynb", "03_zero_memory.ipynb"])
def test_chinese_notebook_runs_without_missing_glyphs(name):
    from nbclient import NotebookClient
    path = ROOT / "notebooks" / "zh-CN" / name
    if not path.exists():
        pytest.fail(f"notebooks/zh-CN/{name} is missing: run make translations")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    shown = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                    for o in c.outputs)
    assert "missing from font" not in shown
    assert "通过" in shown   # an exercise check spoke Chinese ("... 上通过：数值与参考...")


def test_no_message_draws_hanzi_inside_mathtext():
    # matplotlib draws a label with $...$ through mathtext, whose fonts have no CJK
    # glyphs: every hanzi of such a label becomes a box and a warning.
    from companion.i18n.checker_strings import CHECKER_ZH_CN
    mixed = [k for table in (ZH_CN, NOTEBOOK_ZH_CN, CHECKER_ZH_CN) for k, v in table.items()
             if re.search(r"\$[^$]+\$", v) and re.search(r"[\u4e00-\u9fff]", v)
             and not re.search(r"`[^`]*\$", v)]
    assert not mixed, mixed


def test_bold_hanzi_draw_without_a_font_warning(language, caplog):
    import matplotlib.pyplot as plt
    language("zh-CN")
    companion.plotting.use_style()
    fig, ax = plt.subplots()
    ax.set_title("粗体标题", fontweight="bold")
    with caplog.at_level("WARNING", logger="matplotlib.font_manager"):
        fig.canvas.draw()
    plt.close(fig)
    assert not [r for r in caplog.records if "Failed to find font weight" in r.getMessage()]
