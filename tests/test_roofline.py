"""companion.roofline against the published worked examples, on the sources' own constants.

Sources: the scaling book's training chapter (TPU v5p; BOOK_T) and GPU chapter (H100;
BOOK_G), https://jax-ml.github.io/scaling-book/ , and the Ultra-Scale Playbook's appendix
A3 (PLAYBOOK). Each test names the sentence it reproduces.
"""
from __future__ import annotations

import math

import pytest

from companion import hardware, planner, roofline as rl

BOOK_T = "https://jax-ml.github.io/scaling-book/training/"
BOOK_G = "https://jax-ml.github.io/scaling-book/gpus/"
V5P_C, V5P_W = 4.59e14, 1.8e11      # BOOK_T: "C=4.6e14 and W=2 * 9e10 ... over ICI"
H100_C = 990e12                     # BOOK_G rounds the H100's 989 TFLOP/s to 990e12


def test_dp_critical_tokens_tpu_v5p_scaling_book():
    # BOOK_T: "our batch size per chip must be at least 2,550"; three axes: "BS=850".
    assert rl.dp_critical_tokens(V5P_C, V5P_W) == pytest.approx(2550, rel=2e-3)
    assert rl.dp_critical_tokens(V5P_C, V5P_W, mx=3) == pytest.approx(850, rel=2e-3)
    # BOOK_T: LLaMA-3 70B, 16M tokens "over roughly 16e6 / (2550 / 3) = 18,823 chips";
    # DeepSeek-V2's 40M tokens: "roughly 47,000 chips".
    assert 16e6 / rl.dp_critical_tokens(4.6e14, V5P_W, mx=3) == pytest.approx(18_823, rel=3e-3)
    assert 40e6 / rl.dp_critical_tokens(V5P_C, V5P_W, mx=3) == pytest.approx(47_000, rel=0.01)


def test_dp_critical_tokens_h100_scaling_book():
    # BOOK_G: "Within a node ... > 990e12 / 450e9 = 2200"; beyond: "990e12 / 400e9 = 2475".
    assert rl.dp_critical_tokens(H100_C, 450e9) == pytest.approx(2200)
    assert rl.dp_critical_tokens(H100_C, 400e9) == pytest.approx(2475)
    # The same from companion.hardware's figures (989 TFLOP/s, NVLink and node egress).
    h100 = hardware.accelerator("H100")
    assert rl.dp_critical_tokens(h100.flops, rl.collective_bandwidth("H100", False)) == \
        pytest.approx(2200, rel=2e-3)
    assert rl.dp_critical_tokens(h100.flops, rl.collective_bandwidth("H100", True)) == \
        pytest.approx(2475, rel=2e-3)
    # BOOK_G: DeepSeek v3 on H800s (300 GB/s): "990e12 / 300e9 = 3300"; MoE with E/k = 32:
    # "32 * 2475 = 79,200"; 2-node DP: "B / N > 1237, half the above value".
    assert rl.dp_critical_tokens(H100_C, 300e9) == pytest.approx(3300)
    assert rl.dp_critical_tokens(H100_C, 400e9, moe_ratio=128 / 4) == pytest.approx(79_200)
    assert rl.dp_critical_tokens(H100_C, 400e9, ring_size=2) == pytest.approx(1237, abs=1)


def test_tp_max_degree_scaling_book():
    # BOOK_T: "we can only do tensor parallelism up to Y < F / 2550"; "The required F for
    # 8 way model sharding is 20k"; Gemma 7B, F ~ 50k: "communication bound with 19-way".
    assert rl.tp_max_degree(20_400, V5P_C, V5P_W) == pytest.approx(8, rel=2e-3)
    assert math.floor(rl.tp_max_degree(50_000, V5P_C, V5P_W)) == 19
    # BOOK_G: "F / 2200 ... or F / 2475 beyond a node. For F=28000 like LLaMA-3, this is
    # about 11-way TP".
    assert rl.tp_max_degree(28_000, H100_C, 400e9) == pytest.approx(11.3, abs=0.05)
    assert rl.tp_max_degree(28_000, H100_C, 450e9) == pytest.approx(12.7, abs=0.05)
    # M_Y axes multiply the bound (BOOK_T: "Y < M_Y * F / 2550").
    assert rl.tp_max_degree(20_400, V5P_C, V5P_W, my=2) == pytest.approx(16, rel=2e-3)


