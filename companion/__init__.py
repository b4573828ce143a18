"""companion: real multi-process torch.distributed experiments for the
distributed-training lectures (MIT 6.5940 L19-L20, Stanford CS336 L8).

Start here: ``notebooks/00_launching_ranks.ipynb``. Each module's docstring names the
notebook that teaches it.

The layout, in one rule: **a top-level module is shared by many notebooks; a folder is
one chapter (one notebook, or a tight pair); ``learning/``, ``widgets/``,
``cheatsheet/`` and ``tools/`` are the course around the chapters.**

* shared foundation: ``launcher``, ``supervisor``, ``runtime``, ``backends``,
  ``experiments``, ``basics`` (notebook 00), ``models``, ``data``, ``units``,
  ``validation``, ``hardware``, ``plotting``, and the two shared folders ``i18n/``
  (messages in English and Chinese) and ``network/`` (the emulated links and cluster);
* chapters: ``collectives/`` (01-02), ``data_parallel/`` (02-03), ``pipeline/`` (04),
  ``tensor_parallel/`` (05), ``sequence_parallel/`` (06, with MoE), ``compression/`` (07),
  ``dga/`` (08), ``planner/`` and ``hybrid/`` (09, 12), ``roofline/``, ``overlap/``,
  ``batch_size/`` (10), ``topology/`` (11), ``autoparallel/`` (12);
* the course: ``learning/`` (exercises, one ``nbNN`` module per notebook), ``widgets/``,
  ``cheatsheet/``; ``tools/`` (presenting, the student release, the translation build)
  is imported by nothing else.

Imports only go down: course -> chapters -> foundation, and a chapter imports only
chapters of earlier notebooks. ``tests/test_layout.py`` holds the package to this.
"""
import os as _os
import sys as _sys

from .i18n import set_language
from .launcher import LaunchError, LaunchTimeout, launch, warm_up
from .runtime import (device, process_group, rank, setup_process_group,
                      teardown_process_group, world_size)

__version__ = "0.1.0"

# The data-parallel wrappers live in their own modules (notebook 03); importing them
# lazily keeps `import companion` (and every rank's start-up) light.
_LAZY = {"DDP": "companion.data_parallel.ddp", "ShardedOptimizer": "companion.data_parallel.zero",
         "FSDP": "companion.data_parallel.fsdp"}

# In a Jupyter kernel (not in a rank, a script or torchrun) the forkserver starts in the
# background now, so the first launching cell rarely waits for torch to import twice.
if "ipykernel" in _sys.modules and "RANK" not in _os.environ \
        and not _os.environ.get("COMPANION_NO_WARM_UP"):
    warm_up()


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
    "rank", "world_size", "device", "set_language", "warm_up",
]
