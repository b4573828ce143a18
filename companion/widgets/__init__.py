"""Interactive widgets, one submodule per notebook topic; all re-exported here.

``companion.widgets.<name>()`` returns a displayable ipywidgets object, so the same
widget appears in a notebook, in a Voila presentation and in browser tests. Callbacks
are wrapped by :func:`companion.widgets._base.guarded`, which shows an exception in the
widget's output area instead of swallowing it.
"""
from __future__ import annotations

import importlib
import pkgutil

from ._base import guarded, showing

__all__ = ["guarded", "showing"]

# Submodules re-export their __all__ here, so adding a widget module needs no edit of
# this file (several notebooks' authors add widgets independently).
for _info in pkgutil.iter_modules(__path__):
    if not _info.name.startswith("_"):
        _module = importlib.import_module(f"{__name__}.{_info.name}")
        for _name in getattr(_module, "__all__", []):
            globals()[_name] = getattr(_module, _name)
            __all__.append(_name)
