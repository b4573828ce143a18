"""What runs in the exercise checker's ranks, and how their results come back.

Introduced in notebook 00; :meth:`companion.learning.exercise.Exercise.check` launches
these two rank functions on the recording group (:mod:`.recording`):

* :func:`expected_rank` computes the expected results (the reference through the
  adapter, or ``expected``) in ranks that never run student code, once per exercise
  and world size; the notebook keeps them and compares there.
* :func:`attempt_rank` runs the student's function (after its ``precheck``, on rank 0)
  under the watcher (:mod:`.watch`) and returns what it computed, its communication,
  the forbidden calls and any tampering. Nothing in its frames knows the answer.

Both return plain data only (:class:`PlainCodec`): tensors, numbers, strings, None,
lists, tuples and dicts; any other object comes back as an :class:`Opaque` stand-in
(its type's name and its ``repr``, made in the rank). The parent reads a rank's message
with an unpickler that can build no object, and the results with
``torch.load(weights_only=True)``, so nothing a rank sends can run code in the notebook
or the grader.
"""
from __future__ import annotations

import dataclasses
import io
import numbers
import pickle

import torch
import torch.distributed as dist
from torch.utils._pytree import tree_flatten

from .. import i18n
from ..i18n import _
from ..supervisor import LaunchError
from . import feedback
from .verdict import FORBIDDEN_TAG
from .watch import watching

__all__ = ["Opaque", "PlainCodec", "plain", "expected_rank", "attempt_rank", "well_formed"]

_OPAQUE = "__companion_opaque__"


class Opaque:
    """A result that was not plain data: its type's name and its text, as the rank saw it."""

    def __init__(self, type_name: str, text: str):
        self.type_name, self.text = type_name, text

    def __eq__(self, other) -> bool:
        return isinstance(other, Opaque) and (self.type_name, self.text) == (
            other.type_name, other.text)

    def __hash__(self) -> int:
        return hash((self.type_name, self.text))

    def __repr__(self) -> str:
        return self.text


def _text(value) -> str:
    try:
        return f"{value!r:.200}"
    except Exception:  # noqa: BLE001 - a repr that raises still names its type
        return f"<{type(value).__name__}>"


def plain(value):
    """``value`` as plain data (runs in the rank; see the module doc)."""
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if hasattr(t, "to_local"):   # a DTensor: this rank's shard
            t = t.to_local()
        return t.as_subclass(torch.Tensor).cpu().clone() if type(t) is not torch.Tensor \
            else t.cpu().clone()
    if value is None or type(value) in (bool, int, float, complex, str, Opaque):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (torch.dtype, torch.device)):
        return value
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return (list if isinstance(value, list) else tuple)(plain(v) for v in value)
    return Opaque(type(value).__name__, _text(value))


def _to_wire(value):
    if isinstance(value, Opaque):
        return {_OPAQUE: (value.type_name, value.text)}
    if isinstance(value, dict):
        return {k: _to_wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_wire(v) for v in value)
    return value


def _from_wire(value):
    if isinstance(value, dict):
        if set(value) == {_OPAQUE} and isinstance(value[_OPAQUE], tuple):
            return Opaque(*map(str, value[_OPAQUE][:2]))
        return {k: _from_wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_from_wire(v) for v in value)
    return value


class _NoObjects(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"the message names {module}.{name}")


class _PlainReader:
    """A rank's result pipe, read with an unpickler that builds no object (only tuples,
    strings and bytes) and re-pickled for the launcher's collector."""

    def __init__(self, conn):
        self.conn = conn

    def fileno(self):
        return self.conn.fileno()

    def poll(self, timeout=0.0):
        return self.conn.poll(timeout)

    def close(self):
        self.conn.close()

    def recv_bytes(self):
        raw = self.conn.recv_bytes()   # EOFError (the rank died) passes through
        try:
            message = _NoObjects(io.BytesIO(raw)).load()
        except Exception as exc:  # noqa: BLE001 - whatever the bytes were, refuse them
            message = ("error", f"UnpicklingError: {exc}", "")
        ok = (isinstance(message, tuple) and len(message) == 2 and message[0] == "ok"
              and isinstance(message[1], bytes))
        error = (isinstance(message, tuple) and len(message) == 3 and message[0] == "error"
                 and all(isinstance(m, str) for m in message[1:]))
        if not (ok or error):
            message = ("error", "ValueError: a rank sent a message that is not a result", "")
        return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


class PlainCodec:
    """The launcher's result codec for the checker's ranks (``fn.result_codec``)."""

    def encode(self, result) -> bytes:
        buffer = io.BytesIO()
        torch.save(_to_wire(plain(result)), buffer)
        return buffer.getvalue()

    def reader(self, conn) -> _PlainReader:
        return _PlainReader(conn)

    def decode(self, rank: int, data):
        try:
            return _from_wire(torch.load(io.BytesIO(data), weights_only=True))
        except Exception as exc:  # noqa: BLE001 - any failure: the data is not plain
            reason = str(exc).splitlines()[0] if str(exc) else repr(exc)
            raise LaunchError(_("rank {rank} sent a result the checker cannot read "
                                "({reason}).").format(rank=rank, reason=reason),
                              rank=rank) from None


