"""Activation recomputation (notebook 10): bit-exact results, bytes measured per block
equal to Korthikanti et al.'s formula for this model, on one process and real ranks."""
import pytest
import torch

from companion import models
from companion.batch_size.recompute import (ActivationMeter, expected_bytes_per_layer, fit_in_budget,
                                 recompute_run, recompute_table, recomputation)

S, D, H = 32, 32, 4


def _extras(policy, s, b):
    # Beyond the paper's table, each layer keeps two LayerNorms' mean and rstd (fp32,
    # s*b each: 16 s b bytes) and, unless the attention core is recomputed, its causal
    # mask (s*s bools).
    return 16 * s * b + (s * s if policy == "none" else 0) if policy != "full" else 0


@pytest.mark.parametrize("b", [1, 3])
def test_one_process_bit_exact_and_bytes_match_the_formula(b):
    rows = recompute_run(micro_batches=(b,), seq_len=S, d_model=D, n_heads=H, n_layers=2,
                         repeats=1)
    assert [r["policy"] for r in rows] == ["none", "selective", "full"]
    for r in rows:
        assert r["bit_exact"], r["policy"]
        want = expected_bytes_per_layer(S, b, D, H, r["policy"]) + _extras(r["policy"], S, b)
        assert r["stored_per_layer"] == want, r["policy"]
    none, sel, full = rows
    assert full["stored_total"] < sel["stored_total"] < none["stored_total"]
    assert full["peak"] < none["peak"]


def test_on_real_ranks():
    rows = recompute_table(world_size=2, micro_batches=(2,), seq_len=S, d_model=D, n_heads=H,
                           n_layers=2, repeats=1)
    for r in rows:
        assert r["bit_exact"], r["policy"]  # logits, loss and all-reduced gradients
        assert r["stored_per_layer"] == r["expected_per_layer"] + _extras(r["policy"], S, 2)
        assert r["step_ratio"] > 0 and r["predicted_ratio"] >= 1
    full = [r for r in rows if r["policy"] == "full"][0]
    assert full["paper_per_layer"] == 2 * S * 2 * D  # 2 sbh: the input, in 16 bits


def test_recomputation_is_undone_and_matches_plain_forward():
    model = models.TinyTransformer(vocab_size=16, d_model=D, n_heads=H, n_layers=2,
                                   max_seq_len=S)
    x = torch.randint(0, 16, (2, S))
    plain = model(x)
    original = models.attention
    for policy in ("selective", "full"):
        with recomputation(model, policy):
            assert torch.equal(model(x), plain)
        assert models.attention is original
        assert all("forward" not in block.__dict__ for block in model.blocks)
    with pytest.raises(RuntimeError):
        with recomputation(model, "full"):
            raise RuntimeError("boom")
    assert all("forward" not in block.__dict__ for block in model.blocks)


def test_meter_ignores_views_of_existing_tensors():
    w = torch.ones(100, 100)
    with ActivationMeter() as meter:
        view = w.t()
        fresh = w + 1
        assert meter.live_bytes() == fresh.untyped_storage().nbytes()
    del view, fresh
    assert meter.live_bytes() == 0 and meter.peak == 100 * 100 * 4


def test_fit_in_budget_takes_the_largest_micro_batch_that_fits():
    rows = [{"policy": p, "micro_batch": b, "stored_total": b * per, "tokens_per_s": b}
            for p, per in (("none", 10), ("selective", 8), ("full", 1)) for b in (1, 2, 4, 8)]
    got = fit_in_budget(rows, 20)
    assert got["none"]["micro_batch"] == 2 and got["selective"]["micro_batch"] == 2
    assert got["full"]["micro_batch"] == 8
    assert fit_in_budget(rows, 5)["none"] is None
