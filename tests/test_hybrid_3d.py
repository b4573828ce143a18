"""The 8-rank DP2 x TP2 x PP2 run and the 4-rank EP2 x DP2 MoE run equal single-process
training, and every byte they move is predicted exactly: by the planner for the 3D run,
by the closed form of the MoE all-to-all for the EP run (notebook 12)."""
from __future__ import annotations

import itertools

import pytest
import torch

from companion import hybrid, launch
from companion.planner import comm_bytes_per_step

STEPS, BATCH, MICRO = 2, 8, 2


@pytest.fixture(scope="module")
def megatron_1f1b():
    return launch(hybrid.train_dp_tp_pp, world_size=8, steps=STEPS, batch=BATCH,
                  microbatches=MICRO)


@pytest.fixture(scope="module")
def dp_outer_gpipe():
    return launch(hybrid.train_dp_tp_pp, world_size=8, steps=STEPS, batch=BATCH,
                  microbatches=MICRO, schedule="gpipe", order=("dp", "pp", "tp"))


@pytest.fixture(scope="module")
def ep_dp():
    return launch(hybrid.train_ep_dp, world_size=4, steps=2)


def assert_equals_one_process(results):
    for r in results:
        where = f"rank {r['rank']} {r['coords']}"
        # TP all-reduces partial sums and DP (or EP's all-to-all plus DP) adds the
        # replicas' gradients: float32 sums in another order than one process, so
        # values agree to a few float32 ulps of their size (~1e-7 relative), far
        # inside these bounds; a wrong shard or a missing 1/world would be off by O(1).
        for name in r["params"]:
            torch.testing.assert_close(r["grads"][name], r["expected_grads"][name], rtol=1e-4,
                                       atol=1e-6, msg=f"{where} gradient of {name}")
            torch.testing.assert_close(r["params"][name], r["expected"][name], rtol=1e-4,
                                       atol=1e-5, msg=f"{where} parameter {name}")
        assert r["losses"] == pytest.approx(r["ref_losses"], rel=1e-5), where


def test_3d_mesh_places_ranks_as_megatron(megatron_1f1b):
    # Megatron's "tp-cp-ep-dp-pp" (innermost first): TP pairs adjacent, DP next, PP outermost.
    coords = sorted((r["coords"]["dp"], r["coords"]["tp"], r["coords"]["pp"])
                    for r in megatron_1f1b)
    assert coords == sorted(itertools.product(range(2), repeat=3))
    r0 = next(r for r in megatron_1f1b if r["rank"] == 0)
    assert r0["groups"] == {"tp": [0, 1], "dp": [0, 2], "pp": [0, 4]}
    for r in megatron_1f1b:
        c = r["coords"]
        assert r["rank"] == 4 * c["pp"] + 2 * c["dp"] + c["tp"]


@pytest.mark.parametrize("run", ["megatron_1f1b", "dp_outer_gpipe"])
def test_dp_tp_pp_trains_like_one_process(run, request):
    assert_equals_one_process(request.getfixturevalue(run))


@pytest.mark.parametrize("run", ["megatron_1f1b", "dp_outer_gpipe"])
def test_planner_predicts_every_byte_of_the_3d_run(run, request):
    spec = hybrid.transformer_spec(False)
    for r in request.getfixturevalue(run):
        stage = r["coords"]["pp"]
        # The run's own flags: embeddings replicated over TP, no sequence parallelism.
        pred = comm_bytes_per_step(spec, dp=2, tp=2, pp=2, micro_batch=BATCH // (2 * MICRO),
                                   microbatches=MICRO, zero=0, bytes_per_element=4,
                                   vocab_parallel=False, sequence_parallel=False, stage=stage)
        m = r["measured"]
        assert m["tp"] == pred["tp"] > 0
        # pp_boundary counts both directions; each end of the boundary sends one of them.
        assert m["pp"] == pred["pp_boundary"] / 2 > 0
        assert m["dp"] == pred["dp"] > 0
        assert r["predicted"] == m


def test_3d_run_issues_four_tp_all_reduces_per_block_and_micro_batch(megatron_1f1b):
    for r in megatron_1f1b:
        # One block per stage: 2 forward + 2 backward, for each micro-batch and step.
        assert r["tp_calls"] == {"all_reduce": 4 * MICRO * STEPS}


def test_ep_dp_trains_like_one_process(ep_dp):
    assert sorted(r["experts"] for r in ep_dp) == [[0, 1], [0, 1], [2, 3], [2, 3]]
    assert_equals_one_process(ep_dp)


def test_ep_all_to_all_bytes_equal_the_closed_form(ep_dp):
    form = hybrid.ep_all_to_all_bytes(tokens=16, d_model=16, n_experts=4, top_k=2,
                                      capacity_factor=1.25, ep=2)
    assert form["capacity"] == 10  # ceil(1.25 * 16 * 2 / 4)
    assert form["payload"] == 4 * 4 * 10 * 16 * 4
    assert form["wire"] == form["payload"] / 2
    for r in ep_dp:
        assert r["measured"]["all_to_all"] == form["payload"]
        assert r["calls"]["all_to_all"] == form["calls"] * 2  # two steps
        assert r["measured"] == r["predicted"]


def test_ep_bytes_do_not_depend_on_the_routing():
    # The buffers are padded to capacity: dropping tokens or routing them all to one
    # expert moves the same bytes; only more tokens, top-k or slack move more.
    base = dict(tokens=16, d_model=16, n_experts=4, top_k=2, capacity_factor=1.25, ep=2)
    assert hybrid.ep_all_to_all_bytes(**{**base, "top_k": 1})["capacity"] == 5
    assert hybrid.ep_all_to_all_bytes(**{**base, "ep": 4})["payload"] == \
        hybrid.ep_all_to_all_bytes(**base)["payload"]
    assert hybrid.ep_all_to_all_bytes(**{**base, "ep": 4})["wire"] == \
        hybrid.ep_all_to_all_bytes(**base)["payload"] * 3 / 4


def test_predicted_bytes_without_ranks_match_the_run(megatron_1f1b):
    for r in megatron_1f1b:
        assert hybrid.predicted_bytes(dp=2, tp=2, pp=2, batch=BATCH, microbatches=MICRO,
                                      stage=r["coords"]["pp"]) == r["measured"]


@pytest.mark.ci  # two more launches; the main 3D and EP runs above stay in make test
@pytest.mark.parametrize("fn, world, kwargs", [
    (hybrid.train_dp_tp_pp, 4, dict(dp=1, tp=2, pp=2, microbatches=4, batch=8)),
    (hybrid.train_ep_dp, 4, dict(ep=4, dp=1)),
])
def test_an_axis_of_degree_one_moves_no_bytes_and_still_equals_one_process(fn, world, kwargs):
    results = launch(fn, world_size=world, steps=1, **kwargs)
    assert_equals_one_process(results)
    for r in results:
        assert r["measured"] == r["predicted"]
        assert 0 in r["measured"].values()  # the DP axis of one: no gradient all-reduce


def test_3d_run_refuses_a_mesh_that_does_not_fit_before_any_rank_starts():
    with pytest.raises(ValueError, match="world_size=8"):
        launch(hybrid.train_dp_tp_pp, world_size=4)
