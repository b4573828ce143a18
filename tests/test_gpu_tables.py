"""The GPU check's tables classify every rank function the notebooks launch.

``make test`` skips ``tests/gpu`` without CUDA, so without this test a new ``@experiment``,
or a notebook cell launching a new function, would first fail on a GPU machine (or in
CI's dry run). The tables are read by path: ``tests/gpu`` is not a package, and importing
its test modules would skip them.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import re
from pathlib import Path

from companion import experiments

_PATH = Path(__file__).parent / "gpu" / "gpu_tables.py"
_NOTEBOOKS = Path(__file__).parent.parent / "notebooks"


def _tables():
    spec = importlib.util.spec_from_file_location("gpu_tables_cpu_view", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _resolve(target: str):
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def _launches():
    """(notebook number, text of X) for every ``launch(X`` in a code cell, and the cells."""
    found, sources = set(), {}
    for path in sorted(_NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        sources[path.name[:2]] = code
        found |= {(path.name[:2], m) for m in re.findall(r"launch\(\s*([\w.]+)", code)}
    return found, sources


def test_every_experiment_is_in_exactly_one_gpu_table():
    t = _tables()
    names = set(experiments.names())
    assert not experiments.load_errors, experiments.load_errors
    assert not set(t.DEVICE_AWARE) & set(t.CPU_ONLY), "an experiment is in both tables"
    missing = names - set(t.DEVICE_AWARE) - set(t.CPU_ONLY)
    assert not missing, (f"not classified for the GPU check: {sorted(missing)}; add each to "
                         "DEVICE_AWARE or CPU_ONLY in tests/gpu/gpu_tables.py")
    assert not (set(t.DEVICE_AWARE) | set(t.CPU_ONLY)) - names, "a table names a gone experiment"


def test_cpu_only_is_exactly_the_experiments_marked_cpu_by_design():
    t = _tables()
    marked = {n for n in experiments.names()
              if getattr(experiments.get(n).fn, "cpu_by_design", None)}
    assert marked == set(t.CPU_ONLY)
    for name, (world_size, kwargs) in t.CPU_ONLY.items():
        assert isinstance(world_size, int) and world_size >= 1 and isinstance(kwargs, dict)


def test_every_function_a_notebook_launches_is_listed_and_classified():
    t = _tables()
    found, sources = _launches()
    assert found == set(t.NOTEBOOK_LAUNCHES), (
        f"new: {sorted(found - set(t.NOTEBOOK_LAUNCHES))}, "
        f"gone: {sorted(set(t.NOTEBOOK_LAUNCHES) - found)}; update NOTEBOOK_LAUNCHES")
    registered = {experiments.get(n).fn: n for n in experiments.names()}
    for (nb, text), target in t.NOTEBOOK_LAUNCHES.items():
        if target is None:
            assert re.search(rf"^def {re.escape(text)}\(", sources[nb], re.M), (nb, text)
            continue
        fn = _resolve(target)
        if fn in registered or getattr(fn, "cpu_by_design", None):
            continue
        assert target in t.UNREGISTERED, (
            f"notebook {nb} launches {target}, which is no experiment: give it a short run "
            "in UNREGISTERED")
    for target in t.UNREGISTERED:
        assert target in t.NOTEBOOK_LAUNCHES.values(), f"{target} is launched by no notebook"
