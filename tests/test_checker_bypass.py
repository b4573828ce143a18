"""Every known way of passing an exercise without doing it is refused.

One case per kind of bypass, each a real check on real ranks (companion.learning.exercise):
switching the profiler off around a forbidden collective, issuing it from a thread,
reading the answer off the stack, issuing a collective through a helper the forbidden
list does not name, groups of the right size whose members cross nodes, a copied
algorithm of another kind, talking to the backend past the recording group, and sending
the parent something that would run code there. Then, without ranks: every exercise
forbids the functions that compute its answer.

Each attempt is written to a file and imported, as a notebook cell is compiled, so the
checker sees student code (tests/test_exercises.py does the same).
"""
from __future__ import annotations

import textwrap

import pytest

from companion.learning import all_exercises, exercise
from companion.learning.rules import delegates, function_of, reach
from companion.learning.watch import codes_of, resolve

CONTEXT = textwrap.dedent("""\
    import sys, threading, time, _thread
    import torch
    import torch.distributed as dist
    import companion

    def _ring(x):
        # a correct ring all-reduce (01.ring's algorithm; the 02.tree case checks its sums)
        n, r = dist.get_world_size(), dist.get_rank()
        buf = x.clone().reshape(-1)
        chunks = list(buf.tensor_split(n))
        for half, shift in (("reduce", 1), ("gather", 0)):
            for s in range(n - 1):
                c_out, c_in = (r - s - shift) % n, (r - s - shift - 1) % n
                incoming = torch.empty_like(chunks[c_in])
                for w in [dist.isend(chunks[c_out].contiguous(), (r + 1) % n),
                          dist.irecv(incoming, (r - 1) % n)]:
                    w.wait()
                if half == "reduce":
                    chunks[c_in] += incoming
                else:
                    chunks[c_in].copy_(incoming)
        return buf.view(x.shape)

    def _imitate_ring(x):
        # the ring's messages (2(N-1) chunks to the right, from the left), carrying nothing
        n, r = dist.get_world_size(), dist.get_rank()
        chunks = x.clone().reshape(-1).tensor_split(n)
        for s in range(2 * (n - 1)):
            incoming = torch.empty_like(chunks[(r - s - 1) % n])
            for w in [dist.isend(chunks[(r - s) % n].contiguous(), (r + 1) % n),
                      dist.irecv(incoming, (r - 1) % n)]:
                w.wait()
""")


