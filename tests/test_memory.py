"""Memory and communication formulas (companion.data_parallel.memory), checked against the published
numbers: the ZeRO paper (Rajbhandari et al. 2020, Figure 1 and Table 1), MIT 6.5940 L19
pages 69-73, and Korthikanti et al. 2022, Table 2."""
import math

import pytest
import torch

from companion.collectives.accounting import ring_bytes
from companion.collectives.log import CommLog
from companion.data_parallel import memory as M


def test_sixteen_bytes_per_parameter_and_five_billion_on_80_gb():
    per = M.bytes_per_param()
    assert per == {"params": 2, "grads": 2, "optimizer": 12}
    assert M.zero_memory_per_gpu(1, 1, 0)["total"] == 16
    assert M.max_params_that_fit(80 * M.GB, 1, 0) == 5_000_000_000


def test_gb_is_the_course_unit():
    from companion import units

    assert M.GB is units.GB and units.GB == 10**9  # decimal, as the ZeRO paper and L19 use


def test_zero_paper_figure_1_n64_for_7_5b():
    rows = [round(M.zero_memory_per_gpu(7.5e9, 64, s)["total"] / M.GB, 1) for s in range(4)]
    assert rows == [120.0, 31.4, 16.6, 1.9]


@pytest.mark.parametrize("n, expected", [(1, [120, 120, 120, 120]), (4, [120, 52.5, 41.3, 30]),
                                         (16, [120, 35.6, 21.6, 7.5]),
                                         (64, [120, 31.4, 16.6, 1.88]),
                                         (256, [120, 30.4, 15.4, 0.47]),
                                         (1024, [120, 30.1, 15.1, 0.12])])
def test_zero_paper_table_1_for_7_5b(n, expected):
    got = [M.zero_memory_per_gpu(7.5e9, n, s)["total"] / M.GB for s in range(4)]
    for g, e in zip(got, expected):
        # the paper prints 3 significant digits (rounded), hence the half-unit tolerance
        assert g == pytest.approx(e, abs=0.051 if e >= 1 else 0.0051)


def test_stage_components_and_precisions():
    d = M.zero_memory_per_gpu(1000, 4, 2)
    assert d == {"params": 2000, "grads": 500, "optimizer": 3000, "total": 5500}
    assert M.bytes_per_param("fp32", "adamw") == {"params": 4, "grads": 4, "optimizer": 8}
    assert M.bytes_per_param("bf16", "adam") == {"params": 2, "grads": 2, "optimizer": 4}
    assert M.bytes_per_param("mixed", "sgd_momentum")["optimizer"] == 8
    assert M.bytes_per_param("fp32", "sgd")["optimizer"] == 0
    assert M.zero_memory_per_gpu(10, 2, 3, optimizer_bytes=0)["total"] == 20
    assert M.max_params_that_fit(80 * M.GB, 64, 3) == 320_000_000_000


def test_bad_inputs_raise_value_errors_that_name_the_fix():
    with pytest.raises(ValueError, match="stage"):
        M.zero_memory_per_gpu(10, 2, 4)
    with pytest.raises(ValueError, match="num_params"):
        M.zero_memory_per_gpu(-1, 2, 1)
    with pytest.raises(ValueError, match="world_size"):
        M.zero_memory_per_gpu(10, 0, 1)
    with pytest.raises(ValueError, match="precision"):
        M.bytes_per_param("fp8")
    with pytest.raises(ValueError, match="divisible"):
        M.activation_memory_per_layer(128, 1, 100, 3)
    with pytest.raises(ValueError, match="recompute"):
        M.activation_memory_per_layer(128, 1, 64, 4, recompute="some")
    with pytest.raises(ValueError, match="seq_len"):
        M.activation_memory_per_layer(0, 1, 64, 4)


def test_activation_memory_korthikanti_table_2():
    s, b, h, a, t = 2048, 1, 12288, 96, 8  # GPT-3 175B's layer, the paper's running example
    sbh = s * b * h
    att = 5 * a * s / h
    assert att == 80  # the paper: for GPT-3, 5as/h = 80, more than the 34 of the rest
    f = M.activation_memory_per_layer
    assert f(s, b, h, a) == sbh * (34 + att)
    assert f(s, b, h, a, tp=t) == sbh * (10 + 24 / t + att / t)
    assert f(s, b, h, a, tp=t, sequence_parallel=True) == sbh / t * (34 + att)
    assert f(s, b, h, a, tp=t, recompute="selective") == sbh * (10 + 24 / t)
    assert f(s, b, h, a, tp=t, sequence_parallel=True, recompute="selective") == sbh * 34 / t
    assert f(s, b, h, a, tp=t, recompute="full") == 2 * sbh
    # with SP the layer's input is the sequence shard, as the planner keeps it
    assert f(s, b, h, a, tp=t, sequence_parallel=True, recompute="full") == 2 * sbh / t
    assert f(s, b, h, a, tp=1, sequence_parallel=True) == f(s, b, h, a)


def test_communication_volume_2_2_2_3():
    for n in (2, 4, 64):
        vols = [M.communication_volume(1000, n, s, bytes_per_element=2) for s in range(4)]
        assert [v["multiple"] for v in vols] == [2, 2, 2, 3]
        unit = 2000 * (n - 1) / n
        assert [v["total"] / unit for v in vols] == pytest.approx([2, 2, 2, 3])
        # "x the parameter bytes" is the exact ratio: 1.5x for DDP on 4 ranks
        assert [v["times_params"] for v in vols] == pytest.approx(
            [m * (n - 1) / n for m in (2, 2, 2, 3)])


