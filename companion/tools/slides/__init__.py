"""Slides from the course notebooks: the slideshow metadata every notebook carries, and
the command that presents one (``make slides NB=03``; README, "For instructors").

Each cell gets ``metadata.slideshow.slide_type``, the field reveal.js slideshows read
(Voila's and nbconvert's ``reveal`` templates, RISE). It is computed from the cells'
sources alone, so running the tool twice changes nothing; sources and ids are never
touched. The rules, first match wins:

1. Solution cells (nbgrader ``solution`` or the ``solution`` tag): ``notes`` -- the
   audience does not see them, a speaker view does.
2. ``## Self-check`` and every cell after it: ``skip`` (asserts for CI, not for a room).
3. Code before the first ``## `` heading (imports, setup, an install cell): ``skip``.
4. A Markdown cell opening with ``# `` or ``## ``: ``slide``; with ``### ``: ``subslide``.
5. A code cell that displays a widget (a ``companion.widgets`` factory, an exercise card,
   an ``ipywidgets`` control): ``subslide``, and the next visible cell opens another
   ``subslide``, so that each widget has a slide of its own.
6. A cell that would overfill the current slide (about ``SLIDE_LINES`` lines of text,
   code and figure): ``subslide``.
7. Prose right after code on the same slide: ``fragment`` (it appears on the next key
   press, after the audience has seen the output).
8. Anything else: ``-`` (continues the slide).

A single cell taller than a slide scrolls (the presenter turns on reveal's ``scroll``).
"""
from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

SLIDE_LINES = 30        # what fits on a 1280x800 slide at the template's font size
FIGURE_LINES = 16       # a matplotlib figure, in lines of text
WRAP = 110              # characters per rendered line of prose
TEMPLATE = "companion-slides"
TEMPLATE_ROOT = Path(__file__).resolve().parent  # holds voila/templates/companion-slides
# Factories whose result is a figure, frames or HTML rather than a control.
_NOT_WIDGETS = ("draw_", "plot_")
_NOT_WIDGET_SUFFIXES = ("_figure", "_frames", "_html")


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _is_solution(cell) -> bool:
    meta = cell.get("metadata", {})
    return bool(meta.get("nbgrader", {}).get("solution")) or "solution" in meta.get("tags", [])


def _heading(cell) -> int:
    """The level of the heading the Markdown cell opens with (0 for none)."""
    if cell["cell_type"] != "markdown":
        return 0
    first = _source(cell).lstrip().split("\n", 1)[0]
    level = len(first) - len(first.lstrip("#"))
    return level if 0 < level <= 6 and first[level:level + 1] == " " else 0


class _Widgets:
    """Which names, in a notebook read top to bottom, make or hold widgets."""

    def __init__(self):
        self.factories: set[str] = set()   # exercise, prediction, ...
        self.modules: set[str] = set()     # "companion.widgets", "W", "dga_plots"
        self.holders: set[str] = set()     # names bound to a widget

    @staticmethod
    def _is_widget_name(name: str) -> bool:
        return not (name.startswith(_NOT_WIDGETS) or name.endswith(_NOT_WIDGET_SUFFIXES))

    def _dotted(self, node) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            return ".".join([node.id] + parts[::-1])
        return None

    def makes_widget(self, node) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = self._dotted(node.func)
        if name is None:
            return False
        if name in self.factories:
            return True
        module, _, attr = name.rpartition(".")
        return module in self.modules and self._is_widget_name(attr)

    def shows_widget(self, node) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.holders
        if isinstance(node, ast.Tuple):
            return any(self.shows_widget(e) for e in node.elts)
        return self.makes_widget(node)

    def read(self, source: str) -> bool:
        """Learn the cell's imports and assignments; True when the cell displays a widget."""
        try:
            tree = ast.parse("\n".join(line for line in source.splitlines()
                                       if not line.lstrip().startswith(("%", "!"))))
        except SyntaxError:
            return False
        shows = False
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module:
                for alias in stmt.names:
                    bound = alias.asname or alias.name
                    full = f"{stmt.module}.{alias.name}"
                    if stmt.module in ("companion.widgets", "ipywidgets") and self._is_widget_name(alias.name):
                        self.factories.add(bound)
                    if full.startswith("companion.widgets.") or full == "companion.widgets":
                        self.modules.add(bound)
                    if full in ("companion.learning.exercise", "ipywidgets.interact"):
                        self.factories.add(bound)
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.name in ("companion.widgets", "ipywidgets", "companion"):
                        self.modules.add(alias.asname or alias.name)
                        self.modules.add("companion.widgets")
            elif isinstance(stmt, ast.Assign) and self.makes_widget(stmt.value):
                self.holders.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
            elif isinstance(stmt, ast.Expr):
                value = stmt.value
                if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                        and value.func.id == "display"):
                    shows |= any(self.shows_widget(a) for a in value.args)
                elif stmt is tree.body[-1]:
                    shows |= self.shows_widget(value)
        return shows


