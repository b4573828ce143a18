"""A registry of experiments that run the same way from a notebook, a shell or torchrun.

Taught in notebook 00. A module marks a rank function with ``@experiment("name")``;
then all three of these run it:

* ``companion.launch(fn, world_size=N)`` inside a notebook;
* ``python -m companion run NAME --world-size N`` on one machine;
* ``torchrun --nnodes M --nproc-per-node K ... -m companion run NAME`` on a cluster,
  where rank and world size come from torchrun's environment.

Each rank function returns picklable data; the optional ``summarize`` turns the list of
per-rank results into text that rank 0 (or the parent) prints. Ranks never plot.
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from typing import Callable

__all__ = ["experiment", "get", "names", "Experiment"]


@dataclasses.dataclass(frozen=True)
class Experiment:
    name: str
    fn: Callable
    summarize: Callable[[list], str] | None
    description: str


_REGISTRY: dict[str, Experiment] = {}
load_errors: dict[str, str] = {}  # module -> error, for modules that failed to import


def experiment(name: str, summarize: Callable[[list], str] | None = None):
    """Decorator: register ``fn`` (a rank function) under ``name``."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"experiment name must be a non-empty string, got {name!r} "
                        f"({type(name).__name__}); `python -m companion run NAME` takes it.")
    if summarize is not None and not callable(summarize):
        raise TypeError(f"summarize must be a function of the per-rank results list, got "
                        f"{summarize!r} ({type(summarize).__name__}).")

    def register(fn):
        if name in _REGISTRY and _REGISTRY[name].fn.__qualname__ != fn.__qualname__:
            raise ValueError(f"experiment name {name!r} is registered twice; pick another name.")
        doc = (fn.__doc__ or "").strip().splitlines()
        _REGISTRY[name] = Experiment(name, fn, summarize, doc[0] if doc else "")
        return fn

    return register


def _load_all() -> None:
    # Modules register their experiments on import; importing every module of the
    # package means a new notebook's module needs no entry in a central list.
    import companion

    for info in pkgutil.iter_modules(companion.__path__):
        if info.name.startswith("_") or f"companion.{info.name}" in load_errors:
            continue
        try:
            importlib.import_module(f"companion.{info.name}")
        except Exception as exc:  # noqa: BLE001 - one broken module must not hide the others
            load_errors[f"companion.{info.name}"] = f"{type(exc).__name__}: {exc}"


def names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def get(name: str) -> Experiment:
    _load_all()
    if name not in _REGISTRY:
        broken = "".join(f"\n  {mod} failed to import: {err}" for mod, err in load_errors.items())
        raise ValueError(f"no experiment named {name!r}; known: {', '.join(sorted(_REGISTRY))}. "
                         f"List them with `python -m companion list`.{broken}")
    return _REGISTRY[name]
