"""Generate the Chinese edition from the English notebooks (``make translations``).

    python -m companion.tools.i18n_build            # write everything below
    python -m companion.tools.i18n_build --check    # change nothing; exit 1 and name each cell
                                              # that drifted or each file that is stale

From ``notebooks/*.ipynb`` (the single source of truth for code) and the translators'
``translations/zh-CN/<stem>.json`` it writes, in one run:

* ``notebooks/zh-CN/<name>.ipynb``: the English notebook, each markdown cell replaced
  by its translation (links to ``../docs`` re-pointed one folder up), code cells and all
  metadata copied, ``metadata.companion.language = "zh-CN"``;
* ``notebooks/zh-TW/<name>.ipynb``: the same, the markdown converted to Taiwan usage by
  :mod:`companion.tools.zh_tw` (OpenCC's s2twp, pinned in requirements.txt, then the
  course's reviewed phrase table);
* ``companion/i18n/data/exercises.json``: the exercises' titles, tasks and hints in both
  (what ``Exercise`` shows when the language is Chinese);
* ``companion/i18n/data/messages.zh-TW.json``: the package's message tables in zh-TW;
* the zh-TW column of ``docs/glossary.md``, from its zh-CN column;
* ``README.zh-TW.md`` from ``README.zh-CN.md``.

A notebook whose translation drifted (:mod:`companion.tools.drift`) is not written; the
run lists every problem and exits 1. README.zh-CN.md describes the workflow.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
from pathlib import Path

import nbformat

from . import drift

from . import error_templates, glossary, zh_tw

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = ("zh-CN", "zh-TW")


@dataclasses.dataclass
class Paths:
    root: Path = ROOT

    @property
    def english(self) -> Path:
        return self.root / "notebooks"

    @property
    def translations(self) -> Path:
        return self.root / "translations" / "zh-CN"

    def edition(self, language: str) -> Path:
        return self.root / "notebooks" / language

    @property
    def exercises(self) -> Path:
        return self.root / "companion" / "i18n" / "data" / "exercises.json"

    @property
    def messages_tw(self) -> Path:
        return self.root / "companion" / "i18n" / "data" / "messages.zh-TW.json"

    @property
    def glossary(self) -> Path:
        return self.root / "docs" / "glossary.md"


def converter():
    """zh-CN -> zh-TW: OpenCC's s2twp with the course's Taiwan phrase table
    (:mod:`companion.tools.zh_tw`)."""
    return zh_tw.converter()


def exercise_hints(stem: str) -> list[tuple[str, int]]:
    """(exercise id, number of English hints) for the notebook ``stem`` (NN_...)."""
    if not stem[:2].isdigit():
        return []
    from ..learning import all_exercises
    return [(ex_id, len(ex.hints)) for ex_id, ex in all_exercises().items()
            if ex_id.startswith(stem[:2] + ".")]


def edition(english, translation: dict, language: str, convert):
    """The Chinese notebook: English cells, metadata and code; translated markdown."""
    nb = copy.deepcopy(english)
    zh = {c["id"]: c["zh"] for c in translation["cells"]}
    code = drift.code_strings(translation)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            text = drift.localise_markdown(zh[cell.id])
            cell.source = convert(text) if language == "zh-TW" else text
        elif cell.id in code:
            cell.source = drift.translated_code(cell.source, code[cell.id],
                                                convert if language == "zh-TW" else None)
    nb.metadata["companion"] = {"language": language,
                                "generated_from": f"notebooks/{translation['notebook']}",
                                "generated_by": "python -m companion.tools.i18n_build"}
    return nb


def _identity(text: str) -> str:
    return text


def plan(paths: Paths, convert, check: bool = False) -> tuple[dict[Path, str], list[str]]:
    """Every file the build writes, as text, and every drift problem found (with
    ``check``, also in the editions on disk: code that differs, cells out of step)."""
    outputs: dict[Path, str] = {}
    found: list[str] = []
    exercises = {language: {} for language in LANGUAGES}
    for path in sorted(paths.english.glob("*.ipynb")):
        english = nbformat.read(path, as_version=4)
        tpath = paths.translations / f"{path.stem}.json"
        translation = drift.load_translation(tpath)
        rel = tpath.relative_to(paths.root) if tpath.is_relative_to(paths.root) else tpath
        cell_problems = drift.translation_problems(english, translation, path.name, str(rel))
        found += drift.translation_problems(english, translation, path.name, str(rel),
                                            exercise_hints(path.stem))
        if translation is None:
            continue
        for ex_id, entry in translation.get("exercises", {}).items():
            exercises["zh-CN"][ex_id] = entry
            exercises["zh-TW"][ex_id] = {
                "title": convert(entry.get("title", "")), "task": convert(entry.get("task", "")),
                "hints": [convert(h) for h in entry.get("hints", [])]}
        if check:
            markdown = {c["id"]: drift.localise_markdown(c["zh"]) for c in translation["cells"]}
            for language in LANGUAGES:
                on_disk = paths.edition(language) / path.name
                expected = {c.id: c.source for c in edition(
                    english, translation, language, convert if language == "zh-TW"
                    else _identity).cells if c.cell_type == "code"} if not cell_problems else None
                found += drift.edition_problems(
                    english, nbformat.read(on_disk, as_version=4) if on_disk.exists() else None,
                    path.name, language, None if cell_problems or language == "zh-TW"
                    else markdown, expected)
        if cell_problems:
            continue   # a cell drifted: keep the last good edition; the report says why
        for language in LANGUAGES:
            nb = edition(english, translation, language,
                         convert if language == "zh-TW" else _identity)
            outputs[paths.edition(language) / path.name] = nbformat.writes(nb) + "\n"
    outputs[paths.exercises] = json.dumps(exercises, ensure_ascii=False, indent=1,
                                          sort_keys=True) + "\n"
    outputs[paths.messages_tw] = messages_module(convert)
    errors = paths.root / "companion" / "i18n" / "data" / "errors.zh-CN.json"
    if errors.exists():  # the error messages' catalogue: keys by error_templates --update
        outputs[errors.with_name("errors.zh-TW.json")] = error_templates.traditional(
            json.loads(errors.read_text(encoding="utf-8")), convert)
    readme = paths.root / "README.zh-CN.md"
    if readme.exists():
        outputs[paths.root / "README.zh-TW.md"] = traditional_readme(
            readme.read_text(encoding="utf-8"), convert)
    if paths.glossary.exists():
        outputs[paths.glossary] = glossary.fill_traditional(
            paths.glossary.read_text(encoding="utf-8"), convert)
    return outputs, found


def skeleton(path: Path) -> dict:
    """The translation file's format with every English markdown cell to translate."""
    if not Path(path).is_file():
        raise ValueError(f"--skeleton={path}: not a notebook file; pass e.g. "
                         "notebooks/00_launching_ranks.ipynb")
    nb = nbformat.read(path, as_version=4)
    cells = [{"id": c.id, "en_sha": drift.sha(c.source), "en": c.source, "zh": ""}
             for c in nb.cells if c.cell_type == "markdown"]
    exercises = {}
    if Path(path).stem[:2].isdigit():
        from ..learning import all_exercises
        exercises = {i: {"title": "", "task": "", "hints": [""] * len(ex.hints),
                         "en": {"title": ex.title, "task": ex.task, "hints": list(ex.hints)}}
                     for i, ex in all_exercises().items() if i.startswith(Path(path).stem[:2] + ".")}
    return {"notebook": Path(path).name, "cells": cells, "exercises": exercises}


