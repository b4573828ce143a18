"""Load imbalance, auxiliary-loss-free balancing and node-limited dispatch (notebook 06).

Every multi-rank result is compared with a single-process reference: the loads, the
bias, the capacity drops and the dispatched rows bit-exactly (integer counts and moved
data), the dropless output within a tolerance explained below.
"""
from __future__ import annotations

import pytest
import torch

import companion
from companion.collectives import log as comm_log
from companion.sequence_parallel import moe_balance as mb
from companion.sequence_parallel import moe_nodes as mn
from companion.sequence_parallel.moe import route

# float64. The dropless output differs from one process's only in how the GEMMs block
# (an expert multiplies the rows of all senders at once) and in the order of a token's
# two gated contributions: a few ulps. A routing or combine bug gives O(0.1).
TOL = 1e-12


def test_ranks_equal_the_single_process_reference():
    kw = dict(steps=12, gamma=0.01, skew=0.5, tokens=64, d_model=16)
    per_rank = companion.launch(mb.moe_load_balance, world_size=4, d_ff=8, **kw)
    ref = mb.balance_reference(world_size=4, **kw)
    for rank, r in enumerate(per_rank):
        assert r["before"]["load"] == ref["load_before"]
        assert r["after"]["load"] == ref["load_after"]
        assert r["bias"] == ref["bias"] and r["trace"] == ref["trace"]   # bit-exact
        assert r["before"]["dropped"] == ref["dropped_before"][rank]
        assert r["after"]["dropped"] == ref["dropped_after"][rank]
        assert r["before"]["out"] <= TOL and r["after"]["out"] <= TOL
        for phase in ("before", "after"):
            assert sum(r[phase]["rank_load"]) == 4 * 64 * 2        # dropless: all computed
    # The Zipf skew loads rank 0 most; the bias moves load off it.
    before, after = per_rank[0]["before"]["rank_load"], per_rank[0]["after"]["rank_load"]
    assert before[0] == max(before) and mb.load_ratio(after) < mb.load_ratio(before)


def test_bias_only_chooses_the_experts():
    logits = torch.tensor([[2.0, 1.0, 0.0], [0.0, 1.0, 2.0]], dtype=torch.float64)
    plain = route(logits, top_k=1, capacity=2)
    assert [t.tolist() for t in plain] == [t.tolist() for t in route(logits, 1, 2, None)]
    token, expert, _, gate = route(logits, 1, 2, torch.tensor([-1.0, 0.0, 0.0],
                                                              dtype=torch.float64))
    assert expert.tolist() == [1, 2]                     # token 0 pushed off expert 0
    assert torch.equal(gate, logits.softmax(-1)[token, expert])   # unbiased gate
    # top-2: the bias changes which two experts, the gates are their unbiased
    # probabilities renormalised over the two (GShard / Mixtral)
    probs = logits.softmax(-1)
    token, expert, _, gate = route(logits, 2, 2, torch.tensor([0.0, 0.0, 1.0],
                                                              dtype=torch.float64))
    pairs = expert.view(2, -1).t()                       # [token, choice]
    assert pairs[0].tolist() == [2, 0]                   # token 0: expert 2 pulled in
    want = probs.gather(1, pairs)
    assert torch.allclose(gate.view(2, -1).t(), want / want.sum(-1, keepdim=True))


def test_update_bias_and_load_ratio():
    bias = mb.update_bias(torch.zeros(3), torch.tensor([6, 3, 0]), gamma=0.5)
    assert bias.tolist() == [-0.5, 0.0, 0.5]             # over down, mean unchanged, under up
    assert mb.load_ratio([6, 3, 0]) == 2.0 and mb.load_ratio([2, 2]) == 1.0
    offset = mb.zipf_offset(4, 1.0)
    p = offset.exp()
    assert torch.allclose(p * torch.arange(1, 5), p[0].expand(4)) and abs(p.sum() - 1) < 1e-12


