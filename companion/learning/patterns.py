"""Communication patterns an exercise can demand, checked on what each rank really called.

Each helper returns a *pattern*: a function ``(calls_per_rank, world_size) -> problem``
where ``calls_per_rank[r]`` is rank r's list of :class:`~companion.learning.watch.Call`
and ``problem`` is a sentence for the student, or None when the pattern holds. Used by
the exercises of every notebook (:mod:`companion.learning.exercise`).

Each call carries its group's members as global ranks (``Call.group_ranks``, from the
recording process group), so :func:`link_class` tells the links a call crosses from
the ranks it connects, not from the group's size: a group of the right size whose
members sit on different nodes crosses the slow links (notebook 11).
"""
from __future__ import annotations

import collections

from ..validation import callable_arg, positive_int
from ..i18n import _
from .feedback import reworded, say
from .watch import COMM_FUNCTIONS, P2P

_KNOWN = set(COMM_FUNCTIONS) | {"batch_isend_irecv"}


def _names(arg: str, names) -> None:
    unknown = [n for n in names if n not in _KNOWN]
    if unknown:
        raise ValueError(f"{arg}: {unknown} are not torch.distributed calls; use names such "
                         "as 'isend', 'all_reduce', 'all_to_all'")

__all__ = ["only", "counts", "per_rank", "all_of", "summary", "link_class"]


def summary(calls) -> str:
    """``"3 isend, 3 irecv (forward)"`` for one rank's calls, in the current language."""
    c = collections.Counter((x.name, x.phase) for x in calls)
    if not c:
        return say("no communication")
    return say(", ").join(say("{n} {name} in backward" if phase == "backward" else
                              "{n} {name}", n=n, name=name)
                          for (name, phase), n in sorted(c.items()))


def only(*allowed: str, why: str = ""):
    """Every call is one of ``allowed`` (e.g. only("isend", "irecv", "send", "recv"))."""
    _names("allowed", allowed)
    allowed_set = set(allowed) if allowed else set(P2P)

    def pattern(calls_per_rank, world_size):
        for rank, calls in enumerate(calls_per_rank):
            other = sorted({c.name for c in calls} - allowed_set)
            if other:
                fields = dict(rank=rank, called=", ".join(other), why=reworded(why),
                              allows=", ".join(sorted(allowed_set)))
                return say("rank {rank} called {called}; this exercise allows only {allows} "
                           "({why})" if why else "rank {rank} called {called}; this "
                           "exercise allows only {allows}", **fields)
        return None
    return pattern


def counts(expected, phase: str | None = None, why: str = ""):
    """Each rank makes exactly ``expected[name]`` calls of each kind named (in ``phase``).

    ``expected`` is a dict, or a function ``(rank, world_size) -> dict`` when ranks
    differ (rank 0 of a parameter server receives N-1 times, the others once). A name
    may be a tuple of names counted together, e.g. ("send", "isend").
    """
    if isinstance(expected, dict):
        for key in expected:
            _names("expected", (key,) if isinstance(key, str) else key)
    elif not callable(expected):
        raise ValueError(f"expected={expected!r}: pass {{name: count}} or a function "
                         "(rank, world_size) -> {name: count}")

    def pattern(calls_per_rank, world_size):
        for rank, calls in enumerate(calls_per_rank):
            want = expected(rank, world_size) if callable(expected) else expected
            for names, n in want.items():
                names = (names,) if isinstance(names, str) else tuple(names)
                got = sum(1 for c in calls if c.name in names and phase in (None, c.phase))
                if got != n:
                    label = say(" or ").join(names)
                    if phase:
                        label = say("{names} in {phase}", names=label, phase=_(phase))
                    fields = dict(rank=rank, got=got, label=label, n=n, why=reworded(why),
                                  made=summary(calls))
                    return say("rank {rank} made {got} {label} call(s); the pattern needs {n} "
                               "({why}). It made: {made}" if why else "rank {rank} made "
                               "{got} {label} call(s); the pattern needs {n}. It made: {made}",
                               **fields)
        return None
    return pattern


def per_rank(check):
    """A pattern from ``check(rank, world_size, calls) -> problem | None``."""
    callable_arg("check", check, "pass a function (rank, world_size, calls) -> problem or None")
    def pattern(calls_per_rank, world_size):
        for rank, calls in enumerate(calls_per_rank):
            problem = check(rank, world_size, calls)
            if problem:
                return say("rank {rank}: {problem}", rank=rank, problem=reworded(problem))
        return None
    return pattern


def all_of(*patterns):
    """The first problem any of ``patterns`` finds."""
    for i, p in enumerate(patterns):
        callable_arg(f"patterns[{i}]", p, "pass patterns built by only(), counts(), per_rank()")
    def pattern(calls_per_rank, world_size):
        for p in patterns:
            problem = p(calls_per_rank, world_size)
            if problem:
                return problem
        return None
    return pattern


def link_class(call, rank: int, ranks_per_node: int) -> str:
    """The links ``call`` of ``rank`` crosses, ranks numbered node by node: "intra" when
    every rank it connects (this rank and its peer, or its group's members) is on one
    node, "inter" when each is on a different node, "mixed" when some share a node and
    some do not, "unknown" when the call does not say (recorded without the group)."""
    positive_int("ranks_per_node", ranks_per_node, "the ranks of one node, e.g. 2")
    members = (rank, call.peer) if call.peer is not None else tuple(call.group_ranks)
    if not members:
        return "unknown"
    nodes = [m // ranks_per_node for m in members]
    if len(set(nodes)) == 1:
        return "intra"
    return "inter" if len(set(nodes)) == len(nodes) else "mixed"
