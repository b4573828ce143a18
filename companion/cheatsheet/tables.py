"""The cheat-sheet's Markdown tables, in the reader's language: the texts the cheat-sheet's
modules mark with :func:`_` (their headers, row labels, rules and formulas) and the
planner's rejection reasons are shown translated; every other cell as it is.

Used by ``notebooks/cheatsheet.ipynb``.
"""
from __future__ import annotations

__all__ = ["markdown_table", "TABLE_TEXTS"]

TABLE_TEXTS: set[str] = set()   # every text a cheat-sheet module marked, filled as they load


def _(message: str) -> str:
    """Marks a message for the catalog (so the translation tests see it) and returns it
    unchanged; :func:`markdown_table` translates every marked text when it shows it."""
    TABLE_TEXTS.add(message)
    return message


def _shown(cell) -> str:
    from ..i18n import gettext as tr
    from ..planner.feasibility import shown_reason
    text = str(cell)
    if text in TABLE_TEXTS:
        return tr(text)
    # a configuration the planner rejects shows its reason in the MFU column
    return shown_reason(text) if isinstance(cell, str) else text


def markdown_table(headers, rows) -> str:
    """A Markdown table (display it with ``IPython.display.Markdown``); the cheat-sheet's
    marked texts (``TABLE_TEXTS``) and planner reasons in the reader's language."""
    if not headers or any(len(row) != len(headers) for row in rows):
        raise ValueError("rows: every row needs one cell per header (and headers must not "
                         "be empty)")
    lines = ["| " + " | ".join(map(_shown, headers)) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(map(_shown, row)) + " |" for row in rows]
    return "\n".join(lines)
