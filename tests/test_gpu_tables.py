"""The GPU check's tables classify every registered rank function.

``make test`` skips ``tests/gpu`` without CUDA, so without this test a new ``@experiment``
would first fail on a GPU machine (or in CI's dry run). The tables are read by path:
``tests/gpu`` is not a package, and importing its test modules would skip them.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from companion import experiments

_PATH = Path(__file__).parent / "gpu" / "gpu_tables.py"


def _tables():
    spec = importlib.util.spec_from_file_location("gpu_tables_cpu_view", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DEVICE_AWARE, module.CPU_ONLY


def test_every_experiment_is_in_exactly_one_gpu_table():
    device_aware, cpu_only = _tables()
    names = set(experiments.names())
    assert not experiments.load_errors, experiments.load_errors
    assert not set(device_aware) & set(cpu_only), "an experiment is in both tables"
    missing = names - set(device_aware) - set(cpu_only)
    assert not missing, (f"not classified for the GPU check: {sorted(missing)}; add each to "
                         "DEVICE_AWARE or CPU_ONLY in tests/gpu/gpu_tables.py")
    assert not (set(device_aware) | set(cpu_only)) - names, "a table names a gone experiment"


def test_every_cpu_only_entry_says_why_and_fits_its_world_size():
    _, cpu_only = _tables()
    for name, (world_size, kwargs, why) in cpu_only.items():
        assert isinstance(world_size, int) and world_size >= 1, name
        assert isinstance(kwargs, dict), name
        assert len(why) > 20, f"{name}: say why it computes on the CPU"
