"""Every notebook in a real browser: JupyterLab runs all cells without an error, Voila
renders it as a dashboard, and every widget's output changes when a control is moved and
survives rapid interaction (key presses in a row, Play, a dropdown changed twice) with no
error on the page or in the kernel.

Skipped, with the reason, where Debian's chromium or Playwright is missing (`.ci/run`
installs chromium where it can: `apt-get install chromium`). Screenshots and a timing
record per notebook are written to artifacts/browser/.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from .harness import (ARTIFACTS, CHROMIUM_ARGS, PROMPTS_JS, ROOT, KernelWatcher,
                      chromium_path, connection_file, errors_on_page, operate_widgets,
                      server, start_run_all)

playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on this machine: `apt-get install chromium` (Debian) "
                             "or set CHROMIUM=/path/to/chromium to run the browser tests")

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))  # not scratch copies
RUN_TIMEOUT_S = 300  # generous: the slowest notebook takes about a minute on 2 busy cores
# Playwright's default is 30 s per action. The page is read in snapshots (harness.py), so
# an action that waits this long is stuck, not slow: fail soon and say which.
ACTION_TIMEOUT_MS = 15_000

def _has_widgets(path: Path) -> bool:
    return "companion.widgets" in path.read_text() or "ipywidgets" in path.read_text()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A copy of notebooks/ (JupyterLab writes outputs into what it runs)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    target = tmp_path_factory.mktemp("browser") / "notebooks"
    shutil.copytree(ROOT / "notebooks", target)
    return target


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture(scope="module")
def lab(workdir):
    with server("lab", workdir) as srv:
        yield srv


def _new_page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(ACTION_TIMEOUT_MS)
    return page


def _run_all_cells(page):
    start_run_all(page)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        texts = page.evaluate(PROMPTS_JS)
        # "[12]:" everywhere; a collapsed (solution) cell shows no prompt at all.
        if texts and all(t[1:-2].isdigit() for t in texts if t) and texts[-1]:
            return
        time.sleep(0.5)
    page.screenshot(path=str(ARTIFACTS / "timeout.png"), full_page=True)
    raise AssertionError(f"cells still running after {RUN_TIMEOUT_S} s; prompts: {texts}")


def _kernel_of(srv, notebook: Path) -> str:
    sessions = [s for s in srv.api("/api/sessions") if s["path"].endswith(notebook.name)]
    assert len(sessions) == 1, f"expected one session for {notebook.name}, got {sessions}"
    return sessions[0]["kernel"]["id"]


def _shutdown_kernels(srv):
    """Each notebook gets a fresh kernel; idle ones from earlier tests would share the cores."""
    for kernel in srv.api("/api/kernels"):
        srv.api(f"/api/kernels/{kernel['id']}", method="DELETE")


def _check_widgets(records, notebook: Path, where: str):
    assert records, f"{notebook.name} uses widgets but none rendered in {where}"
    dead = [r["index"] for r in records if r["changed_by"] is None]
    assert not dead, f"widgets {dead} of {notebook.name} did not respond to any control in {where}"
    on_page = {r["index"]: r["errors"] for r in records if r["errors"]}
    assert not on_page, f"{where}: a widget shows an error after interaction: {on_page}"
    in_kernel = {r["index"]: r["kernel_errors"] for r in records if r["kernel_errors"]}
    assert not in_kernel, f"{where}: the kernel reported errors while widgets were operated: {in_kernel}"


def _save(name: str, record: dict):
    (ARTIFACTS / f"{name}.json").write_text(json.dumps(record, indent=1))


# Notebooks 00 and 02 show prediction boxes only: the student's walk through notebook 00
# (test_learning_in_browser, and its Chinese edition) and every other notebook here operate
# that widget, and nbval runs both notebooks. Leaving them out keeps CI within its budget.
IN_LAB = [nb for nb in NOTEBOOKS if nb.name[:2] not in ("00", "02")]


@pytest.mark.parametrize("notebook", IN_LAB, ids=lambda p: p.stem)
def test_notebook_runs_in_jupyterlab_and_its_widgets_respond(notebook, lab, browser):
    page = _new_page(browser)
    name, times = f"lab-{notebook.stem}", {}
    start = time.monotonic()
    try:
        # A workspace of its own, reset: no tabs restored from the previous notebook.
        page.goto(f"{lab.url}/lab/workspaces/{notebook.stem}/tree/{notebook.name}"
                  f"?reset&token={lab.token}", timeout=60_000)
        _run_all_cells(page)
        times["run_all_s"] = round(time.monotonic() - start, 1)
        assert errors_on_page(page) == [], f"{notebook.name} shows an error in the browser"
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
        if notebook.name.startswith("11_"):
            _check_topology_player(page)   # before operate_widgets moves its slider too
        if _has_widgets(notebook):
            with KernelWatcher(connection_file(lab, _kernel_of(lab, notebook))) as watcher:
                records = operate_widgets(page, name, watcher)
            times["widgets_s"] = round(time.monotonic() - start - times["run_all_s"], 1)
            _save(name, {"times": times, "widgets": records})
            _check_widgets(records, notebook, "JupyterLab")
        else:
            _save(name, {"times": times})
    except Exception:
        page.screenshot(path=str(ARTIFACTS / f"FAILED-{name}.png"), full_page=True)
        raise
    finally:
        page.close()
        _shutdown_kernels(lab)


# A page stuck at "Executing N of M" in Voila came from widgets drawing with
# `with output:`; tests/test_widgets_voila.py checks the cause for every widget without a
# browser, and the JupyterLab test above operates every kind of widget. Voila
# renders the same widgets through the same code, so it presents two notebooks: a
# Play-driven replay and prediction boxes (01), and the topology player's slider (11).
# Each Voila run re-executes its notebook, so every notebook would add minutes to CI and
# no kind of widget; the JupyterLab test operates every kind of widget.
VOILA_SAMPLE = ("01", "11")


@pytest.mark.parametrize("notebook", [nb for nb in NOTEBOOKS if _has_widgets(nb)
                                      and nb.name[:2] in VOILA_SAMPLE], ids=lambda p: p.stem)
def test_notebook_presents_in_voila(notebook, workdir, browser):
    name, times = f"voila-{notebook.stem}", {}
    start = time.monotonic()
    with server("voila", workdir, notebook.name) as srv:
        page = _new_page(browser)
        try:
            page.goto(f"{srv.url}/?token={srv.token}", timeout=RUN_TIMEOUT_S * 1000)
            page.wait_for_selector(".jupyter-widgets", timeout=60_000)
            times["render_s"] = round(time.monotonic() - start, 1)
            assert errors_on_page(page) == [], f"{notebook.name} shows an error in Voila"
            assert page.locator(".jp-InputArea-editor, .CodeMirror, .cm-editor").count() == 0, \
                "Voila should hide the code"
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
            with KernelWatcher(connection_file(srv)) as watcher:
                records = operate_widgets(page, name, watcher)
            times["widgets_s"] = round(time.monotonic() - start - times["render_s"], 1)
            _save(name, {"times": times, "widgets": records})
            _check_widgets(records, notebook, "Voila")
        except Exception:
            page.screenshot(path=str(ARTIFACTS / f"FAILED-{name}.png"), full_page=True)
            raise
        finally:
            page.close()


def _check_topology_player(page) -> None:
    """Notebook 11's topology player, as a student uses it: after Run All, moving its time
    slider redraws the cluster with other messages in flight (a new frame). Called on the
    page the JupyterLab test ran notebook 11 in, so the notebook runs once."""
    from .harness import tag_widgets, widget_area, widget_html

    players = [i for i in range(tag_widgets(page))
               if widget_area(page, i).locator(".widget-play").count()]
    assert players, "no topology player (a Play button and a time slider) rendered"
    i = players[0]  # the flat ring, the first player in the notebook
    area = widget_area(page, i)
    area.scroll_into_view_if_needed()
    handle = area.locator(".noUi-handle").first
    before_value, before_html = handle.get_attribute("aria-valuenow"), widget_html(page, i)
    handle.focus()
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and widget_html(page, i) == before_html:
        time.sleep(0.2)
    assert handle.get_attribute("aria-valuenow") != before_value, "the slider did not move"
    assert widget_html(page, i) != before_html, "moving the slider drew no new frame"
    assert errors_on_page(page) == [], "the player shows an error after the slider moved"
    page.screenshot(path=str(ARTIFACTS / "lab-11-topology-player.png"))


def test_roofline_explorer_responds_as_a_student_uses_it(lab, workdir, browser):
    """Notebook 10's FSDP x TP explorer in JupyterLab: choosing another FSDP degree and
    moving the batch slider change the readout and the verdict, with no error."""
    import nbformat
    scratch = workdir / "scratch_roofline_explorer.ipynb"
    # With a kernelspec, JupyterLab starts the kernel instead of asking which one.
    meta = json.loads((workdir / "10_when_parallelism_pays.ipynb").read_text())["metadata"]
    nbformat.write(nbformat.v4.new_notebook(metadata=meta, cells=[nbformat.v4.new_code_cell(
        "%matplotlib inline\nimport companion\n"
        "box = companion.widgets.roofline_explorer('Llama-3 70B', 'H100', 128, 2**20)\nbox")]),
        scratch)
    page = _new_page(browser)
    try:
        page.goto(f"{lab.url}/lab/workspaces/roofline/tree/{scratch.name}?reset&token={lab.token}",
                  timeout=60_000)
        _run_all_cells(page)
        readout = page.locator(".widget-html-content", has_text="tokens per device")
        readout.wait_for()
        assert "X = 128, Y = 1" in readout.inner_text()
        page.locator(".widget-dropdown", has_text="FSDP X").locator("select").select_option(label="16")
        page.wait_for_function("() => [...document.querySelectorAll('.widget-html-content')]"
                               ".some(e => e.innerText.includes('X = 16, Y = 8'))", timeout=30_000)
        before = readout.inner_text()
        handle = page.locator(".widget-hslider", has_text="batch").locator(".noUi-handle")
        handle.focus()
        for _ in range(3):
            page.keyboard.press("ArrowLeft")
        page.wait_for_function("b => [...document.querySelectorAll('.widget-html-content')]"
                               ".some(e => e.innerText.includes('tokens per device') && e.innerText !== b)",
                               arg=before, timeout=30_000)
        assert errors_on_page(page) == [], "the explorer shows an error in the browser"
        page.screenshot(path=str(ARTIFACTS / "lab-roofline-explorer.png"))
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "FAILED-lab-roofline-explorer.png"), full_page=True)
        raise
    finally:
        page.close()
        _shutdown_kernels(lab)


def test_autoparallel_planner_moves_the_cp_and_ep_axes(lab, workdir, browser):
    """Notebook 12's 5D planner in JupyterLab: switching CP on for 128K-token sequences
    brings a CP degree into the best plan, and choosing DeepSeek-V3 brings EP, with no
    error on the page."""
    import nbformat
    scratch = workdir / "scratch_autoparallel_planner.ipynb"
    meta = json.loads((workdir / "12_auto_parallelism.ipynb").read_text())["metadata"]
    nbformat.write(nbformat.v4.new_notebook(metadata=meta, cells=[nbformat.v4.new_code_cell(
        "%matplotlib inline\nimport companion\n"
        "box = companion.widgets.autoparallel_planner('Llama-3 405B', 'Llama-3 scale: 16,384x H100', "
        "128, seq_len=131072)\nbox")]), scratch)
    page = _new_page(browser)
    status_has = ("t => [...document.querySelectorAll('.widget-html-content')]"
                  ".some(e => e.innerText.includes('Best:') && e.innerText.includes(t))")
    try:
        page.goto(f"{lab.url}/lab/workspaces/autoparallel/tree/{scratch.name}?reset&token={lab.token}",
                  timeout=60_000)
        _run_all_cells(page)
        page.locator(".widget-html-content", has_text="feasible").first.wait_for()
        page.locator(".widget-checkbox", has_text="search CP").locator("input").check()
        page.wait_for_function(status_has, arg=" CP32 ", timeout=60_000)  # nothing fitted before
        page.locator(".widget-dropdown", has_text="model").locator("select").select_option(
            label="DeepSeek-V3 671B")
        page.wait_for_function(status_has, arg="EP 1 ->", timeout=90_000)
        assert errors_on_page(page) == [], "the planner shows an error in the browser"
        page.screenshot(path=str(ARTIFACTS / "lab-autoparallel-planner.png"))
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "FAILED-lab-autoparallel-planner.png"), full_page=True)
        raise
    finally:
        page.close()
        _shutdown_kernels(lab)
