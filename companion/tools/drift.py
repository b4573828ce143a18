"""Drift between the English notebooks and the Chinese edition.

The English notebook is the single source of truth. A translation file
``translations/zh-CN/<stem>.json`` keys each translated markdown cell by the English
cell's id and records ``en_sha``, the first 12 hex digits of the SHA-256 of the English
source it translates (see ``load_translation`` for the format). Only the
cells' *sources* are compared, so metadata-only edits (slide types, tags) never drift.
:func:`problems` lists, each naming the notebook and the cell id:

* an English markdown cell whose source changed since it was translated;
* a cell added to or removed from the English notebook and not from the translation;
* a Chinese notebook whose cells (ids, order, types) or code differ from the English
  one, or whose markdown is not its translation;
* a notebook without a translation file; an exercise without translated strings.

``python -m companion.tools.i18n_build --check`` and tests/test_translations.py run it.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path


LINK = re.compile(r"(\]\(|src=\"|href=\")\.\./")


def sha(text: str) -> str:
    """The ``en_sha`` of an English cell source."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def localise_markdown(text: str) -> str:
    """Markdown as it reads one folder deeper (notebooks/zh-CN/): ``../docs`` links gain a
    ``../``; links to sibling notebooks stay, since the edition has the same files."""
    return LINK.sub(lambda m: m.group(1) + "../../", text)


def load_translation(path: Path) -> dict | None:
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def _cells(nb) -> list[dict]:
    return nb["cells"] if isinstance(nb, dict) else nb.cells


def _source(cell) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


_FIELD = re.compile(r"\{[^{}]*\}")


def code_strings(translation: dict | None) -> dict[str, list[tuple[str, str]]]:
    """The translated string fragments of each code cell: ``{cell id: [(english,
    chinese), ...]}``. The code stays the English notebook's; only what it prints for the
    student is replaced, fragment by fragment, in the Chinese editions."""
    return {cid: [(en, zh) for en, zh in pairs]
            for cid, pairs in ((translation or {}).get("code") or {}).items()}


def translated_code(source: str, pairs, convert=None) -> str:
    """``source`` with each English fragment replaced by its translation (converted by
    ``convert``, for zh-TW)."""
    for en, zh in pairs:
        source = source.replace(en, convert(zh) if convert else zh)
    return source


def code_problems(english, translation: dict | None, name: str, translation_path: str) -> list[str]:
    """Code fragments whose English is gone from its cell, or whose translation changes the
    ``{fields}`` an f-string or ``format`` fills in."""
    found: list[str] = []
    sources = {c["id"]: _source(c) for c in _cells(english) if c["cell_type"] == "code"}
    for cid, pairs in code_strings(translation).items():
        if cid not in sources:
            found.append(f"{name} cell {cid}: code strings translated in {translation_path} "
                         f"but it is no code cell of the English notebook; delete its entry")
            continue
        for en, zh in pairs:
            if en not in sources[cid]:
                found.append(f"{name} cell {cid}: the English code no longer contains {en!r}; "
                             f"update or delete that pair in {translation_path}")
            elif sorted(_FIELD.findall(en)) != sorted(_FIELD.findall(zh)):
                found.append(f"{name} cell {cid}: the translation of {en!r} fills in other "
                             f"{{fields}} than the English; keep them as they are")
    return found


