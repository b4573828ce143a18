"""Notebook 10's roofline explorer: its numbers equal companion.roofline's, and its
controls keep working when moved quickly in a real kernel (as tests/test_widgets_in_kernel.py)."""
from __future__ import annotations

import pytest

from companion import hardware, roofline
from companion.widgets import roofline_explorer


def test_explorer_numbers_are_the_roofline_rules():
    box = roofline_explorer("Llama-3 70B", "H100", 128, 2 ** 20, measured_point=(2.0, 0.4),
                            planner_choice=dict(model="Llama-3 70B", chip="H100", devices=128,
                                                batch_tokens=2 ** 20, x=32, y=4))
    v = box.values
    assert v["tokens_per_device"] == 2 ** 20 / 128 and (v["x"], v["y"]) == (128, 1)
    assert v["critical_tokens"] == roofline.dp_critical_tokens(
        hardware.accelerator("H100").flops, roofline.collective_bandwidth("H100", True))
    # On the cluster's real links (roofline.fsdp_tp_bandwidths) TP inside a node does not
    # shorten FSDP's time across nodes, so the least communication is pure FSDP; the
    # one-bandwidth rule would have said X = 64, Y = 2.
    assert v["best"] == (128, 1) != roofline.fsdp_tp_best_degrees(2 ** 20, 28_672, 128)
    assert v["bound"] == "compute"                 # 8,192 tokens per GPU > 2,473: FSDP alone hides
    box.batch.value = 2 ** 17                       # 1,024 per GPU: under the line
    assert box.values["bound"] == "communication"
    box.fsdp.value = 16
    assert (box.values["x"], box.values["y"]) == (16, 8) and "X = 16, Y = 8" in box.text.value
    box.devices.value = 8                           # the FSDP options follow the cluster
    assert box.fsdp.options == (1, 2, 4, 8) and box.values["x"] * box.values["y"] == 8


@pytest.mark.parametrize("kwargs", [dict(model="GPT-4"), dict(devices=100),
                                    dict(batch_tokens=0), dict(measured_point=(1.0,))])
def test_explorer_refuses_bad_input(kwargs):
    with pytest.raises(ValueError):
        roofline_explorer(**kwargs)


def test_rapid_updates_raise_nothing_in_the_kernel():
    from test_widgets_in_kernel import Kernel
    k = Kernel()
    try:
        made = k.run("%matplotlib inline\nimport companion.widgets as w\n"
                     "box = w.roofline_explorer()\nprint(box.fsdp.comm.comm_id)")
        assert made["errors"] == [], made["errors"]
        values = [9, 6, 3, 10, 5] * 2              # a dropdown syncs its index; 5 is X = 32
        k.move(made["stdout"].split()[-1], values, "index")
        seen = k.collect(quiet_s=2.0, timeout=120)
        final = k.run("print(box.fsdp.value, box.values['x'])")
        assert seen["errors"] + final["errors"] == []
        assert final["stdout"].split() == ["32", "32"]
    finally:
        k.close()
