"""companion.dga: D = 0 is synchronous SGD bit for bit; every algorithm equals the
single-process reference; the correction term's algebra; torch's DDP and periodic model
averaging agree with our synchronous SGD and FedAvg; communication overlaps compute."""
from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector

import companion
from companion import dga, launch
from companion.data import digits_batch
from companion.models import TinyMLP
from companion.compression.lr import lr_at

from companion.data import load_digits

STEPS = 20


@functools.lru_cache(maxsize=1)
def digits():
    # Loaded once in the test process and handed to the ranks, which then skip importing
    # scikit-learn. Not at module level: ranks that unpickle a function of this module
    # import it.
    return load_digits()


def _train(world_size=2, **kw):
    return launch(dga.train, world_size=world_size, steps=STEPS, return_params=True,
                  data=digits(), **kw)


def test_dga_with_zero_delay_is_synchronous_sgd_bit_for_bit():
    sync = _train(algorithm="sync", world_size=4)
    dga0 = _train(algorithm="dga", delay=0, world_size=4)
    for a, b in zip(sync, dga0):
        assert torch.equal(a["w"], b["w"])
        assert a["losses"] == b["losses"]
    # Synchronous SGD keeps the replicas identical.
    assert all(torch.equal(sync[0]["w"], r["w"]) for r in sync)


def test_seeds_side_by_side_are_independent_runs():
    both = _train(algorithm="dga", delay=3, seeds=[0, 1])
    alone = [_train(algorithm="dga", delay=3, seed=s) for s in (0, 1)]
    for r in range(2):
        # Two ranks: the averages round identically, so the runs agree bit for bit.
        assert torch.equal(both[r]["w"], torch.cat([alone[0][r]["w"], alone[1][r]["w"]]))
        assert both[r]["accuracies"] == [alone[0][r]["accuracy"], alone[1][r]["accuracy"]]


def _full_batch_reference(steps, lr, schedule, seed=0, batch_size=64):
    train_data, _ = dga.digits_split(digits())
    model = TinyMLP(seed=seed)
    for i in range(steps):
        x, y = digits_batch(i, batch_size, 0, 1, seed=seed, data=train_data)
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-lr_at(lr, i, steps, schedule))
    return parameters_to_vector(model.parameters()).detach()


def test_sync_sgd_equals_single_process_training_on_the_global_batch():
    ranks = _train(algorithm="sync")
    ref = _full_batch_reference(STEPS, 0.3, "cosine")
    # Not bit-exact: the all-reduce averages two 32-sample means, the reference takes
    # one 64-sample mean; float32 rounding of a different summation order, ~1e-7 per
    # step, is all that may differ.
    for r in ranks:
        torch.testing.assert_close(r["w"], ref, rtol=1e-5, atol=1e-6)


def _ddp_reference(steps, lr, data):
    from torch.nn.parallel import DistributedDataParallel as DDP
    train_data, _ = dga.digits_split(data)
    model = DDP(TinyMLP(seed=0))
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for i in range(steps):
        x, y = digits_batch(i, 64, companion.rank(), companion.world_size(), data=train_data)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return parameters_to_vector(model.module.parameters()).detach()


def test_sync_sgd_equals_torch_ddp():
    ours = _train(algorithm="sync", schedule="constant")
    ddp = launch(_ddp_reference, STEPS, 0.3, digits(), world_size=2)
    # DDP all-reduces gradient buckets, we all-reduce one flat vector: gloo may sum the
    # ranks in a different order per element (float32 rounding only).
    for a, b in zip(ours, ddp):
        torch.testing.assert_close(a["w"], b, rtol=1e-5, atol=1e-6)


def _periodic_averaging_reference(steps, lr, k, data):
    from torch.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager
    train_data, _ = dga.digits_split(data)
    model = TinyMLP(seed=0)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    # torch averages after step numbers warmup, warmup + k, ... (0-based); ours after k-1, 2k-1, ...
    averager = PeriodicModelAverager(period=k, warmup_steps=k - 1)
    for i in range(steps):
        x, y = digits_batch(i, 64, companion.rank(), companion.world_size(), data=train_data)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        averager.average_parameters(model.parameters())
    return parameters_to_vector(model.parameters()).detach()


