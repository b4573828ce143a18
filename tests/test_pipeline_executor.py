"""The real pipeline executor on 2 and 4 gloo ranks equals single-process training."""
from __future__ import annotations

import pytest
import torch

import companion
from companion.pipeline import (Op, make_schedule, microbatches_of, reference_step, run_pipeline,
                                simulate, split_stages, timeline_from_results)
from companion.data import digits_batch
from companion.models import TinyMLP

BATCH = digits_batch(0, 32)  # loaded once here: importing scikit-learn in every rank is slow

# (schedule, ranks, chunks per rank, micro-batches); the V layouts (zb-v, dualpipev) hand
# the turn of the V over in memory on the last rank and compute the loss on rank 0.
CASES = [("1f1b", 1, 1, 4), ("gpipe", 2, 1, 4), ("naive", 2, 1, 4), ("1f1b", 4, 1, 4),
         ("interleaved", 4, 2, 4), ("zb-h1", 4, 1, 4), ("looped-bfs", 2, 2, 4),
         ("interleaved-zb", 4, 2, 4), ("zb-v", 4, 2, 4), ("dualpipev", 4, 2, 8),
         ("dualpipev", 2, 2, 4)]


@pytest.mark.parametrize("name,ranks,chunks,m", CASES)
def test_gradients_and_step_equal_single_process(name, ranks, chunks, m):
    results = companion.launch(run_pipeline, world_size=ranks, schedule=name, microbatches=m,
                               chunks=chunks, depth=7, batch=BATCH, timeout=60)
    ref = reference_step(stages=ranks, microbatches=m, chunks=chunks, depth=7,
                         threads=results[0]["threads"], batch=BATCH)
    seen = set()
    for r in results:
        for vs, grads in r["grads"].items():
            seen.add(vs)
            for key, g in grads.items():
                # Bit-exact: no cross-rank reduction; every micro-batch's gradient is
                # summed in micro-batch order, as single-process accumulation does.
                assert torch.equal(g, ref["grads"][vs][key]), (vs, key)
                assert torch.equal(r["params"][vs][key], ref["params"][vs][key]), (vs, key)
                # Against one full-batch backward only rounding differs: the full batch
                # sums 32 per-sample terms in one reduction instead of 4 partial sums of 8.
                torch.testing.assert_close(g, ref["full_batch_grads"][vs][key],
                                           rtol=1e-5, atol=1e-6)
    assert seen == set(range(ranks * chunks))
    last = make_schedule(name, ranks, m, chunks).placement(ranks * chunks - 1)[0]
    assert results[last]["losses"] == pytest.approx(ref["losses"])  # where the loss is

    # Every op ran once, ops on one rank never overlap, and data flows forward in time.
    sched = make_schedule(name, ranks, m, chunks)
    tl = timeline_from_results(results, unit="s")
    for s in range(ranks):
        mine = sorted((e for e in tl.events if e.stage == s), key=lambda e: e.start)
        assert [e.op for e in sorted(mine, key=lambda e: e.start)] == list(sched.ops[s])
        assert all(a.end <= b.start for a, b in zip(mine, mine[1:]))
    # ... through the virtual stages in model order, whatever the layout
    ends = {(sched.virtual_stage(e.stage, e.op.chunk), e.op.kind, e.op.microbatch): e.end
            for e in tl.events}
    for e in tl.events:
        vs = sched.virtual_stage(e.stage, e.op.chunk)
        if e.op.kind == "F" and vs > 0:
            assert ends[(vs - 1, "F", e.op.microbatch)] <= e.start


def test_activation_memory_gpipe_vs_1f1b():
    m = 8
    gp = companion.launch(run_pipeline, world_size=4, schedule="gpipe", microbatches=m, batch=BATCH)
    ofob = companion.launch(run_pipeline, world_size=4, schedule="1f1b", microbatches=m, batch=BATCH)
    assert [r["peak_held"] for r in gp] == [m] * 4
    assert [r["peak_held"] for r in ofob] == [4, 3, 2, 1]
    # measured bytes saved for backward follow the count
    for g, o in zip(gp, ofob):
        assert g["peak_bytes"] > o["peak_bytes"] > 0


def test_emulated_device_time_sets_op_durations():
    cost = {"F": 0.01, "B": 0.01, "W": 0.01}
    res = companion.launch(run_pipeline, world_size=2, schedule="zb-h1", microbatches=2,
                           device_time=cost, batch=BATCH)
    tl = timeline_from_results(res, unit="s")
    for e in tl.events:
        assert e.end - e.start >= 0.01 * 0.999  # never shorter than the emulated kernel
    assert tl.makespan >= (2 * 3 + 1 * (1 + 1 - 1)) * 0.01 * 0.999  # m(F+B+W) + (p-1)(F+B-W)


def test_bad_input():
    with pytest.raises(ValueError, match="multiple of 3"):
        microbatches_of(32, 3)
    with pytest.raises(ValueError, match="depth>=7"):
        split_stages(TinyMLP(depth=2), 8)
    # Refused in the parent by run_pipeline's preflight check, before any rank starts.
    with pytest.raises(ValueError, match="depth>="):
        companion.launch(run_pipeline, world_size=4, schedule="1f1b", depth=2, batch=BATCH)
    with pytest.raises(ValueError, match="world_size=2"):
        companion.launch(run_pipeline, world_size=4, schedule=make_schedule("gpipe", 2, 4),
                         batch=BATCH)


def test_reference_step_is_torch_sgd():
    ref = reference_step(stages=2, microbatches=4, depth=3, batch=BATCH)
    pieces = split_stages(TinyMLP(hidden=64, depth=3), 2)
    for vs, piece in enumerate(pieces):
        opt = torch.optim.SGD(piece.parameters(), lr=0.1)
        for name, prm in piece.named_parameters():
            prm.grad = ref["grads"][vs][name]
        opt.step()
        for name, prm in piece.named_parameters():
            assert torch.equal(prm.detach(), ref["params"][vs][name])


@pytest.mark.parametrize("name", ["1f1b", "dualpipev"])
def test_emulated_send_latency_delays_the_receiver(name):
    cost = {"F": 0.01, "B": 0.01, "W": 0.01, "send": 0.02}
    res = companion.launch(run_pipeline, world_size=2, schedule=name, microbatches=4,
                           device_time=cost, batch=BATCH)
    tl = timeline_from_results(res, unit="s")
    sim = simulate(name, 2, 4, F=0.01, B=0.01, W=0.01, send=0.02)
    # never faster than the simulator, which waits exactly the latency per hop
    assert tl.makespan >= sim.makespan * 0.999
    ends = {(e.stage, e.op): e.end for e in tl.events}
    sched = make_schedule(name, 2, 4)
    for e in tl.events:  # an F on rank 1 starts a latency after rank 0's F of chunk 0 ended
        if e.op.kind == "F" and sched.virtual_stage(e.stage, e.op.chunk) == 1:
            assert e.start >= ends[(0, Op("F", e.op.microbatch, 0))] + 0.02 * 0.999
    ref = reference_step(stages=2, microbatches=4, chunks=sched.chunks, batch=BATCH,
                         threads=res[0]["threads"])
    assert all(torch.equal(g, ref["grads"][vs][k]) for r in res
               for vs, grads in r["grads"].items() for k, g in grads.items())
