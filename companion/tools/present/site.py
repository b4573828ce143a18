"""``make site``: the course as static HTML, the offline fallback.

Every notebook is executed into the build folder (never in place; the committed
notebooks stay without outputs) by nbconvert's ``ExecutePreprocessor`` with
``store_widget_state=True``, which saves every widget's state in the notebook's metadata.
nbconvert's HTML exporter then writes each page with its plots (PNG, inline) and that
state; ipywidgets' standalone renderer (``@jupyter-widgets/html-manager``) draws the
widgets from it in the browser, so sliders and dropdowns still move, and outputs linked
in the page (a Play button driving a slider) still change. Outputs a live kernel would
redraw keep the values of the run. Teaches no notebook: the instructor's tooling.

The renderer's JavaScript is not on PyPI; it is fetched once with npm (the ordinary
client of the registry that publishes it) into ``<out>/_static`` so the site works
offline. Without npm or a network it falls back to nbconvert's default, the jsDelivr CDN,
and says so.
"""
from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

import nbformat

from .course import course_entries
from .landing import site_index_html

__all__ = ["execute_notebook", "export_html", "fetch_widget_renderer", "build_site"]

# The html-manager release that renders ipywidgets 8's state (widget protocol 2),
# and the AMD loader its ``embed-amd.js`` needs.
HTML_MANAGER = "@jupyter-widgets/html-manager@1.0.15"
REQUIREJS = "requirejs@2.3.8"
STATIC = "_static"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def execute_notebook(path, out_dir, timeout_s: int = 600) -> tuple[Path, float]:
    """Run ``path`` top to bottom in a fresh kernel started in ``out_dir`` and write the
    executed copy there, widget state included; return ``(copy, seconds)``."""
    from nbconvert.preprocessors import ExecutePreprocessor

    path, out_dir = Path(path), Path(out_dir)
    if not path.is_file():
        raise ValueError(f"path={str(path)!r} is no notebook file")
    if not out_dir.is_dir():
        raise ValueError(f"out_dir={str(out_dir)!r} is not a folder; create it first")
    if not (isinstance(timeout_s, int) and timeout_s > 0):
        raise ValueError(f"timeout_s={timeout_s!r} must be a positive int (seconds per cell)")
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    ExecutePreprocessor(timeout=timeout_s, store_widget_state=True).preprocess(
        nb, {"metadata": {"path": str(out_dir)}})
    seconds = time.perf_counter() - start
    copy = out_dir / path.name
    nbformat.write(nb, copy)
    return copy, seconds


def export_html(executed, out_dir, renderer_url: str | None = None) -> Path:
    """Write ``<stem>.html`` for an executed notebook; ``renderer_url`` is where the page
    loads the widget renderer (relative to the page), None for nbconvert's CDN."""
    from nbconvert import HTMLExporter

    executed, out_dir = Path(executed), Path(out_dir)
    if not executed.is_file():
        raise ValueError(f"executed={str(executed)!r} is no notebook file; run "
                         "execute_notebook first")
    exporter = HTMLExporter(template_name="lab")
    if renderer_url:
        exporter.widget_renderer_url = renderer_url
        exporter.require_js_url = f"{STATIC}/require.js"
    body, _ = exporter.from_notebook_node(nbformat.read(executed, as_version=4))
    page = out_dir / f"{executed.stem}.html"
    page.write_text(body, encoding="utf-8")
    return page


CACHE = Path.home() / ".cache" / "companion" / "widget-renderer"


def fetch_widget_renderer(static_dir, cache_dir=CACHE) -> bool:
    """Put ``embed-amd.js`` (and its fonts) and ``require.js`` into ``static_dir``, from
    ``cache_dir`` or else with ``npm pack`` (filling the cache); True when they are there,
    False when npm or the network is missing."""
    static_dir, cache = Path(static_dir), Path(cache_dir)
    for name, path in (("static_dir", static_dir), ("cache_dir", cache)):
        if path.exists() and not path.is_dir():
            raise ValueError(f"{name}={str(path)!r} is a file; pass a folder (created if missing)")
    wanted = ("embed-amd.js", "require.js")
    if not all((cache / name).exists() for name in wanted):
        npm = shutil.which("npm")
        if npm is None:
            return False
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            try:
                subprocess.run([npm, "pack", "--silent", HTML_MANAGER, REQUIREJS], cwd=tmp,
                               check=True, capture_output=True, timeout=300)
            except (subprocess.SubprocessError, OSError):
                return False
            for tgz in Path(tmp).glob("*.tgz"):
                with tarfile.open(tgz) as tar:
                    tar.extractall(tmp, filter="data")
                package = Path(tmp) / "package"
                if (package / "dist" / "embed-amd.js").exists():
                    shutil.copytree(package / "dist", cache, dirs_exist_ok=True,
                                    ignore=shutil.ignore_patterns("*.map"))
                elif (package / "require.js").exists():
                    shutil.copy2(package / "require.js", cache / "require.js")
                shutil.rmtree(package)
        if not all((cache / name).exists() for name in wanted):
            return False
    shutil.copytree(cache, static_dir, dirs_exist_ok=True)
    # The bundle's modules are named "@jupyter-widgets/base", ".../html-manager/dist/...",
    # and each looks for its icon fonts (the Play button's) in the folder of that name
    # beside the page.
    out = static_dir.parent
    for folder in ("@jupyter-widgets", "@jupyter-widgets/html-manager/dist"):
        (out / folder).mkdir(parents=True, exist_ok=True)
        for font in static_dir.glob("*.woff*"):
            shutil.copy2(font, out / folder / font.name)
    return True


def build_site(out_dir="build/site", notebooks_dir="notebooks", only=None,
               timeout_s: int = 600, offline_widgets: bool = True, log=print) -> Path:
    """Execute every notebook (or those numbered in ``only``, e.g. ``["00", "11"]``)
    into ``out_dir/executed``, write one HTML page each and ``index.html``; return the
    index. A notebook that fails to run stops the build with its error. With
    ``offline_widgets`` the widget renderer is copied into the site (see
    :func:`fetch_widget_renderer`); without, pages load it from the CDN."""
    out_dir = Path(out_dir)
    entries = course_entries(notebooks_dir)
    if only is not None:
        if isinstance(only, str):
            only = only.replace(",", " ").split()
        chosen = [e for e in entries if e.number in only or e.stem in only]
        unknown = set(only) - {e.number for e in chosen} - {e.stem for e in chosen}
        if unknown or not chosen:
            raise ValueError(f"only={sorted(unknown or only)} names no notebook in "
                             f"{notebooks_dir}; use numbers such as ['00', '11']")
        entries = chosen
    executed_dir = out_dir / "executed"
    executed_dir.mkdir(parents=True, exist_ok=True)
    offline = offline_widgets and fetch_widget_renderer(out_dir / STATIC)
    if offline_widgets and not offline:
        log("npm could not fetch the widget renderer: pages load it from the jsDelivr CDN "
            "(plots work offline, widgets need the network)")
    pages, timings = {}, {}
    for entry in entries:
        log(f"executing {entry.path.name} ...")
        executed, seconds = execute_notebook(entry.path, executed_dir, timeout_s)
        timings[entry.stem] = seconds
        page = export_html(executed, out_dir, f"{STATIC}/embed-amd.js" if offline else None)
        pages[entry.stem] = page.name
        log(f"  {page} ({seconds:.0f} s)")
    index = out_dir / "index.html"
    index.write_text(site_index_html(entries, pages, timings), encoding="utf-8")
    return index