def test_fsdp_tp_split_scaling_book():
    # BOOK_T: "N = 64 (a 4x4x4 array), B=48,000, F=32768, gives roughly X ~ 13.9. So we
    # would choose X to be 16 and Y to be 4" (M_X = 2, M_Y = 1, as for a 3D mesh).
    x = rl.fsdp_tp_split(48_000, 32_768, 64, mx=2, my=1)
    assert x == pytest.approx(math.sqrt(187.5)) and x == pytest.approx(13.9, rel=0.02)
    assert rl.fsdp_tp_best_degrees(48_000, 32_768, 64, mx=2, my=1) == (16, 4)
    # BOOK_T: "F=32,768, alpha=2550, and M_X M_Y=2 ... gives roughly B/N > 99".
    assert rl.fsdp_tp_min_tokens(V5P_C, V5P_W, 32_768, mx=2, my=1) == pytest.approx(99, rel=0.01)
    # At the optimum the two communication times are equal (the derivation's premise).
    t = rl.layer_times("fsdp_tp", 48_000, 8192, 32_768, V5P_C, V5P_W, x=16, y=4, mx=2)
    assert t["fsdp_comm"] == pytest.approx(12 * 8192 * 32_768 / 4 / (V5P_W * 2))


def test_fsdp_tp_split_is_clipped_and_its_bound_is_exact():
    assert rl.fsdp_tp_split(1e9, 1024, 8) == 8.0 and rl.fsdp_tp_split(1.0, 10**6, 8) == 1.0
    # Exactly at fsdp_tp_min_tokens per device, the best split's comm equals its compute.
    n, f, d, c, w = 256, 28_672, 8192, H100_C, 450e9
    b = rl.fsdp_tp_min_tokens(c, w, f) * n
    x = rl.fsdp_tp_split(b, f, n)
    fsdp = 4 * d * f * x / (n * w)
    assert fsdp == pytest.approx(4 * b * d * f / (n * c))


def test_layer_times_reduce_to_the_rules():
    c, w, d, f = H100_C, 450e9, 8192, 28_672
    per_dev = rl.dp_critical_tokens(c, w)
    for strategy in ("dp", "fsdp"):
        at = rl.layer_times(strategy, per_dev * 64, d, f, c, w, x=64)
        assert at["compute"] == pytest.approx(at["comm"] * (1.5 if strategy == "dp" else 1))
        assert at["bound"] == "compute"
        assert rl.layer_times(strategy, per_dev * 63, d, f, c, w, x=64)["bound"] == "communication"
    t = rl.layer_times("tp", 1e6, d, f, c, w, y=int(rl.tp_max_degree(f, c, w)))
    assert t["bound"] == "compute"
    assert rl.layer_times("tp", 1e6, d, f, c, w, y=16)["bound"] == "communication"


def test_pp_scaling_book_and_playbook():
    # BOOK_G: "T_total PP comms = 2BD / (W N_MB) * (N_MB + N_stages - 2)".
    assert rl.pp_comm_time(1e6, 8192, 50e9, 16, 8) == pytest.approx(2e6 * 8192 / (50e9 * 16) * 22)
    # PLAYBOOK A3: t_comm / t_compute = peak_flops / (32 h L peak_bw), with one byte per
    # element and 16 h^2 parameters per layer.
    h, layers, c, w = 8192, 4, H100_C, 50e9
    assert rl.pp_comm_ratio(h, 16 * h * h, layers, c, w, bytes_per_element=1) == \
        pytest.approx(c / (32 * h * layers * w))
    assert rl.pp_comm_ratio(h, 16 * h * h, layers, c, w) == pytest.approx(2 * c / (32 * h * layers * w))


def test_ep_scaling_book():
    # BOOK_G: "T_comms = 4 B D (Z-8) / (W Z) min(8k/Z, 1)"; compute-bound when
    # "K > Z/8 with F > alpha (Z - 8)/k or Z >> K and F > 8 alpha".
    alpha = H100_C / 400e9
    for z, k in ((16, 4), (64, 8), (256, 8)):
        got = rl.ep_comm_time(1e6, 7168, k, z, 400e9, domain=8)
        assert got == pytest.approx(4 * 1e6 * 7168 * (z - 8) / (400e9 * z) * min(8 * k / z, 1))
    assert rl.ep_min_d_ff(4, 16, H100_C, 400e9, domain=8) == pytest.approx(alpha * (16 - 8) / 4)
    assert rl.ep_min_d_ff(1, 4096, H100_C, 400e9, domain=8) == pytest.approx(8 * alpha, rel=0.01)