def translation_problems(english, translation: dict | None, name: str,
                         translation_path: str, exercise_ids=()) -> list[str]:
    """What is out of step between an English notebook and its translation file."""
    if translation is None:
        return [f"{name}: no translation file {translation_path} (every notebook needs "
                f"one: python -m companion.tools.i18n_build --skeleton notebooks/{name} > it, "
                f"then translate; see README.zh-CN.md)"]
    found: list[str] = []
    markdown = [(c["id"], _source(c)) for c in _cells(english) if c["cell_type"] == "markdown"]
    english_ids = {cid for cid, _ in markdown}
    translated = {c.get("id"): c for c in translation.get("cells", [])}
    code_ids = {c["id"] for c in _cells(english) if c["cell_type"] != "markdown"}
    for index, (cid, source) in enumerate(markdown):
        entry = translated.get(cid)
        if entry is None:
            found.append(f"{name} cell {cid} (markdown cell {index}): added in English, "
                         f"not in {translation_path}; translate it")
        elif entry.get("en_sha") != sha(source):
            found.append(f"{name} cell {cid}: the English source changed since it was "
                         f"translated (en_sha {entry.get('en_sha')}, now {sha(source)}); "
                         f"update its zh and en_sha in {translation_path}")
        elif not str(entry.get("zh", "")).strip():
            found.append(f"{name} cell {cid}: empty translation in {translation_path}")
    for cid in translated:
        if cid not in english_ids:
            why = "is a code cell now" if cid in code_ids else "was removed"
            found.append(f"{name} cell {cid}: translated in {translation_path} but {why} in "
                         f"the English notebook; delete its entry")
    order = [c.get("id") for c in translation.get("cells", []) if c.get("id") in english_ids]
    if not found and order != [cid for cid, _ in markdown]:
        found.append(f"{name}: {translation_path} lists the cells in another order than "
                     f"the English notebook")
    found += code_problems(english, translation, name, translation_path)
    exercises = translation.get("exercises", {})
    for ex_id, english_hints in exercise_ids:
        entry = exercises.get(ex_id)
        if not entry or not all(str(entry.get(k, "")).strip() for k in ("title", "task")):
            found.append(f"{name}: exercise {ex_id} has no translated title and task in "
                         f"{translation_path}")
        elif len(entry.get("hints", [])) != english_hints:
            found.append(f"{name}: exercise {ex_id} has {len(entry.get('hints', []))} "
                         f"translated hints, English has {english_hints}")
    return found


def edition_problems(english, chinese, name: str, language: str, markdown_of=None,
                     code_of=None) -> list[str]:
    """What differs between an English notebook and its generated Chinese one: cell ids,
    order and types, any code cell other than its translated strings (``code_of``: id ->
    the expected code, or None where it is not compared), and (given ``markdown_of``: id ->
    expected text) markdown that is not the translation."""
    code_of = code_of or {}
    if chinese is None:
        return [f"{name}: notebooks/{language}/{name} is missing; run make translations"]
    found: list[str] = []
    en_cells, zh_cells = _cells(english), _cells(chinese)
    en_ids = [(c["id"], c["cell_type"]) for c in en_cells]
    zh_ids = [(c["id"], c["cell_type"]) for c in zh_cells]
    if en_ids != zh_ids:
        added = [cid for cid, _ in en_ids if cid not in dict(zh_ids)]
        removed = [cid for cid, _ in zh_ids if cid not in dict(en_ids)]
        found.append(f"{name} ({language}): cells differ from the English notebook: "
                     f"added in English {added}, removed in English {removed}"
                     + ("" if added or removed else ", or their order or types changed")
                     + "; run make translations")
    zh_by_id = {c["id"]: c for c in zh_cells}
    for cell in en_cells:
        other = zh_by_id.get(cell["id"])
        if other is None or other["cell_type"] != cell["cell_type"]:
            continue
        expected = code_of.get(cell["id"], _source(cell))
        if cell["cell_type"] == "code" and expected is not None and _source(other) != expected:
            found.append(f"{name} ({language}) cell {cell['id']}: code differs between "
                         f"English and {language}; code is edited in the English notebook "
                         "only (run make translations)")
        elif (cell["cell_type"] == "markdown" and markdown_of is not None
              and cell["id"] in markdown_of and _source(other) != markdown_of[cell["id"]]):
            found.append(f"{name} ({language}) cell {cell['id']}: markdown is not its "
                         f"translation (stale; run make translations)")
    return found


def problems(english, translation, chinese_editions: dict, name: str,
             translation_path: str, exercise_ids=(), expected_markdown=None) -> list[str]:
    """Every problem for one notebook: its translation file, then each edition
    (``{"zh-CN": nb or None, "zh-TW": nb or None}``)."""
    found = translation_problems(english, translation, name, translation_path, exercise_ids)
    sources = {c["id"]: _source(c) for c in _cells(english) if c["cell_type"] == "code"}
    pairs = {cid: p for cid, p in code_strings(translation).items() if cid in sources}
    for language, nb in chinese_editions.items():
        # zh-TW's strings pass through the converter, which this check does not run.
        code_of = {cid: translated_code(sources[cid], p) if language == "zh-CN" else None
                   for cid, p in pairs.items()}
        found += edition_problems(english, nb, name, language,
                                  (expected_markdown or {}).get(language), code_of)
    return found
