"""Expert-parallel MoE equals the single-process MoE (notebook 06)."""
from __future__ import annotations

import pytest
import torch

import companion
from companion.sequence_parallel.moe import MoE, compare_moe, route

# float64. At world size 1 the EP layer does exactly the reference's arithmetic
# (bit-exact). With P ranks an expert multiplies the P senders' capacity buffers in
# one GEMM instead of P separate ones (another blocking, another summation order), and
# the router/expert gradients add the ranks' contributions in another order: a few
# ulps (measured <= 3e-15). A routing or combine bug gives O(0.1) errors.
TOL = 1e-12


def _both_k():
    return {k: compare_moe(top_k=k) for k in (1, 2)}


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_expert_parallel_equals_single_process(world_size):
    for per_rank in companion.launch(_both_k, world_size=world_size):
        for k, r in per_rank.items():
            keys = ("out", "x_grad", "router_grad", "expert_grad")
            if world_size == 1:
                assert all(r[key] == 0.0 for key in keys), (k, r)
            else:
                assert all(r[key] <= TOL for key in keys), (k, r)
            # Dispatch + combine: one all-to-all each way, mirrored in backward.
            assert r["forward"] == {"all_to_all": 2} and r["backward"] == {"all_to_all": 2}
            assert r["dropped"] == r["ref_dropped"]
            # Each rank stores the router and only its own E/P experts (d=16, d_ff=32).
            expert = 16 * 32 + 32 + 32 * 16 + 16
            assert r["local_params"] == 16 * 4 + (4 // world_size) * expert


def test_route_capacity_and_priority():
    logits = torch.tensor([[5.0, 0, 1], [4.0, 1, 0], [3.0, 0, 1], [0, 2.0, 1]])
    token, expert, slot, gate = route(logits, top_k=1, capacity=2)
    # Expert 0 is the first choice of tokens 0-2 but takes only 2: token 2 is dropped.
    assert token.tolist() == [0, 1, 3] and expert.tolist() == [0, 0, 1]
    assert slot.tolist() == [0, 1, 0]
    token, expert, slot, gate = route(logits, top_k=2, capacity=2)
    # All first choices are served before any second choice; then expert 2 is full
    # when token 3's second choice arrives.
    assert token.tolist() == [0, 1, 3, 0, 1, 2] and expert.tolist() == [0, 0, 1, 2, 1, 2]
    # Top-2 gates are renormalised: a token with both choices kept sums to 1.
    per_token = torch.zeros(4).index_add(0, token, gate)
    assert torch.allclose(per_token[:2], torch.ones(2))


def test_bad_settings_raise_value_error():
    with pytest.raises(ValueError, match="top_k=5"):
        route(torch.zeros(3, 4), top_k=5, capacity=1)
    with pytest.raises(ValueError, match="capacity_factor"):
        MoE(capacity_factor=0)(torch.zeros(1, 2, 16))
    # Refused in the parent by compare_moe's preflight check, before any rank starts.
    with pytest.raises(ValueError, match="n_experts=6 is not divisible"):
        companion.launch(compare_moe, world_size=4, n_experts=6)