def test_fedavg_equals_torch_periodic_model_averaging():
    ours = _train(algorithm="fedavg", local_steps=5, schedule="constant")
    ref = launch(_periodic_averaging_reference, STEPS, 0.3, 5, digits(), world_size=2)
    # torch divides by the world size before summing, we after: rounding only.
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a["w"], b, rtol=1e-5, atol=1e-6)
    # Averaged at step 20 (a multiple of K = 5): the replicas agree.
    torch.testing.assert_close(ours[0]["w"], ours[1]["w"], rtol=0, atol=1e-6)


TOY_CASES = [("sync", {}), ("dga", {"delay": 2}), ("dga", {"delay": 2, "corrected": False}),
             ("dga", {"delay": 0}), ("fedavg", {"local_steps": 3})]


@pytest.mark.parametrize("algorithm,kw", TOY_CASES)
def test_toy_problem_equals_the_single_process_simulation_exactly(algorithm, kw):
    # Two ranks: gloo's average (a + b) / 2 and torch.stack([a, b]).mean(0) round the
    # same way, so the distributed run must match the simulation bit for bit.
    ranks = launch(dga.toy_train, world_size=2, algorithm=algorithm, **kw)
    kw = dict(kw)
    rule = dga.dga_update if kw.pop("corrected", True) else dga.stale_update
    ref = dga.simulate([dga.quadratic_grad_fn(r) for r in range(2)], torch.zeros(8),
                       algorithm=algorithm, steps=12, lr=0.1, update_rule=rule, **kw)
    for r, res in enumerate(ranks):
        assert torch.equal(res["w"], ref[r]), f"rank {r}"


def test_correction_term_algebra_telescopes():
    """With the correction, sum_i (g_i - g_{i-D} + avg_{i-D}) telescopes: after T steps a
    worker has applied every average except the last D ones, plus its own last D local
    gradients. Without it, the workers apply the same stale averages and stay identical."""
    lr, steps, delay = 0.1, 12, 3
    corrected = launch(dga.toy_train, world_size=4, delay=delay, steps=steps, lr=lr)
    for res in corrected:
        assert res["avg"].shape[0] == steps - delay
        predicted = -lr * (res["avg"].sum(0) + res["g"][steps - delay:].sum(0))
        # Summing in a different order than the step-by-step updates: rounding only.
        torch.testing.assert_close(res["w"], predicted, rtol=0, atol=1e-6)
    # The averages are the same on every rank (one all-reduce), the local gradients not.
    assert all(torch.equal(corrected[0]["avg"], r["avg"]) for r in corrected)
    assert not torch.equal(corrected[0]["w"], corrected[1]["w"])

    stale = launch(dga.toy_train, world_size=4, delay=delay, steps=steps, lr=lr, corrected=False)
    for res in stale:
        assert torch.equal(res["w"], stale[0]["w"])
        torch.testing.assert_close(res["w"], -lr * res["avg"].sum(0), rtol=0, atol=1e-6)


def test_correction_with_a_constant_gradient_is_the_synchronous_step():
    # When no gradient changes in D steps, g_i - g_{i-D} = 0 and DGA applies avg_{i-D}
    # = avg_i: exactly the synchronous update, from step D on.
    g = torch.tensor([1.0, -2.0, 0.5])
    avg = torch.tensor([0.25, 0.5, -1.0])
    assert torch.equal(dga.dga_update(g, g, avg), avg)
    assert torch.equal(dga.stale_update(g, g * 3, avg), avg)


def _student_rule(g_now, g_then, avg_then):
    return avg_then + g_now - g_then  # same algebra, another evaluation order


def test_a_custom_update_rule_is_used():
    ref = launch(dga.toy_train, world_size=2, delay=3)
    got = launch(dga.toy_train, world_size=2, delay=3, update_rule=_student_rule)
    for a, b in zip(ref, got):
        torch.testing.assert_close(a["w"], b["w"], rtol=0, atol=1e-6)


