"""The package functions that compute an exercise's answer, which the student may not call.

Used by :attr:`companion.learning.exercise.Exercise.rules` (introduced in notebook 00), so
no exercise module can forget them: every exercise forbids its own ``reference``,
``expected`` and ``inputs`` functions, every package function ``expected`` calls (it
makes the answer another way: a training run that measures it, say), and the functions
of ``companion.learning`` the reference calls (the checker's own helpers). Exempt are
the functions the adapter or the precheck use too (:func:`reach`): they run inside the
watched span on the package's behalf. A reference's callees elsewhere in the package are
the exercise's to judge, since one may be what the student is asked to call (a building
block such as ``traffic.exchange``); tests/test_checker_bypass.py makes each exercise
forbid them or name the reason it does not.
"""
from __future__ import annotations

import dis
import functools
import importlib
import importlib.util
import inspect
import types

from ..i18n import _

__all__ = ["resolve", "codes_of", "function_of", "delegates", "reach", "answer_rules"]

_LEARNING = __package__ + "."


def resolve(dotted: str):
    """The object a dotted name such as ``"torch.distributed.all_reduce"`` names."""
    if not isinstance(dotted, str) or "." not in dotted:
        raise ValueError(f"dotted={dotted!r}: name a function by its full dotted path, "
                         "e.g. 'torch.distributed.all_reduce'")
    module, _dot, attr = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        pass
    try:  # "package.module.Class.method": the class's attribute
        head, _dot, cls = module.rpartition(".")
        return getattr(getattr(importlib.import_module(head), cls), attr)
    except (ImportError, AttributeError, ValueError):
        raise ValueError(f"dotted={dotted!r} names nothing importable; check the spelling "
                         "(module path, then the function)") from None


def codes_of(obj) -> list:
    """The code objects that run when ``obj`` is called (functions, partials, autograd
    Functions and nn.Module classes: their forward/backward)."""
    if inspect.isclass(obj):
        out = []
        for name in ("forward", "backward", "__call__", "__init__"):
            member = obj.__dict__.get(name)
            if isinstance(member, staticmethod):
                member = member.__func__
            if inspect.isfunction(member):
                out.append(inspect.unwrap(member).__code__)
        return out
    while hasattr(obj, "func") and hasattr(obj, "keywords"):   # functools.partial
        obj = obj.func
    fn = inspect.unwrap(obj)
    fn = getattr(fn, "__func__", fn)
    return [fn.__code__] if hasattr(fn, "__code__") else []



def function_of(obj) -> types.FunctionType | None:
    """The Python function behind ``obj`` (a function, a partial, a method), or None."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    obj = getattr(obj, "__func__", obj)
    while isinstance(getattr(obj, "__wrapped__", None), types.FunctionType):
        obj = obj.__wrapped__
    return obj if isinstance(obj, types.FunctionType) else None


def _dotted(fn: types.FunctionType) -> str | None:
    """``module.name`` when that finds ``fn`` again (not a lambda or a nested function)."""
    if "<" in fn.__qualname__ or "." in fn.__qualname__:
        return None
    module = importlib.import_module(fn.__module__)
    return f"{fn.__module__}.{fn.__qualname__}" if function_of(
        getattr(module, fn.__qualname__, None)) is fn else None


def _imported(fn, code) -> list:
    """The modules ``code`` imports in its body (``from ..x import y`` inside a function)."""
    out, instructions = [], list(dis.get_instructions(code))
    for i, ins in enumerate(instructions):
        if ins.opname != "IMPORT_NAME":
            continue
        level = instructions[i - 2].argval if i >= 2 and isinstance(
            instructions[i - 2].argval, int) else 0
        name = (importlib.util.resolve_name("." * level + ins.argval, fn.__module__.rpartition(
            ".")[0] or fn.__module__) if level else ins.argval)
        try:
            out.append(importlib.import_module(name))
        except ImportError:
            pass
    return out


def delegates(obj) -> list[types.FunctionType]:
    """The package's functions that ``obj`` calls by name: its globals, attributes of the
    package modules it names, and what it imports in its body."""
    fn = function_of(obj)
    if fn is None:
        return []
    codes, names, modules = [fn.__code__], set(), []
    while codes:
        code = codes.pop()
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        names |= set(code.co_names)
        modules += _imported(fn, code)
    found = []
    for name in sorted(names):
        value = fn.__globals__.get(name)
        if isinstance(value, types.ModuleType):
            modules.append(value)
        else:
            found.append(function_of(value))
    found += [function_of(getattr(m, n, None)) for m in modules for n in sorted(names)]
    out = []
    for f in found:
        if f is not None and f is not fn and f.__module__.startswith("companion.") \
                and f not in out:
            out.append(f)
    return out


def reach(fns) -> set:
    """The package functions that ``fns`` call: through ``companion.learning``'s functions,
    directly or not, up to the first function outside it."""
    seen, todo = set(), [f for f in map(function_of, fns) if f is not None]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        if f.__module__.startswith(_LEARNING):
            todo += delegates(f)
    return seen


@functools.lru_cache(maxsize=None)
def _answer_functions(reference, expected, inputs, adapter, precheck) -> tuple:
    shared = reach([adapter, precheck])
    found = []
    for kind, obj in (("reference", reference), ("expected", expected), ("inputs", inputs)):
        fn = function_of(obj)
        if fn is None:
            continue
        found.append((kind, fn))
        if kind != "inputs":
            found += [("helper", d) for d in delegates(fn) if d not in shared and (
                kind == "expected" or d.__module__.startswith(_LEARNING))]
    return tuple((kind, fn) for kind, fn in found if kind != "inputs" or fn not in shared)


def answer_rules(ex) -> dict[str, str]:
    """``{dotted name: reason}`` for the functions that compute ``ex``'s answer."""
    reasons = {"reference": _("it is the package's solution to this exercise"),
               "expected": _("it computes this exercise's expected answer"),
               "inputs": _("it makes every rank's input: a rank may learn the others' only "
                           "from messages"),
               "helper": _("the checker computes this exercise's answer with it")}
    fields = (ex.reference, ex.expected, ex.inputs, ex.adapter, ex.precheck)
    try:
        found = _answer_functions(*fields)
    except TypeError:   # an unhashable field: worked out without the cache
        found = _answer_functions.__wrapped__(*fields)
    out = {}
    for kind, fn in found:
        name = _dotted(fn)
        if name is not None:
            out.setdefault(name, reasons[kind])
    return out