def _returns_plain_data(fn):
    fn.result_codec = PlainCodec()
    return fn


# ---- the ranks --------------------------------------------------------------------------
def _call(fn, *args):
    return fn(*args)


@_returns_plain_data
def expected_rank(ex):
    """The expected result on this rank: no student code runs here."""
    args = ex.inputs(dist.get_rank(), dist.get_world_size())
    if ex.expected is not None:
        return ex.expected(*args)
    return (ex.adapter or _call)(ex.reference, *args)


def _state(ex) -> dict:
    """The exercise's own attributes beyond its fields (a subclass's precheck state)."""
    fields = {f.name for f in dataclasses.fields(ex)}
    return {k: v for k, v in vars(ex).items() if k not in fields}


def _precheck(ex, candidate) -> dict | None:
    """Rank 0 runs the precheck, watched; every rank learns its outcome."""
    status = None
    if dist.get_rank() == 0:
        before = _state(ex)
        with watching(ex.rules) as w, w.student():
            problem = _watched(w, ex.precheck, candidate)
        changed = {k: v for k, v in _state(ex).items() if k in before and v is not before[k]
                   and (v is None or type(v) in (str, int, float, bool))}
        status = {"stage": "precheck", "forbidden": w.forbidden, "tampered": w.tampered,
                  "problem": None if problem is None else str(problem), "state": changed}
        if not (w.forbidden or w.tampered or problem):
            status = {"stage": "attempt", "state": changed}
    shared = [status]
    dist.broadcast_object_list(shared, src=0)
    return shared[0]


def _watched(w, fn, *args):
    """``fn(*args)``; when it raises after a shortcut or tampering, that is the verdict,
    not where the code then crashed (the parent reads the tag: verdict.launch_failure)."""
    try:
        return fn(*args)
    except Exception as exc:
        if w.forbidden or w.tampered:
            raise RuntimeError(FORBIDDEN_TAG + repr((w.forbidden, w.tampered))) from exc
        raise


def _tensors(tree):
    return [x for x in tree_flatten(tree)[0] if isinstance(x, torch.Tensor)]


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Unchanged, with NaN equal to NaN (an input may hold one on purpose)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True)
    return torch.equal(a, b)


@_returns_plain_data
def attempt_rank(ex, candidate, language: str, cells: dict):
    """The student's attempt on this rank: precheck, then the function, watched."""
    i18n.set_language(language)
    feedback.use_cell_names(cells)
    state = {}
    if ex.precheck is not None:
        status = _precheck(ex, candidate)
        if status["stage"] == "precheck":
            return status
        state = status["state"]
    args = ex.inputs(dist.get_rank(), dist.get_world_size())
    before = [t.detach().clone() for t in _tensors(args)]
    dist.barrier()  # every rank starts the student's code together
    with watching(ex.rules) as w, w.student():
        # made plain in the span: a result's repr is the student's code too
        got = _watched(w, lambda: plain((ex.adapter or _call)(candidate, *args)))
        where = feedback.defined_at(candidate)
    changed = ex.pure and any(not _same(a, b) for a, b in zip(_tensors(args), before))
    return {"stage": "attempt", "got": got, "calls": [dataclasses.astuple(c) for c in w.calls],
            "forbidden": w.forbidden, "tampered": w.tampered, "changed_input": changed,
            "where": where, "state": state}


def _pairs(value) -> bool:
    return isinstance(value, list) and all(
        isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, str) for x in p)
        for p in value)


def _call_fields(c) -> bool:
    return (isinstance(c, tuple) and len(c) == 6 and isinstance(c[0], str)
            and isinstance(c[1], str) and type(c[2]) is int and type(c[4]) is int
            and (c[3] is None or type(c[3]) is int) and isinstance(c[5], tuple)
            and all(type(m) is int for m in c[5]))


def well_formed(results, world_size: int) -> bool:
    """Whether the ranks' results have the shape :func:`attempt_rank` gives them: a rank
    that forged its message must not make the parent stumble over it."""
    if not isinstance(results, list) or len(results) != world_size:
        return False
    for r in results:
        if not (isinstance(r, dict) and isinstance(r.get("state"), dict) and all(
                isinstance(k, str) and (v is None or type(v) in (str, int, float, bool))
                for k, v in r["state"].items())):
            return False
        if r.get("stage") == "precheck":
            ok = _pairs(r.get("forbidden")) and _pairs(r.get("tampered")) and (
                r.get("problem") is None or isinstance(r.get("problem"), str))
        else:
            ok = (r.get("stage") == "attempt" and "got" in r and _pairs(r.get("forbidden"))
                  and _pairs(r.get("tampered")) and type(r.get("changed_input")) is bool
                  and isinstance(r.get("where"), str) and isinstance(r.get("calls"), list)
                  and all(_call_fields(c) for c in r["calls"]))
        if not ok:
            return False
    return True
