"""A notebook as slides in a real browser (``make slides NB=05``): Voila runs it with the
course's reveal template, every slide and fragment is reached with the Space key, and a
widget on its slide still answers the kernel (a slider dragged, its drawing redrawn).
Notebook 05: it renders in about 15 s and its first widget is a slider (the TP-split
explorer); notebook 03's calculators have text boxes and dropdowns only.

Runs on a copy of ``notebooks/`` with the slide metadata applied by
``python -m companion.tools.slides``, so it checks the tool's output whether or not the
committed notebooks carry it yet (tests/test_slides.py checks that). Skipped where
Chromium or Playwright is missing, like the other browser tests.
"""
from __future__ import annotations

import json
import shutil
import time

import pytest

from companion.tools import slides

from .harness import (ARTIFACTS, CHROMIUM_ARGS, ROOT, KernelWatcher, chromium_path,
                      connection_file, errors_on_page, server)

playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on this machine: `apt-get install chromium` (Debian) "
                             "or set CHROMIUM=/path/to/chromium to run the browser tests")

NOTEBOOK = "05_tensor_parallelism.ipynb"
RENDER_TIMEOUT_S = 300  # Voila runs every cell first, real ranks included
SLIDER_TARGET = "4"     # TP size t=4: divides the toy layer (t=3 or 6 is refused, by design)
MAX_STEPS = 400         # Space presses before giving up: notebook 05 has about 50 steps