def test_matmul_roofline_scaling_book():
    # https://jax-ml.github.io/scaling-book/roofline/ : a bf16 matmul on a TPU v5e
    # (1.97e14 FLOP/s, 8.2e11 B/s HBM) needs "B > 240" tokens.
    assert rl.hbm_critical_batch(1.97e14, 8.2e11) == pytest.approx(240, rel=0.01)
    assert rl.matmul_intensity(240, 8192, 28_672) == pytest.approx(240, rel=0.04)
    t = rl.matmul_time(64, 8192, 28_672, 989e12, 3.35e12)
    assert t["bound"] == "memory" and t["time"] == t["memory"]
    assert rl.matmul_time(4096, 8192, 28_672, 989e12, 3.35e12)["bound"] == "compute"


def test_planner_models_give_the_notebooks_numbers():
    llama = planner.MODELS["Llama-3 70B"]
    assert llama.ffn == 28_672
    assert math.floor(rl.tp_max_degree(llama.ffn, 989e12, 450e9)) == 13


@pytest.mark.parametrize("bad", [
    lambda: rl.dp_critical_tokens(0, 450e9),
    lambda: rl.dp_critical_tokens(1e15, -1),
    lambda: rl.dp_critical_tokens(1e15, 4e11, ring_size=1),
    lambda: rl.tp_max_degree(0, 1e15, 4e11),
    lambda: rl.fsdp_tp_split(1e6, 28_672, 0),
    lambda: rl.fsdp_tp_best_degrees(1e6, 28_672, 24),
    lambda: rl.layer_times("pp", 1e6, 8192, 28_672, 1e15, 4e11),
    lambda: rl.layer_times("tp", 1e6, 8192, 28_672, 1e15, 4e11, x=2),
    lambda: rl.pp_comm_time(1e6, 8192, 5e10, 4, 1),
    lambda: rl.ep_comm_time(1e6, 7168, 8, 8, 4e11, domain=8),
    lambda: rl.collective_bandwidth("H200", False),
])
def test_impossible_input_is_a_value_error(bad):
    with pytest.raises(ValueError):
        bad()


@pytest.mark.parametrize("members_per_node", [1, 2, 4, 8])
def test_roofline_and_planner_give_a_group_spanning_nodes_the_same_bandwidth(members_per_node):
    # One model of a group across nodes: its members in a node drive one NIC each. The
    # planner's hierarchical all-gather over many nodes, without latency, moves n bytes
    # in (M-1)/M n / W with the roofline's W for the same placement.
    from companion.planner import ClusterSpec, layout_collective_time

    cluster = ClusterSpec.of("H100s", "H100", 1024, intra_latency_us=0.0, inter_latency_us=0.0)
    nodes, n = cluster.nodes, 1e9
    w = rl.collective_bandwidth("H100", True, members_per_node=members_per_node)
    t = layout_collective_time("all_gather", n, cluster, members_per_node, nodes)
    assert t == pytest.approx((nodes - 1) / nodes * n / w, rel=1e-9)
    assert w == members_per_node * 50e9


@pytest.mark.parametrize("members_per_node", [1, 2, 4, 8])
@pytest.mark.parametrize("nodes", [2, 4, 16])
def test_a_group_over_few_nodes_gets_the_planners_whole_hierarchical_bandwidth(
        members_per_node, nodes):
    # Over few nodes the ring's (M-1)/M and the NVLink phase matter. The roofline counts
    # the NVLink phase as its NVLink figure does, without the ring's (k-1)/k; with that
    # factor put back, bytes / W is the planner's time for the same layout, latency aside.
    from companion.planner import ClusterSpec, layout_collective_time

    cluster = ClusterSpec.of("H100s", "H100", 8 * nodes, intra_latency_us=0.0,
                             inter_latency_us=0.0)
    n, k, nvlink = 1e9, members_per_node, rl.collective_bandwidth("H100", False)
    w = rl.collective_bandwidth("H100", True, members_per_node=k, nodes=nodes)
    nics = (nodes - 1) / nodes * n / (k * 50e9)
    assert n / w == pytest.approx(max(n / nvlink if k > 1 else 0.0, nics), rel=1e-12)
    t = layout_collective_time("all_gather", n, cluster, k, nodes)
    assert t == pytest.approx(max((k - 1) / k * n / nvlink, nics), rel=1e-12)


