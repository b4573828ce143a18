"""The process group the exercise checker runs on: gloo, with every message written down.

Introduced in notebook 00; every exercise check (:mod:`companion.learning.exercise`)
launches its ranks with ``backend=BACKEND``. Why the process group and not a profile
hook or a patched ``torch.distributed``: every collective and every point-to-point
message ends in a method of the group it runs on, whoever issued it: the student's
function, an alias such as ``from torch.distributed import all_reduce``, a helper of
torch or of this package, a background thread, DTensor's functional collectives or
DDP's C++ reducer. :class:`RecordingGroup` is a Python ``ProcessGroup`` (torch's
PyProcessGroup trampoline sends C++ callers to its methods too), one per group, the
default group and every ``dist.new_group``/device-mesh subgroup alike (the backend is
registered with ``extended_api=True``, so the creator learns the group's GLOBAL ranks).
Each method writes down the operation, its bytes, the peer's global rank, the group's
global member ranks, the thread's autograd phase and the ``torch.distributed`` call
the profile hook saw open in that thread (:mod:`.watch`), then forwards the operation
to a real gloo backend the group owns.

The gloo backend is deliberately NOT registered with c10d under the group: an operation
that tried to reach gloo without passing through a method below (``torch.ops.c10d.*``
called directly) finds no backend and fails, instead of running unrecorded.

Gloo numbers every operation it runs; :func:`unrecorded` compares that count with the
operations that passed through the group, so code that calls the gloo object itself is
noticed (the watcher reports it as tampering). What it cannot see: a side channel (the
rendezvous store, a file, a socket) and code that deliberately subverts its own
process (ctypes, gc): see :mod:`.exercise` for what the checker guarantees.
"""
from __future__ import annotations

import dataclasses
import itertools
import threading
import time
import weakref

import torch
import torch.distributed as dist

__all__ = ["BACKEND", "Call", "RecordingGroup", "calls_from", "active", "settled"]

BACKEND = "companion_recorded"
# gloo's worker thread lets go of a finished operation's tensors a few milliseconds after
# wait() returns (5 ms at most in 3,000 all-gathers on 2 cores under a load of 4); on a
# loaded machine that can outlast the student's own ``del``.
RELEASE_GRACE_S = 0.5


def settled(read, believable, grace_s: float = RELEASE_GRACE_S):
    """``read()``, re-read until ``believable(value)`` or ``grace_s`` has passed: how the
    exercises of notebooks 03 and 10 count the weights a student keeps alive, so that only
    the student's references count, not the reference gloo's worker thread still holds.
    Weights kept on purpose stay kept, and are counted once the grace is over."""
    deadline = time.monotonic() + grace_s
    value = read()
    while not believable(value) and time.monotonic() < deadline:
        time.sleep(0.002)
        value = read()
    return value


@dataclasses.dataclass(frozen=True)
class Call:
    """One communication call a rank made."""

    name: str          # torch.distributed's function name, e.g. "isend", "all_reduce"
    phase: str         # "forward" or "backward"
    bytes: int         # payload this rank hands to the call (0 for barrier/objects)
    peer: int | None   # the other rank (global) of a send/recv, else None
    group_size: int
    group_ranks: tuple = ()   # the group's members, as global ranks, in group-rank order


@dataclasses.dataclass(frozen=True)
class Label:
    """The outermost ``torch.distributed`` call open in a thread, as the hook saw it."""

    id: int
    call: Call


_ids = itertools.count()
_local = threading.local()
_records: list = []   # (backend op, bytes, global peer, member ranks, phase, Label | None)
_groups: "weakref.WeakSet[RecordingGroup]" = weakref.WeakSet()


def new_label(call: Call) -> Label:
    return Label(next(_ids), call)


