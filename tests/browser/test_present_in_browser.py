"""`make present` and `make site` in a real browser.

* The landing page that `make present` serves lists every notebook with its lectures and
  learning goals; clicking one opens it as a dashboard (code hidden), pre-heated as
  `make present` does, and its widgets respond.
* A page of the static site (`make site`), opened from disk as a student would, shows
  its plots and draws its widgets from the embedded state: the slider moves by keyboard,
  and Play drives it (a link that lives in the page, no kernel).

Skipped, with the reason, where chromium or Playwright is missing (see
test_widgets_in_browser.py), and the static-site check where npm cannot fetch the widget
renderer.
"""
from __future__ import annotations

import re
import time

import pytest

from companion.tools.present import build_site, course_entries, prepare_course

from .harness import (ARTIFACTS, CHROMIUM_ARGS, ROOT, chromium_path, errors_on_page,
                      operate_widgets, server)

playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on this machine: `apt-get install chromium` (Debian) "
                             "or set CHROMIUM=/path/to/chromium to run the browser tests")

OPENED = "06"  # one of the fastest notebooks with widgets: pre-heated, then clicked
RUN_TIMEOUT_S = 300
ACTION_TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def browser():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


def _new_page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(ACTION_TIMEOUT_MS)
    return page


def test_landing_page_lists_the_course_and_opens_a_dashboard(tmp_path, browser):
    entries = course_entries(ROOT / "notebooks")
    landing = prepare_course(tmp_path, ROOT / "notebooks", preheat=OPENED)
    start = time.monotonic()
    with server("voila", tmp_path, str(tmp_path)) as srv:
        page = _new_page(browser)
        try:
            page.goto(f"{srv.url}/voila/render/{landing.name}?token={srv.token}",
                      timeout=120_000)
            page.wait_for_selector(f"a[href='{entries[0].path.name}']", timeout=60_000)
            text = page.inner_text("body")
            for e in entries:
                assert page.locator(f"a[href='{e.path.name}']").count() == 1, e.path.name
                assert e.title in text and e.lectures in text, e.path.name
                for goal in e.goals:  # Markdown rendered: compare the words only
                    words = re.sub(r"[*`$_]", "", goal).split()[:4]
                    assert all(w in text for w in words), (e.path.name, goal)
            page.screenshot(path=str(ARTIFACTS / "present-landing.png"), full_page=True)
            target = next(e for e in entries if e.number == OPENED)
            page.locator(f"a[href='{target.path.name}']").click()
            page.wait_for_url(f"**/voila/render/{target.path.name}*", timeout=60_000,
                              wait_until="commit")
            # What the audience sees while the warm-up run is still going (a record, not
            # a check: how far the run has got depends on the machine).
            time.sleep(2)
            page.screenshot(path=str(ARTIFACTS / f"present-{target.stem}-opening.png"))
            print("while opening:", page.evaluate("() => document.body.innerText.slice(0, 300)"))
            page.wait_for_selector(".jupyter-widgets .noUi-handle, .jupyter-widgets select",
                                   timeout=RUN_TIMEOUT_S * 1000)
            opened_s = time.monotonic() - start
            assert target.title in page.inner_text("body")
            assert page.locator(".jp-InputArea-editor, .CodeMirror, .cm-editor").count() == 0, \
                "the dashboard should hide the code"
            assert errors_on_page(page) == [], f"{target.path.name} shows an error"
            records = operate_widgets(page, f"present-{target.stem}")
            dead = [r["index"] for r in records if r["changed_by"] is None]
            assert records and not dead, f"widgets {dead} did not respond on the dashboard"
            assert not [r for r in records if r["errors"]], "a widget shows an error"
            page.screenshot(path=str(ARTIFACTS / f"present-{target.stem}.png"))
            print(f"landing -> {target.path.name} rendered {opened_s:.0f} s after start")
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "FAILED-present-landing.png"), full_page=True)
            raise
        finally:
            page.close()


def test_static_site_page_shows_plots_and_moves_its_slider(tmp_path, browser):
    out = tmp_path / "site"
    build_site(out, ROOT / "notebooks", only=[OPENED], log=print)
    if not (out / "_static" / "embed-amd.js").exists():
        pytest.skip("npm could not fetch the widget renderer; the pages would need the CDN")
    page = _new_page(browser)
    try:
        page.goto((out / "index.html").as_uri())
        page.locator("a", has_text=f"{OPENED} · ").click()
        page.wait_for_selector(".jupyter-widgets .noUi-handle", timeout=60_000)
        plots = page.locator("img[src^='data:image/png']")
        assert plots.count() > 0 and plots.first.evaluate("i => i.naturalWidth") > 0
        player = page.locator(".widget-hbox", has=page.locator(".widget-play")).first
        player.scroll_into_view_if_needed()
        handle = player.locator(".noUi-handle").first
        value = lambda: float(handle.get_attribute("aria-valuenow"))  # noqa: E731
        low, high = float(handle.get_attribute("aria-valuemin")), float(handle.get_attribute("aria-valuemax"))
        assert high > low, "the player has a single frame"
        before = value()
        handle.focus()
        for _ in range(2):
            page.keyboard.press("ArrowRight" if before < high else "ArrowLeft")
        assert value() != before, "the embedded slider did not move"
        handle.focus()
        page.keyboard.press("Home")
        assert value() == low
        player.locator(".widget-play button").first.click()   # Play, linked in the page
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and value() == low:
            time.sleep(0.1)
        assert value() != low, "Play did not drive the slider"
        # The Play button's icons come from the fonts copied beside the pages, not a CDN.
        page.wait_for_function("() => [...document.fonts].some(f => f.family.includes("
                               "'Font Awesome') && f.status === 'loaded')", timeout=10_000)
        page.screenshot(path=str(ARTIFACTS / f"site-{OPENED}.png"))
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "FAILED-site.png"), full_page=True)
        raise
    finally:
        page.close()