def test_bad_input_names_the_fix():
    fns = [dga.quadratic_grad_fn(0)]
    with pytest.raises(ValueError, match="delay"):
        dga.simulate(fns, torch.zeros(8), algorithm="dga", steps=3, lr=0.1, delay=-1)
    with pytest.raises(ValueError, match="algorithm"):
        dga.simulate(fns, torch.zeros(8), algorithm="async", steps=3, lr=0.1)
    with pytest.raises(ValueError, match="local_steps"):
        dga.simulate(fns, torch.zeros(8), algorithm="fedavg", steps=3, lr=0.1, local_steps=0)
    with pytest.raises(ValueError, match="schedule"):
        lr_at(0.1, 0, 10, "linear")


def test_timelines_show_communication_overlapping_compute():
    kw = dict(steps=12, alpha_ms=30.0, compute_ms=10.0, timeline=True, world_size=2, data=digits())
    sync = launch(dga.train, algorithm="sync", **kw)
    delayed = launch(dga.train, algorithm="dga", delay=4, **kw)
    for s, d in zip(sync, delayed):
        assert len(s["messages"]) == len(d["messages"]) == 12
        assert s["overlap"] == 0.0  # synchronous SGD computes nothing while a message flies
        # DGA computes through most of each 30 ms flight (10 ms steps, 4 in flight).
        assert d["overlap"] > 0.5
        for m in d["messages"]:
            assert m["ready_at"] - m["real_done_at"] == pytest.approx(0.030, abs=1e-9)


def test_explorer_widget_redraws_and_measures():
    from companion.widgets import dga_explorer

    w = dga_explorer(compute_ms=10.0, steps=12)
    first = w.text
    assert "DGA D=5" in first
    w.delay.value = 0  # D = 0: DGA's modeled time per step equals synchronous SGD's
    assert w.text != first
    sync_part, _, dga_part = w.text.split("   ")
    assert sync_part.split(": ")[1].split(" (")[0] == dga_part.split(": ")[1].split(" (")[0]
    w.latency.value = 5
    w.measure.click()  # real ranks, small latency: a second or two
    assert w.measured_text.startswith("measured: sync SGD")


def _on_torch_async(algorithm, kw):
    from companion.learning import nb08
    import torch.distributed as dist
    w = torch.zeros(8)
    dga.run_worker(dga.quadratic_grad_fn(dist.get_rank()), w, nb08.TorchLink(),
                   algorithm=algorithm, steps=12, lr=0.1, **kw)
    return w


@pytest.mark.parametrize("algorithm,kw", [("sync", {}), ("dga", {"delay": 2}),
                                          ("fedavg", {"local_steps": 3})])
def test_run_worker_on_torchs_nonblocking_all_reduce_equals_the_simulation(algorithm, kw):
    # Notebook 08's exercises are checked against run_worker on torch's own
    # all_reduce(async_op=True) (no emulated link): the same numbers, bit for bit.
    ranks = launch(_on_torch_async, algorithm, kw, world_size=2)
    ref = dga.simulate([dga.quadratic_grad_fn(r) for r in range(2)], torch.zeros(8),
                       algorithm=algorithm, steps=12, lr=0.1, **kw)
    for r, w in enumerate(ranks):
        assert torch.equal(w, ref[r]), f"rank {r}"


def test_the_schedule_the_exercises_check_is_described_in_one_line():
    from companion.learning.nb08 import describe_schedule
    # DGA, D = 3: every all-reduce waited for 3 steps later; the last 3 are not judged.
    assert describe_schedule(list(range(6)), [3, 3, 3, None, None, None], tail=3) == \
        "all-reduces in steps 0-5; each waited for 3 steps later"
    assert describe_schedule([3, 7, 11], [0, 0, 0]) == \
        "all-reduces in steps 3, 7, 11; each waited for at once"
    assert describe_schedule([0, 1, 2], [0, None, 2]) == \
        "all-reduces in steps 0-2; waited for: at once, never, 2 steps later"
