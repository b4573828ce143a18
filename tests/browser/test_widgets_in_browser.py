"""Every notebook in a real browser: JupyterLab runs all cells without an error, Voila
renders it as a dashboard, and every widget's output changes when a control is moved.

Skipped, with the reason, where Debian's chromium or Playwright is missing (`.ci/run`
installs chromium where it can: `apt-get install chromium`). Screenshots are written to
artifacts/browser/.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from .harness import ARTIFACTS, CHROMIUM_ARGS, ROOT, chromium_path, errors_on_page, \
    operate_widgets, server

playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on this machine: `apt-get install chromium` (Debian) "
                             "or set CHROMIUM=/path/to/chromium to run the browser tests")

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))  # not scratch copies
RUN_TIMEOUT_S = 300  # generous: the slowest notebook takes about a minute on 2 busy cores


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
    with server("lab", workdir) as (url, token):
        yield url, token


def _run_all_cells(page):
    page.locator(".jp-Notebook").first.wait_for(timeout=60_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
    prompts = page.locator(".jp-CodeCell .jp-InputPrompt")
    for _ in range(3):  # a click that lands while the kernel is still connecting is lost
        page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        started = time.monotonic() + 20
        while time.monotonic() < started and prompts.first.inner_text().strip() == "[ ]:":
            time.sleep(0.3)
        if prompts.first.inner_text().strip() != "[ ]:":
            break
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        texts = [t.strip() for t in prompts.all_inner_texts()]
        if texts and all(t[1:-2].isdigit() for t in texts):  # "[12]:" everywhere
            return
        time.sleep(0.5)
    page.screenshot(path=str(ARTIFACTS / "timeout.png"), full_page=True)
    raise AssertionError(f"cells still running after {RUN_TIMEOUT_S} s; prompts: {texts}")


def _shutdown_kernels(url, token):
    """Each notebook gets a fresh kernel; idle ones from earlier tests would share the cores."""
    import urllib.request

    headers = {"Authorization": f"token {token}"}
    with urllib.request.urlopen(urllib.request.Request(f"{url}/api/kernels", headers=headers)) as r:
        kernels = json.load(r)
    for kernel in kernels:
        urllib.request.urlopen(urllib.request.Request(f"{url}/api/kernels/{kernel['id']}",
                                                      headers=headers, method="DELETE"))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_in_jupyterlab_and_its_widgets_respond(notebook, lab, browser):
    url, token = lab
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        # A workspace of its own, reset: no tabs restored from the previous notebook.
        page.goto(f"{url}/lab/workspaces/{notebook.stem}/tree/{notebook.name}?reset&token={token}",
                  timeout=60_000)
        _run_all_cells(page)
        assert errors_on_page(page) == [], f"{notebook.name} shows an error in the browser"
        page.screenshot(path=str(ARTIFACTS / f"lab-{notebook.stem}.png"))
        if _has_widgets(notebook):
            records = operate_widgets(page, f"lab-{notebook.stem}")
            (ARTIFACTS / f"lab-{notebook.stem}.json").write_text(json.dumps(records, indent=1))
            assert records, f"{notebook.name} uses widgets but none rendered"
            dead = [r["index"] for r in records if r["changed_by"] is None]
            assert not dead, f"widgets {dead} of {notebook.name} did not respond to any control"
            assert not any(r["errors"] for r in records), "a widget callback showed an error"
    except Exception:
        page.screenshot(path=str(ARTIFACTS / f"FAILED-lab-{notebook.stem}.png"), full_page=True)
        raise
    finally:
        page.close()
        _shutdown_kernels(url, token)


# Issue #10 (a page stuck at "Executing N of M") came from widgets drawing with
# `with output:`; tests/test_widgets_voila.py checks the cause without a browser.
@pytest.mark.parametrize("notebook", [nb for nb in NOTEBOOKS if _has_widgets(nb)],
                         ids=lambda p: p.stem)
def test_notebook_presents_in_voila(notebook, workdir, browser):
    with server("voila", workdir, notebook.name) as (url, token):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(f"{url}/?token={token}", timeout=RUN_TIMEOUT_S * 1000)
            page.wait_for_selector(".jupyter-widgets", timeout=60_000)
            assert errors_on_page(page) == [], f"{notebook.name} shows an error in Voila"
            assert page.locator(".jp-InputArea-editor, .CodeMirror, .cm-editor").count() == 0, \
                "Voila should hide the code"
            page.screenshot(path=str(ARTIFACTS / f"voila-{notebook.stem}.png"))
            records = operate_widgets(page, f"voila-{notebook.stem}")
            assert records and all(r["changed_by"] for r in records)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / f"FAILED-voila-{notebook.stem}.png"), full_page=True)
            raise
        finally:
            page.close()
