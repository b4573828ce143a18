"""An IPython startup file that ``make present`` installs for its warm-up kernels only:
warm-up runs take turns, one notebook at a time. Teaches no notebook.

Twelve notebooks run at once on a 2-core laptop would each take about twelve times
longer, and a job that normally finishes in 5 s could pass ``launch``'s 60 s timeout.
So each warm-up kernel takes a file lock before its first cell and gives it back after
its last one (the count of code cells comes from ``COMPANION_WARMUP_CELLS``); the kernel
dying gives it back too (the OS drops the lock). A kernel waits at most
``COMPANION_WARMUP_WAIT_S`` for its turn, then runs anyway, so one stuck notebook cannot
hold up the rest for ever. Kernels that Voila starts when a page is opened (not warm-ups)
never wait.
"""
import fcntl
import os
import time


def _install(ip):
    lock_path = os.environ.get("COMPANION_WARMUP_LOCK")
    if not lock_path or os.environ.get("VOILA_PREHEAT") != "True":
        return
    state = {"fd": None, "left": int(os.environ.get("COMPANION_WARMUP_CELLS", "0"))}
    patience = float(os.environ.get("COMPANION_WARMUP_WAIT_S", "900"))

    def take(_info=None):
        if state["fd"] is not None or state["left"] <= 0:
            return
        state["fd"] = os.open(lock_path, os.O_RDWR | os.O_CREAT)
        deadline = time.monotonic() + patience
        while True:
            try:
                fcntl.flock(state["fd"], fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.5)

    def done(_result=None):
        if state["fd"] in (None, -1):
            return
        state["left"] -= 1
        if state["left"] <= 0:
            fcntl.flock(state["fd"], fcntl.LOCK_UN)
            os.close(state["fd"])
            state["fd"] = -1   # given back for good: widget callbacks are not cells

    ip.events.register("pre_run_cell", take)
    ip.events.register("post_run_cell", done)


_install(get_ipython())  # noqa: F821 - IPython defines it for startup files
