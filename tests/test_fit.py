"""The planner's memory model against torch at the real size (notebook 09, "Will it fit?").

Each case builds the decoder at a preset's real shapes under FakeTensorMode, splits it
with torch's own FSDP2 and DTensor tensor parallelism on a fake process group of the
real world size, trains a step and reads FSDPMemTracker; the planner predicts the same
layout from formulas. Model states must agree within 1 % and the peak within 10 %.

The cases keep each stage's blocks few (the model is per block: depth only multiplies
it, and the tests marked ``ci`` check whole models) so that each runs in seconds.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch

from companion.data_parallel import memory
from companion.planner import fit as fit_mod
from companion.planner.decoder import Decoder, RMSNorm
from companion.planner.memory_model import Layout, loss_bytes, predict_memory
from companion.planner.presets import MODELS
from companion.planner.torch_memory import measure_memory

GB = 1e9


def _spec(name, blocks_per_stage, pp=1):
    return dataclasses.replace(MODELS[name], layers=blocks_per_stage * pp)


# (model, blocks per stage, layout): FSDP, FSDP x TP, TP x PP (ZeRO-0) and all three;
# no, selective and full recomputation; micro-batches 1-4; sequences 2K-8K; bf16, fp32
CASES = {
    "8B fsdp8 8K selective": ("Llama-3 8B", 8, Layout(8, seq=8192, recompute="selective")),
    "8B fsdp8 2K none mb4": ("Llama-3 8B", 8, Layout(8, seq=2048, micro_batch=4)),
    "8B fsdp8 4K full mb2": ("Llama-3 8B", 8, Layout(8, seq=4096, micro_batch=2,
                                                      recompute="full")),
    "8B fsdp8 2K fp32": ("Llama-3 8B", 8, Layout(8, seq=2048, precision="fp32")),
    "8B tp2 fsdp4 4K": ("Llama-3 8B", 8, Layout(8, tp=2, seq=4096)),
    "8B tp2 pp2 zero0 2K mb2": ("Llama-3 8B", 8, Layout(8, tp=2, pp=2, zero=0, seq=2048,
                                                        micro_batch=2)),
    "70B tp8 fsdp8 8K selective": ("Llama-3 70B", 8, Layout(64, tp=8, seq=8192,
                                                            recompute="selective")),
    "70B tp8 pp4 zero0 4K full": ("Llama-3 70B", 8, Layout(64, tp=8, pp=4, zero=0,
                                                           seq=4096, recompute="full")),
    "175B tp8 pp8 zero0 2K selective": ("GPT-3 175B", 8, Layout(64, tp=8, pp=8, zero=0,
                                                                seq=2048,
                                                                recompute="selective")),
    "405B tp8 pp4 fsdp 8K full": ("Llama-3 405B", 8, Layout(128, tp=8, pp=4, seq=8192,
                                                            recompute="full")),
}


# a student's make test keeps one case of each strategy (FSDP, FSDP x TP, TP x PP); CI
# runs them all
FAST = {"8B fsdp8 2K none mb4", "8B tp2 fsdp4 4K", "8B tp2 pp2 zero0 2K mb2"}


@pytest.mark.parametrize("case", [c if c in FAST else pytest.param(c, marks=pytest.mark.ci)
                                  for c in CASES])
def test_planner_memory_agrees_with_torch(case):
    name, blocks, layout = CASES[case]
    spec = _spec(name, blocks, layout.pp)
    measured = measure_memory(spec, layout)
    predicted = predict_memory(spec, layout)
    # the states are the same bytes counted twice: only rounding may differ
    assert predicted["states"] == pytest.approx(measured["states"], rel=0.01), case
    assert predicted["peak"] == pytest.approx(measured["peak"], rel=0.10), (
        case, {k: round(v / GB, 2) for k, v in predicted.items()},
        {k: round(v / GB, 2) for k, v in measured.items()})


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_loss_bytes_are_torchs(tp):
    """The loss's peak bytes (the logits included), against MemTracker on the loss
    alone: torchtitan's fp32 cross-entropy, or loss_parallel on vocabulary shards."""
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.mem_tracker import MemTracker
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Shard
    from torch.distributed.tensor.parallel import loss_parallel
    from torch.testing._internal.distributed.fake_pg import FakeStore

    tokens, vocab = 4096, 32000
    dist.init_process_group("fake", rank=0, world_size=tp, store=FakeStore())
    try:
        mesh = init_device_mesh("cpu", (tp,))
        with FakeTensorMode():
            local = torch.randn(tokens, vocab // tp, dtype=torch.bfloat16, requires_grad=True)
            labels = torch.randint(0, vocab, (tokens,))
            tracker = MemTracker()
            tracker.track_external(local)
            with tracker:
                if tp == 1:
                    F.cross_entropy(local.float(), labels).backward()
                else:
                    with loss_parallel():
                        logits = DTensor.from_local(local, mesh, [Shard(-1)])
                        F.cross_entropy(logits, labels).backward()
            peak = sum(v for k, v in next(iter(tracker.get_tracker_snapshot("peak").values())
                                          ).items() if str(k) != "Total")
    finally:
        dist.destroy_process_group()
    # the labels (int64) and a few scalars are the only other bytes
    assert sum(loss_bytes(tokens, vocab, tp).values()) == pytest.approx(peak, rel=1e-3)


def test_decoder_rmsnorm_equals_torchs():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 16, dtype=torch.float64, requires_grad=True)
    mine, ref = RMSNorm(16).double(), torch.nn.RMSNorm(16, eps=1e-5).double()
    with torch.no_grad():
        mine.weight.uniform_(0.5, 1.5)
        ref.weight.copy_(mine.weight)
    g = torch.randn(3, 5, 16, dtype=torch.float64)
    a = torch.autograd.grad(mine(x), (x, mine.weight), g)
    b = torch.autograd.grad(ref(x), (x, ref.weight), g)
    assert torch.allclose(mine(x), ref(x), rtol=0, atol=1e-14)
    # float64 on both sides; the two formulas order the sums differently
    assert all(torch.allclose(u, v, rtol=0, atol=1e-13) for u, v in zip(a, b))


