"""Batch size as a resource (notebook 10): the DP limit, gradient accumulation with
no_sync on real ranks against the large-batch step, and the critical-batch sweep's shape.
"""
import math

import pytest
import torch

from companion.batch_size import (critical_batch_sweep, dp_limit_table, fit_critical_batch,
                                  gradient_accumulation_demo, max_dp_ranks, sequences_per_step,
                                  split_batch, steps_to_target)
from companion.batch_size import critical


def test_a_batch_of_b_sequences_allows_at_most_b_ranks():
    assert max_dp_ranks(8) == 8
    assert split_batch(64, 8, 2) == {"per_rank": 8, "micro_batch": 2, "accumulation_steps": 4}
    assert split_batch(8, 8) == {"per_rank": 1, "micro_batch": 1, "accumulation_steps": 1}
    with pytest.raises(ValueError, match=r"dp=16 exceeds global_batch=8.*at most 8"):
        split_batch(8, 16)
    with pytest.raises(ValueError, match="micro_batch"):
        split_batch(64, 8, 3)


def test_published_batches_cap_data_parallelism():
    rows = {r["model"]: r for r in dp_limit_table(gpus_per_replica={"Llama-3 405B": 8 * 16})}
    llama = rows["Llama-3 405B"]
    assert llama["sequences"] == 2048 and llama["max_dp"] == 2048
    assert llama["sequences_per_replica"] == 16  # the paper's "batch size/DP" column
    assert llama["max_gpus"] == 2048 * 128
    gpt3 = rows["GPT-3 175B"]
    assert gpt3["sequences"] == 1562.5 and gpt3["max_dp"] == 1562  # "3.2M" is rounded
    assert sequences_per_step(4 * 2**20, 4096) == 1024


def test_accumulation_with_no_sync_equals_the_large_batch_step():
    # float64: accumulation sums the micro-batch gradients, then the ranks' sums, in
    # another order than one backward over the whole batch, so they agree to rounding
    # (~1e-16 relative; measured 3e-17 absolute on gradients of size ~0.1); 1e-12 leaves
    # room for two SGD steps. The two DDPs reduce in the same order: equal to each other.
    out = gradient_accumulation_demo(world_size=2, global_batch=64, accumulation_steps=4,
                                     steps=2, dtype="float64")
    assert out["micro_batch"] == 8 and out["per_rank"] == 32
    for strategy in ("companion", "companion_sync_every_micro_step", "torch"):
        res = out[strategy]
        assert res["max_param_diff"] < 1e-12, strategy
        assert res["max_grad_diff"] < 1e-12, strategy
        assert res["max_loss_diff"] < 1e-12, strategy
        assert res["ranks_identical"], strategy
    assert out["companion"]["all_reduces_per_step"] == [1, 1]  # one per optimizer step
    assert out["torch"]["all_reduces_per_step"] == [1, 1]
    assert out["companion_sync_every_micro_step"]["all_reduces_per_step"] == [4, 4]


def test_batched_trainer_is_tinymlp():
    from companion.models import TinyMLP

    models = [TinyMLP(hidden=32, seed=s) for s in (0, 1)]
    x = torch.rand(5, 64)
    got = critical._forward(critical._stack(models), x.expand(2, -1, -1))
    for k, m in enumerate(models):
        # baddbmm and addmm may block the sums differently: float32 rounding only
        assert torch.allclose(got[k], m(x), atol=1e-6)


def test_noise_scale_closed_form_equals_per_example_gradients():
    # The closed form (Linear and ReLU stacks) against torch.func's per-example gradients,
    # which a wrapper module forces; both float32 gradients summed in float64: 1e-7 leaves
    # room for float32 rounding (measured: 1e-10 relative)
    from companion.models import TinyMLP

    class Wrapped(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)

    torch.manual_seed(0)
    x, y = torch.randn(60, 6), torch.randint(0, 4, (60,))
    models = [TinyMLP(6, 9, 4, depth=3, seed=2),
              torch.nn.Sequential(torch.nn.Linear(6, 5, bias=False), torch.nn.ReLU(),
                                  torch.nn.Linear(5, 4))]
    for model in models:
        closed = critical.gradient_noise_scale(model, x, y)
        reference = critical.gradient_noise_scale(Wrapped(model), x, y)
        assert closed == pytest.approx(reference, rel=1e-7)


def test_critical_batch_sweep_shows_diminishing_returns():
    result = critical_batch_sweep()  # deterministic: seeds 0 and 1, one thread
    rows = result["rows"]
    steps = [r["steps"] for r in rows]
    samples = [r["samples"] for r in rows]
    assert [r["batch"] for r in rows] == [8, 16, 32, 64, 128, 256, 512, 1024]
    assert all(a > b for a, b in zip(steps, steps[1:])), steps  # more batch, fewer steps
    assert all(a <= b for a, b in zip(samples, samples[1:])), samples  # never fewer samples
    assert rows[1]["steps_ratio"] > 1.7  # small batches: doubling nearly halves the steps
    assert all(r["steps_ratio"] < 1.5 for r in rows[-3:])  # large: it stops paying
    assert samples[-1] > 4 * samples[0]
    fit = result["fit"]
    assert 16 < fit["b_crit"] < 512
    noise = result["noise_scale"]
    # McCandlish et al.: B_crit ~ B_noise, B_simple within an order of magnitude
    assert fit["b_crit"] / 10 < noise["at_target"] < fit["b_crit"] * 10
    assert noise["at_target"] > noise["init"]  # the noise scale grows as the loss falls


def test_fit_recovers_a_known_curve_and_steps_repeat():
    rows = [{"batch": b, "steps": 20 + 2000 / b} for b in (8, 32, 128, 512)]
    fit = fit_critical_batch(rows)
    assert math.isclose(fit["s_min"], 20) and math.isclose(fit["e_min"], 2000)
    assert math.isclose(fit["b_crit"], 100)
    assert steps_to_target(64, 0.03) == steps_to_target(64, 0.03)
