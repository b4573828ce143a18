"""`make present` and `make site`: the landing page and the site index are
made from the notebooks' own headers; the static site holds executed notebooks with their
plots and widget state.

The fast tests build a one-notebook course (a plot, a slider driven by a Play button)
in a temporary folder; the `ci`-marked ones parse and build real course notebooks.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from companion.tools.present import (build_site, course_entries, landing_notebook, prepare_course,
                               read_entry, voila_command)
from companion.tools.present.site import WIDGET_STATE

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

HEADER = """# 00 · A demo notebook

**Lectures cited:** L19 p.44-47 (the pages each section below names).

Some prose.

**Learning goals.** After this notebook you can

1. move a slider;
2. see a plot that is
   wrapped onto two lines.

Text after the list."""

CODE = """%matplotlib inline
import ipywidgets as W
import matplotlib.pyplot as plt
plt.plot([0, 1, 4, 9]); plt.show()
slider = W.IntSlider(value=2, min=0, max=9, description="step")
play = W.Play(value=2, min=0, max=9, interval=200)
W.jslink((play, "value"), (slider, "value"))
W.HBox([play, slider])"""


def demo_course(folder: Path) -> Path:
    folder.mkdir()
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(HEADER),
                                         nbformat.v4.new_code_cell(CODE)],
                                  metadata={"kernelspec": kernelspec})
    nbformat.write(nb, folder / "00_demo.ipynb")
    return folder


def test_the_header_is_parsed_from_the_first_markdown_cell(tmp_path):
    entry = read_entry(demo_course(tmp_path / "nb") / "00_demo.ipynb")
    assert (entry.number, entry.title, entry.lectures) == ("00", "A demo notebook", "L19 p.44-47")
    assert entry.goals == ("move a slider;", "see a plot that is wrapped onto two lines.")


def test_every_course_notebook_has_a_title_lectures_and_goals():
    entries = course_entries(ROOT / "notebooks")
    numbered = [e for e in entries if e.number]
    assert [e.path for e in numbered] == NOTEBOOKS
    for e in numbered:
        assert e.title and e.lectures, e.path.name
        assert len(e.goals) >= 3, f"{e.path.name}: {len(e.goals)} learning goals parsed"
        assert e.path.name[:2] == e.number
    # The landing page says what the header says, not a copy typed elsewhere.
    readme = (ROOT / "README.md").read_text()
    for e in numbered:
        assert f"| {e.number} | `{e.stem}` | {e.lectures} |" in readme


def test_landing_notebook_links_every_notebook_beside_it(tmp_path):
    course = demo_course(tmp_path / "nb")
    work = tmp_path / "work"
    work.mkdir()
    landing = prepare_course(work, course, preheat="00")
    nb = nbformat.read(landing, as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    assert "[00 · A demo notebook](00_demo.ipynb)" in text and "L19 p.44-47" in text
    assert "2. see a plot that is wrapped onto two lines." in text
    assert all(c.cell_type == "markdown" for c in nb.cells)
    assert (work / "00_demo.ipynb").exists()
    config = json.loads((work / "voila.json").read_text())
    pools = config["VoilaKernelManager"]["kernel_pools_config"]
    assert config["VoilaConfiguration"]["preheat_kernel"] is True
    assert pools["00_demo.ipynb"]["pool_size"] == 1 and pools["default"] == {"pool_size": 0}
    assert pools["00_demo.ipynb"]["kernel_env_variables"]["COMPANION_WARMUP_CELLS"] == "1"
    cmd = voila_command(work, port=9999)
    assert str(work.resolve()) in cmd and "--port=9999" in cmd and "--Voila.ip=127.0.0.1" in cmd


@pytest.mark.parametrize("call, match", [
    (lambda t: prepare_course(t, t, preheat="42"), "preheat='42' names no notebook"),
    (lambda t: prepare_course(t / "missing", t), "workdir="),
    (lambda t: course_entries(t / "missing"), "notebooks_dir="),
    (lambda t: read_entry(t / "x.txt"), "path="),
    (lambda t: landing_notebook([]), "entries must be"),
    (lambda t: voila_command(t, port=0), "port=0"),
    (lambda t: build_site(t / "out", t, only=["42"]), "only="),
])
def test_bad_input_names_the_argument(tmp_path, call, match):
    demo_course(tmp_path / "nb")
    with pytest.raises(ValueError, match=re.escape(match)):
        call(tmp_path / "nb")


def _check_page(html: str, plot: bool = True):
    if plot:
        assert re.search(r'<img[^>]+src="data:image/png;base64,', html), "no plot in the page"
    state = re.search(rf'<script type="{re.escape(WIDGET_STATE)}">(.*?)</script>', html, re.S)
    assert state, "no embedded widget state"
    models = json.loads(state.group(1))["state"]
    return models


def test_site_has_plots_embedded_widget_state_and_an_index(tmp_path):
    course = demo_course(tmp_path / "nb")
    index = build_site(tmp_path / "site", course, offline_widgets=False, log=lambda *_: None)
    page = tmp_path / "site" / "00_demo.html"
    html = page.read_text()
    models = _check_page(html)
    sliders = [m["state"] for m in models.values() if m["model_name"] == "IntSliderModel"]
    assert [s["value"] for s in sliders] == [2], "the slider's state is not the run's"
    assert any(m["model_name"] == "LinkModel" for m in models.values()), "jslink not embedded"
    assert "application/vnd.jupyter.widget-view+json" in html
    text = index.read_text()
    assert "href='00_demo.html'" in text and "L19 p.44-47" in text and "move a slider;" in text
    # Executed into the build folder, never in place.
    assert (tmp_path / "site" / "executed" / "00_demo.ipynb").exists()
    source = nbformat.read(course / "00_demo.ipynb", as_version=4)
    assert source.cells[1].outputs == [] and "widgets" not in source.metadata


def _uses_widgets(path: Path) -> bool:
    text = path.read_text()
    return "companion.widgets" in text or "ipywidgets" in text


def _has_png(executed) -> bool:
    """Whether the executed copy has a plot among its outputs (its page must then show it)."""
    nb = nbformat.read(executed, as_version=4)
    return any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
               for o in c.outputs)


# Four notebooks of each kind: plots and a widget (00), a memory widget with sliders (03),
# a player driven by a Play button (11), tables and widgets but no plot (12). nbval and the
# browser tests already execute every notebook; what only this test sees is a page built
# from an executed notebook, which these four cover. About a minute on 2 idle cores.
SITE_SAMPLE = ("00", "03", "11", "12")


@pytest.mark.ci
@pytest.mark.timeout(900)
def test_the_site_builds_with_plots_and_widget_state(tmp_path):
    """`make site ONLY=...` as CI runs it: each notebook executed (a failing cell fails the
    build), each page with its plots, widget state where the notebook has widgets, and
    the widget renderer beside the pages (fetched with npm once, then cached)."""
    out = tmp_path / "site"
    index = build_site(out, ROOT / "notebooks", only=list(SITE_SAMPLE), log=print)
    entries = [e for e in course_entries(ROOT / "notebooks") if e.number in SITE_SAMPLE]
    assert len(entries) == len(SITE_SAMPLE)
    offline = (out / "_static" / "embed-amd.js").exists()
    with_plots = [e for e in entries if _has_png(out / "executed" / e.path.name)]
    # 00 and 03 draw matplotlib figures; 11's figures are widgets, whose state is checked
    # below, and 12 draws none.
    assert {e.number for e in with_plots} >= {"00", "03"}, [e.number for e in with_plots]
    for e in entries:
        html = (out / f"{e.stem}.html").read_text()
        assert f"href='{e.stem}.html'" in index.read_text()
        if _has_png(out / "executed" / e.path.name):  # 12 draws no plot
            assert re.search(r'<img[^>]+src="data:image/png;base64,', html), e.stem
        if _uses_widgets(e.path):
            models = _check_page(html, plot=e in with_plots) if e.number else None
            assert WIDGET_STATE in html and (models is None or models), e.stem
            if offline:
                assert "_static/embed-amd.js" in html, e.stem
    assert not any(c.outputs for p in NOTEBOOKS
                   for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code"), \
        "the site must execute copies, never the notebooks in place"


@pytest.mark.ci
def test_warm_up_runs_take_turns(tmp_path):
    """`make present` warms every notebook at start; on 2 cores twelve at once would each
    crawl (and a rank job could pass its timeout), so they run one at a time. Two
    notebooks that each note when they start and end must not overlap."""
    import os
    import subprocess
    import time

    course = tmp_path / "nb"
    course.mkdir()
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for n in ("00", "01"):
        cells = [nbformat.v4.new_markdown_cell(f"# {n} · Turn {n}\n\n**Lectures cited:** L19 p.1"),
                 nbformat.v4.new_code_cell(f"import time; open('{n}.log', 'a').write(f'start {{time.time()}}\\n')"),
                 nbformat.v4.new_code_cell(""),  # skipped by Voila: must not be counted
                 nbformat.v4.new_code_cell("time.sleep(3)"),
                 nbformat.v4.new_code_cell(f"open('{n}.log', 'a').write(f'end {{time.time()}}\\n')")]
        nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": kernelspec}),
                       course / f"{n}_turn.ipynb")
    work = tmp_path / "work"
    work.mkdir()
    prepare_course(work, course, preheat="all")
    from tests.browser.harness import _free_port
    proc = subprocess.Popen(voila_command(work, _free_port()), cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "rt")))
    try:
        logs = [work / "00.log", work / "01.log"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not all(
                p.exists() and "end" in p.read_text() for p in logs):
            time.sleep(0.5)
        spans = []
        for p in logs:
            marks = dict(line.split() for line in p.read_text().splitlines())
            spans.append((float(marks["start"]), float(marks["end"])))
    finally:
        proc.terminate()
        proc.wait(20)
    (a0, a1), (b0, b1) = sorted(spans)
    assert a1 <= b0, f"warm-ups overlapped: {spans}"