@pytest.mark.parametrize("name", ["Llama-3 8B", "GPT-3 175B"])
def test_decoder_has_the_specs_parameters(name):
    from torch._subclasses.fake_tensor import FakeTensorMode
    spec = MODELS[name]
    with FakeTensorMode():
        model = Decoder(dataclasses.replace(spec, layers=2))
    count = sum(p.numel() for p in model.parameters())
    assert count == dataclasses.replace(spec, layers=2).num_params()


def test_fit_refuses_bad_input_before_measuring():
    with pytest.raises(ValueError, match="not a preset"):
        fit_mod.fit("Llama-9 1T", 8)
    with pytest.raises(ValueError, match="gpu='H1000'"):
        fit_mod.fit("Llama-3 8B", 8, gpu="H1000")
    with pytest.raises(ValueError, match="multiple of tp x pp x cp"):
        fit_mod.fit("Llama-3 8B", 12, tp=8)
    with pytest.raises(ValueError, match="does not divide"):
        fit_mod.fit("Llama-3 8B", 12, tp=3)
    with pytest.raises(ValueError, match="zero"):
        fit_mod.fit("Llama-3 8B", 8, zero=2)
    with pytest.raises(ValueError, match="tp=3"):
        memory.activation_memory_per_layer(2048, 1, 4096, 32, tp=3)


def test_fit_prints_the_table_and_the_verdict_line():
    report = fit_mod.fit("Llama-3 405B", 8, measure=False)
    text = fit_mod.format_report(report)
    assert text.splitlines()[-1].startswith("fits on H100 (80 GB): no - predicted ")
    assert "peak per GPU" in text and not report.fits


# ---- whole models: the fit command's cases -------------------------------------------
FIT_CASES = {
    "8B on 8 H100": (dict(model="Llama-3 8B", gpus=8, zero=3, seq=8192, micro_batch=1,
                          recompute="selective"), True),
    "70B on 64 H100, TP 8": (dict(model="Llama-3 70B", gpus=64, tp=8, zero=3, seq=8192,
                                  micro_batch=1, recompute="selective"), True),
    "405B on 8 GPUs": (dict(model="Llama-3 405B", gpus=8, seq=8192, recompute="selective"),
                       False),
}


@pytest.mark.ci
@pytest.mark.parametrize("case", list(FIT_CASES))
def test_fit_whole_models(case):
    kwargs, fits = FIT_CASES[case]
    report = fit_mod.fit(kwargs.pop("model"), kwargs.pop("gpus"), **kwargs)
    assert report.fits is fits, fit_mod.format_report(report)
    assert report.predicted["peak"] == pytest.approx(report.measured["peak"], rel=0.10)
    assert report.predicted["states"] == pytest.approx(report.measured["states"], rel=0.01)
    line = fit_mod.format_report(report).splitlines()[-1]
    assert line.startswith(f"fits on H100 (80 GB): {'yes' if fits else 'no'} - predicted ")