def test_node_limited_topk_follows_deepseek_v3():
    # 4 experts on 2 nodes, top-2 limited to 1 node: node scores are top-2 sums,
    # node 0: 0.5 + 0.0, node 1: 0.3 + 0.3. Plain top-2 would take experts 0 and 2.
    scores = torch.tensor([[0.5, 0.0, 0.3, 0.3]])
    assert mn.node_limited_topk(scores, 2, 2, 1).sort().values.tolist() == [[2, 3]]
    assert mn.node_limited_topk(scores, 2, 2, 2).tolist() == scores.topk(2).indices.tolist()
    torch.manual_seed(0)
    s = torch.rand(200, 256)
    idx = mn.node_limited_topk(s, 8, 8, 4)                # DeepSeek-V3's shape
    assert max(len(set((row // 32).tolist())) for row in idx) <= 4
    assert mn.cross_node_rows(idx, 0, 32, dedup=True) <= mn.cross_node_rows(idx, 0, 32, False)


def _v3_gate(scores, topk, n_groups, topk_groups):
    # The group-limited choice of DeepSeek-V3's released router (inference/model.py,
    # Gate.forward, the path with the correction bias): a group's score is the sum of its
    # top 2, the best topk_groups groups are kept, the top-k is taken among their experts.
    grouped = scores.view(scores.shape[0], n_groups, -1)
    keep = grouped.topk(2, dim=-1)[0].sum(dim=-1).topk(topk_groups, dim=-1)[1]
    mask = torch.ones(scores.shape[0], n_groups, dtype=torch.bool).scatter_(1, keep, False)
    return grouped.masked_fill(mask.unsqueeze(-1), float("-inf")).flatten(1).topk(topk, -1)[1]


def test_node_limited_topk_equals_deepseek_v3s_released_gate():
    torch.manual_seed(1)
    s = torch.rand(500, 256).sigmoid()                   # V3: sigmoid affinities
    got = mn.node_limited_topk(s, 8, 8, 4)
    assert torch.equal(got.sort(-1).values, _v3_gate(s, 8, 8, 4).sort(-1).values)


def test_two_hop_dispatch_equals_the_reference_and_counts_exact_bytes():
    per_rank = companion.launch(mn.moe_node_traffic, world_size=4, tokens=24, d_model=8)
    for r in per_rank:
        for key in [k for k in r if isinstance(k, tuple)]:
            assert r[key]["same"], key                    # every arrival, bit-exact
            assert r[key]["inter"] == r[key]["rows"] * r["row_bytes"]
        assert r[("node-limited", True)]["nodes_per_token"] == 1.0
        assert r[("node-limited", True)]["inter"] <= r[("top-k", True)]["inter"] \
            <= r[("top-k", False)]["inter"]


def test_all_to_all_rows_records_exact_bytes_on_one_rank():
    x = torch.arange(6.0).view(3, 2)
    with comm_log.recording() as log:
        out = comm_log.all_to_all_rows(x, [3], [3], label="t")
    assert torch.equal(out, x) and log.bytes(label="t") == 0.0   # nothing leaves the rank
    assert log.bytes(label="t", wire=False) == x.numel() * 4


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="send_counts"):
        comm_log.all_to_all_rows(torch.zeros(3, 2), [2], [3])
    with pytest.raises(ValueError, match="gamma"):
        mb.update_bias(torch.zeros(2), [1, 1], gamma=0)
    with pytest.raises(ValueError, match="load="):
        mb.load_ratio([0, 0])
    with pytest.raises(ValueError, match="top_k=3"):
        mn.node_limited_topk(torch.zeros(1, 4), 3, 2, 1)
    with pytest.raises(ValueError, match="n_experts=6 is not divisible"):
        companion.launch(mb.moe_load_balance, world_size=4, n_experts=6)
    with pytest.raises(ValueError, match="ranks_per_node=3"):
        companion.launch(mn.moe_node_traffic, world_size=4, ranks_per_node=3)
