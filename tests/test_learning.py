"""The learning loop's machinery: the watcher, the feedback, predictions.

The exercises themselves are attempted four ways in tests/test_exercises.py; here each
piece is tested on its own, on real ranks where it watches communication.
"""
from __future__ import annotations

import textwrap

import pytest
import torch
import torch.distributed as dist

import companion
from companion.learning import Exercise, exercise, predict
from companion.learning import feedback
from companion.learning.patterns import all_of, counts, only, per_rank, summary
from companion.learning.watch import Call, watching
from companion.units import GB, MiB, fmt_bytes, fmt_seconds


# ---- the watcher, on real ranks ---------------------------------------------------------
def _watched_ring_step():
    from torch.distributed import isend as aliased_isend   # an alias must not hide it
    n, r = dist.get_world_size(), dist.get_rank()
    x, y = torch.ones(5), torch.empty(5)
    with watching() as w:
        reqs = [aliased_isend(x, (r + 1) % n), dist.irecv(y, (r - 1) % n)]
        for q in reqs:
            q.wait()
        ops = [dist.P2POp(dist.isend, x, (r + 1) % n), dist.P2POp(dist.irecv, y, (r - 1) % n)]
        for q in dist.batch_isend_irecv(ops):
            q.wait()
        dist.all_reduce(x)
        dist.barrier()
    return w.calls


def test_watcher_records_each_call_once_with_peer_and_bytes():
    calls = companion.launch(_watched_ring_step, world_size=3)
    for r, mine in enumerate(calls):
        names = [c.name for c in mine]
        # batch_isend_irecv is counted as the sends and receives it posts
        assert names == ["isend", "irecv", "isend", "irecv", "all_reduce", "barrier"], names
        assert [c.peer for c in mine[:4]] == [(r + 1) % 3, (r - 1) % 3] * 2
        assert all(c.bytes == 20 for c in mine[:5]) and mine[5].bytes == 0
        assert all(c.phase == "forward" and c.group_size == 3 for c in mine)


class _AllReduceInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


def _watched_backward():
    x = torch.ones(3, requires_grad=True)
    with watching() as w:
        y = _AllReduceInBackward.apply(x)
        dist.all_reduce(y.detach().clone())
        y.sum().backward()
    return [(c.name, c.phase) for c in w.calls]


def test_watcher_tells_forward_from_backward():
    for calls in companion.launch(_watched_backward, world_size=2):
        assert calls == [("all_reduce", "forward"), ("all_reduce", "backward")]


def _forbidden_through_a_variable():
    from companion.collectives import ring_all_reduce
    shortcut = ring_all_reduce
    x = torch.ones(4)
    with watching({"companion.collectives.ring_all_reduce": "the package's answer"}) as w:
        shortcut(x)                   # outside the student's span: allowed
        with w.student():
            shortcut(x)
    return w.forbidden


def test_forbidden_calls_are_found_by_code_not_by_name():
    for hits in companion.launch(_forbidden_through_a_variable, world_size=2):
        assert hits == [("companion.collectives.ring_all_reduce", "the package's answer")]


def test_patterns():
    def c(name, peer=None, phase="forward"):
        return Call(name, phase, 4, peer, 2)
    ranks = [[c("isend", 1), c("irecv", 1)], [c("isend", 0), c("irecv", 0)]]
    assert only("isend", "irecv")(ranks, 2) is None
    assert "all_reduce" in only("isend")([[c("all_reduce")], []], 2)
    assert counts({("isend", "send"): 1, "irecv": 1})(ranks, 2) is None
    assert "rank 0 made 1 isend" in counts({"isend": 2})(ranks, 2)
    assert counts(lambda r, n: {"isend": 1})(ranks, 2) is None
    assert counts({"isend": 1}, phase="backward")(ranks, 2) is not None
    assert per_rank(lambda r, n, calls: "odd" if r == 1 else None)(ranks, 2) == "rank 1: odd"
    assert all_of(only("isend", "irecv"), counts({"isend": 2}))(ranks, 2).startswith("rank 0")
    assert summary(ranks[0]) == "1 irecv, 1 isend" and summary([]) == "no communication"


# ---- feedback ---------------------------------------------------------------------------
def test_difference_names_entries_and_positions():
    assert feedback.difference({"a": torch.ones(2)}, {"a": torch.ones(2)}) is None
    msg = feedback.difference({"w": torch.zeros(3)}, {"w": torch.ones(3)})
    assert "['w']" in msg and "[0.0, 0.0, 0.0]" in msg and "[1.0, 1.0, 1.0]" in msg
    big_got, big_want = torch.zeros(10, 10), torch.zeros(10, 10)
    big_got[3, 4] = 7.0
    msg = feedback.difference(big_got, big_want)
    assert "[3, 4] got 7 expected 0" in msg and "1 of 100 positions wrong" in msg
    assert "shape (2,)" in feedback.difference(torch.ones(2), torch.ones(3))
    assert "missing ['b']" in feedback.difference({"a": 1}, {"a": 1, "b": 2})
    assert feedback.difference(1.0 + 1e-9, 1.0, rtol=1e-6) is None
    assert "is 2" in feedback.difference([1, 2], [1, 3])
    assert feedback.difference(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]),
                               atol=1e-6) is None