def test_two_node_tp_groups_notebook_10_section_3():
    # TP 16 over two full nodes: NVLink's phase is the slower, not the NICs (half the
    # buffer through 8 x 50 GB/s), so W is NVLink's; split 4 + 4: the NICs.
    assert rl.collective_bandwidth("H100", True, 8, nodes=2) == pytest.approx(450e9)
    assert rl.collective_bandwidth("H100", True, 4, nodes=2) == pytest.approx(400e9)
    assert rl.collective_bandwidth("A100", True, 1, nodes=2) == pytest.approx(50e9)
    f = 28_672   # Llama-3 70B: TP 16 over two nodes waits, TP 8 as 4 + 4 does not
    assert 12 < rl.tp_max_degree(f, 989e12, rl.collective_bandwidth("H100", True, 8, nodes=2)) < 16
    assert 8 < rl.tp_max_degree(f, 989e12, rl.collective_bandwidth("H100", True, 4, nodes=2)) < 12
    with pytest.raises(ValueError, match="nodes"):
        rl.collective_bandwidth("H100", False, nodes=2)
    with pytest.raises(ValueError, match="nodes"):
        rl.collective_bandwidth("H100", True, 8, nodes=1)


def test_a_tp_group_split_over_two_nodes_gets_half_a_full_nodes_nics():
    full = rl.collective_bandwidth("H100", True)
    assert rl.collective_bandwidth("H100", True, members_per_node=8) == full
    assert rl.collective_bandwidth("H100", True, members_per_node=4) == full / 2
    with pytest.raises(ValueError, match="members_per_node"):
        rl.collective_bandwidth("H100", True, members_per_node=16)


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_an_fsdp_group_beside_tp_gets_the_planners_bandwidth(tp):
    # The FSDP x TP rule of notebook 10 and the planner place an FSDP group the same way
    # (one GPU of each TP group, stride tp) and give it the same bandwidth.
    from companion.planner import ClusterSpec, group_layout, layout_collective_time

    cluster = ClusterSpec.of("H100s", "H100", 1024, intra_latency_us=0.0, inter_latency_us=0.0)
    per_node, nodes = group_layout(cluster.gpus_per_node, 1024 // tp, stride=tp)
    w_fsdp, w_tp = rl.fsdp_tp_bandwidths("H100", 1024, tp)
    n = 1e9 / tp   # the weight bytes one GPU gathers shrink with TP ...
    t = layout_collective_time("all_gather", n, cluster, per_node, nodes)
    assert t == pytest.approx((nodes - 1) / nodes * n / w_fsdp, rel=1e-9)
    assert w_tp == rl.collective_bandwidth("H100", False)
    # ... and so do the NICs its group drives in a node: FSDP's time does not move
    assert n / w_fsdp == pytest.approx(1e9 / rl.collective_bandwidth("H100", True))


def test_the_split_exercise_uses_the_same_placement():
    from companion.learning import nb10

    for name, args in nb10.SPLIT_PROBLEMS.items():
        b, seq, f, n, g, nv, nic = args
        if "H100" not in name:
            continue
        for y, x, t in nb10._split_times(*args):
            w_fsdp, w_tp = rl.fsdp_tp_bandwidths("H100", n, y)
            assert t == pytest.approx(max(f / (y * w_fsdp), b / (x * w_tp)), rel=1e-12), name


def test_a_tp_group_of_whole_nodes_takes_their_nics():
    one_nic = rl.collective_bandwidth("H100", True, members_per_node=1)
    assert rl.fsdp_tp_bandwidths("H100", 1024, 16) == (one_nic, rl.collective_bandwidth("H100", True))
    with pytest.raises(ValueError, match="tp=12"):
        rl.fsdp_tp_bandwidths("H100", 1024, 12)


def test_the_best_split_on_real_links():
    llama = __import__("companion.planner", fromlist=["MODELS"]).MODELS["Llama-3 70B"]
    # inside a node (and on a TPU's torus) both transfers share the per-device links:
    # the one-bandwidth balance
    assert rl.fsdp_tp_best_on("H100", 2 ** 16, llama.hidden, llama.ffn, 8) == \
        rl.fsdp_tp_best_degrees(2 ** 16, llama.ffn, 8) == (4, 2)
    assert rl.fsdp_tp_best_on("TPU v5p", 48_000, 8192, 32_768, 64) == \
        rl.fsdp_tp_best_degrees(48_000, 32_768, 64)
    # across nodes TP does not shorten FSDP's time, so least communication is pure FSDP
    assert rl.fsdp_tp_best_on("H100", 2 ** 20, llama.hidden, llama.ffn, 128) == (128, 1)


def test_an_axis_of_one_device_moves_nothing():
    t = rl.layer_times("fsdp_tp", 1e6, 8192, 28_672, 1e15, 4e11, x=128, y=1)
    assert t["tp_comm"] == 0 and t["fsdp_comm"] > 0
    t = rl.layer_times("fsdp_tp", 1e6, 8192, 28_672, 1e15, 4e11, x=1, y=8)
    assert t["fsdp_comm"] == 0 and t["tp_comm"] > 0
