"""The process-group helper pair and rank queries."""
from __future__ import annotations

import pytest
import torch.distributed as dist

import companion
from companion import runtime


def test_outside_a_group_rank_zero_of_one_on_cpu():
    assert not dist.is_initialized()
    assert (companion.rank(), companion.world_size(), str(companion.device())) == (0, 1, "cpu")


def test_setup_without_rank_or_torchrun_environment_explains(monkeypatch):
    for var in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="torchrun"):
        runtime.setup_process_group()


def test_helper_pair_inside_one_process(tmp_path):
    init = f"file://{tmp_path}/store"
    with runtime.process_group(rank=0, world_size=1, backend="gloo", init_method=init):
        assert dist.is_initialized() and companion.world_size() == 1
        runtime.setup_process_group(rank=0, world_size=1, init_method=init)  # no-op
    assert not dist.is_initialized()
    runtime.teardown_process_group()  # safe twice


def test_loopback_interface_exists():
    import socket

    assert runtime.loopback_interface() in [name for _, name in socket.if_nameindex()]


def test_a_backend_registered_with_torch_is_accepted(tmp_path):
    from companion.learning.recording import BACKEND, RecordingGroup

    assert runtime.plugin_backend(BACKEND)
    assert not runtime.plugin_backend("gloo") and not runtime.plugin_backend(None)
    with pytest.raises(ValueError, match="backend"):
        runtime.setup_process_group(rank=0, world_size=1, backend="not-registered",
                                    init_method=f"file://{tmp_path}/store0")
    init = f"file://{tmp_path}/store"
    with runtime.process_group(rank=0, world_size=1, backend=BACKEND, init_method=init):
        assert isinstance(dist.group.WORLD, RecordingGroup) and runtime.backend() == BACKEND
        assert str(companion.device()) == "cpu"
    assert not dist.is_initialized()
