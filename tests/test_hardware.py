"""companion.hardware: one place for accelerator figures, each with unit, basis and source."""
from __future__ import annotations

import dataclasses

import pytest

from companion import hardware
from companion.planner import CLUSTERS, ClusterSpec


def _figures(a):
    return [getattr(a, f.name) for f in dataclasses.fields(a)
            if isinstance(getattr(a, f.name), hardware.Figure)]


@pytest.mark.parametrize("name", sorted(hardware.ACCELERATORS))
def test_every_figure_states_its_unit_basis_and_source(name):
    a = hardware.ACCELERATORS[name]
    for fig in _figures(a):
        assert fig.source.startswith("https://") and fig.unit in ("FLOP/s", "B", "B/s")
        assert fig.basis
    for link in (a.scale_up, a.scale_out):
        assert "per direction" in link.basis and "peak" in link.basis


def test_cs336_900_gb_s_nvlink_is_two_directions_of_450():
    h100 = hardware.accelerator("H100")
    assert h100.scale_up.value == 450e9 and h100.scale_up.bidirectional() == 900e9
    assert hardware.accelerator("A100").scale_up.bidirectional() == 600e9
    assert hardware.accelerator("B200").scale_up.bidirectional() == 1.8e12
    assert hardware.accelerator("TPU v5p").scale_up.bidirectional() == 1.2e12
    # A DGX H100 node egresses 8 x 400 Gb/s = 400 GB/s (the scaling book's W_node).
    assert h100.per_node * h100.scale_out.value == 400e9


def test_dense_peaks_are_half_the_sparse_headlines():
    assert hardware.accelerator("H100").flops == pytest.approx(1979e12 / 2, rel=1e-3)
    assert hardware.accelerator("B200").flops == 72e15 / 8 / 4   # DGX B200: fp8 sparse, 8 GPUs


def test_planner_presets_take_their_numbers_from_hardware():
    for cluster, chip in ((CLUSTERS["16 nodes, 128x H100"], "H100"),
                          (CLUSTERS["128 nodes, 1,024x A100"], "A100")):
        a = hardware.accelerator(chip)
        assert cluster.peak_tflops * 1e12 == a.flops
        assert cluster.intra_bw_gbps * 1e9 == a.scale_up.value
        assert cluster.inter_bw_gbps * 1e9 == a.scale_out.value
        assert cluster.gpus_per_node == a.per_node
    assert ClusterSpec.of("x", "B200", 2).node_egress_gbps == 400


def test_peak_flops_by_year_is_sorted_and_sourced():
    rows = hardware.peak_flops_by_year()
    assert [r[1] for r in rows] == sorted(r[1] for r in rows)
    assert {"V100", "A100", "H100", "B200"} <= {r[0] for r in rows}
    assert all(r[3].startswith("https://") for r in rows)


@pytest.mark.parametrize("bad", [
    lambda: hardware.accelerator("H200"),
    lambda: hardware.Figure(-1.0, "B", "peak", "https://x"),
    lambda: hardware.Figure(1.0, "B", "peak", "a datasheet"),
    lambda: hardware.accelerator("H100").hbm.bidirectional(),
    lambda: ClusterSpec.of("x", "GTX 580", 2),
])
def test_bad_input(bad):
    with pytest.raises(ValueError):
        bad()
