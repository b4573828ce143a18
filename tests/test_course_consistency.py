"""The course's study aids agree with each other.

* The lecture pages a notebook cites (in any Markdown cell) are summarised, computed, in
  its header ("Lectures: ...") and in the README's table: the three cannot drift apart.
* Every numbered section cites its lecture pages (or a CS336 section) or links the paper
  it teaches, or says that its subject is not in the lectures.
* Every notebook has at least two predictions, each revealed, and ends with Takeaways,
  a cell printing the takeaways' numbers, then the self-checks.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MIT = re.compile(r"\b(L19|L20),?\s*(?:pages?|p\.)\s*(\d+)(?:\s*[-–]\s*(\d+))?"
                 r"((?:\s*(?:,|and)\s*(?:p\.)?\s*\d+(?:\s*[-–]\s*\d+)?)*)")
CS336 = re.compile(r"CS336 L8,? (?:section|§)\s*(\d+(?:\.\d+)?)"
                   r"((?:\s*(?:,|and|-)\s*§?\s*\d+(?:\.\d+)?)*)")


def _markdown(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]
            if c["cell_type"] == "markdown"]


def _ranges(pages: set[int]) -> str:
    out: list[list[int]] = []
    for p in sorted(pages):
        if out and p == out[-1][1] + 1:
            out[-1][1] = p
        else:
            out.append([p, p])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in out)


def cited(texts) -> str:
    """``"L19 p.33-42, 50 · CS336 L8 §3.1"``: every page and section the texts cite."""
    pages: dict[str, set[int]] = {}
    sections: set[str] = set()
    for text in texts:
        for lecture, first, last, more in MIT.findall(text):
            spans = [(first, last)] + re.findall(r"(\d+)(?:\s*[-–]\s*(\d+))?", more)
            for a, b in spans:
                pages.setdefault(lecture, set()).update(range(int(a), int(b or a) + 1))
        for first, more in CS336.findall(text):
            sections.add(first)
            sections.update(re.findall(r"\d+(?:\.\d+)?", more))
    parts = [f"{lec} p.{_ranges(p)}" for lec, p in sorted(pages.items())]
    if sections:
        top = sorted(sections, key=lambda s: [int(x) for x in s.split(".")])
        parts.append("CS336 L8 §" + ", §".join(top))
    return " · ".join(parts)


def _readme_rows() -> dict[str, str]:
    rows = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        m = re.match(r"\| (\d\d) \| `[^`]+` \| ([^|]+) \|", line)
        if m:
            rows[m[1]] = m[2].strip()
    return rows


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_lecture_pages_agree_in_readme_header_and_cells(notebook):
    texts = _markdown(notebook)
    header, body = texts[0], texts[1:]
    want = cited(body)
    assert want, f"{notebook.name} cites no lecture page"
    assert f"**Lectures cited:** {want}" in header, (
        f"{notebook.name}: the header should say **Lectures cited:** {want}")
    assert _readme_rows()[notebook.name[:2]] == want, (
        f"README row {notebook.name[:2]} should list {want}")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_every_section_cites_its_lecture(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    sections, current = {}, None
    for c in cells:
        text = "".join(c["source"])
        if c["cell_type"] == "markdown" and text.startswith("## "):
            current = text.splitlines()[0]
            sections[current] = []
        if current and c["cell_type"] == "markdown":
            sections[current].append(text)
    skip = ("Takeaways", "Self-check", "Explore", "Exercise")
    uncited = [h for h, t in sections.items()
               if not any(s in h for s in skip) and not cited(t)
               and "](http" not in "".join(t) and "not in the lectures" not in "".join(t)]
    assert not uncited, f"{notebook.name}: sections citing no lecture page or paper: {uncited}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_predictions_takeaways_and_self_checks(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    asked = sum(s.count("prediction(") for s in code)
    revealed = sum(s.count(".reveal(") for s in code)
    assert asked >= 2 and revealed >= asked, f"{notebook.name}: {asked} asked, {revealed} revealed"
    heads = [(i, "".join(c["source"]).splitlines()[0]) for i, c in enumerate(cells)
             if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("## ")]
    names = [h for _, h in heads]
    assert names[-2:] == ["## Takeaways", "## Self-check"], names
    takeaways = next(i for i, h in heads if h == "## Takeaways")
    bullets = "".join(cells[takeaways]["source"]).count("\n* ") + \
        "".join(cells[takeaways]["source"]).count("\n- ")
    assert 3 <= bullets <= 6, f"{notebook.name}: {bullets} takeaway bullets"
    assert cells[takeaways + 1]["cell_type"] == "code", "the takeaways' numbers are printed"


def _section_numbers(path: Path) -> set[str]:
    out = set()
    for text in _markdown(path):
        out.update(re.findall(r"^## (\d+[a-z]?)[ .·]", text, flags=re.M))
    return out


def test_cheatsheet_and_glossary_point_at_sections_that_exist():
    sections = {p.name[:2]: _section_numbers(p) for p in NOTEBOOKS}
    sources = {"notebooks/cheatsheet.ipynb": "\n".join(_markdown(ROOT / "notebooks" / "cheatsheet.ipynb")),
               "docs/glossary.md": (ROOT / "docs" / "glossary.md").read_text(),
               "docs/papers.md": (ROOT / "docs" / "papers.md").read_text()}
    wrong = []
    for name, text in sources.items():
        for nb, first, last in re.findall(r"\b(0\d) §(\d+)(?:-(\d+))?", text):
            for k in range(int(first), int(last or first) + 1):
                if str(k) not in sections[nb]:
                    wrong.append(f"{name}: {nb} §{k}")
    assert not wrong, f"references to sections that do not exist: {sorted(set(wrong))}"


@pytest.mark.parametrize("readme,marker,language", [("README.md", "**exercises:** ", "en"),
                                                    ("README.zh-CN.md", "**练习：** ", "zh-CN")])
def test_readme_rows_list_each_notebooks_exercises(readme, marker, language):
    """Every notebook has a row, and its exercises are the registered ones, by level."""
    import json
    from companion.learning import all_exercises
    from companion.learning.exercise import LEVELS
    exercises = all_exercises()
    zh = json.loads((ROOT / "companion/i18n/data/exercises.json").read_text())["zh-CN"]
    rows = {}
    for line in (ROOT / readme).read_text().splitlines():
        m = re.match(r"\| (\d\d) \| `", line)
        if m and marker in line:
            rows[m[1]] = line.split(marker, 1)[1].rstrip(" |")
    for notebook in NOTEBOOKS:
        nb = notebook.name[:2]
        ladder = sorted((e for e in exercises.values() if e.id.startswith(nb + ".")),
                        key=lambda e: (LEVELS.index(e.level), e.id))
        want = " · ".join(e.title if language == "en" else zh[e.id]["title"] for e in ladder)
        assert rows.get(nb) == want, f"{readme} row {nb}: list the exercises as {want!r}"