def open_labels() -> list:
    """This thread's stack of open watched calls: ``(frame, Label | None)`` pairs."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def mark() -> int:
    return len(_records)


def since(start: int, end: int | None = None) -> list:
    return _records[start:end]


def unrecorded() -> int:
    """Operations this rank's gloo backends ran past their recording groups (code that
    called a group's gloo object directly), over every group alive."""
    return sum(group.unrecorded() for group in list(_groups))


def active() -> bool:
    """Whether this rank's default group is a :class:`RecordingGroup`."""
    return dist.is_initialized() and isinstance(dist.group.WORLD, RecordingGroup)


def _nbytes(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return 0


# group method -> (gloo's method, index of the payload argument or None, of the peer or None).
# The payload is the one torch.distributed's Python call names (watch.COMM_FUNCTIONS).
_OPS = {
    "allreduce": ("allreduce", 0, None), "allreduce_coalesced": ("allreduce_coalesced", 0, None),
    "allgather": ("allgather", 1, None), "allgather_coalesced": ("allgather_coalesced", 1, None),
    "all_gather_single": ("_allgather_base", 1, None),
    "reduce_scatter": ("reduce_scatter", 0, None),
    "reduce_scatter_single": ("_reduce_scatter_base", 1, None),
    "all_to_all_single": ("alltoall_base", 1, None), "alltoall": ("alltoall", 1, None),
    "broadcast": ("broadcast", 0, None), "reduce": ("reduce", 0, None),
    "gather": ("gather", 1, None), "scatter": ("scatter", 0, None),
    "barrier": ("barrier", None, None), "monitored_barrier": ("monitored_barrier", None, None),
    "send": ("send", 0, 1), "recv": ("recv", 0, 1), "recv_anysource": ("recv_anysource", 0, None),
}
# The torch.distributed name a backend operation gets when no watched call was open.
_CANONICAL = {
    "allreduce": "all_reduce", "allreduce_coalesced": "all_reduce", "allgather": "all_gather",
    "allgather_coalesced": "all_gather", "all_gather_single": "all_gather_single",
    "reduce_scatter": "reduce_scatter", "reduce_scatter_single": "reduce_scatter_single",
    "all_to_all_single": "all_to_all_single", "alltoall": "all_to_all",
    "broadcast": "broadcast", "reduce": "reduce", "gather": "gather", "scatter": "scatter",
    "barrier": "barrier", "monitored_barrier": "barrier", "send": "send", "recv": "recv",
    "recv_anysource": "recv"}
# The backend operations each watched call may issue; any other operation under it
# (student code run inside an object collective's pickling, say) is a call of its own.
_ISSUES = {
    "send": {"send"}, "isend": {"send"}, "recv": {"recv", "recv_anysource"},
    "irecv": {"recv", "recv_anysource"}, "broadcast": {"broadcast"},
    "all_reduce": {"allreduce"}, "reduce": {"reduce"}, "all_gather": {"allgather"},
    "all_gather_into_tensor": {"all_gather_single"}, "all_gather_single": {"all_gather_single"},
    "reduce_scatter_single": {"reduce_scatter_single"},
    "reduce_scatter_tensor": {"reduce_scatter_single"}, "gather": {"gather"},
    "scatter": {"scatter"}, "reduce_scatter": {"reduce_scatter"}, "all_to_all": {"alltoall"},
    "all_to_all_single": {"all_to_all_single"}, "barrier": {"barrier", "monitored_barrier"},
    "all_gather_object": {"allgather"}, "gather_object": {"allgather", "gather"},
    "broadcast_object_list": {"broadcast"}, "scatter_object_list": {"scatter", "broadcast"},
    "send_object_list": {"send"}, "recv_object_list": {"recv", "recv_anysource"},
}
_P2P_OPS = {"send", "recv", "recv_anysource"}


def _operation(name: str):
    target, payload, peer_at = _OPS[name]

    def op(self, *args, **kwargs):
        peer = None
        if peer_at is not None and len(args) > peer_at:
            peer = self._ranks[int(args[peer_at])]
        nbytes = _nbytes(args[payload]) if payload is not None and len(args) > payload else 0
        phase = "backward" if torch._C._current_graph_task_id() != -1 else "forward"
        stack = open_labels()
        label = next((lab for _frame, lab in stack if lab is not None), None)
        _records.append((name, nbytes, peer, self._ranks, phase, label))
        with self._lock:   # gloo numbers its operations: count the ones that pass here
            before = self._sequence()
            try:
                return getattr(self._gloo, target)(*args, **kwargs)
            finally:
                self._passed += self._sequence() - before
    op.__name__ = op.__qualname__ = name
    return op


class RecordingGroup(dist.ProcessGroup):
    """A process group that records every operation, then runs it on its own gloo."""

    def __init__(self, gloo, ranks):
        super().__init__(gloo.rank(), gloo.size())
        self._gloo = gloo
        self._ranks = tuple(ranks)
        self._name, self._desc = "", ""
        self._lock = threading.Lock()
        self._passed, self._start = 0, self._sequence()
        _groups.add(self)

    def _sequence(self) -> int:
        number = getattr(self._gloo, "_get_sequence_number_for_group", None)
        return number() if number is not None else 0

    def unrecorded(self) -> int:
        """Operations gloo ran for this group that did not pass through its methods."""
        with self._lock:
            return self._sequence() - self._start - self._passed

    def getBackendName(self) -> str:
        return BACKEND

    # c10d keeps a group's name in its backends; this group registers none (see above).
    def getGroupName(self) -> str:
        return self._name

    def setGroupName(self, name: str) -> None:
        self._name = name

    def getGroupDesc(self) -> str:
        return self._desc

    def setGroupDesc(self, desc: str) -> None:
        self._desc = desc

    @property
    def group_name(self) -> str:
        return self._name

    @property
    def group_desc(self) -> str:
        return self._desc

    def _coalesced(self, single: str, outputs, inputs, opts):
        works = [getattr(self, single)(o, i, opts) for o, i in zip(outputs, inputs)]
        for work in works[:-1]:
            work.wait()
        return works[-1]

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        return self._coalesced("all_gather_single", outputs, inputs, opts)

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        return self._coalesced("reduce_scatter_single", outputs, inputs, opts)

    # the names older torch code (and PyProcessGroup's fallbacks) still use
    allgather_into_tensor_coalesced = all_gather_single_coalesced
    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    def shutdown(self) -> None:
        if hasattr(self._gloo, "shutdown"):
            self._gloo.shutdown()

    def abort(self) -> None:
        if hasattr(self._gloo, "abort"):
            self._gloo.abort()

    def __repr__(self) -> str:
        return f"RecordingGroup(ranks={list(self._ranks)})"


for _name in _OPS:
    setattr(RecordingGroup, _name, _operation(_name))
RecordingGroup.alltoall_base = RecordingGroup.all_to_all_single


def _create(common, _backend_options):
    from torch.distributed import ProcessGroupGloo
    ranks = tuple(common.global_ranks_in_group) or tuple(range(common.group_size))
    gloo = ProcessGroupGloo(common.store, common.group_rank, common.group_size, common.timeout)
    return RecordingGroup(gloo, ranks)


def register() -> None:
    """Make ``BACKEND`` known to torch.distributed (once per process; importing does it)."""
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu"])


register()


def calls_from(records) -> list[Call]:
    """The calls a span of records makes: the backend operations issued under one watched
    ``torch.distributed`` call count once, under its name; the others (functional
    collectives, C++ callers, threads the hook did not see) under the operation's own."""
    out, merged = [], set()
    for op, nbytes, peer, ranks, phase, label in records:
        if label is not None and op in _ISSUES.get(label.call.name, ()):
            if label.id in merged:
                continue
            merged.add(label.id)
            out.append(Call(label.call.name, phase, label.call.bytes,
                            peer if op in _P2P_OPS else None, len(ranks), ranks))
        else:
            out.append(Call(_CANONICAL[op], phase, nbytes, peer, len(ranks), ranks))
    return out
