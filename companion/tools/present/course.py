"""What the course is, read from the notebooks themselves.

The landing page of ``make present`` and the index of ``make site`` list every notebook
with its number, title, the lectures it cites and its learning goals. All of it is parsed
from each notebook's first Markdown cell(s), never typed a second time, so a notebook
that changes its goals changes the landing page with it. Teaches no notebook: this is
the instructor's tooling.
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

__all__ = ["Entry", "course_entries", "read_entry"]

_TITLE = re.compile(r"^#\s+(?:(\d\d)\s*·\s*)?(.+?)\s*$", re.M)
_LECTURES = re.compile(r"^\*\*Lectures cited:\*\*\s*(.+?)\s*$", re.M)
# Notebooks word the heading of their goals list in one of a few ways.
_GOALS = re.compile(r"^\*\*(?:Learning goals|You will)\b.*$", re.M)
_ITEM = re.compile(r"^(\d+)\.\s+(.*)$")
# How many leading Markdown cells may hold the header (title, lectures, goals).
HEADER_CELLS = 3


@dataclasses.dataclass(frozen=True)
class Entry:
    """One notebook as the landing page shows it."""

    path: Path
    number: str | None      # "03"; None for a reference page such as the cheat-sheet
    title: str              # "Data parallelism, ZeRO-1/2/3 and FSDP: where the memory goes"
    lectures: str           # "L19 p.68-73 · CS336 L8 §2.2"; "" when the notebook names none
    goals: tuple[str, ...]  # the numbered learning goals, Markdown kept

    @property
    def stem(self) -> str:
        return self.path.stem


def _header_text(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    texts = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    return "\n\n".join(texts[:HEADER_CELLS])


def _goals(text: str) -> tuple[str, ...]:
    start = _GOALS.search(text)
    if start is None:
        return ()
    goals: list[str] = []
    for line in text[start.end():].splitlines():
        item = _ITEM.match(line.strip()) if not line.startswith(" ") else None
        if item:
            goals.append(item.group(2).strip())
        elif goals and line.startswith(" ") and line.strip():
            goals[-1] += " " + line.strip()   # a goal wrapped onto the next line
        elif goals:
            break                             # the list ended (blank line or prose)
    return tuple(goals)


def read_entry(path) -> Entry:
    """Parse one notebook's header: ``# NN · title``, ``**Lectures cited:** ...`` and
    the numbered list under ``**Learning goals**``."""
    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"path={str(path)!r} is not a notebook file; pass a path to an "
                         "existing .ipynb, e.g. notebooks/03_zero_memory.ipynb")
    text = _header_text(path)
    title = _TITLE.search(text)
    if title is None:
        raise ValueError(f"path={str(path)!r}: its first Markdown cell has no '# NN · title' "
                         "heading; give the notebook one")
    lectures = _LECTURES.search(text)
    # "(the pages each section below names)." is a note for the reader of the notebook.
    cited = re.sub(r"\s*\((?:the pages|each section)[^)]*\)\.?$", "",
                   lectures.group(1)).rstrip(".") if lectures else ""
    return Entry(path=path, number=title.group(1), title=title.group(2), lectures=cited,
                 goals=_goals(text))


def course_entries(notebooks_dir) -> list[Entry]:
    """Every notebook in ``notebooks_dir``: the numbered ones in order, then reference
    pages (the cheat-sheet). Scratch copies and checkpoints are left out."""
    folder = Path(notebooks_dir)
    if not folder.is_dir():
        raise ValueError(f"notebooks_dir={str(folder)!r} is not a folder; pass the course's "
                         "notebooks/ folder")
    numbered = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    reference = sorted(p for p in folder.glob("*.ipynb")
                       if p not in numbered and p.stem in REFERENCE_PAGES)
    if not numbered:
        raise ValueError(f"notebooks_dir={str(folder)!r} holds no NN_*.ipynb notebook")
    return [read_entry(p) for p in numbered + reference]


REFERENCE_PAGES = ("cheatsheet",)
