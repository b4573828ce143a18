"""A student who reads only Chinese works through notebook 00 in JupyterLab, in each edition.

In a real browser, on the student release of ``notebooks/zh-CN/00_launching_ranks.ipynb``
and of ``notebooks/zh-TW/`` (the folder alone makes the package speak its language: no
call): the markdown is Chinese, the
exercise check says "尚未实现" (not implemented), the prediction widget's button reads
"锁定" and refuses a typo in Chinese, a hint starts "提示 1/", a wrong answer names the
student's line in Chinese, a right one passes; in zh-TW every one of these reads in
Traditional characters, as the build converts them. The screenshots show the page as a
reader sees it only where a CJK font is installed (CI installs Debian's fonts-noto-cjk;
without one chromium draws each hanzi as a box). Until the translators' zh-CN files land,
the edition is built here from a stand-in translation of notebook 00 (every markdown
cell prefixed with Chinese), so the machinery is tested either way. Skipped where
chromium or Playwright is missing.
"""
from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest

from companion.tools import i18n_build as build

from companion.tools import drift, zh_tw

from .harness import ARTIFACTS, CHROMIUM_ARGS, ROOT, chromium_path, server, start_run_all
from .test_learning_in_browser import RIGHT, WRONG, _type_into, _wait_for_text

playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine")

NOTEBOOK = "00_launching_ranks.ipynb"
CJK = re.compile(r"[\u4e00-\u9fff]")


def _stand_in_edition(folder):
    english = nbformat.read(ROOT / "notebooks" / NOTEBOOK, as_version=4)
    translation = {"notebook": NOTEBOOK, "exercises": {}, "cells": [
        {"id": c.id, "en_sha": drift.sha(c.source), "zh": "（中文版）\n\n" + c.source}
        for c in english.cells if c.cell_type == "markdown"]}
    nb = build.edition(english, translation, "zh-CN", lambda text: text)
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / NOTEBOOK)


@pytest.fixture(scope="module", params=["zh-CN", "zh-TW"])
def chinese_dir(request, tmp_path_factory):
    edition = request.param
    source = ROOT / "notebooks" / edition
    if not (source / NOTEBOOK).exists():
        if edition == "zh-TW":
            pytest.fail("notebooks/zh-TW is missing: run make translations")
        source = tmp_path_factory.mktemp("edition") / "zh-CN"
        _stand_in_edition(source)
    work = tmp_path_factory.mktemp("student")
    # The release keeps the folder's name: the kernel starts in .../zh-CN and speaks it.
    subprocess.run([sys.executable, "-m", "companion.tools.release", str(source),
                    str(work / edition)], check=True, timeout=120)
    return work, edition


def test_a_chinese_reader_works_through_an_exercise(chinese_dir):
    chinese_dir, edition = chinese_dir
    say = zh_tw.converter() if edition == "zh-TW" else (lambda text: text)
    with server("lab", chinese_dir) as lab, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(15_000)
        try:
            page.goto(f"{lab.url}/lab/workspaces/zh/tree/{edition}/{NOTEBOOK}?reset&token="
                      f"{lab.token}", timeout=60_000)
            start_run_all(page)
            first = page.locator(".jp-MarkdownCell").first.inner_text()
            assert CJK.search(first), f"the first markdown cell is not Chinese: {first[:200]!r}"
            cells = page.locator(".jp-CodeCell")
            sources = cells.evaluate_all("cs => cs.map(c => c.innerText)")
            stub = cells.nth(next(i for i, t in enumerate(sources) if "def my_average" in t))
            check = cells.nth(next(i for i, t in enumerate(sources)
                                   if "average.check(my_average)" in t))
            _wait_for_text(check.locator(".jp-OutputArea"), say("尚未实现"), 400)
            _wait_for_text(page.locator(".jp-CodeCell").last.locator(".jp-OutputArea"),
                           "AssertionError", 400)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                                   timeout=60_000)

            prediction = page.locator(".companion-prediction").first
            prediction.scroll_into_view_if_needed()
            assert say("预测：") in prediction.inner_text()
            button = prediction.locator("button", has_text=say("锁定"))
            if prediction.locator("select").count():
                prediction.locator("select").select_option(index=1)
            else:
                field = prediction.locator("input").first
                field.fill("不是数字")
                button.click()
                _wait_for_text(prediction, say("输入无效"))
                field.fill("2")
            button.click()
            _wait_for_text(prediction, say("已锁定"))

            _type_into(page, stub, "average.hint()")
            _wait_for_text(stub.locator(".jp-OutputArea"), say("提示 1/"))

            _type_into(page, stub, WRONG)
            check.locator(".cm-content").click()
            page.keyboard.press("Shift+Enter")
            shown = _wait_for_text(check.locator(".jp-OutputArea"), say("位于你的代码"))
            assert "Cell In[" in shown and "return x / torch.ones(3)" in shown, shown
            assert say("抛出了异常") in shown, shown

            _type_into(page, stub, RIGHT)
            check.locator(".cm-content").click()
            page.keyboard.press("Shift+Enter")
            _wait_for_text(check.locator(".jp-OutputArea"), say("✓ 00.average 在"))
            page.screenshot(path=str(ARTIFACTS / f"chinese-{edition}-00.png"), full_page=True)
        except Exception:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"FAILED-chinese-{edition}-00.png"),
                            full_page=True)
            raise
        finally:
            browser.close()
