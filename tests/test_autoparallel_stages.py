"""Alpa's inter-operator dynamic program (companion.autoparallel.stages, notebook 12)
against brute force, the equal-layers baseline and the planner's model specs."""
from __future__ import annotations

import random

import pytest

from companion.data_parallel import memory
from companion.autoparallel import intra_op as AIO
from companion.autoparallel import layers as AL
from companion.autoparallel import stages as ST
from companion.planner import MODELS, ClusterSpec


def toy_cluster(nodes, per_node, memory_gb=10.0):
    return ClusterSpec(f"{nodes}x{per_node}", gpus_per_node=per_node, nodes=nodes,
                       gpu_memory_gb=memory_gb, peak_tflops=100.0, intra_bw_gbps=100.0,
                       inter_bw_gbps=10.0)


def random_layers(seed, count):
    rng = random.Random(seed)
    return [AL.Layer(f"L{j}", flops=rng.uniform(1e12, 2e13), param_bytes=rng.uniform(1e8, 1.5e9),
                     activation_bytes=rng.uniform(1e7, 3e8), saved_bytes=rng.uniform(1e8, 2e9),
                     tp_bytes=rng.uniform(1e7, 1e9), tp_calls=rng.choice([0, 2, 4]),
                     batch=rng.choice([None, 1, 2, 8]))
            for j in range(count)]


def toy_intra_op(layers, mesh, in_flight):
    """A made-up cost (not the package's): compute shrinks with devices, a fixed tax per
    device, memory grows with the micro-batches in flight; plugged in to show that the
    program only needs a callable."""
    p = mesh[0] * mesh[1]
    work = sum(x.flops for x in layers) / 1e13
    used = sum(x.param_bytes for x in layers) / p + in_flight * 1e8 * len(layers)
    if used > 3e9:
        return None
    return AIO.IntraOpChoice(work / p + 0.05 * (p - 1) + 0.01 * mesh[0], used, f"toy{p}")


def assert_valid(plan, layers, cluster, microbatches):
    assert plan.stages[0].start == 0 and plan.stages[-1].stop == len(layers)
    assert all(a.stop == b.start for a, b in zip(plan.stages, plan.stages[1:]))
    assert sum(s.mesh[0] * s.mesh[1] for s in plan.stages) == cluster.gpus
    assert all(s.mesh in AIO.submesh_shapes(cluster) for s in plan.stages)
    n = len(plan.stages)
    assert [s.in_flight for s in plan.stages] == [min(n - j, microbatches) for j in range(n)]
    assert plan.step_time == pytest.approx(
        ST.pipeline_time([s.time for s in plan.stages], microbatches), rel=1e-12)


def test_namespace_package_import_needs_no_init():
    # companion/autoparallel/ may have no __init__.py on this branch: Python 3 namespace
    # packages still import its modules.
    assert ST.__name__ == "companion.autoparallel.stages"


def test_submesh_shapes_are_alpas():
    assert AIO.submesh_shapes(toy_cluster(3, 8)) == [(1, 1), (1, 2), (1, 4), (1, 8), (2, 8), (3, 8)]
    assert AIO.submesh_shapes(toy_cluster(1, 1)) == [(1, 1)]


def test_pipeline_time_is_eq_2():
    assert ST.pipeline_time([1.0, 3.0, 2.0], 4) == 1 + 3 + 2 + 3 * 3
    assert ST.pipeline_time([2.0], 1) == 2.0


CASES = [(seed, nodes, per_node, mb, memory_gb, count)
         for seed, (nodes, per_node), mb, memory_gb, count in [
             (0, (1, 8), 1, 40.0, 6), (1, (2, 4), 4, 40.0, 6), (2, (2, 2), 8, 20.0, 5),
             (3, (1, 4), 16, 20.0, 6), (4, (2, 4), 2, 10.0, 5), (5, (4, 2), 32, 30.0, 4),
             (6, (1, 8), 8, 9.0, 6)]]


@pytest.mark.parametrize("seed,nodes,per_node,microbatches,memory_gb,count", CASES)
def test_dynamic_program_equals_brute_force(seed, nodes, per_node, microbatches, memory_gb, count):
    cluster = toy_cluster(nodes, per_node, memory_gb)
    layers = random_layers(seed, count)
    dp = ST.plan_stages(layers, cluster, microbatches)
    brute = ST.brute_force_stages(layers, cluster, microbatches)
    assert brute.stages, "every case here has at least one plan that fits"
    assert dp.step_time == pytest.approx(brute.step_time, rel=1e-12)
    assert_valid(dp, layers, cluster, microbatches)
    capacity = (memory_gb - 2.0) * 1e9  # alpha_beta_intra_op's default reserve
    assert all(s.memory <= capacity for s in dp.stages)


@pytest.mark.parametrize("seed,nodes,per_node,microbatches,memory_gb,count",
                         [c for c in CASES if c[0] in (2, 3, 6)])
def test_the_memory_limit_binds_in_some_cases(seed, nodes, per_node, microbatches, memory_gb, count):
    # so the cases above check the constraint, not only the time
    layers = random_layers(seed, count)
    tight = ST.plan_stages(layers, toy_cluster(nodes, per_node, memory_gb), microbatches)
    roomy = ST.plan_stages(layers, toy_cluster(nodes, per_node, 1e4), microbatches)
    assert tight.step_time > roomy.step_time * 1.01