def test_ledger_and_held_bytes():
    ledger = CommLog(4)  # what DDP, ZeRO and FSDP own as .ledger
    ledger.record("all_reduce", 400)
    ledger.record("broadcast", 400)
    assert ledger.bytes_sent() == 600 and ledger.bytes_sent(include_broadcast=True) == 1000
    assert ledger.bytes(kind="all_reduce", wire=False) == 400 and len(ledger) == 2
    assert ledger.counts() == {"all_reduce": 1, "broadcast": 1}
    ledger.reset()
    assert ledger.bytes_sent() == 0 and len(ledger) == 0
    full = torch.zeros(100)
    view = full[10:20]
    assert M.held_bytes([full, view, torch.zeros(5)]) == 420
    freed = torch.zeros(8)
    freed.untyped_storage().resize_(0)
    assert M.held_bytes([freed]) == 0
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(10))])
    opt.param_groups[0]["params"][0].grad = torch.ones(10)
    opt.step()
    assert M.held_bytes(M.optimizer_state_tensors(opt)) == 80 + 4  # two moments + step
    assert not math.isnan(ring_bytes("broadcast", 10, 1))


def test_ring_bytes_one_convention_for_every_kind():
    """nbytes is the full buffer: (N-1)/N of it for all-gather, reduce-scatter and
    all-to-all, 2 (N-1)/N for all-reduce, 1x for broadcast and send, 0 on one rank."""
    for kind in ("all_gather", "reduce_scatter", "all_to_all"):
        assert ring_bytes(kind, 1000, 4) == 750
    assert ring_bytes("all_reduce", 1000, 4) == 1500
    assert ring_bytes("broadcast", 1000, 4) == ring_bytes("send", 1000, 2) == 1000
    for kind in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send"):
        assert ring_bytes(kind, 1000, 1) == 0
    assert ring_bytes("all_reduce", 3 * 10**15, 3) == 4 * 10**15  # whole answers stay exact
    # an all-gather's per-rank piece, scaled to the full buffer, sends (N-1) pieces
    assert ring_bytes("all_gather", 250 * 4, 4) == 3 * 250
    for args, name in ((("scatter", 1000, 4), "kind"), (("all_reduce", 1000, 0), "world_size"),
                       (("all_reduce", 1000, 2.0), "world_size"),
                       (("all_reduce", -1, 4), "nbytes"), (("all_reduce", math.nan, 4), "nbytes")):
        with pytest.raises(ValueError, match=name):
            ring_bytes(*args)


def test_presets_reproduce_published_parameter_counts():
    counts = {name: M.transformer_params(**cfg) for name, cfg in M.MODEL_CONFIGS.items()}
    # Llama 3 model cards: 8,030,261,248 / 70,553,706,496 / 405,853,388,800 parameters
    assert counts["Llama-3 8B"] == 8_030_261_248
    assert counts["Llama-3 70B"] == 70_553_706_496
    assert counts["Llama-3 405B"] == 405_853_388_800
    assert round(counts["GPT-3 175B"] / 1e9) == 175


def _text(box):
    return box.text.value


def test_zero_memory_widget_responds_and_reports_bad_input(capsys):
    import matplotlib

    matplotlib.use("Agg")
    from companion.widgets import zero_memory

    box = zero_memory()
    before = _text(box)
    image = box.image.value
    assert "ZeRO-3 / FSDP: 1.88 GB per GPU" in before and image
    box.gpus.value = 8
    after = _text(box)
    assert after != before and "15.00 GB" in after  # 120 GB / 8 under ZeRO-3
    assert box.image.value != image
    box.preset.value = "Llama-3 70B"
    assert box.params_b.value == pytest.approx(70.554)
    box.gpu.value = "H200 141 GB"
    assert box.gpu_memory_gb.value == 141
    capsys.readouterr()
    box.gpus.value = 0  # the error goes to box.output (printed to stdout outside a kernel)
    assert "Invalid input" in capsys.readouterr().out


def test_activation_memory_widget_responds(capsys):
    import matplotlib

    matplotlib.use("Agg")
    from companion.widgets import activation_memory

    box = activation_memory()
    before = _text(box)
    box.sequence_parallel.value = True
    assert _text(box) != before
    box.recompute.value = "full"
    expected = M.activation_memory_per_layer(2048, 1, 12288, 96, tp=8, sequence_parallel=True,
                                             recompute="full")
    assert f"{expected / M.GB:,.3f} GB per layer" in _text(box)
    capsys.readouterr()
    box.heads.value = -1
    assert "Invalid input" in capsys.readouterr().out


def test_full_recomputation_agrees_with_the_planner_under_sequence_parallelism():
    from companion.planner import MODELS
    from companion.planner.memory_model import block_activation_bytes

    spec = MODELS["Llama-3 70B"]
    for t in (1, 2, 8):
        textbook = M.activation_memory_per_layer(spec.seq_len, 1, spec.hidden, spec.heads,
                                                 tp=t, sequence_parallel=True, recompute="full")
        assert textbook == block_activation_bytes(spec, spec.seq_len, 1, tp=t, recompute="full")