def _height(cell, source: str) -> int:
    lines = source.splitlines() or [""]
    if cell["cell_type"] == "markdown":
        return sum(1 + len(line) // WRAP for line in lines) + 1
    plots = any(key in source for key in ("plt.", "fig", "draw_", ".plot(", "imshow"))
    return len(lines) + 2 + (FIGURE_LINES if plots else 0)


def slide_types(nb) -> list[str]:
    """The ``slide_type`` of every cell of ``nb`` (a dict or nbformat node), by the rules
    in this module's docstring."""
    cells = nb["cells"]
    first_section = next((i for i, c in enumerate(cells) if _heading(c) == 2), len(cells))
    self_check = next((i for i, c in enumerate(cells) if _heading(c) == 2
                       and _source(c).lstrip()[3:].strip().lower().startswith("self-check")),
                      len(cells))
    widgets, types = _Widgets(), []
    used, previous, after_widget = 0, None, False   # lines on this slide, last visible cell
    for i, cell in enumerate(cells):
        source, kind = _source(cell), cell["cell_type"]
        is_widget = kind == "code" and widgets.read(source)
        if _is_solution(cell):
            types.append("notes")
            continue
        if i >= self_check or (kind == "code" and i < first_section):
            types.append("skip")
            continue
        height, level = _height(cell, source), _heading(cell)
        if level in (1, 2):
            slide_type = "slide"
        elif level == 3 or is_widget or after_widget or previous is None:
            slide_type = "subslide" if previous is not None else "slide"
        elif used and used + height > SLIDE_LINES:
            slide_type = "subslide"
        elif kind == "markdown" and previous == "code":
            slide_type = "fragment"
        else:
            slide_type = "-"
        used = height if slide_type in ("slide", "subslide") else used + height
        types.append(slide_type)
        previous, after_widget = kind, is_widget
    return types


def apply(nb) -> bool:
    """Set every cell's slideshow metadata; return True when something changed."""
    changed = False
    for cell, slide_type in zip(nb["cells"], slide_types(nb)):
        meta = cell.setdefault("metadata", {})
        if meta.get("slideshow") != {"slide_type": slide_type}:
            meta["slideshow"] = {"slide_type": slide_type}
            changed = True
    return changed


def _notebooks(paths):
    for path in map(Path, paths):
        if path.is_dir():
            yield from sorted(p for p in path.glob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
        elif path.suffix == ".ipynb" and path.exists():
            yield path
        else:
            raise ValueError(f"paths: {path} is neither a folder nor an existing .ipynb file; "
                             "pass notebooks/ or a notebook's path")


def voila_args(theme: str = "light") -> list[str]:
    """Voila's arguments for a slideshow: the course's reveal template (reveal.js 4.0.2's
    CSS shipped beside it, so that slides load offline), code shown, long slides scroll."""
    resources = {"reveal": {"url_prefix": f"/voila/templates/{TEMPLATE}/static", "theme": "simple",
                            "scroll": True, "transition": "none", "width": 1280, "height": 800}}
    return [f"--template={TEMPLATE}", "--strip_sources=False", f"--theme={theme}",
            f"--VoilaConfiguration.resources={resources!r}"]


def voila_env(env=None) -> dict:
    """``env`` with the folder that holds the template on ``JUPYTER_PATH``."""
    env = dict(os.environ if env is None else env)
    env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(TEMPLATE_ROOT), env.get("JUPYTER_PATH")]))
    return env


def main(argv=None) -> int:
    """``python -m companion.tools.slides [--check] notebooks/``: set (or, with ``--check``,
    verify) the slideshow metadata. ``python -m companion.tools.slides --present NB.ipynb``:
    serve one notebook as slides (``make slides NB=03``)."""
    import nbformat

    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--present"]:
        if len(args) < 2 or not Path(args[1]).is_file():
            raise ValueError("--present needs an existing notebook path, e.g. notebooks/03_zero_memory.ipynb")
        voila = Path(sys.executable).with_name("voila")
        os.execve(str(voila), [str(voila), args[1], *voila_args(), *args[2:]], voila_env())
    check = "--check" in args
    paths = [a for a in args if a != "--check"] or ["notebooks"]
    stale = []
    for path in _notebooks(paths):
        nb = nbformat.read(path, as_version=4)
        if apply(nb):
            stale.append(path)
            if not check:
                nbformat.write(nb, path)
    verb = "lack" if check else "updated:"
    print(f"{len(stale)} notebook(s) {verb} slide metadata" + "".join(f"\n  {p}" for p in stale))
    if check and stale:
        print("run: python -m companion.tools.slides notebooks/")
    return 1 if check and stale else 0
