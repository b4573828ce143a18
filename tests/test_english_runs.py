"""The tool that measures how much English a Chinese-first student reads at run time."""
from __future__ import annotations

import nbformat
import pytest

from companion.tools.english_runs import english_runs, measure, visible_texts


def test_the_detector_counts_english_words_and_leaves_code_and_names():
    # a name inside an English sentence is still an English sentence
    assert english_runs("the FSDP group waits on the network") == ["the group waits on the network"]
    assert english_runs("每个 rank 的 `all_reduce` 调用了 2 次；Llama-3 70B on H100") == []
    assert english_runs("x = torch.zeros(3) is a tensor") == []   # two words: not a run
    assert english_runs("rank 0: sent 3 messages over the link") == ["messages over the link"]


def test_visible_texts_reads_outputs_and_widget_state():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x")])
    nb.cells[0].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="printed for the student\n"),
        nbformat.v4.new_output("display_data", data={"text/html": "<b>shown as html</b>",
                                                    "text/plain": "ignored repr"})]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {
        "a": {"model_name": "DropdownModel", "state": {"description": "pick a size",
                                                       "_options_labels": ["small one"]}},
        "b": {"model_name": "HTMLModel", "state": {"value": "<i>a widget says this</i>"}}}}}
    texts = visible_texts(nb)
    assert "printed for the student\n" in texts and " shown as html " in texts
    assert "pick a size" in texts and "small one" in texts and " a widget says this " in texts
    assert "ignored repr" not in texts


@pytest.mark.ci   # starts a kernel (several seconds on 2 cores)
def test_scripts_and_styles_in_html_are_not_read():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x")])
    animation = ("<script>\n/* Define the Animation class */\nfunction Animation() {}\n"
                 "</script><style>.anim { color: red } /* old browsers need this */</style>"
                 "<div>动画</div>")
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data",
                                                  data={"text/html": animation})]
    assert [english_runs(t) for t in visible_texts(nb)] == [[]]


def test_measure_executes_in_the_notebooks_folder(tmp_path):
    folder = tmp_path / "zh-CN"
    folder.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from companion.i18n import get_language\n"
        "print(get_language(), 'and then some english words')")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, folder / "probe.ipynb")
    runs = measure(folder / "probe.ipynb", timeout=120)
    assert runs == {"and then some english words": 1}
