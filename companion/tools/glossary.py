"""docs/glossary.md's language columns: each table has ``zh-CN`` and ``zh-TW``
columns after ``Term``; the zh-TW one is generated from zh-CN (companion.tools.zh_tw) by
``python -m companion.tools.i18n_build``, and :func:`terms` feeds the glossary test."""
from __future__ import annotations

import re



def _split(line: str) -> list[str]:
    # "\|" inside a cell (|g| in a formula) is not a column border
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]


def rows(text: str):
    """(line index, header, cells) for every data row of every table with a zh-CN column."""
    header = None
    for i, line in enumerate(text.splitlines()):
        if not line.startswith("|"):
            header = None
            continue
        cells = _split(line)
        if header is None:
            header = cells
        elif set(cells[0]) <= set("-: ") and all(set(c) <= set("-: ") for c in cells):
            continue
        elif "zh-CN" in header:
            yield i, header, cells


def terms(text: str) -> list[dict]:
    """[{"Term": ..., "zh-CN": ..., "zh-TW": ..., "Spelled out": ...}, ...]"""
    return [dict(zip(header, cells)) for _, header, cells in rows(text)]


def fill_traditional(text: str, convert) -> str:
    """``text`` with every row's zh-TW cell set to ``convert(zh-CN cell)``."""
    lines = text.splitlines()
    for i, header, cells in rows(text):
        if "zh-TW" not in header or len(cells) != len(header):
            continue
        cells[header.index("zh-TW")] = convert(cells[header.index("zh-CN")])
        lines[i] = "| " + " | ".join(cells) + " |"
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")