@pytest.mark.parametrize("seed,microbatches", [(10, 1), (11, 6), (12, 50)])
def test_dynamic_program_equals_brute_force_with_a_plugged_cost(seed, microbatches):
    cluster = toy_cluster(2, 4)
    layers = random_layers(seed, 7)
    dp = ST.plan_stages(layers, cluster, microbatches, intra_op=toy_intra_op)
    brute = ST.brute_force_stages(layers, cluster, microbatches, intra_op=toy_intra_op)
    assert dp.step_time == pytest.approx(brute.step_time, rel=1e-12)
    assert_valid(dp, layers, cluster, microbatches)
    assert all(s.config.startswith("toy") for s in dp.stages)


def test_nothing_fits_gives_a_reason_not_a_plan():
    layers = random_layers(0, 4)
    cluster = toy_cluster(1, 2, memory_gb=2.5)  # 0.5 GB after the reserve
    for plan in (ST.plan_stages(layers, cluster, 4), ST.brute_force_stages(layers, cluster, 4),
                 ST.equal_layers_plan(layers, cluster, 4)):
        assert plan.stages == [] and plan.step_time == float("inf") and plan.reason


def test_memory_counts_the_micro_batches_in_flight():
    # One layer, lots of stored activation: the first of two stages holds 2 micro-batches.
    cost = AIO.alpha_beta_intra_op(toy_cluster(1, 2, memory_gb=100.0), microbatches=8)
    layer = AL.Layer("x", 1e12, 0.0, 1e6, saved_bytes=3e9)
    assert cost([layer], (1, 1), 2).memory == pytest.approx(6e9)
    assert cost([layer], (1, 2), 2).memory == pytest.approx(3e9)


def test_data_parallel_degree_must_divide_the_micro_batch():
    cluster = toy_cluster(1, 8, memory_gb=100.0)
    cost = AIO.alpha_beta_intra_op(cluster, microbatches=4)
    cheap_comm = dict(flops=1e13, param_bytes=1e6, activation_bytes=1e6, tp_bytes=1e9, tp_calls=4)
    assert cost([AL.Layer("a", batch=8, **cheap_comm)], (1, 8), 1).config == "DP8xTP1"
    assert cost([AL.Layer("a", batch=2, **cheap_comm)], (1, 8), 1).config == "DP2xTP4"


def test_model_layers_add_up_to_the_model():
    model = MODELS["Llama-3 8B"]
    layers = AL.model_layers(model, micro_batch=2, blocks_per_layer=4)
    assert [x.kind for x in layers] == ["embedding"] + ["block"] * 8 + ["head"]
    assert sum(x.param_bytes for x in layers) == 2 * model.num_params()  # untied: each table once
    tokens = 2 * model.seq_len
    # flops_per_token counts 6 FLOPs per embedding weight (a lookup does no matrix
    # multiply) and per final-norm weight (elementwise): the layers count neither
    expected = (model.flops_per_token() - 6 * (model.vocab + 1) * model.hidden) * tokens
    assert sum(x.flops for x in layers) == pytest.approx(expected, rel=1e-12)
    per_block = memory.activation_memory_per_layer(model.seq_len, 2, model.hidden, model.heads,
                                                   recompute="selective")
    assert layers[1].saved_bytes == 4 * per_block
    assert layers[-1].saved_bytes > 3 * per_block  # fp32 logits over a 128k vocabulary


def test_equal_split_is_a_plan_the_program_also_considers():
    layers = AL.model_layers(AL.LLAMA_3_2_1B, blocks_per_layer=2)
    for cluster, b in [(ClusterSpec.of("1x H100", "H100", 1), 8),
                       (ClusterSpec.of("2x A100", "A100", 2), 16)]:
        result = ST.compare_with_equal_split(layers, cluster, b)
        assert result["alpa"].step_time <= result["equal"].step_time * (1 + 1e-12)
        assert result["speedup"] == result["equal"].step_time / result["alpa"].step_time


def test_equal_split_puts_the_ends_on_the_first_and_last_stage():
    layers = AL.model_layers(AL.LLAMA_3_2_1B)
    plan = ST.equal_layers_plan(layers, ClusterSpec.of("1x H100", "H100", 1), 16, stages=4)
    assert [s.stop - s.start for s in plan.stages] == [5, 4, 4, 5]
    assert all(s.mesh == (1, 2) for s in plan.stages)


def test_the_uneven_head_makes_the_program_win():
    """Llama-3.2 1B's head weighs ~4 blocks: an equal split leaves the last stage slowest,
    and the program gives that stage fewer blocks (or more devices)."""
    layers = AL.model_layers(AL.LLAMA_3_2_1B)
    result = ST.compare_with_equal_split(layers, ClusterSpec.of("1x H100", "H100", 1), 16)
    alpa, equal = result["alpa"], result["equal"]
    assert result["speedup"] > 1.1
    assert len(equal.stages) > 1
    slowest = max(equal.stages, key=lambda s: s.time)
    assert slowest is equal.stages[-1]
    assert max(s.time for s in alpa.stages) < slowest.time