# Where the deck is: the visible leaf slide, how many of its fragments are shown, how many
# leaf slides there are, and whether this is the last one.
_POSITION_JS = """() => {
    const leaves = Array.from(document.querySelectorAll('.reveal .slides section'))
        .filter(s => !s.querySelector('section'));
    const here = leaves.findIndex(s => s.classList.contains('present'));
    const slide = leaves[here];
    return {index: here, leaves: leaves.length,
            fragments: slide ? slide.querySelectorAll('.fragment.visible').length : 0,
            has_slider: slide ? !!slide.querySelector('.jp-OutputArea-output .noUi-handle') : false};
}"""
# Tag the top-level output area on the present slide that holds a slider.
_TAG_JS = """() => {
    const slide = Array.from(document.querySelectorAll('.reveal .slides section.present'))
        .filter(s => !s.querySelector('section'))[0];
    const area = Array.from(slide.querySelectorAll('.jp-OutputArea-output'))
        .filter(a => !a.parentElement.closest('.jp-OutputArea-output'))
        .find(a => a.querySelector('.noUi-handle') && !a.querySelector('.companion-prediction'));
    if (area) area.setAttribute('data-slide-widget', '1');
    return !!area;
}"""
_WIDGET = "[data-slide-widget='1']"


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    """A copy of notebooks/ with the slide metadata set."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    target = tmp_path_factory.mktemp("slides") / "notebooks"
    shutil.copytree(ROOT / "notebooks", target)
    assert slides.main([str(target / NOTEBOOK)]) == 0
    return target


def _drag_slider(page, target: str) -> tuple[str, str]:
    """Drag the first slider handle of the tagged widget right, a few pixels at a time,
    until it shows ``target``; its value before and after. A drag, not arrow keys:
    reveal.js takes the arrows for navigation."""
    handle = page.locator(f"{_WIDGET} .noUi-handle").first
    before = handle.get_attribute("aria-valuenow")
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    for dx in range(2, 200, 2):
        page.mouse.move(x + dx, y)
        if float(handle.get_attribute("aria-valuenow")) >= float(target):
            break
    page.mouse.up()
    return before, handle.get_attribute("aria-valuenow")


def test_notebook_presents_as_slides_with_a_live_widget(deck, browser_for_slides, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", slides.voila_env({})["JUPYTER_PATH"])
    name, times, start = f"slides-{NOTEBOOK[:2]}", {}, time.monotonic()
    with server("voila", deck, NOTEBOOK, extra_args=slides.voila_args()) as srv:
        page = browser_for_slides.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(15_000)
        try:
            page.goto(f"{srv.url}/?token={srv.token}", timeout=RENDER_TIMEOUT_S * 1000)
            page.wait_for_selector(".reveal .slides section.present", timeout=60_000)
            page.wait_for_selector(".jupyter-widgets", timeout=RENDER_TIMEOUT_S * 1000, state="attached")
            page.wait_for_function("() => document.querySelector('#rendered_cells') && "
                                   "getComputedStyle(document.querySelector('#rendered_cells')).display !== 'none'",
                                   timeout=RENDER_TIMEOUT_S * 1000)
            times["render_s"] = round(time.monotonic() - start, 1)
            assert errors_on_page(page) == [], f"{NOTEBOOK} shows an error in the slides"
            page.screenshot(path=str(ARTIFACTS / f"{name}-first.png"))
            position = page.evaluate(_POSITION_JS)
            assert position["index"] == 0 and position["leaves"] > 20, position

            visited, operated, steps = {0}, None, 0
            with KernelWatcher(connection_file(srv)) as watcher:
                while steps < MAX_STEPS:
                    if position["has_slider"] and operated is None:
                        assert page.evaluate(_TAG_JS), "a slide reports a slider but none was found"
                        html = page.locator(_WIDGET).inner_html()
                        page.screenshot(path=str(ARTIFACTS / f"{name}-widget-before.png"))
                        before, after = _drag_slider(page, SLIDER_TARGET)
                        deadline = time.monotonic() + 30
                        while time.monotonic() < deadline and page.locator(_WIDGET).inner_html() == html:
                            time.sleep(0.2)
                        watcher.wait_until_quiet()
                        page.screenshot(path=str(ARTIFACTS / f"{name}-widget-after.png"))
                        operated = {"slide": position["index"], "before": before, "after": after,
                                    "redrawn": page.locator(_WIDGET).inner_html() != html,
                                    "refused": [t for t in [page.locator(_WIDGET).inner_text()]
                                                if "Invalid input" in t]}
                        page.locator(".reveal").first.focus()  # give the keys back to reveal
                    previous = position
                    page.keyboard.press("Space")
                    steps += 1
                    deadline = time.monotonic() + 3
                    while time.monotonic() < deadline and (position := page.evaluate(_POSITION_JS)) == previous:
                        time.sleep(0.05)
                    if position == previous:
                        break  # Space no longer moves: the end of the deck
                    visited.add(position["index"])
                kernel_errors = list(watcher.errors)
            times["walk_s"] = round(time.monotonic() - start - times["render_s"], 1)
            page.screenshot(path=str(ARTIFACTS / f"{name}-last.png"))
            (ARTIFACTS / f"{name}.json").write_text(json.dumps(
                {"times": times, "steps": steps, "slides": position["leaves"],
                 "visited": len(visited), "widget": operated}, indent=1))

            assert position["index"] == position["leaves"] - 1, f"stopped before the end: {position}"
            assert visited == set(range(position["leaves"])), \
                f"slides never shown: {sorted(set(range(position['leaves'])) - visited)}"
            assert operated is not None, "no slide with a slider was reached"
            assert operated["after"] != operated["before"], f"the slider did not move: {operated}"
            assert operated["redrawn"], f"moving the slider did not redraw the widget: {operated}"
            assert float(operated["after"]) == float(SLIDER_TARGET), operated
            assert operated["refused"] == [], f"the widget refused t={SLIDER_TARGET}: {operated}"
            assert errors_on_page(page, refusals=False) == [], "the slides show an error"
            assert kernel_errors == [], f"the kernel reported errors: {kernel_errors}"
        except Exception:
            page.screenshot(path=str(ARTIFACTS / f"FAILED-{name}.png"), full_page=True)
            raise
        finally:
            page.close()


@pytest.fixture(scope="module")
def browser_for_slides():
    with playwright.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()
