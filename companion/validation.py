"""Argument checks for the public entry points: refuse bad input before any rank starts.

Every notebook's functions use these; ``tests/test_bad_input.py`` lists the
cases. The rules, so every message reads the same way:

* a wrong type (a string for a size, a bool for a count, a non-callable) is a
  ``TypeError``; a value of the right type that cannot work is a ``ValueError``;
* the message names the argument, shows what it got and says what to pass instead;
* a bool is not a number here (``world_size=True`` is a slip, not one rank), and NaN or
  infinity is never a size, a count or a timeout.
"""
from __future__ import annotations

import inspect
import math
import numbers

__all__ = ["positive_int", "nonnegative_int", "positive_number", "fraction", "in_range", "one_of",
           "divides", "callable_arg", "accepts", "preflight", "run_preflight"]


def _tail(fix: str) -> str:
    return f"; {fix}" if fix else "."


def _require_number(name, value, kind, fix):
    # bool subclasses int, and a checkbox's True silently meaning "1 rank" is the slip
    # this guards against; numpy scalars are numbers.Real, so they pass.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {kind}, got {value!r} "
                        f"({type(value).__name__}){_tail(fix)}")


def positive_int(name: str, value, fix: str = "", minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum`` (2.0, 2.5, NaN and inf are refused, never rounded)."""
    kind = f"an integer >= {minimum}"
    _require_number(name, value, kind, fix)
    if not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be {kind}, got {value!r}{_tail(fix)}")
    return int(value)


def nonnegative_int(name: str, value, fix: str = "") -> int:
    """``value`` as an int >= 0 (a delay, a seed, an index)."""
    return positive_int(name, value, fix, minimum=0)


def positive_number(name: str, value, fix: str = "", *, zero: bool = False,
                    inf: bool = False) -> float:
    """``value`` as a finite float > 0 (>= 0 with ``zero``; ``math.inf`` allowed with ``inf``)."""
    kind = "a number >= 0" if zero else "a positive number"
    _require_number(name, value, kind, fix)
    ok = not math.isnan(value) and (value >= 0 if zero else value > 0)
    if not ok or (math.isinf(value) and not inf):
        raise ValueError(f"{name} must be {kind}{'' if inf else ' (finite)'}, "
                         f"got {value!r}{_tail(fix)}")
    return float(value)


def fraction(name: str, value, fix: str = "") -> float:
    """``value`` in (0, 1]: a density or a keep ratio (0.001 is 99.9% sparsity)."""
    _require_number(name, value, "a number in (0, 1]", fix)
    if not 0 < value <= 1:  # False for NaN too
        raise ValueError(f"{name} must be in (0, 1], got {value!r}{_tail(fix)}")
    return float(value)


def in_range(name: str, value, low: float, high: float, fix: str = "") -> float:
    """``value`` as a float in [``low``, ``high``] (a latitude, a probability)."""
    _require_number(name, value, f"a number in [{low}, {high}]", fix)
    if not low <= value <= high:  # False for NaN too
        raise ValueError(f"{name} must be in [{low}, {high}], got {value!r}{_tail(fix)}")
    return float(value)


def one_of(name: str, value, options, fix: str = ""):
    """``value`` if it is one of ``options`` (a name: a schedule, a method, a backend)."""
    options = list(options)
    try:
        known = value in options
    except TypeError:  # an unhashable value asked of a dict's keys
        known = False
    if not known:
        listed = ", ".join(repr(o) for o in options)
        raise ValueError(f"{name}={value!r} is not one of {listed}{_tail(fix)}")
    return value


def divides(name: str, value: int, parts: int, parts_name: str, fix: str = "") -> None:
    """``value`` splits into ``parts`` equal whole pieces (a batch over ranks, heads over TP)."""
    if value % parts:
        raise ValueError(f"{name}={value} does not split evenly over {parts_name}={parts}"
                         f"{_tail(fix or f'use a multiple of {parts}')}")


def callable_arg(name: str, value, fix: str = ""):
    """``value`` if it can be called (a rank function, a gradient function, a hook)."""
    if not callable(value):
        raise TypeError(f"{name} must be a function, got {value!r} "
                        f"({type(value).__name__}){_tail(fix)}")
    return value


def accepts(name: str, fn, args=(), kwargs=None, fix: str = "") -> None:
    """``fn(*args, **kwargs)`` binds to ``fn``'s signature (a misspelt keyword is caught here,
    not in every rank at once); functions without an inspectable signature pass."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins such as print
        return
    try:
        signature.bind(*args, **(kwargs or {}))
    except TypeError as exc:
        label = getattr(fn, "__name__", repr(fn))
        raise TypeError(f"{name} ({label}) cannot be called with these arguments: {exc}"
                        f"{_tail(fix or f'its parameters are {signature}')}") from None


_PREFLIGHT = "__companion_preflight__"


def preflight(check):
    """Decorator: attach ``check`` to a rank function, to run in the parent before any rank starts.

    :func:`companion.launch` and ``python -m companion run`` call :func:`run_preflight`
    after checking the launch itself, so ``launch(train, steps=0)`` raises in the notebook
    instead of in every rank. ``check`` takes some of the rank function's parameters by
    name (defaults filled in) and, if it declares one, ``world_size``; the rank function
    calls the same ``check`` at its top, so a direct call is refused the same way and the
    checks are written once.
    """
    callable_arg("check", check)

    def attach(fn):
        setattr(fn, _PREFLIGHT, check)
        return fn

    return attach


def run_preflight(fn, args=(), kwargs=None, world_size=None) -> None:
    """Run the check :func:`preflight` attached to ``fn`` on these arguments (if any)."""
    check = getattr(fn, _PREFLIGHT, None)
    if check is None:
        return
    bound = inspect.signature(fn).bind(*args, **(kwargs or {}))  # accepts() ran first
    bound.apply_defaults()
    values = dict(bound.arguments)  # *args as a tuple and **options as a dict, by their names
    if world_size is not None:
        values["world_size"] = world_size
    wanted = inspect.signature(check).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in wanted.values()):
        values = {k: v for k, v in values.items() if k in wanted}
    check(**values)