def attempt(tmp_path, name: str, source: str, tag: str):
    path = tmp_path / f"bypass_{tag}.py"
    path.write_text(CONTEXT + "\n\n" + textwrap.dedent(source))
    namespace = {"__name__": f"bypass_{tag}"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace[name]


def check(tmp_path, ex_id: str, source: str, tag: str):
    """The verdict on ``source`` (``NAME`` stands for the function the exercise asks for)."""
    ex = exercise(ex_id)
    source = textwrap.dedent(source).replace("NAME", ex.student_name)
    return ex.check(attempt(tmp_path, ex.student_name, source, tag), quiet=True)


# ---- 1. the profiler switched off ------------------------------------------------------
def test_switching_the_profiler_off_around_a_forbidden_call_is_tampering(tmp_path):
    verdict = check(tmp_path, "01.ring", """\
        def my_ring_all_reduce(x):
            hook = sys.getprofile()
            sys.setprofile(None)
            total = x.clone()
            dist.all_reduce(total)
            sys.setprofile(hook)
            _imitate_ring(x)
            return total
        """, "profiler-off")
    assert verdict.kind == "tampered", verdict.message
    assert "sys.setprofile" in verdict.message and "switched off" in verdict.message


# ---- 2. threads ------------------------------------------------------------------------
THREADS = {
    "threading": """\
        def my_ring_all_reduce(x):
            total = x.clone()
            t = threading.Thread(target=dist.all_reduce, args=(total,))
            t.start()
            t.join()
            _imitate_ring(x)
            return total
        """,
    "_thread": """\
        def my_ring_all_reduce(x):
            total, done = x.clone(), []
            def work():
                dist.all_reduce(total)
                done.append(True)
            _thread.start_new_thread(work, ())
            while not done:
                time.sleep(0.01)
            _imitate_ring(x)
            return total
        """,
}


@pytest.mark.parametrize("how", sorted(THREADS))
def test_a_forbidden_call_from_a_thread_is_caught(tmp_path, how):
    verdict = check(tmp_path, "01.ring", THREADS[how], f"thread{how}")
    assert verdict.kind == "forbidden", verdict.message
    assert "dist.all_reduce" in verdict.message or "all_reduce" in verdict.message


def test_a_thread_still_running_after_return_is_tampering(tmp_path):
    verdict = check(tmp_path, "01.ring", """\
        def my_ring_all_reduce(x):
            threading.Thread(target=time.sleep, args=(3,), daemon=True).start()
            return _ring(x)
        """, "thread-left")
    assert verdict.kind == "tampered" and "still running" in verdict.message, verdict.message


# ---- 3. the answer on the stack --------------------------------------------------------
def test_the_answer_is_not_on_the_stack(tmp_path):
    # Walks every frame through a traceback (which no hook sees) for the expected answer.
    verdict = check(tmp_path, "10.fsdp-bound", """\
        def NAME(*args):
            try:
                raise RuntimeError
            except RuntimeError as err:
                frame = err.__traceback__.tb_frame
            while frame is not None:
                for name, value in frame.f_locals.items():
                    if "expect" in name and value is not None:
                        return value
                frame = frame.f_back
            return None
        """, "stack")
    assert verdict.kind == "wrong_value", verdict.message


def test_walking_the_stack_with_getframe_is_tampering(tmp_path):
    verdict = check(tmp_path, "10.fsdp-bound", """\
        def NAME(*args):
            sys._getframe(1)
            return None
        """, "getframe")
    assert verdict.kind == "tampered" and "_getframe" in verdict.message, verdict.message


# ---- 4. a collective through a helper the list does not name ---------------------------
def test_a_functional_collective_the_hook_cannot_see_is_recorded(tmp_path):
    # torch's functional collectives run in C++: no torch.distributed Python call at all.
    verdict = check(tmp_path, "01.ring", """\
        def my_ring_all_reduce(x):
            import torch.distributed._functional_collectives as funcol
            total = funcol.wait_tensor(funcol.all_reduce(x.clone(), "sum", dist.group.WORLD))
            _imitate_ring(x)
            return total
        """, "funcol")
    assert verdict.kind == "pattern" and "all_reduce" in verdict.message, verdict.message


def test_a_package_helper_not_on_the_list_is_recorded(tmp_path):
    verdict = check(tmp_path, "01.pass-right", """\
        def my_pass_right(x):
            n, r = dist.get_world_size(), dist.get_rank()
            table = torch.zeros(n, x.numel())
            table[r] = x
            table = companion.collectives.log.all_reduce(table)   # everyone's x, everywhere
            got = torch.empty_like(x)
            for w in [dist.isend(x, (r + 1) % n), dist.irecv(got, (r - 1) % n)]:
                w.wait()
            return table[(r - 1) % n].clone()
        """, "helper")
    assert verdict.kind == "pattern" and "all_reduce" in verdict.message, verdict.message


# ---- 5. groups whose size is right but whose members cross nodes -----------------------
def test_groups_of_the_right_size_across_nodes_are_refused(tmp_path):
    # 3 nodes x 2 ranks. "Rows" {i, i+3} have a node's size but one rank on each of two
    # nodes; "columns" {0,1,2}, {3,4,5} have the node count's size but share nodes. The
    # sums are right and a size-based count of the bytes is the hierarchical one.
    verdict = check(tmp_path, "11.hierarchical", """\
        def my_hierarchical_all_reduce(x, ranks_per_node):
            n, r = dist.get_world_size(), dist.get_rank()
            half = n // 2
            rows = [dist.new_group([i, i + half]) for i in range(half)]
            cols = [dist.new_group(list(range(j * half, (j + 1) * half))) for j in range(2)]
            row, col = rows[r % half], cols[r // half]
            piece = torch.empty(x.numel() // 2)
            dist.reduce_scatter_single(piece, x.clone(), group=row)
            sub = torch.empty(piece.numel() // half)
            dist.reduce_scatter_single(sub, piece, group=col)
            dist.all_gather_single(piece, sub, group=col)
            out = torch.empty_like(x)
            dist.all_gather_single(out, piece, group=row)
            return out
        """, "crossing-groups")
    assert verdict.kind == "pattern", verdict.message
    assert "neither its node" in verdict.message


# ---- 6. a copied algorithm of another kind ---------------------------------------------
COPIES = {
    "01.ring": """\
        def my_ring_all_reduce(x):   # recursive doubling, copied
            n, r = dist.get_world_size(), dist.get_rank()
            total = x.clone()
            for k in range(n.bit_length() - 1):
                incoming = torch.empty_like(total)
                for w in [dist.isend(total, r ^ (1 << k)), dist.irecv(incoming, r ^ (1 << k))]:
                    w.wait()
                total = total + incoming
            return total
        """,
    "02.tree": """\
        def my_tree_all_reduce(x):   # the ring, copied
            return _ring(x)
        """,
}


@pytest.mark.parametrize("ex_id", sorted(COPIES))
def test_a_copied_algorithm_of_another_kind_is_refused(tmp_path, ex_id):
    verdict = check(tmp_path, ex_id, COPIES[ex_id], "copy" + ex_id[:2])
    assert verdict.kind == "pattern", verdict.message


# ---- 7. around the recording group -----------------------------------------------------
AROUND = {
    "gloo object": """\
        def my_pass_right(x):
            n, r = dist.get_world_size(), dist.get_rank()
            table = torch.zeros(n, x.numel())
            table[r] = x
            dist.group.WORLD._gloo.allreduce([table]).wait()
            got = torch.empty_like(x)
            for w in [dist.isend(x, (r + 1) % n), dist.irecv(got, (r - 1) % n)]:
                w.wait()
            return table[(r - 1) % n].clone()
        """,
    "gloo group": """\
        def my_pass_right(x):
            n, r = dist.get_world_size(), dist.get_rank()
            table = torch.zeros(n, x.numel())
            table[r] = x
            dist.all_reduce(table, group=dist.new_group(backend="gloo"))
            got = torch.empty_like(x)
            for w in [dist.isend(x, (r + 1) % n), dist.irecv(got, (r - 1) % n)]:
                w.wait()
            return table[(r - 1) % n].clone()
        """,
}


@pytest.mark.parametrize("how", sorted(AROUND))
def test_messages_past_the_recording_group_are_tampering(tmp_path, how):
    verdict = check(tmp_path, "01.pass-right", AROUND[how], how.replace(" ", "-"))
    assert verdict.kind == "tampered" and "directly" in verdict.message, verdict.message


# ---- 8. nothing a rank sends runs in the parent ----------------------------------------
def test_a_result_that_would_run_code_when_unpickled_comes_back_inert(tmp_path):
    marker = tmp_path / "ran-in-the-parent"
    verdict = check(tmp_path, "01.ring", f"""\
        class Payload:
            def __reduce__(self):
                import os
                return (os.system, ("touch {marker}",))

        def my_ring_all_reduce(x):
            _ring(x)
            return Payload()
        """, "reduce")
    assert verdict.kind == "wrong_value" and "Payload" in verdict.message, verdict.message
    assert not marker.exists()


def test_a_forged_message_on_the_result_pipe_runs_nothing_in_the_parent(tmp_path):
    marker = tmp_path / "ran-in-the-parent"
    verdict = check(tmp_path, "01.ring", f"""\
        class Payload:
            def __reduce__(self):
                import os
                return (os.system, ("touch {marker}",))

        def my_ring_all_reduce(x):
            import pickle
            try:
                raise RuntimeError
            except RuntimeError as err:
                frame = err.__traceback__.tb_frame
            while "result_w" not in frame.f_locals:
                frame = frame.f_back
            frame.f_locals["result_w"].send_bytes(pickle.dumps(("ok", Payload())))
            return _ring(x)
        """, "forged")
    assert verdict.kind == "crash" and "Unpickling" in verdict.message, verdict.message
    assert not marker.exists()


# ---- 9. every exercise forbids what computes its answer (no ranks) ----------------------
# Package functions a reference calls that stay allowed, with the reason. Everything else
# its reference or its ``expected`` calls in the package must be forbidden, but for what
# the adapter or the precheck call too (they run in the watched span).
ALLOWED = {
    "companion.collectives.primitives.check_op": "checks the op argument",
    "companion.collectives.primitives.finish": "applies AVG's division and restores the shape",
    "companion.collectives.traffic.note_initial": "bookkeeping of the traffic recorder",
    "companion.collectives.traffic.exchange": "posts one round of sends and receives, the "
                                             "student's own building block",
    "companion.collectives.all_reduce._start": "checks the arguments, makes a flat copy",
    "companion.collectives.all_reduce._fold_in": "folds N into a power of two (not at N=4)",
    "companion.collectives.all_reduce._fold_out": "the unfolding of _fold_in",
    "companion.pipeline.ops.check_sizes": "checks the sizes",
    "companion.pipeline.ops.schedule_from_ops": "wraps op lists in a Schedule",
}


def _forbidden_codes(ex) -> set:
    return {c for name in ex.rules for c in codes_of(resolve(name))}


def test_every_exercise_forbids_the_functions_that_compute_its_answer():
    missing = []
    for ex_id, ex in all_exercises().items():
        codes, shared = _forbidden_codes(ex), reach([ex.adapter, ex.precheck])
        for field in ("reference", "expected"):
            fn = function_of(getattr(ex, field))
            if fn is None:
                continue
            if fn.__code__ not in codes:
                missing.append(f"{ex_id}: its {field} {fn.__module__}.{fn.__qualname__}")
            for d in delegates(fn):
                name = f"{d.__module__}.{d.__qualname__}"
                if d.__code__ not in codes and d not in shared and name not in ALLOWED:
                    missing.append(f"{ex_id}: {name}, which its {field} calls")
    assert not missing, "not forbidden:\n" + "\n".join(missing)


def test_the_allowed_helpers_are_still_called_by_a_reference():
    called = {f"{d.__module__}.{d.__qualname__}" for ex in all_exercises().values()
              for field in ("reference", "expected") for d in delegates(getattr(ex, field))}
    assert set(ALLOWED) <= called, f"allowed but no longer called: {set(ALLOWED) - called}"
