"""The 3D-parallelism planner: memory from companion.memory, right reasons, sane ranking."""
from __future__ import annotations

import dataclasses
import math

import pytest

from companion import memory
from companion.pipeline import bubble_fraction
from companion.planner import CLUSTERS, MODELS, ClusterSpec, ModelSpec, evaluate, plan

H100_NODE = CLUSTERS["1 node, 8x H100"]
H100_128 = CLUSTERS["16 nodes, 128x H100"]
LLAMA_CLUSTER = CLUSTERS["Llama-3 scale: 16,384x H100"]


@pytest.mark.parametrize("name, published", [(n, m.published_params) for n, m in MODELS.items()])
def test_parameter_counts_from_architecture_match_the_names(name, published):
    # Within 4%: biases are ignored and "7B" / "175B" are rounded names.
    assert MODELS[name].num_params() == pytest.approx(published, rel=0.04)


def test_model_state_memory_is_companion_memory_of_the_local_shard():
    model = MODELS["Llama-3 70B"]
    p = evaluate(model, H100_128, 512, dp=8, tp=4, pp=4, zero=1, micro_batch=1)
    assert p.feasible, p.reason
    layers = math.ceil(model.layers / 4)
    local = model.params_per_gpu(tp=4, pp=4)
    expected = memory.zero_memory_per_gpu(local, 8, 1)
    for key in ("params", "grads", "optimizer"):
        assert p.memory[key] == expected[key]
    per_layer = memory.activation_memory_per_layer(model.seq_len, 1, model.hidden, model.heads,
                                                   tp=4, sequence_parallel=True,
                                                   recompute="selective")
    assert p.memory["activations"] == per_layer * layers * 4  # 1F1B: p micro-batches in flight


def test_bubble_comes_from_the_pipeline_module():
    p = evaluate(MODELS["Llama-3 70B"], H100_128, 512, dp=8, tp=4, pp=4, zero=1)
    assert p.bubble == bubble_fraction(4, p.microbatches, "1f1b")


@pytest.mark.parametrize("model, kwargs, reason", [
    ("Llama-3 8B", {"dp": 1, "tp": 128, "pp": 1}, "does not divide the 32 attention heads"),
    ("Llama-3 8B", {"dp": 1, "tp": 1, "pp": 128}, "stages for only 32 layers"),
    ("Llama-3 8B", {"dp": 128, "tp": 1, "pp": 1, "micro_batch": 3}, "not a multiple of"),
    ("Llama-3 70B", {"dp": 64, "tp": 1, "pp": 2, "micro_batch": 8}, "1 micro-batch(es) per replica for 2 pipeline stages"),
    ("Llama-3 70B", {"dp": 16, "tp": 4, "pp": 2, "zero": 3}, "ZeRO-2/3 with pipeline"),
    ("Llama-3 70B", {"dp": 128, "tp": 1, "pp": 1, "zero": 0}, "out of memory"),
])
def test_infeasible_configurations_are_rejected_for_the_right_reason(model, kwargs, reason):
    p = evaluate(MODELS[model], H100_128, 512, **kwargs)
    assert not p.feasible and reason in p.reason


def test_every_plan_is_accounted_for():
    feasible, infeasible = plan(MODELS["Llama-3 8B"], H100_128, 512)
    assert feasible and infeasible
    assert all(p.feasible for p in feasible) and not any(p.feasible for p in infeasible)
    times = [p.step_time for p in feasible]
    assert times == sorted(times)
    assert all(0 < p.mfu < 1 for p in feasible)


@pytest.mark.parametrize("model, cluster, batch", [
    ("Llama-3 405B", LLAMA_CLUSTER, 2048), ("Llama-3 70B", H100_128, 512),
    ("GPT-3 175B", CLUSTERS["128 nodes, 1,024x A100"], 1536), ("Llama-3 8B", H100_NODE, 64)])
