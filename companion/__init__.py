"""companion: real multi-process torch.distributed experiments for the
distributed-training lectures (MIT 6.5940 L19-L20, Stanford CS336 L8).

Start here: ``notebooks/00_launching_ranks.ipynb``. Each module's docstring names the
notebook that teaches it.
"""
from .i18n import set_language
from .launcher import LaunchError, LaunchTimeout, launch
from .runtime import (device, process_group, rank, setup_process_group,
                      teardown_process_group, world_size)

__version__ = "0.1.0"

# The data-parallel wrappers live in their own modules (notebook 03); importing them
# lazily keeps `import companion` (and every rank's start-up) light.
_LAZY = {"DDP": "companion.data_parallel.ddp", "ShardedOptimizer": "companion.data_parallel.zero", "FSDP": "companion.data_parallel.fsdp"}


def __getattr__(name):
    # Submodules load on first use too (`companion.widgets.planner()` without an import).
    import importlib
    import importlib.util

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if importlib.util.find_spec(f"companion.{name}") is not None:
        return importlib.import_module(f"companion.{name}")
    raise AttributeError(f"module 'companion' has no attribute {name!r}")

__all__ = [
    "launch", "LaunchError", "LaunchTimeout",
    "setup_process_group", "teardown_process_group", "process_group",
    "rank", "world_size", "device", "set_language",
]
