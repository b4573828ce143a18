"""The learning loop's machinery: the watcher, the recording process group, plain results,
the feedback, predictions.

The exercises themselves are attempted four ways in tests/test_exercises.py, and every
known way around the checker in tests/test_checker_bypass.py; here each piece is tested
on its own, on real ranks where it watches communication.
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


def test_a_computed_answer_is_not_called_measured(capsys):
    p = predict("What bubble?", unit="fraction")
    assert p.reveal(0.25, computed=True) is None
    out = capsys.readouterr().out
    assert out.startswith("Computed: 0.25.") and "Measured" not in out
    p.lock("0.2")
    assert p.reveal(0.25, rel_tol=0.5, computed=True) is True
    out = capsys.readouterr().out
    assert "computed 0.25" in out and "measure" not in out
    assert p.reveal(0.25, rel_tol=0.5) is True and "measured 0.25" in capsys.readouterr().out


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


# ---- the recording process group --------------------------------------------------------
def _recorded():
    import dataclasses
    import threading

    import torch.distributed._functional_collectives as funcol
    from torch.distributed import isend as aliased_isend
    from torch.distributed.device_mesh import init_device_mesh

    n, r = dist.get_world_size(), dist.get_rank()
    pairs = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    row = init_device_mesh("cpu", (2, 2)).get_group(1)
    x, y = torch.ones(5), torch.empty(5)
    with watching() as w:
        for q in [aliased_isend(x, (r + 1) % n), dist.irecv(y, (r - 1) % n)]:
            q.wait()
        ops = [dist.P2POp(dist.isend, x, (r + 1) % n), dist.P2POp(dist.irecv, y, (r - 1) % n)]
        for q in dist.batch_isend_irecv(ops):
            q.wait()
        dist.all_reduce(x, group=pairs[r % 2])
        funcol.wait_tensor(funcol.all_reduce(torch.ones(2), "sum", dist.group.WORLD))
        thread = threading.Thread(target=dist.all_reduce, args=(torch.ones(3),))
        thread.start()
        thread.join()
        dist.all_gather_object([None] * n, {"rank": r})
        dist.broadcast(torch.ones(1), group=row, group_src=0)
    return [dataclasses.astuple(c) for c in w.calls]


def test_the_recording_group_records_every_message_with_its_members():
    from companion.learning.recording import BACKEND
    results = companion.launch(_recorded, world_size=4, backend=BACKEND)
    for r, calls in enumerate(results):
        names = [c[0] for c in calls]
        # an alias, batch_isend_irecv's parts, a subgroup, a functional collective the hook
        # never sees, a thread's collective, an object collective counted once, a mesh row
        assert names == ["isend", "irecv", "isend", "irecv", "all_reduce", "all_reduce",
                         "all_reduce", "all_gather_object", "broadcast"], names
        assert [c[3] for c in calls[:4]] == [(r + 1) % 4, (r - 1) % 4] * 2   # global peers
        assert calls[4][5] == ((0, 2) if r % 2 == 0 else (1, 3)) and calls[4][4] == 2
        assert calls[5][2] == 8 and calls[6][2] == 12 and calls[5][5] == (0, 1, 2, 3)
        assert calls[8][5] == ((0, 1) if r < 2 else (2, 3))


def test_link_class_reads_the_members_not_the_size():
    from companion.learning.patterns import link_class

    def c(ranks, peer=None):
        return Call("all_reduce", "forward", 4, peer, len(ranks), tuple(ranks))
    assert link_class(c((0, 1)), 0, 2) == "intra"
    assert link_class(c((0, 2, 4)), 0, 2) == "inter"
    assert link_class(c((0, 3)), 0, 2) == "inter"        # a node's size, across two nodes
    assert link_class(c((0, 1, 2)), 0, 2) == "mixed"     # the node count's size, mixed
    assert link_class(c((0, 1, 2, 3), peer=1), 0, 2) == "intra"
    assert link_class(c((0, 1, 2, 3), peer=2), 0, 2) == "inter"
    assert link_class(Call("all_reduce", "forward", 4, None, 2), 0, 2) == "unknown"


# ---- plain results ----------------------------------------------------------------------
def test_results_come_back_as_plain_data_and_nothing_else():
    import multiprocessing
    import os
    import pickle

    from companion.learning.attempt import Opaque, PlainCodec, plain

    class Custom:
        def __repr__(self):
            return "Custom()"
    value = {"t": torch.nn.Parameter(torch.ones(2)), "n": (1, 2.5, True, None, "s"),
             "size": torch.Size([2, 3]), "odd": Custom(), 3: [torch.float16]}
    got = plain(value)
    assert type(got["t"]) is torch.Tensor and got["n"] == (1, 2.5, True, None, "s")
    assert got["size"] == (2, 3) and got["odd"] == Opaque("Custom", "Custom()")
    codec = PlainCodec()
    assert codec.decode(0, codec.encode(value))["odd"] == Opaque("Custom", "Custom()")
    receive, send = multiprocessing.Pipe(duplex=False)
    reader = codec.reader(receive)
    send.send_bytes(pickle.dumps(("ok", codec.encode([1]))))
    assert pickle.loads(reader.recv_bytes())[0] == "ok"
    send.send_bytes(pickle.dumps(("ok", os.getcwd)))    # an object: refused, not built
    status, summary, _text = pickle.loads(reader.recv_bytes())
    assert status == "error" and "UnpicklingError" in summary
    send.send_bytes(pickle.dumps(("ok", "not bytes")))
    assert pickle.loads(reader.recv_bytes())[0] == "error"
    receive.close(), send.close()


def test_every_exercise_forbids_its_reference_expected_and_inputs():
    ex = exercise("01.ring")
    assert "companion.learning.nb01.ring_inputs" in ex.rules
    assert "dist.all_reduce" in ex._repr_markdown_()
    ex = exercise("00.average")
    assert "companion.learning.nb00.average_reference" in ex.rules
    assert "average_reference" in ex._repr_markdown_()


def test_every_exercise_declares_its_kind_and_each_notebook_has_a_judgement():
    """``kind=`` is written on every Exercise (the default is no excuse), and every
    numbered notebook has at least one exercise that is a decision or a diagnosis."""
    import ast
    from pathlib import Path
    from companion.learning import all_exercises
    here = Path(__file__).resolve().parents[1] / "companion" / "learning"
    for path in sorted(here.rglob("nb*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Exercise":
                assert "kind" in {k.arg for k in node.keywords}, f"{path.name}: declare kind="
    by_notebook: dict[str, set] = {}
    for ex in all_exercises().values():
        by_notebook.setdefault(ex.id[:2], set()).add(ex.kind)
    for nb, kinds in by_notebook.items():
        assert kinds & {"diagnose", "decide", "predict"}, f"notebook {nb}: only {kinds}"
