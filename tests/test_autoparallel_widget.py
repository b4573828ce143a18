"""Notebook 12's 5D planner widget: its ranking is the planner's, it shows the CP and EP
axes moving, and its controls keep working when moved quickly in a real kernel (as
tests/test_widgets_in_kernel.py)."""
from __future__ import annotations

import dataclasses

import matplotlib

from companion.planner import CLUSTERS, MODELS
from companion.widgets import autoparallel_planner, search_5d

matplotlib.use("Agg")


def test_the_widget_ranks_what_the_planner_ranks():
    box = autoparallel_planner("Llama-3 405B", "Llama-3 scale: 16,384x H100", 2048)
    feasible, _ = search_5d(MODELS["Llama-3 405B"], CLUSTERS["Llama-3 scale: 16,384x H100"],
                            2048, allow_cp=False)
    assert box.best.label() == feasible[0].label()
    assert [p.label() for p in box.last_plans] == [p.label() for p in feasible]
    assert box.best.label() in box.table.value and "Changed" not in box.status.value


def test_long_sequences_bring_context_parallelism_in():
    box = autoparallel_planner("Llama-3 405B", "Llama-3 scale: 16,384x H100", 128, seq_len=131072)
    assert box.best is None or box.best.cp == 1          # CP off: nothing is split by sequence
    box.controls["allow_cp"].value = True
    long = dataclasses.replace(MODELS["Llama-3 405B"], seq_len=131072)
    feasible, _ = search_5d(long, CLUSTERS["Llama-3 scale: 16,384x H100"], 128, allow_cp=True)
    assert box.best.label() == feasible[0].label() and box.best.cp > 1
    assert "CP" in box.status.value and "131,072-token" in box.status.value


def test_a_moe_model_gets_an_expert_axis_and_dualpipe_hides_it():
    box = autoparallel_planner("DeepSeek-V3 671B", "DeepSeek-V3: 2,048x H800", 15360, seq_len=4096)
    assert box.best.ep > 1 and box.best.schedule == "dualpipev"
    assert box.best.times["ep_comm_exposed"] == 0 < box.best.times["ep_comm_total"]
    box.controls["dualpipe"].value = False
    assert box.best.schedule == "1f1b" and "MoE" in box.status.value
    box.controls["model"].value = "Llama-3 70B"           # a dense model: EP gone
    assert box.best.ep == 1 and "EP" in box.status.value   # "Changed: ... EP 32 -> 1"


def test_nothing_fits_says_why():
    box = autoparallel_planner("Llama-3 405B", "1 node, 8x H100", 8)
    assert box.best is None and "Nothing fits" in box.status.value


def test_rapid_updates_raise_nothing_in_the_kernel():
    from test_widgets_in_kernel import Kernel
    k = Kernel()
    try:
        made = k.run("%matplotlib inline\nimport companion.widgets as w\n"
                     "box = w.autoparallel_planner('Llama-3 70B', '16 nodes, 128x H100', 512)\n"
                     "print(box.controls['seq_len'].comm.comm_id)")
        assert made["errors"] == [], made["errors"]
        values = [3, 1, 2, 0, 1]                # a dropdown syncs its index; 1 is 8,192 tokens
        k.move(made["stdout"].split()[-1], values, "index")
        seen = k.collect(quiet_s=2.0, timeout=180)
        final = k.run("print(box.controls['seq_len'].value, box.best.label())")
        assert seen["errors"] + final["errors"] == []
        assert final["stdout"].split()[0] == "8192"
    finally:
        k.close()
