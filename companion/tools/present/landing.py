"""The two tables of contents of the course, made from :func:`course_entries`: the
landing notebook that ``make present`` serves first, and ``index.html`` of ``make site``.
Teaches no notebook: the instructor's tooling."""
from __future__ import annotations

import datetime
import html

import nbformat

from .course import Entry

__all__ = ["landing_notebook", "site_index_html"]

INTRO = """# Distributed training, run for real

MIT 6.5940 L19-L20 and Stanford CS336 L8, as notebooks that start real `torch.distributed`
jobs. Click a notebook to open it as a dashboard: prose, plots and live widgets, code hidden.
Use the browser's Back button to return here."""


def _entry_markdown(entry: Entry, link: str) -> str:
    name = f"{entry.number} · {entry.title}" if entry.number else entry.title
    lines = [f"## [{name}]({link})", ""]
    if entry.lectures:
        lines += [f"**Lectures:** {entry.lectures}", ""]
    if entry.goals:
        lines += ["**After it you can**", ""]
        lines += [f"{i}. {goal}" for i, goal in enumerate(entry.goals, 1)]
    return "\n".join(lines)


def landing_notebook(entries, kernelspec: dict | None = None, note: str = "") -> nbformat.NotebookNode:
    """A notebook of Markdown cells only: one per notebook, its title linking to the
    notebook beside it (Voila resolves ``03_zero_memory.ipynb`` next to
    ``index.ipynb``), its lectures and its goals. ``note`` is added under the intro."""
    entries = list(entries)
    if not entries or not all(isinstance(e, Entry) for e in entries):
        raise ValueError("entries must be a non-empty list of Entry; "
                         "use companion.tools.present.course_entries('notebooks')")
    intro = INTRO + (f"\n\n{note}" if note else "")
    cells = [nbformat.v4.new_markdown_cell(intro)]
    cells += [nbformat.v4.new_markdown_cell(_entry_markdown(e, e.path.name)) for e in entries]
    metadata = {"kernelspec": kernelspec} if kernelspec else {}
    return nbformat.v4.new_notebook(cells=cells, metadata=metadata)


_CSS = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
line-height:1.45;color:#222}h2{margin-bottom:.2rem}h2 a{text-decoration:none}
.lectures{color:#555;margin:.2rem 0}.note{background:#f4f4f4;padding:.6rem 1rem;border-radius:4px}
li{margin:.15rem 0}"""


def site_index_html(entries, pages: dict, timings: dict | None = None) -> str:
    """``index.html`` of the static site: every notebook in ``pages`` (stem -> file
    name) with its lectures and goals, and how long its run took when ``timings`` has it."""
    import mistune  # nbconvert's Markdown renderer, already installed with it

    entries = [e for e in entries if e.stem in pages]
    if not entries:
        raise ValueError("pages names none of the entries; build at least one notebook first")
    timings = timings or {}
    md = mistune.create_markdown(escape=True)
    built = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<title>Distributed training, run for real</title><style>{_CSS}</style></head><body>",
             "<h1>Distributed training, run for real</h1>",
             "<p class='note'>A static copy of the course, built on "
             f"{html.escape(built)} by <code>make site</code>: every notebook was executed "
             "on real ranks and its plots and widget state saved. Sliders and dropdowns still "
             "move; outputs that a live kernel would redraw show the values of that run. For "
             "the live course: <code>make present</code>.</p>"]
    for e in entries:
        name = f"{e.number} · {e.title}" if e.number else e.title
        parts.append(f"<section class='entry' data-notebook='{html.escape(e.stem)}'>"
                     f"<h2><a href='{html.escape(pages[e.stem])}'>{html.escape(name)}</a></h2>")
        if e.lectures:
            parts.append(f"<p class='lectures'><b>Lectures:</b> {html.escape(e.lectures)}</p>")
        if e.goals:
            parts.append("<ol class='goals'>" + "".join(
                f"<li>{md(g).strip().removeprefix('<p>').removesuffix('</p>')}</li>"
                for g in e.goals) + "</ol>")
        if e.stem in timings:
            parts.append(f"<p class='lectures'>executed in {timings[e.stem]:.0f} s</p>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
