"""Where a rank function computes: the audit behind the GPU check and its CPU dry run.

The course's own check that what notebook 00 teaches holds: every rank function that
computes takes its device from one helper, :func:`companion.runtime.device`: its own GPU
under NCCL, else the CPU. A function that builds its model or its tensors without it still runs, on the
CPU, under an "nccl" banner, and nothing fails. :func:`audit` runs a rank function and
writes down every place where that could happen:

* a tensor made in the package's code by a constructor (``torch.zeros``, ``torch.tensor``,
  ``torch.randn`` ...) without naming its device. Constructors in a module's ``__init__``
  are left alone: the module is moved as a whole;
* a module with weights of its own that runs forward without ever having been moved to
  the rank's device (``module.to(device)``), or whose weights are elsewhere;
* a floating-point tensor handed to a collective (all-reduce, send, all-to-all ...) that
  is not on the rank's device. Integer tensors may stay on the CPU: they carry sizes and
  indices, which gloo serves beside NCCL in the same group.

On a machine without a GPU the rank's device is the CPU, so the last check can never
fail there; the first two can, and they are what lets a CPU machine tell a function that
would follow the GPU from one that would silently stay behind. ``tests/gpu`` runs every
device-aware rank function under it, on the CPU in CI and on ``cuda:0`` when a GPU is lent.
"""
from __future__ import annotations

import functools
import os
import sys
import threading
import weakref

import torch
import torch.distributed as dist
import torch.utils._device
from torch import nn
from torch.overrides import TorchFunctionMode

from .. import runtime
from ..validation import accepts, callable_arg, preflight, run_preflight

__all__ = ["audit", "Audit"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_ROOT = os.path.dirname(os.path.dirname(_PACKAGE))
_SKIP = (os.path.abspath(__file__),)

# The collectives and messages of torch.distributed that take tensors, and where their
# tensors are among the arguments; p2p ops of batch_isend_irecv carry theirs in .tensor.
_COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
                "reduce_scatter_tensor", "broadcast", "reduce", "send", "recv", "isend",
                "irecv", "all_to_all", "all_to_all_single", "gather", "scatter",
                "batch_isend_irecv", "all_gather_single", "reduce_scatter_single")


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dist.P2POp):
        yield value.tensor


def _caller(roots: tuple):
    """The frame that called the constructor, when it is audited code (a file under
    ``roots``); None when torch's own code made the tensor (a layer building its weight:
    the forward hook checks that layer) or a caller outside the audit did."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename in _SKIP:
        frame = frame.f_back
    if frame is not None and frame.f_code.co_filename.startswith(roots):
        return frame
    return None


class Audit(TorchFunctionMode):
    """The record of one audited call; :func:`audit` returns its :meth:`report`."""

    def __init__(self, device: torch.device, roots: tuple = (_PACKAGE,)):
        super().__init__()
        self.device, self.roots = device, roots
        self.problems: list[str] = []
        self.placed: weakref.WeakSet = weakref.WeakSet()
        self.modules = self.collective_tensors = 0
        self.local = threading.local()
        self._constructors = torch.utils._device._device_constructors()

    def _note(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)

    # -- constructors without a device ------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self._constructors and kwargs.get("device") is None:
            frame = _caller(self.roots)
            if frame is not None and not (frame.f_code.co_name == "__init__" and
                                          isinstance(frame.f_locals.get("self"), nn.Module)):
                where = os.path.relpath(frame.f_code.co_filename, _ROOT)
                self._note(f"{where}:{frame.f_lineno} ({frame.f_code.co_name}): "
                           f"torch.{func.__name__} without device=")
        return func(*args, **kwargs)

    # -- modules ------------------------------------------------------------------------
    def moved(self, module: nn.Module) -> None:
        weights = list(module.parameters()) + list(module.buffers())
        if weights and all(w.device == self.device for w in weights):
            self.placed.update(module.modules())

    def forward_pre_hook(self, module, _inputs):
        own = list(module.parameters(recurse=False)) + list(module.buffers(recurse=False))
        if not own:
            return
        self.modules += 1
        name = type(module).__name__
        if module not in self.placed:
            self._note(f"{name} ran forward without being moved to the rank's device "
                       "(build it on the CPU, then .to(companion.device()))")
        elsewhere = {str(w.device) for w in own} - {str(self.device)}
        if elsewhere:
            self._note(f"{name}'s weights are on {sorted(elsewhere)}, not {self.device}")

    # -- collectives --------------------------------------------------------------------
    def collective(self, name: str, args, kwargs) -> None:
        for t in _tensors(list(args) + list(kwargs.values())):
            self.collective_tensors += 1
            if t.is_floating_point() and t.device != self.device:
                self._note(f"dist.{name} got a {t.dtype} tensor on {t.device}, not "
                           f"{self.device}")

    def report(self) -> dict:
        return {"device": str(self.device), "modules": self.modules,
                "collective_tensors": self.collective_tensors, "problems": self.problems}


def _patched_to(original, record):
    @functools.wraps(original)
    def to(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        record.moved(out)
        return out
    return to


def _patched_collective(name, original, record):
    @functools.wraps(original)
    def call(*args, **kwargs):
        # torch's collectives call one another (all_reduce through its c10d twin): count
        # the tensors of the outermost call only.
        if getattr(record.local, "inside", False):
            return original(*args, **kwargs)
        record.collective(name, args, kwargs)
        record.local.inside = True
        try:
            return original(*args, **kwargs)
        finally:
            record.local.inside = False
    return call


def _check_audit(fn, kwargs=None, also=(), world_size=None) -> None:
    fix = ("pass the rank function and a dict of its keyword arguments, "
           "e.g. audit(train, {'steps': 2}).")
    callable_arg("fn", fn, fix)
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"kwargs must be a dict of fn's keyword arguments, got {kwargs!r}; {fix}")
    accepts("fn", fn, (), kwargs or {})
    run_preflight(fn, (), kwargs or {}, world_size)   # fn's own checks, before any rank


@preflight(_check_audit)
def audit(fn, kwargs: dict | None = None, also: tuple = ()) -> dict:
    """Rank function: run ``fn(**kwargs)`` on this rank and report where it computed.

    Returns ``{"device", "modules", "collective_tensors", "problems"}``: the rank's
    device, how many forward calls of modules with weights and how many tensors handed
    to collectives were seen, and every misplacement found (empty when ``fn`` follows
    :func:`companion.runtime.device` everywhere). ``fn``'s own result is dropped.
    Constructors are audited in the package's files and in the files named by ``also``."""
    _check_audit(fn, kwargs, also, runtime.world_size())
    record = Audit(runtime.device(), (_PACKAGE, *also))
    c10d = dist.distributed_c10d
    saved = {name: getattr(dist, name) for name in _COLLECTIVES if hasattr(dist, name)}
    saved_module = {m: getattr(nn.Module, m) for m in ("to", "cuda", "to_empty")}
    hook = nn.modules.module.register_module_forward_pre_hook(record.forward_pre_hook)
    try:
        for name, original in saved.items():
            patched = _patched_collective(name, original, record)
            setattr(dist, name, patched)
            if hasattr(c10d, name):
                setattr(c10d, name, patched)
        for name, original in saved_module.items():
            setattr(nn.Module, name, _patched_to(original, record))
        with record:
            fn(**(kwargs or {}))
    finally:
        hook.remove()
        for name, original in saved.items():
            setattr(dist, name, original)
            if hasattr(c10d, name):
                setattr(c10d, name, original)
        for name, original in saved_module.items():
            setattr(nn.Module, name, original)
    return record.report()
