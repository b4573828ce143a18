"""Watch a student's function run: the functions it must not call, the ``torch.distributed``
calls it makes, and whether it left the watcher switched on.

Used by every exercise checker (:mod:`companion.learning.exercise`); introduced in
notebook 00. Two instruments, each for what only it can see:

* the **process group** (:mod:`.recording`) is where communication is counted: every
  message passes through it, whichever thread, alias or helper issued it;
* the **profile hook** (``sys.setprofile``, here) is where forbidden *Python functions*
  are caught: a student may write ``from torch.distributed import all_reduce`` or keep
  the package's ``ring_all_reduce`` in a variable, and the hook sees the *code object*
  that runs, however it was reached. It also names each message after the outermost
  ``torch.distributed`` call it came from (``batch_isend_irecv`` counts as its sends
  and receives, ``all_gather_object`` once), and without the recording group it is
  the only record of the calls.

While the student's code runs (inside :meth:`Watcher.student`) the hook covers every
thread it starts (``threading.setprofile``, and ``_thread``'s entry points wrapped), and
tampering is recorded in ``Watcher.tampered``: a call to ``sys.setprofile`` or
``threading.setprofile`` with another hook (the call is refused), the hook found
replaced afterwards, a thread still running when the function returned, an operation
run on a group's gloo backend directly or a group made with another backend (both
past the recording), and reaching for the call stack or the heap (``sys._getframe``,
``gc.get_objects``), where the checker's own frames and objects are.
Forbidden calls are not blocked: one runs normally and the checker fails the attempt
afterwards, which keeps every rank in step (an exception on one rank would leave the
others waiting in a collective).
"""
from __future__ import annotations

import _thread
import contextlib
import gc
import inspect
import sys
import threading
import time

import torch
import torch.distributed as dist

from . import recording
from .feedback import is_students, saw_student_code
from .recording import Call
from .rules import codes_of, resolve

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
# Where every process group is made: one with another backend would go unrecorded.
_NEW_GROUP = dist.distributed_c10d._new_process_group_helper.__code__
# Where threads start: each is wrapped so the new thread runs under the hook.
_THREAD_STARTS = ((_thread, "start_new_thread"), (_thread, "start_new"),
                  (_thread, "start_joinable_thread"), (threading, "_start_new_thread"),
                  (threading, "_start_joinable_thread"))
_PROFILE_SETTERS = ((sys, "setprofile"), (threading, "setprofile"),
                    (threading, "setprofile_all_threads"), (sys, "_setprofileallthreads"))
# Ways to reach the checker's own frames and objects (the result pipe, the watcher).
_INTROSPECTION = [getattr(m, n) for m, n in (
    (sys, "_getframe"), (sys, "_current_frames"), (sys, "_getframemodulename"),
    (gc, "get_objects"), (gc, "get_referrers"), (gc, "get_referents"),
    (inspect, "currentframe"), (inspect, "stack"), (inspect, "trace")) if hasattr(m, n)]
THREAD_GRACE_S = 0.5   # how long a thread the student started may take to finish


