"""Point-to-point messages that count themselves: the traffic recorder.

Taught in notebook 01 (``notebooks/01_collectives.ipynb``) and used for the bandwidth
table of notebook 02. Every collective in :mod:`companion.collectives` moves data only
through :func:`exchange`, one call per communication *round* (a "step" of the
textbook). Inside ``with traffic() as t:`` each rank then knows exactly what it sent
and received, message by message.

Rounds: every rank calls :func:`exchange` the same number of times in a collective,
with empty lists when it sits a round out. That keeps the step numbers in the logs of
different ranks aligned, so a replay can line them up (:mod:`.replay`).
"""
from __future__ import annotations

import contextlib
import dataclasses

import torch
import torch.distributed as dist
from ..validation import nonnegative_int, positive_int

__all__ = ["Message", "Traffic", "traffic", "exchange", "chunk_sizes", "chunk_offsets"]


@dataclasses.dataclass(frozen=True)
class Message:
    """One message seen by this rank.

    ``offset``/``numel`` locate the payload in the collective's flat buffer (elements);
    ``kind`` says what the receiver does with it: "reduce" (adds it to what it holds),
    "copy" (overwrites) or "meta" (shapes, not data).
    """

    step: int
    op: str  # "send" or "recv"
    peer: int
    bytes: int
    offset: int = 0
    numel: int = 0
    kind: str = "copy"
    collective: str = ""


@dataclasses.dataclass
class Traffic:
    """What one rank sent and received inside a ``with traffic()`` block."""

    rank: int = 0
    world_size: int = 1
    log: list = dataclasses.field(default_factory=list)
    initial: list | None = None  # [(offset, numel)] this rank held before the first round
    rounds: int = 0  # rounds run (including ones this rank sat out)

    @property
    def bytes_sent(self) -> int:
        return sum(m.bytes for m in self.log if m.op == "send")

    @property
    def bytes_received(self) -> int:
        return sum(m.bytes for m in self.log if m.op == "recv")

    @property
    def messages(self) -> int:
        """Messages this rank sent (each message is counted once, by its sender)."""
        return sum(1 for m in self.log if m.op == "send")

    @property
    def messages_received(self) -> int:
        return sum(1 for m in self.log if m.op == "recv")

    @property
    def steps(self) -> int:
        """Rounds in which this rank sent or received at least one message."""
        return len({m.step for m in self.log})

    def summary(self) -> dict:
        return {"rank": self.rank, "bytes_sent": self.bytes_sent,
                "bytes_received": self.bytes_received, "messages": self.messages,
                "steps": self.steps}


_ACTIVE: list[Traffic] = []


@contextlib.contextmanager
def traffic():
    """Record this rank's messages: ``with traffic() as t: ...`` then read ``t.bytes_sent``.

    Only the collectives of this package are recorded (``torch.distributed``'s own
    collectives do their messaging inside gloo/NCCL, out of our sight).
    """
    t = Traffic(rank=dist.get_rank(), world_size=dist.get_world_size())
    _ACTIVE.append(t)
    try:
        yield t
    finally:
        _ACTIVE.remove(t)


def note_initial(collective: str, ranges: list[tuple[int, int]]) -> None:
    """Remember what this rank holds before the first collective of a recording."""
    for t in _ACTIVE:
        if t.initial is None:
            t.initial = [(int(a), int(n)) for a, n in ranges]


def _nbytes(x: torch.Tensor) -> int:
    return x.numel() * x.element_size()


def exchange(sends=(), recvs=(), collective: str = "") -> None:
    """One communication round: post every send and receive, then wait for all of them.

    ``sends``: ``(peer, tensor, offset, kind)``; ``recvs``: ``(peer, buffer, offset,
    kind)``. Non-blocking isend/irecv posted together cannot deadlock however the peers
    are ordered, which is why each round is a single call.
    """
    # Empty chunks (a tensor smaller than the world size) are skipped on both sides:
    # sender and receiver compute the same chunk sizes, so they agree without asking.
    sends = [s for s in sends if s[1].numel() > 0]
    recvs = [r for r in recvs if r[1].numel() > 0]
    work = []
    for peer, tensor, *_ in sends:
        work.append(dist.isend(tensor.contiguous(), dst=peer))
    for peer, buffer, *_ in recvs:
        if not buffer.is_contiguous():
            raise ValueError("receive buffers must be contiguous; pass a slice of a flat tensor.")
        work.append(dist.irecv(buffer, src=peer))
    for w in work:
        w.wait()
    for t in _ACTIVE:
        for op, items in (("send", sends), ("recv", recvs)):
            for peer, tensor, offset, kind in items:
                t.log.append(Message(t.rounds, op, int(peer), _nbytes(tensor), int(offset),
                                     tensor.numel(), kind, collective))
        t.rounds += 1


def chunk_sizes(numel: int, parts: int) -> list[int]:
    """Sizes of ``torch.tensor_split`` into ``parts``: the first ``numel % parts`` get one more."""
    nonnegative_int("numel", numel, "pass the element count of the tensor.")
    positive_int("parts", parts, "pass the number of chunks, usually the world size.")
    base, extra = divmod(numel, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def chunk_offsets(numel: int, parts: int) -> list[int]:
    """Start offset of each chunk of :func:`chunk_sizes` (plus the end, ``numel``)."""
    out = [0]
    for s in chunk_sizes(numel, parts):
        out.append(out[-1] + s)
    return out