def traditional_readme(text: str, convert) -> str:
    """README.zh-TW.md: README.zh-CN.md converted to Taiwan usage, naming itself
    Traditional, linking to the Simplified README, and pointing at the zh-TW edition
    (the translators' files stay translations/zh-CN: zh-TW is generated from them)."""
    text = convert(text)
    for a, b in (("課程配套 notebook（簡體中文版）", "課程配套 notebook（繁體中文版，臺灣用語）"),
                 ("[English](README.md) · 簡體中文 · [繁體中文](README.zh-TW.md)",
                  "[English](README.md) · [简体中文](README.zh-CN.md) · 繁體中文"),
                 ("make lab EDITION=zh-CN   #", "make lab EDITION=zh-TW   #"),
                 ("`notebooks/zh-CN/00_launching_ranks.ipynb`",
                  "`notebooks/zh-TW/00_launching_ranks.ipynb`"),
                 ("`notebooks/zh-CN/cheatsheet.ipynb`", "`notebooks/zh-TW/cheatsheet.ipynb`"),
                 ("voila notebooks/zh-CN/", "voila notebooks/zh-TW/"),
                 ('set_language("zh-CN")   # 或 "zh-TW"', 'set_language("zh-TW")   # 或 "zh-CN"')):
        text = text.replace(a, b)
    return ("<!-- GENERATED from README.zh-CN.md by make translations (companion.tools.zh_tw): "
            "edit that file. -->\n" + text)


