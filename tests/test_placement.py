"""The placement audit tells a rank function that follows ``runtime.device()`` from one
that would silently stay on the CPU, on a machine that has only a CPU; and the launcher
keeps the CPU-by-design lessons on gloo where a GPU per rank is visible."""
from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch import nn

import companion
from companion import backends, launcher, runtime
from companion.learning import placement
from companion.models import seeded

HERE = (__file__,)


def _step(model):
    x = torch.ones(4, 3, device=runtime.device())
    model(x).sum().backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)


def follows_the_device():
    with seeded(0):
        model = nn.Linear(3, 2)
    _step(model.to(runtime.device()))


def never_moves_its_model():
    with seeded(0):
        model = nn.Linear(3, 2)
    _step(model)


def makes_a_tensor_without_a_device():
    with seeded(0):
        model = nn.Linear(3, 2)
    model = model.to(runtime.device())
    model(torch.ones(4, 3)).sum().backward()


def _audit(fn):
    return companion.launch(placement.audit, fn, {}, HERE, world_size=2, backend="gloo")


def test_a_function_that_follows_the_device_has_no_problem():
    for report in _audit(follows_the_device):
        assert report["problems"] == [] and report["device"] == "cpu"
        assert report["modules"] == 1 and report["collective_tensors"] == 2


def test_a_model_never_moved_is_found_on_a_cpu_machine():
    (report, _) = _audit(never_moves_its_model)
    assert len(report["problems"]) == 1
    assert "Linear ran forward without being moved" in report["problems"][0]


def test_a_constructor_without_a_device_is_found_with_its_line():
    (report, _) = _audit(makes_a_tensor_without_a_device)
    assert report["problems"] == [
        f"tests/test_placement.py:{makes_a_tensor_without_a_device.__code__.co_firstlineno + 4}"
        " (makes_a_tensor_without_a_device): torch.ones without device="]


def test_the_audit_leaves_torch_as_it_found_it():
    before = (dist.all_reduce, nn.Module.to)
    (report, _) = _audit(follows_the_device)
    assert (dist.all_reduce, nn.Module.to) == before and report["problems"] == []
    assert torch.ones(1).device.type == "cpu"


@runtime.cpu_by_design(runtime.LOOPBACK)
def times_loopback():
    return runtime.backend()


def test_a_cpu_by_design_lesson_runs_on_gloo_where_gpus_would_pick_nccl(monkeypatch, capsys):
    monkeypatch.setattr(backends, "choose_backend",
                        lambda backend, n: ("nccl", "8 GPU(s) visible, one per rank"))
    monkeypatch.setattr(launcher, "_last_announced", None)
    assert companion.launch(times_loopback, world_size=2) == ["gloo", "gloo"]
    banner = capsys.readouterr().out
    assert "[launch] gloo backend: times_loopback computes on the CPU on every machine" in banner
    assert "loopback" in banner


def test_cpu_by_design_takes_one_of_the_named_reasons():
    with pytest.raises(ValueError, match="runtime.LOOPBACK or runtime.EMULATED"):
        runtime.cpu_by_design("because")
