"""Watch a student's function run: every ``torch.distributed`` call it makes, and any
call to a function the exercise forbids.

Used by every exercise checker (:mod:`companion.learning.exercise`); introduced in
notebook 00. The watcher is a profile hook (``sys.setprofile``), not a monkeypatch, for
one reason: a student may write ``from torch.distributed import all_reduce`` or keep a
reference to the package's ``ring_all_reduce`` in a variable, and a patched module
attribute would miss both. The hook sees the *code object* that runs, however it was
reached.

Two things are recorded:

* ``calls``: the outermost ``torch.distributed`` communication calls, with their phase
  (forward, or backward when autograd's engine is running), the bytes of the tensor
  they move, the peer of a point-to-point message and the size of the group. Nested
  calls are not counted twice (``batch_isend_irecv`` is counted as its sends and
  receives; ``torch.distributed.nn``'s autograd collectives as the collective inside).
* ``forbidden``: each forbidden function entered while the student's own code runs
  (inside :meth:`Watcher.student`), with the reason the exercise gives.

Nothing is blocked: a forbidden call runs normally and the checker fails the attempt
afterwards, which keeps every rank in step (an exception on one rank would leave the
others waiting in a collective).
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import sys

import torch
import torch.distributed as dist

__all__ = ["Call", "Watcher", "watching", "COMM_FUNCTIONS", "resolve"]

# Communication entry points of torch.distributed and the argument holding the payload.
COMM_FUNCTIONS = {
    "send": "tensor", "recv": "tensor", "isend": "tensor", "irecv": "tensor",
    "broadcast": "tensor", "all_reduce": "tensor", "reduce": "tensor",
    "all_gather": "tensor", "all_gather_into_tensor": "input_tensor",
    "all_gather_single": "input_tensor", "reduce_scatter_single": "input",
    "gather": "tensor", "scatter": "tensor", "reduce_scatter": "output",
    "reduce_scatter_tensor": "input", "all_to_all": "input_tensor_list",
    "all_to_all_single": "input", "barrier": None, "all_gather_object": None,
    "broadcast_object_list": None, "send_object_list": None, "recv_object_list": None,
    "scatter_object_list": None, "gather_object": None,
}
# Calls that only bundle other watched calls: their parts are recorded instead.
_TRANSPARENT = {"batch_isend_irecv"}
_PEER_ARG = {"send": "dst", "isend": "dst", "recv": "src", "irecv": "src"}
P2P = frozenset(_PEER_ARG)


@dataclasses.dataclass(frozen=True)
class Call:
    """One communication call a rank made."""

    name: str          # torch.distributed's function name, e.g. "isend", "all_reduce"
    phase: str         # "forward" or "backward"
    bytes: int         # payload this rank hands to the call (0 for barrier/objects)
    peer: int | None   # the other rank of a send/recv, else None
    group_size: int


def resolve(dotted: str):
    """The object a dotted name such as ``"torch.distributed.all_reduce"`` names."""
    if not isinstance(dotted, str) or "." not in dotted:
        raise ValueError(f"dotted={dotted!r}: name a function by its full dotted path, "
                         "e.g. 'torch.distributed.all_reduce'")
    module, _, attr = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        pass
    try:  # "package.module.Class.method": the class's attribute
        head, _, cls = module.rpartition(".")
        return getattr(getattr(importlib.import_module(head), cls), attr)
    except (ImportError, AttributeError, ValueError):
        raise ValueError(f"dotted={dotted!r} names nothing importable; check the spelling "
                         "(module path, then the function)") from None


def _codes(obj) -> list:
    """The code objects that run when ``obj`` is called (functions, autograd Functions,
    nn.Module classes: their forward/backward)."""
    if inspect.isclass(obj):
        out = []
        for name in ("forward", "backward", "__call__", "__init__"):
            member = obj.__dict__.get(name)
            if isinstance(member, staticmethod):
                member = member.__func__
            if inspect.isfunction(member):
                out.append(inspect.unwrap(member).__code__)
        return out
    fn = inspect.unwrap(obj)
    fn = getattr(fn, "__func__", fn)
    return [fn.__code__] if hasattr(fn, "__code__") else []


def _nbytes(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return 0


class Watcher:
    """Profile hook state for one watched run (use :func:`watching`)."""

    def __init__(self, forbidden: dict[str, str] | None = None):
        self.calls: list[Call] = []
        self.forbidden: list[tuple[str, str]] = []   # (dotted name, reason)
        self._comm = {}
        for name in list(COMM_FUNCTIONS) + sorted(_TRANSPARENT):
            if not hasattr(dist, name):   # an older torch without the newest entry points
                continue
            for code in _codes(getattr(dist, name)):
                self._comm[code] = name
        self._forbid = {}
        if forbidden is not None and not isinstance(forbidden, dict):
            raise ValueError(f"forbidden={forbidden!r}: pass a dict "
                             "{'dotted.name': 'why it is not allowed'}")
        for dotted, reason in (forbidden or {}).items():
            for code in _codes(resolve(dotted)):
                self._forbid[code] = (dotted, reason)
        self._open: list = []         # frames of watched comm calls still running
        self._student_depth = 0

    @contextlib.contextmanager
    def student(self):
        """Mark the span in which the student's own function runs."""
        self._student_depth += 1
        try:
            yield
        finally:
            self._student_depth -= 1

    def _hook(self, frame, event, arg):
        if event == "call":
            code = frame.f_code
            if self._student_depth and code in self._forbid:
                # Checked first: a torch.distributed call can be forbidden as well as counted.
                hit = self._forbid[code]
                if hit not in self.forbidden:
                    self.forbidden.append(hit)
            name = self._comm.get(code)
            if name is not None:
                transparent = name in _TRANSPARENT or any(
                    self._comm[f.f_code] not in _TRANSPARENT for f in self._open)
                if not transparent:
                    self._record(name, frame.f_locals)
                self._open.append(frame)
        elif event == "return" and self._open and frame is self._open[-1]:
            self._open.pop()

    def _record(self, name, args) -> None:
        payload = COMM_FUNCTIONS.get(name)
        group = args.get("group")
        peer = None
        if name in _PEER_ARG:
            peer = args.get(_PEER_ARG[name])
            local = args.get("group_" + _PEER_ARG[name])
            if peer is None and local is not None:   # batch_isend_irecv passes group ranks
                peer = local if group is None else dist.get_global_rank(group, local)
        size = dist.get_world_size(group) if dist.is_initialized() else 1
        phase = "backward" if torch._C._current_graph_task_id() != -1 else "forward"
        self.calls.append(Call(name, phase, _nbytes(args.get(payload)) if payload else 0,
                               peer, size))


@contextlib.contextmanager
def watching(forbidden: dict[str, str] | None = None):
    """``with watching({"torch.distributed.all_reduce": "why"}) as w:`` records the
    communication calls made inside, and forbidden calls made inside ``w.student()``."""
    watcher = Watcher(forbidden)
    previous = sys.getprofile()
    sys.setprofile(watcher._hook)
    try:
        yield watcher
    finally:
        sys.setprofile(previous)
