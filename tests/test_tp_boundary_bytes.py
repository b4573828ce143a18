"""A pipeline boundary carries b*s*h per micro-batch; TP all-reduces it 4 times per block.

Measured on real gloo ranks (companion.tensor_parallel.boundary_bytes), for the same blocks.
"""
from __future__ import annotations

import pytest

import companion
from companion.tensor_parallel.boundary_bytes import pp_vs_tp_bytes, reference_loss


@pytest.mark.parametrize("ranks", [2, 4])
def test_pipeline_sends_far_less_than_tensor_parallelism(ranks):
    layers, m = 4, 4
    res = companion.launch(pp_vs_tp_bytes, world_size=ranks, layers=layers, microbatches=m,
                           timeout=120)
    act = res[0]["activation_bytes"]  # b*s*h*4 bytes, the whole batch
    for r in res:
        s = r["rank"]
        # forward over the boundary below, gradient back over the one above: each carries
        # the whole batch's activation once, split into m messages
        boundaries = (s < ranks - 1) + (s > 0)
        assert r["pp"]["sent_bytes"] == boundaries * act
        assert r["pp"]["messages"] == boundaries * m
        # TP: 2 all-reduces forward + 2 backward per block, each 2(n-1)/n of [b, s, h]
        assert r["tp"]["counts"] == {"all_reduce": 4 * layers}
        assert r["tp"]["sent_bytes"] == pytest.approx(4 * layers * act * 2 * (ranks - 1) / ranks)
    ref = reference_loss(layers=layers)
    # the summation order differs (per micro-batch sums; all-reduced partial products),
    # so equal to float32 rounding only
    assert res[-1]["pp"]["loss"] == pytest.approx(ref, rel=1e-5)
    assert res[0]["tp"]["loss"] == pytest.approx(ref, rel=1e-5)


def test_refused_before_ranks_start():
    with pytest.raises(ValueError, match="layers=3"):
        companion.launch(pp_vs_tp_bytes, world_size=2, layers=3)
    with pytest.raises(ValueError, match="microbatches=3"):
        companion.launch(pp_vs_tp_bytes, world_size=2, microbatches=3)