def messages_module(convert) -> str:
    """The zh-TW tables (JSON): messages.py, notebook_strings.py and checker_strings.py
    converted to Taiwan usage."""
    from ..i18n.messages import ZH_CN
    from ..i18n.notebook_strings import NOTEBOOK_ZH_CN
    from ..i18n.checker_strings import CHECKER_ZH_CN
    tables = {"_generated": "by python -m companion.tools.i18n_build from messages.py, "
                            "notebook_strings.py and checker_strings.py "
                            "(companion.tools.zh_tw): do not edit",
              "messages": {k: convert(v) for k, v in ZH_CN.items()},
              "notebook": {k: convert(v) for k, v in NOTEBOOK_ZH_CN.items()},
              "checker": {k: convert(v) for k, v in CHECKER_ZH_CN.items()}}
    return json.dumps(tables, ensure_ascii=False, indent=1) + "\n"


def stale(outputs: dict[Path, str]) -> list[str]:
    """Files whose committed content differs from what the build writes. Notebooks are
    compared by cell ids, types and sources only, so metadata edits are not staleness."""
    found = []
    for path, text in outputs.items():
        if not path.exists():
            found.append(f"{path}: missing; run make translations")
            continue
        current = path.read_text(encoding="utf-8")
        if path.suffix == ".ipynb":
            same = _sources(current) == _sources(text)
        else:
            same = current == text
        if not same:
            found.append(f"{path}: out of date; run make translations")
    return found


def _sources(text: str):
    nb = json.loads(text)
    return ([(c["id"], c["cell_type"], "".join(c["source"])) for c in nb["cells"]],
            nb["metadata"].get("companion", {}).get("language"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m companion.tools.i18n_build",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a translation drifted or a file is stale")
    parser.add_argument("--skeleton", type=Path, metavar="NOTEBOOK",
                        help="print a translation file to fill in for NOTEBOOK (each cell "
                             "with its English text as \"en\": delete those when done)")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="repository root (default: this checkout)")
    args = parser.parse_args(argv)
    if args.skeleton is not None:
        print(json.dumps(skeleton(args.skeleton), ensure_ascii=False, indent=1))
        return 0
    if not (args.root / "notebooks").is_dir():
        raise ValueError(f"--root={args.root}: no notebooks/ folder there; pass the "
                         "repository's root")
    paths = Paths(args.root.resolve())
    outputs, found = plan(paths, converter(), check=args.check)
    if args.check:
        found += stale(outputs)
    else:
        for path, text in outputs.items():
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                print(f"wrote {path.relative_to(paths.root)}")
    for problem in found:
        print(f"DRIFT: {problem}", file=sys.stderr)
    if found:
        print(f"{len(found)} problem(s); see above.", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