def test_student_frame_skips_package_and_library_frames(tmp_path):
    text = textwrap.dedent(f'''\
        Traceback (most recent call last):
          File "{companion.__file__}", line 10, in _rank_main
            result = fn()
          File "{tmp_path}/mine.py", line 5, in my_ring
            buf[i] += got
          File "{torch.__file__}", line 99, in __add__
            return x
        RuntimeError: boom
        ''')
    where, line, source = feedback.student_frame(text)
    assert where == "mine.py, line 5" and line == 5 and source == "buf[i] += got"
    assert feedback.student_frame("no frames here") is None


# ---- exercises: registry and refusals ---------------------------------------------------
def test_registry_and_bad_ids():
    assert exercise("00.average").level == "core"
    for bad in ("average", 7, "00.nope", "99.x"):
        with pytest.raises(ValueError, match="exercise_id"):
            exercise(bad)
    with pytest.raises(ValueError, match="level"):
        Exercise(id="99.x", title="t", level="easy", task="", student_name="f", hints=("a", "b"))
    with pytest.raises(ValueError, match="hints"):
        Exercise(id="99.x", title="t", level="core", task="", student_name="f", hints=("a",))


def test_hints_come_one_at_a_time(capsys):
    ex = exercise("00.average")
    ex._hints_shown = 0
    for i in range(len(ex.hints)):
        ex.hint()
        assert f"Hint {i + 1} of {len(ex.hints)}" in capsys.readouterr().out
    ex.hint()
    assert "No more hints" in capsys.readouterr().out
    ex._hints_shown = 0


def test_a_non_callable_is_a_verdict_not_a_crash(capsys):
    verdict = exercise("00.average").check(None)
    assert verdict.kind == "not_callable" and not verdict
    assert "without parentheses" in capsys.readouterr().out


# ---- predictions and units --------------------------------------------------------------
def test_prediction_reveal(capsys):
    p = predict("How long?", unit="ms")
    assert p.reveal(3.0) is None and "No prediction" in capsys.readouterr().out
    p.lock("2.9")
    assert p.reveal(3.0, rel_tol=0.1) is True
    assert "2.9 ms" in capsys.readouterr().out
    assert p.reveal(6.0) is False
    q = predict("Which?", choices=["ring", "tree"])
    with pytest.raises(ValueError, match="choose one of"):
        q.lock("star")
    q.lock("tree")
    assert q.reveal("tree") is True and q.reveal("ring") is False
    with pytest.raises(ValueError, match="number"):
        predict("x").lock("abc")
    for bad in ("", None):
        with pytest.raises(ValueError, match="question"):
            predict(bad)
    with pytest.raises(ValueError, match="choices"):
        predict("x", choices=["only"])


def test_prediction_widget_locks_and_refuses_a_typo():
    from companion.widgets import prediction
    box = prediction("Idle fraction?", unit="fraction")
    field, button = box.children[1].children
    field.value = "abc"
    button.click()
    assert box.value is None and "Invalid input" in str(box.children[2].outputs)
    field.value = "0.25"
    button.click()
    assert box.value == 0.25 and field.disabled and button.disabled
    assert box.reveal(0.25) is True
    choice = prediction("Faster?", choices=["ring", "tree"])
    choice.value = "ring"
    assert choice.prediction.value == "ring"


def test_units():
    assert fmt_bytes(1.5 * GB) == "1.5 GB" and fmt_bytes(512) == "512 B"
    assert fmt_bytes(232.56 * MiB, binary=True) == "233 MiB"
    assert fmt_seconds(0.0042) == "4.2 ms" and fmt_seconds(2e-6) == "2 µs"
    with pytest.raises(ValueError, match="n="):
        fmt_bytes("1 GB")
    with pytest.raises(ValueError, match="t="):
        fmt_seconds(-1)


def _forbidden_collective_is_still_counted():
    x = torch.ones(2)
    with watching({"torch.distributed.all_reduce": "build it from send/recv"}) as w:
        with w.student():
            dist.all_reduce(x)
    return w.forbidden, [c.name for c in w.calls]


def test_a_torch_collective_can_be_forbidden_and_is_still_counted():
    for hits, names in companion.launch(_forbidden_collective_is_still_counted, world_size=2):
        assert hits == [("torch.distributed.all_reduce", "build it from send/recv")]
        assert names == ["all_reduce"]


def test_card_names_and_short_names():
    from companion.learning.verdict import short_name as _short_name
    assert _short_name("torch.distributed.all_reduce") == "dist.all_reduce"
    assert _short_name("companion.compression.sparse.DGC.encode") == "DGC.encode"
    assert _short_name("companion.collectives.ring_all_reduce") == "collectives.ring_all_reduce"
    ex = Exercise(id="99.1f1b", title="t", level="core", task="", student_name="f",
                  hints=("a", "b"))
    assert ex.short == "ex_1f1b" and ex.short.isidentifier()


def test_dict_key_order_is_not_a_difference():
    assert feedback.difference({"b": 1, "a": [{"y": 2, "x": 1}]},
                               {"a": [{"x": 1, "y": 2}], "b": 1}) is None
