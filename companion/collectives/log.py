"""Count the collectives a rank issues: kind, bytes, forward or backward.

Taught in notebooks 05 (tensor parallelism) and 06 (sequence parallelism); the same
:class:`CommLog` is the ``.ledger`` of notebook 03's DDP, ZeRO and FSDP. Every
collective in ``companion.tensor_parallel``, ``companion.sequence_parallel`` and
``companion.sequence_parallel.moe`` goes through the thin wrappers below, which call
``torch.distributed`` and, while a :func:`recording` block is active, append one
:class:`Record`.

Two byte counts are kept, because the literature uses both:

* ``size_bytes``: the full logical buffer the collective is about (the full activation
  for an all-reduce, all-gather or reduce-scatter; the local input for an all-to-all).
* ``wire_bytes``: what one rank sends with the bandwidth-optimal (ring) algorithm,
  :func:`companion.collectives.accounting.ring_bytes` of the size: ``2(n-1)/n`` of it
  for an all-reduce, ``(n-1)/n`` for an all-gather, a reduce-scatter or an all-to-all,
  the whole tensor for a send. This is why an all-gather plus a reduce-scatter
  (sequence parallelism) costs the same as the all-reduce it replaces.

The phase is read from autograd itself: a collective issued while the engine runs a
backward pass is recorded as "backward", anything else as "forward".
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import math

import torch
import torch.distributed as dist

from ..validation import positive_int
from .accounting import ring_bytes

__all__ = ["Record", "CommLog", "recording", "all_reduce", "all_gather", "reduce_scatter",
           "all_to_all", "all_to_all_rows", "exchange"]


@dataclasses.dataclass(frozen=True)
class Record:
    kind: str          # a ring_bytes kind: "all_reduce", "all_to_all", "send", "broadcast", ...
    phase: str         # "forward" or "backward"
    size_bytes: int
    wire_bytes: float
    group_size: int
    label: str = ""


class CommLog:
    """The collectives one rank issued, one :class:`Record` each, with summaries.

    Filled two ways, so every count of traffic in the package is read from the tensors
    actually sent, not from a formula: a :func:`recording` block collects every wrapped
    collective issued inside it (tensor, sequence, expert parallelism, pipelines), and
    each data-parallel wrapper (DDP, ZeRO, FSDP: notebook 03) owns one as ``.ledger``,
    built with its ``group_size``, and calls :meth:`record` next to each collective.
    """

    def __init__(self, group_size: int | None = None):
        if group_size is not None:
            positive_int("group_size", group_size, "pass the ranks in the group, e.g. 4.")
        self.group_size = group_size  # what record() assumes when not told
        self.records: list[Record] = []

    def record(self, kind: str, nbytes: int, group_size: int | None = None,
               label: str = "") -> None:
        """Add one collective on a full buffer of ``nbytes`` (the ``ring_bytes`` convention)."""
        n = self.group_size if group_size is None else group_size
        if n is None:
            raise ValueError("group_size is unknown: pass record(..., group_size=N) or build "
                             "the log with CommLog(group_size=N).")
        self.records.append(Record(kind, _phase(), int(nbytes), ring_bytes(kind, nbytes, n),
                                   n, label))

    def reset(self) -> None:
        self.records.clear()

    def counts(self, phase: str | None = None, label: str | None = None) -> dict[str, int]:
        """{kind: number of calls}, optionally for one phase and/or label."""
        c = collections.Counter(r.kind for r in self._select(phase, label))
        return dict(c)

    def bytes(self, phase: str | None = None, kind: str | None = None, wire: bool = True,
              label: str | None = None) -> float:
        """Total wire (default) or logical bytes of the selected records."""
        return sum(r.wire_bytes if wire else r.size_bytes
                   for r in self._select(phase, label) if kind in (None, r.kind))

    def bytes_sent(self, include_broadcast: bool = False) -> float:
        """Wire bytes sent, without the broadcasts a wrapper makes once when it is built
        (they are no step's traffic) unless ``include_broadcast``."""
        return sum(r.wire_bytes for r in self.records
                   if include_broadcast or r.kind != "broadcast")

    def table(self) -> list[tuple[str, str, int, float]]:
        """Rows (phase, kind, calls, wire bytes), for printing."""
        rows = collections.defaultdict(lambda: [0, 0.0])
        for r in self.records:
            rows[(r.phase, r.kind)][0] += 1
            rows[(r.phase, r.kind)][1] += r.wire_bytes
        return [(p, k, n, b) for (p, k), (n, b) in sorted(rows.items())]

    def _select(self, phase, label):
        return [r for r in self.records
                if phase in (None, r.phase) and label in (None, r.label)]

    def __len__(self):
        return len(self.records)


_active: list[CommLog] = []


@contextlib.contextmanager
def recording():
    """``with recording() as log:`` records every wrapped collective issued inside."""
    log = CommLog()
    _active.append(log)
    try:
        yield log
    finally:
        _active.remove(log)


def _phase() -> str:
    # -1 outside the autograd engine; a graph-task id while backward() is running.
    return "backward" if torch._C._current_graph_task_id() != -1 else "forward"


def _record(kind: str, tensor_bytes: int, n: int, label: str) -> None:
    for log in _active:
        log.record(kind, tensor_bytes, n, label)


def _size(group) -> int:
    return dist.get_world_size(group) if dist.is_initialized() else 1


def all_reduce(x: torch.Tensor, group=None, label: str = "") -> torch.Tensor:
    """Sum ``x`` over the group (returns a new tensor; ``x`` is left alone)."""
    n = _size(group)
    out = x.clone()
    if n > 1:
        dist.all_reduce(out, group=group)
    _record("all_reduce", out.numel() * out.element_size(), n, label)
    return out


def all_gather(x: torch.Tensor, dim: int, group=None, label: str = "") -> torch.Tensor:
    """Concatenate every rank's ``x`` along ``dim`` in rank order."""
    n = _size(group)
    if n == 1:
        out = x.clone()
    else:
        x = x.contiguous()
        parts = [torch.empty_like(x) for _ in range(n)]
        dist.all_gather(parts, x, group=group)
        out = torch.cat(parts, dim=dim)
    _record("all_gather", out.numel() * out.element_size(), n, label)
    return out


def reduce_scatter(x: torch.Tensor, dim: int, group=None, label: str = "") -> torch.Tensor:
    """Sum over ranks, then keep this rank's slice of ``dim`` (rank order)."""
    n = _size(group)
    if x.shape[dim] % n:
        raise ValueError(f"reduce_scatter: dimension {dim} of size {x.shape[dim]} does not "
                         f"divide into {n} ranks; pick sizes divisible by the group size.")
    if n == 1:
        out = x.clone()
    else:
        parts = [p.contiguous() for p in x.chunk(n, dim=dim)]
        out = torch.empty_like(parts[0])
        dist.reduce_scatter(out, parts, group=group)
    _record("reduce_scatter", x.numel() * x.element_size(), n, label)
    return out


def all_to_all(inputs: list[torch.Tensor], group=None, label: str = "",
               impl=None) -> list[torch.Tensor]:
    """Send ``inputs[j]`` to rank j of the group; return what each rank sent here.

    ``impl`` swaps in another implementation with the same contract (e.g. the
    point-to-point one from ``companion.collectives``); ``None`` uses
    ``dist.all_to_all``.
    """
    n = _size(group)
    if len(inputs) != n:
        raise ValueError(f"all_to_all needs one input per rank: got {len(inputs)} for {n} ranks.")
    inputs = [t.contiguous() for t in inputs]
    if n == 1:
        outputs = [inputs[0].clone()]
    elif impl is not None:
        outputs = list(impl(inputs))
    else:
        outputs = [torch.empty_like(t) for t in inputs]
        dist.all_to_all(outputs, inputs, group=group)
    _record("all_to_all", sum(t.numel() * t.element_size() for t in inputs), n, label)
    return outputs


def all_to_all_rows(x: torch.Tensor, send_counts: list[int], recv_counts: list[int],
                    group=None, label: str = "") -> torch.Tensor:
    """Uneven all-to-all of rows: the first ``send_counts[0]`` rows of ``x`` go to rank 0
    of the group, the next ``send_counts[1]`` to rank 1, ...; returns the rows received,
    ``recv_counts[i]`` from rank i, in rank order (dropless MoE dispatch, notebook 06).

    Recorded with its exact bytes, not the even-split formula: ``size_bytes`` is every
    row sent, ``wire_bytes`` the rows that leave this rank (its own piece stays)."""
    n = _size(group)
    if x.dim() < 1:
        raise ValueError("x is a scalar; pass a tensor of rows, shape [rows, ...].")
    for name, counts in (("send_counts", send_counts), ("recv_counts", recv_counts)):
        if len(counts) != n or any(int(c) != c or c < 0 for c in counts):
            raise ValueError(f"{name}={list(counts)}: pass {n} whole numbers >= 0, one per "
                             "rank of the group.")
    if sum(send_counts) != x.shape[0]:
        raise ValueError(f"send_counts add up to {sum(send_counts)} rows but x has "
                         f"{x.shape[0]}; cut x into one piece per rank.")
    x = x.contiguous()
    out = x.new_empty((sum(recv_counts),) + tuple(x.shape[1:]))
    if n == 1:
        out.copy_(x)
    else:
        dist.all_to_all_single(out, x, [int(c) for c in recv_counts],
                               [int(c) for c in send_counts], group=group)
    row = math.prod(x.shape[1:]) * x.element_size()
    me = dist.get_rank(group) if n > 1 else 0
    for log in _active:
        log.records.append(Record("all_to_all", _phase(), int(x.shape[0] * row),
                                  float((x.shape[0] - send_counts[me]) * row), n, label))
    return out


def exchange(send: list[torch.Tensor], to_rank: int, from_rank: int,
             label: str = "", async_op: bool = False):
    """Send tensors to global rank ``to_rank`` while receiving same-shaped ones from
    ``from_rank`` (one batched isend/irecv, so a ring cannot deadlock).

    Returns the received tensors; with ``async_op=True`` returns a function that waits
    and then returns them, so the caller can compute while the bytes travel (ring
    attention overlaps each hop with the current block's attention)."""
    recv = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in send]
    ops = []
    for s, r in zip(send, recv):
        ops.append(dist.P2POp(dist.isend, s.contiguous(), to_rank))
        ops.append(dist.P2POp(dist.irecv, r, from_rank))
    reqs = dist.batch_isend_irecv(ops)
    _record("send", sum(t.numel() * t.element_size() for t in send), 2, label)

    def wait():
        for req in reqs:
            req.wait()
        return recv

    return wait if async_op else wait()