def _nbytes(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return 0


class Watcher:
    """Profile hook state for one watched run (use :func:`watching`)."""

    def __init__(self, forbidden: dict[str, str] | None = None):
        self.forbidden: list[tuple[str, str]] = []   # (dotted name, reason)
        self.tampered: list[tuple[str, str]] = []    # (what, detail)
        self._seen: list[Call] = []                  # the calls the hook saw itself
        self._comm = {}
        for name in list(COMM_FUNCTIONS) + sorted(_TRANSPARENT):
            if hasattr(dist, name):   # an older torch lacks the newest entry points
                for code in codes_of(getattr(dist, name)):
                    self._comm[code] = name
        if forbidden is not None and not isinstance(forbidden, dict):
            raise ValueError(f"forbidden={forbidden!r}: pass a dict "
                             "{'dotted.name': 'why it is not allowed'}")
        self._forbid = {}
        for dotted, reason in (forbidden or {}).items():
            for code in codes_of(resolve(dotted)):
                self._forbid.setdefault(code, (dotted, reason))
        self._student_depth = 0
        self._introspect = {id(f) for f in _INTROSPECTION}
        self._introspect_codes = {c for f in _INTROSPECTION for c in codes_of(f)}
        self._students: dict[str, bool] = {}
        self._span = (recording.mark(), None)
        self.hook = self._hook   # one bound method: its identity is checked afterwards
        self._threads = 0
        self._lock = threading.Lock()

    @property
    def calls(self) -> list[Call]:
        """Every call made while watching: from the recording group when this rank runs
        on one (every message), else the calls the hook saw."""
        if recording.active():
            return recording.calls_from(recording.since(*self._span))
        return list(self._seen)

    def _is_students(self, code) -> bool:
        known = self._students.get(code.co_filename)
        if known is None:
            known = self._students[code.co_filename] = is_students(code.co_filename)
        return known

    def _tamper(self, what: str, detail: str = "") -> None:
        if (what, detail) not in self.tampered:
            self.tampered.append((what, detail))

    def _hook(self, frame, event, arg):
        if event == "call":
            code = frame.f_code
            if self._student_depth:
                # Checked first: a torch.distributed call can be forbidden as well as counted.
                hit = self._forbid.get(code)
                if hit is not None and hit not in self.forbidden:
                    self.forbidden.append(hit)
                if self._is_students(code):
                    saw_student_code(code.co_filename, code.co_firstlineno, code.co_name)
                elif code in self._introspect_codes and frame.f_back is not None \
                        and self._is_students(frame.f_back.f_code):
                    self._tamper("introspection", code.co_name)
                elif code is _NEW_GROUP and str(frame.f_locals.get("backend")) != \
                        recording.BACKEND and recording.active():
                    self._tamper("group", str(frame.f_locals.get("backend")))
            name = self._comm.get(code)
            if name is not None:
                stack = recording.open_labels()
                label = None
                if name not in _TRANSPARENT and not any(
                        lab is not None for _f, lab in stack):
                    label = recording.new_label(self._call(name, frame.f_locals))
                    self._seen.append(label.call)
                stack.append((frame, label))
        elif event == "return":
            stack = recording.open_labels()
            if stack and frame is stack[-1][0]:
                stack.pop()
        elif event == "c_call" and self._student_depth and id(arg) in self._introspect \
                and self._is_students(frame.f_code):
            self._tamper("introspection", getattr(arg, "__name__", "?"))

    def _call(self, name, args) -> Call:
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
        return Call(name, phase, _nbytes(args.get(payload)) if payload else 0, peer, size)

    # ---- the student's span: every thread watched, tampering noticed -----------------
    @contextlib.contextmanager
    def student(self):
        """Mark the span in which the student's own function runs."""
        outermost = self._student_depth == 0
        saved = self._guard() if outermost else None
        self._student_depth += 1
        try:
            yield
        finally:
            self._student_depth -= 1
            if outermost:
                self._unguard(saved)

    def _guard(self) -> dict:
        originals = {(m, n): getattr(m, n) for m, n in _THREAD_STARTS + _PROFILE_SETTERS
                     if hasattr(m, n)}
        set_profile = originals[(sys, "setprofile")]
        wrappers = {}
        for (module, name), original in originals.items():
            wrap = self._thread_start if (module, name) in _THREAD_STARTS else self._setter
            wrappers[module, name] = wrap(f"{module.__name__}.{name}", original, set_profile)
            setattr(module, name, wrappers[module, name])
        previous = threading.getprofile()
        originals[(threading, "setprofile")](self.hook)
        return {"originals": originals, "wrappers": wrappers, "previous": previous,
                "unrecorded": recording.unrecorded()}

    def _setter(self, name, original, _set_profile):
        def refuse(fn, *args, **kwargs):
            if fn is self.hook:   # threading's bootstrap re-installing our own hook
                return original(fn, *args, **kwargs)
            self._tamper("setprofile", name)
            return None
        return refuse

    def _thread_start(self, name, original, set_profile):
        def start(function, *args, **kwargs):
            def run(*a, **k):
                set_profile(self.hook)
                try:
                    return function(*a, **k)
                finally:
                    with self._lock:
                        self._threads -= 1
            with self._lock:
                self._threads += 1
            try:
                return original(run, *args, **kwargs)
            except BaseException:
                with self._lock:
                    self._threads -= 1
                raise
        return start

    def _unguard(self, saved) -> None:
        deadline = time.monotonic() + THREAD_GRACE_S
        while self._threads and time.monotonic() < deadline:
            time.sleep(0.01)
        if self._threads:
            self._tamper("thread", str(self._threads))
        if sys.getprofile() is not self.hook or threading.getprofile() is not self.hook:
            self._tamper("hook")
        if recording.unrecorded() > saved["unrecorded"]:
            self._tamper("gloo", "")
        if recording.active() and not all(isinstance(g, recording.RecordingGroup)
                                          for g in dist.distributed_c10d._world.pg_map):
            self._tamper("group", "")
        for (module, name), wrapper in saved["wrappers"].items():
            if getattr(module, name) is not wrapper:
                self._tamper("setprofile", f"{module.__name__}.{name}")
        for (module, name), original in saved["originals"].items():
            setattr(module, name, original)
        threading.setprofile(saved["previous"])


@contextlib.contextmanager
def watching(forbidden: dict[str, str] | None = None):
    """``with watching({"torch.distributed.all_reduce": "why"}) as w:`` records the
    communication calls made inside, and forbidden calls and tampering inside
    ``w.student()``."""
    watcher = Watcher(forbidden)
    previous = sys.getprofile()
    recording.open_labels().clear()
    sys.setprofile(watcher.hook)
    try:
        yield watcher
    finally:
        sys.setprofile(previous)
        watcher._span = (watcher._span[0], recording.mark())
        recording.open_labels().clear()
