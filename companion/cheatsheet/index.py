"""The cheat-sheet's index, written from its own section headings so the two cannot part.

Each section of ``notebooks/cheatsheet.ipynb`` opens with ``## N · title`` and, under it,
an italic line ``*Derived in <notebooks> · <lecture pages> · <papers>.*`` (in the Chinese
editions ``*推导见 ...*``). :func:`sections` reads them and :func:`index_markdown` writes
the index table; ``python -m companion.tools.cheatsheet_index`` puts it into the index
cell (and its zh-CN translation), and ``tests/test_cheatsheet.py`` fails in every edition
where the index and the headings disagree.
"""
from __future__ import annotations

import re

from ..validation import one_of

__all__ = ["sections", "index_markdown", "INDEX_ID"]

INDEX_ID = "53557676"  # the id of the index cell
HEADING = re.compile(r"\A## (\d+) · (.+)$", re.M)
LECTURES = ("L19", "L20", "CS336")
_GLOSS = re.compile(r"\s*[(（][^()（）]*[)）]")   # a parenthesis: "(ratios p.49-51, ...)"


def _(message: str) -> str:
    """Marks a message for the catalog; :func:`index_markdown` translates it."""
    return message


HEADERS = (_("Index"), "§", _("section"), _("derived in"), _("lecture pages"))


def _source(cell) -> str:
    if isinstance(cell, str):
        return cell
    source = cell.get("source", "") if isinstance(cell, dict) else None
    if source is None:
        raise ValueError(f"cells: expected markdown sources or notebook cells, got {cell!r}.")
    return "".join(source) if isinstance(source, list) else source


def _derived_line(text: str) -> str:
    """The italic paragraph under the heading, joined into one line."""
    lines, found = [], False
    for line in text.splitlines()[1:]:
        if not found and not line.strip():
            continue
        if not found and not line.startswith("*"):
            break
        if found and not line.strip():
            break
        found = True
        lines.append(line.strip())
    return " ".join(lines).strip().lstrip("*").rstrip("。.* ")


def sections(cells) -> list[tuple[str, str, str, str]]:
    """``(number, title, derived in, lecture pages)`` of every ``## N · title`` markdown
    cell in ``cells`` (sources, or notebook cells: code cells are skipped), in order.
    "Derived in" is the first part of the italic line without its lead words; the lecture
    pages are its parts that start with L19, L20 or CS336, without their glosses."""
    if isinstance(cells, (str, bytes)) or not hasattr(cells, "__iter__"):
        raise ValueError("cells: pass a list of markdown sources or of notebook cells, e.g. "
                         "json.load(open('notebooks/cheatsheet.ipynb'))['cells'].")
    out = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type", "markdown") != "markdown":
            continue
        text = _source(cell)
        heading = HEADING.match(text)
        if not heading:
            continue
        parts = [p.strip() for p in _derived_line(text).split(" · ")]
        derived = re.sub(r"^\D*", "", parts[0]) if parts[0] else ""
        lectures = "; ".join(_GLOSS.sub("", p) for p in parts[1:] if p.startswith(LECTURES))
        out.append((heading[1], heading[2].strip(), derived, lectures))
    return out


def _translate(language: str):
    if language == "en":
        return lambda text: text
    from .. import i18n
    table = i18n._table(language)
    return lambda text: table.get(text, text)


def index_markdown(cells, language: str = "en") -> str:
    """The index cell's Markdown: a bold title and one table row per section of
    :func:`sections` (its headers in ``language``: "en", "zh-CN" or "zh-TW")."""
    one_of("language", language, ("en", "zh-CN", "zh-TW"))
    rows = sections(cells)
    if not rows:
        raise ValueError("cells: no '## N · title' section found; pass the cheat-sheet's cells.")
    tr = _translate(language)
    title, *headers = (tr(h) for h in HEADERS)
    lines = [f"**{title}**", "", "| " + " | ".join(headers) + " |",
             "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
