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
import math

import torch
import torch.distributed as dist
from ..network import emulator as _emulator
from ..validation import nonnegative_int, one_of, positive_int

__all__ = ["Message", "Traffic", "traffic", "exchange", "chunk_sizes", "chunk_offsets"]


@dataclasses.dataclass(frozen=True)
class Message:
    """One message seen by this rank.

    ``offset``/``numel`` locate the payload in the collective's flat buffer (elements);
    ``kind`` says what the receiver does with it: "reduce" (adds it to what it holds),
    "copy" (overwrites) or "meta" (shapes, not data).

    Inside :func:`companion.topology.emulate` (notebook 11) a message also knows the
    cluster's links: ``link`` is "inter" if it leaves its node (torus: its row) and
    "intra" if not; ``hops`` is the route, ``((src, dst, link), ...)``; ``start`` is
    when it left the sender and ``end`` when the receiver had all of it (on the "recv"
    record) or when the sender's port was free again (on the "send" record), both
    ``time.perf_counter`` seconds, one clock for every rank. Outside an emulation:
    ``link=""``, ``hops=()``, ``start=end=nan``.
    """

    step: int
    op: str  # "send" or "recv"
    peer: int
    bytes: int
    offset: int = 0
    numel: int = 0
    kind: str = "copy"
    collective: str = ""
    link: str = ""
    start: float = math.nan
    end: float = math.nan
    hops: tuple = ()


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

    def bytes_per_link(self, op: str = "send", per_hop: bool = False) -> dict[str, int]:
        """Bytes this rank sent (``op="recv"``: received) per link class, e.g.
        ``{"intra": 5040, "inter": 840}`` (recorded inside ``companion.topology.emulate``).

        ``per_hop=True`` counts a message once per hop it crosses: the load it puts on
        the links of a ring or torus, where a message to a far rank crosses several."""
        one_of("op", op, ("send", "recv"))
        out: dict[str, int] = {}
        for m in self.log:
            if m.op != op:
                continue
            if per_hop:
                for hop in m.hops:
                    out[hop[2]] = out.get(hop[2], 0) + m.bytes
            else:
                out[m.link] = out.get(m.link, 0) + m.bytes
        return out

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
    for peer, buffer, *_ in recvs:
        if not buffer.is_contiguous():
            raise ValueError("receive buffers must be contiguous; pass a slice of a flat tensor.")
    emu = _emulator.current()
    if emu is not None:
        _exchange_emulated(emu, sends, recvs, collective)
        return
    work = []
    for peer, tensor, *_ in sends:
        work.append(dist.isend(tensor.contiguous(), dst=peer))
    for peer, buffer, *_ in recvs:
        work.append(dist.irecv(buffer, src=peer))
    for w in work:
        w.wait()
    for t in _ACTIVE:
        for op, items in (("send", sends), ("recv", recvs)):
            for peer, tensor, offset, kind in items:
                t.log.append(Message(t.rounds, op, int(peer), _nbytes(tensor), int(offset),
                                     tensor.numel(), kind, collective))
        t.rounds += 1


def _exchange_emulated(emu, sends, recvs, collective: str) -> None:
    sent, got = _emulator.exchange(emu, sends, recvs)
    cluster, me = emu.cluster, emu.rank
    for t in _ACTIVE:
        for op, items, times in (("send", sends, sent), ("recv", recvs, got)):
            for (peer, tensor, offset, kind), (start, end) in zip(items, times):
                src, dst = (me, int(peer)) if op == "send" else (int(peer), me)
                hops = tuple(tuple(h) for h in cluster.route(src, dst))
                link = "intra" if cluster.node_of(src) == cluster.node_of(dst) else "inter"
                t.log.append(Message(t.rounds, op, int(peer), _nbytes(tensor), int(offset),
                                     tensor.numel(), kind, collective, link, start, end, hops))
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