def test_tp_across_nodes_is_never_ranked_first_when_an_intra_node_option_exists(model, cluster, batch):
    feasible, _ = plan(MODELS[model], cluster, batch)
    intra = [p for p in feasible if not p.tp_inter_node]
    assert intra and not feasible[0].tp_inter_node
    assert feasible[0].tp <= cluster.gpus_per_node


def test_tp_beyond_a_node_costs_more_than_inside_it():
    wide = ClusterSpec("test", 8, 2, 80, 989, 450, 50)
    model = MODELS["Llama-3 8B"]
    inside = evaluate(model, wide, 64, dp=2, tp=8, pp=1, zero=1)
    across = evaluate(model, wide, 64, dp=1, tp=16, pp=1, zero=1)
    assert across.tp_inter_node and not inside.tp_inter_node
    assert across.times["tp_comm"] > 5 * inside.times["tp_comm"]


def test_llama3_405b_best_plan_looks_like_the_published_one():
    feasible, _ = plan(MODELS["Llama-3 405B"], LLAMA_CLUSTER, 2048)
    best = feasible[0]
    assert best.tp == 8 and best.pp in (8, 16) and best.zero <= 1
    published = [p for p in feasible if (p.dp, p.tp, p.pp) == (128, 8, 16)]
    assert published and published[0].step_time <= 1.05 * best.step_time


def test_7b_trains_with_fsdp_alone():
    best = plan(MODELS["7B (Llama-2 shape)"], H100_128, 512)[0][0]
    assert (best.tp, best.pp, best.zero) == (1, 1, 3)


@pytest.mark.parametrize("bad", [
    lambda: ModelSpec("x", layers=0, hidden=8, heads=2, seq_len=8, vocab=8),
    lambda: ModelSpec("x", layers=2, hidden=10, heads=4, seq_len=8, vocab=8),
    lambda: dataclasses.replace(H100_NODE, nodes=0),
    lambda: dataclasses.replace(H100_NODE, gpu_memory_gb=-1),
    lambda: plan(MODELS["Llama-3 8B"], H100_NODE, 0),
    lambda: plan(MODELS["Llama-3 8B"], dataclasses.replace(H100_NODE, nodes=3), 64),
])
def test_bad_input_raises_value_error(bad):
    with pytest.raises(ValueError):
        bad()


EIGHT_NODES = dataclasses.replace(H100_128, name="8 nodes, 64x H100", nodes=8)


def test_grade_explains_a_slow_configuration_without_naming_the_fastest(capsys):
    from companion.planner import grade

    fastest = plan(MODELS["Llama-3 70B"], EIGHT_NODES, 256)[0][0]
    assert not grade(MODELS["Llama-3 70B"], EIGHT_NODES, 256, dp=8, tp=8, pp=1, zero=1)
    out = capsys.readouterr().out
    assert "TP comm +" in out and "TP=8 all-reduces" in out   # what is wrong, and why
    assert fastest.label() not in out and f"TP{fastest.tp} " not in out


def test_grade_explains_out_of_memory_by_its_largest_part(capsys):
    from companion.planner import grade

    assert not grade(MODELS["Llama-3 70B"], EIGHT_NODES, 256, dp=64, tp=1, pp=1, zero=3)
    out = capsys.readouterr().out
    assert "out of memory" in out and "The activations" in out and "ZeRO does not shard" in out
    assert not grade(MODELS["Llama-3 70B"], EIGHT_NODES, 256, dp=64, tp=1, pp=1, zero=0)
    assert "The model states" in capsys.readouterr().out


def test_grade_names_the_fastest_only_once_the_answer_passes(capsys):
    from companion.planner import grade

    fastest = plan(MODELS["Llama-3 70B"], EIGHT_NODES, 256)[0][0]
    assert grade(MODELS["Llama-3 70B"], EIGHT_NODES, 256, dp=fastest.dp, tp=fastest.tp,
                 pp=fastest.pp, zero=fastest.zero, micro_batch=fastest.micro_batch)
    assert fastest.label() in capsys.readouterr().out
