"""A student works through notebook 00's student release in JupyterLab.

In a real browser, on the notebook `make student` writes: run all cells (the exercise
checks say "not implemented"), lock in a prediction with the widget, ask for a hint,
type a wrong answer into the exercise cell and read the feedback naming the cell's
line, then type a right answer and pass. Skipped where chromium or Playwright is missing.
"""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from .harness import ARTIFACTS, CHROMIUM_ARGS, ROOT, chromium_path, server, start_run_all

playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine")

NOTEBOOK = "00_launching_ranks.ipynb"
WRONG = ("def my_average(x):\n"
         "    dist.all_reduce(x)\n"
         "    return x / torch.ones(3)\n")
RIGHT = ("def my_average(x):\n"
         "    total = x.clone()\n"
         "    dist.all_reduce(total)\n"
         "    return total / dist.get_world_size()\n")


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("student") / "notebooks"
    subprocess.run([sys.executable, "-m", "companion.tools.release",
                    str(ROOT / "notebooks"), str(out)], check=True, timeout=120)
    return out


def _wait_for_text(locator, text: str, timeout_s: float = 120.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        shown = locator.inner_text() if locator.count() else ""
        if text in shown:
            return shown
        time.sleep(0.3)
    raise AssertionError(f"{text!r} did not appear; the output shows: {shown!r}")


def _type_into(page, cell, source: str) -> None:
    """Replace a cell's code as a student would, then run it (Shift+Enter)."""
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(source)   # no auto-indent: the text arrives as written
    page.keyboard.press("Shift+Enter")


def test_a_student_works_through_an_exercise(student_dir):
    with server("lab", student_dir) as lab, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(15_000)
        try:
            page.goto(f"{lab.url}/lab/workspaces/student/tree/{NOTEBOOK}?reset&token={lab.token}",
                      timeout=60_000)
            start_run_all(page)
            cells = page.locator(".jp-CodeCell")
            # Pinned by position: a locator by text would lose the cell once it is edited.
            sources = cells.evaluate_all("cs => cs.map(c => c.innerText)")
            stub = cells.nth(next(i for i, t in enumerate(sources) if "def my_average" in t))
            check = cells.nth(next(i for i, t in enumerate(sources)
                                   if "average.check(my_average)" in t))
            # Run All stops at the self-check (it asserts the exercise passed): by then
            # the check cell has said the stub is not implemented.
            _wait_for_text(check.locator(".jp-OutputArea"), "not implemented yet", 400)
            # The failing self-check cancels whatever is queued after it: let Run All end.
            _wait_for_text(page.locator(".jp-CodeCell").last.locator(".jp-OutputArea"),
                           "AssertionError", 400)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                                   timeout=60_000)

            prediction = page.locator(".companion-prediction").first
            if prediction.count():
                prediction.scroll_into_view_if_needed()
                field = prediction.locator("input, select").first
                if prediction.locator("select").count():
                    prediction.locator("select").select_option(index=1)
                else:
                    field.fill("not a number")
                    prediction.locator("button", has_text="Lock in").click()
                    _wait_for_text(prediction, "Invalid input")
                    field.fill("2")
                prediction.locator("button", has_text="Lock in").click()
                _wait_for_text(prediction, "Locked in")

            _type_into(page, stub, "average.hint()")
            _wait_for_text(stub.locator(".jp-OutputArea"), "Hint 1 of")

            _type_into(page, stub, WRONG)
            check.locator(".cm-content").click()
            page.keyboard.press("Shift+Enter")
            shown = _wait_for_text(check.locator(".jp-OutputArea"), "at your line")
            assert "Cell In[" in shown and "return x / torch.ones(3)" in shown, shown

            _type_into(page, stub, RIGHT)
            check.locator(".cm-content").click()
            page.keyboard.press("Shift+Enter")
            _wait_for_text(check.locator(".jp-OutputArea"), "✓ 00.average passed")
            page.screenshot(path=str(ARTIFACTS / "student-00.png"), full_page=True)
        except Exception:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "FAILED-student-00.png"), full_page=True)
            raise
        finally:
            browser.close()
