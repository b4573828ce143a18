"""Emulated network latency and bandwidth for real collectives, run on a communication thread.

Taught in notebook 08 (``notebooks/08_delayed_gradient_averaging.ipynb``).

Our ranks talk over loopback, where a message arrives in microseconds; the lecture's
problem (L20 p.19-22, p.62-68) is a link where it takes tens or hundreds of
milliseconds. :class:`DelayedComm` puts such a link between the ranks, honestly:

* every operation (an all-reduce, a send, a receive) is **really performed** by a
  communication thread owned by the rank, on a process group of its own, in the order
  the rank submitted them (all ranks submit in the same order, as collectives demand);
* once the real operation has finished, the result is **withheld** until
  ``alpha + bytes / beta`` seconds have passed: ``alpha`` is the link's latency and
  ``beta`` its bandwidth in bytes per second. Transmissions share the link, so a message
  waits for the previous one's ``bytes / beta`` (bandwidth serialises), while latencies of
  messages in flight overlap (a long link holds several messages at once);
* :meth:`DelayedWork.wait` blocks until then; the caller may compute meanwhile, so the
  delay overlaps with compute exactly when the algorithm lets it.

Limits, stated so nobody over-reads the numbers:

* the real loopback time of the operation is *added* to the emulated delay (the delay
  starts when the real operation completes, which is also when the slowest rank has
  joined it); on loopback that adds from under a millisecond on an idle machine to
  several milliseconds when 4 ranks share 2 busy cores (notebook 08 prints the real
  all-reduce's time next to the model's);
* one ``alpha`` is charged per operation, whatever its algorithm: a ring all-reduce on
  a real wide-area network pays ``2 (N - 1)`` latencies, which you can emulate by
  passing a larger ``alpha``;
* ranks share this machine's cores, so compute can be slowed by the other ranks; the
  emulated delay is a wait, and costs no CPU;
* time is ``time.perf_counter`` (``CLOCK_MONOTONIC`` on Linux), shared by all processes
  on one machine, so timelines from different ranks line up.

:func:`companion.dga.model.modeled_step_times` is the matching closed-form schedule.
"""
from __future__ import annotations

import math
import queue
import statistics
import threading
import time
from collections.abc import Callable

import torch
import torch.distributed as dist

from .. import runtime
from ..experiments import experiment
from ..validation import positive_int, positive_number, preflight

__all__ = ["DelayedComm", "DelayedWork", "link_delay", "measure_link"]

def link_delay(nbytes: int, alpha_s: float, beta_bytes_s: float = math.inf) -> float:
    """Seconds for one message of ``nbytes`` on an idle link: ``alpha + bytes / beta``."""
    _check_link(alpha_s, beta_bytes_s)
    return alpha_s + nbytes / beta_bytes_s


def _check_link(alpha_s, beta_bytes_s):
    if not alpha_s >= 0:
        raise ValueError(f"alpha (latency) must be >= 0 seconds, got {alpha_s!r}.")
    if not beta_bytes_s > 0:
        raise ValueError(f"beta (bandwidth) must be > 0 bytes/s (math.inf for an unlimited "
                         f"link), got {beta_bytes_s!r}.")


class DelayedWork:
    """Handle of one emulated operation: like ``dist.Work``, but with a delivery time.

    Timestamps (``perf_counter`` seconds, ``nan`` until known): ``submitted_at`` when
    the rank handed it over, ``real_done_at`` when the real operation finished,
    ``ready_at`` when the emulated link delivers it, ``consumed_at`` when
    :meth:`wait` returned.
    """

    def __init__(self, tensor: torch.Tensor, tag=None, nbytes: int | None = None):
        self.tensor, self.tag = tensor, tag
        # What the link charges: the tensor's bytes unless the caller counts them
        # (a ring all-gather sends (N-1)/N of its output, notebook 10).
        self.nbytes = tensor.numel() * tensor.element_size() if nbytes is None else int(nbytes)
        self.submitted_at = time.perf_counter()
        self.real_done_at = self.ready_at = self.consumed_at = math.nan
        self.link_start_at = math.nan  # when this message began to occupy the link
        self.error: BaseException | None = None
        self._real_done = threading.Event()

    def is_completed(self) -> bool:
        """True once the data has arrived (never before ``ready_at``)."""
        return self._real_done.is_set() and time.perf_counter() >= self.ready_at

    def wait(self, timeout: float | None = 60.0) -> torch.Tensor:
        """Block until the data has arrived; return the result tensor."""
        if not self._real_done.wait(timeout):
            raise TimeoutError(f"operation {self.tag!r} did not complete within {timeout} s "
                               "(did every rank submit the same operations in the same order?)")
        if self.error is not None:
            raise RuntimeError(f"emulated operation {self.tag!r} failed") from self.error
        remaining = self.ready_at - time.perf_counter()
        if remaining > 0:
            time.sleep(remaining)
        if math.isnan(self.consumed_at):
            self.consumed_at = time.perf_counter()
        return self.tensor

    def record(self, t0: float = 0.0) -> dict:
        """The timestamps relative to ``t0``, for timelines."""
        return {"tag": self.tag, "nbytes": self.nbytes,
                **{k: getattr(self, k) - t0 for k in
                   ("submitted_at", "real_done_at", "ready_at", "consumed_at")},
                "link_start_at": self.link_start_at - t0}


class DelayedComm:
    """A rank's communication thread with an emulated link of latency ``alpha_s`` and
    bandwidth ``beta_bytes_s`` (see the module docstring for the model and its limits).

    Construct it on every rank at the same point (it creates a process group, a
    collective call); use it as a context manager, or call :meth:`close`.

    ``absorb_real=True`` (notebook 10) counts the real operation's own time toward the
    emulated delay instead of adding it: a message takes the link when the thread starts
    it (or when the link frees up) and is delivered at ``max(real end, link start + alpha
    + bytes / beta)``. With 4 ranks on 2 cores a loopback collective can take milliseconds,
    which would otherwise stretch every message by an amount that is not the link's.
    """

    def __init__(self, alpha_s: float = 0.0, beta_bytes_s: float = math.inf, group=None,
                 absorb_real: bool = False):
        _check_link(alpha_s, beta_bytes_s)
        if not isinstance(absorb_real, bool):
            raise TypeError(f"absorb_real must be True or False, got {absorb_real!r}.")
        self.alpha_s, self.beta_bytes_s = float(alpha_s), float(beta_bytes_s)
        self.absorb_real = absorb_real
        # A private group: the main thread may run its own collectives (a barrier, an
        # evaluation) on the default group without interleaving with ours.
        self.group = group if group is not None else dist.new_group(backend="gloo")
        self._queue: queue.Queue = queue.Queue()
        self._link_free_at = 0.0
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="delayed-comm", daemon=True)
        self._thread.start()

    # -- the communication thread -------------------------------------------------
    def _serve(self):
        failed: BaseException | None = None
        while True:
            item = self._queue.get()
            if item is None:
                return
            work, operation = item
            began = time.perf_counter()
            if failed is None:
                try:
                    operation(work.tensor)
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting rank
                    failed = exc
            work.error = failed
            work.real_done_at = time.perf_counter()
            # Bandwidth serialises transmissions on the link; latency is paid in parallel.
            tx_start = max(began if self.absorb_real else work.real_done_at, self._link_free_at)
            self._link_free_at = tx_start + work.nbytes / self.beta_bytes_s
            work.link_start_at = tx_start
            work.ready_at = self._link_free_at + self.alpha_s
            if self.absorb_real:  # the real operation may itself outlast the emulated one
                self._link_free_at = max(self._link_free_at, work.real_done_at)
                work.ready_at = max(work.ready_at, work.real_done_at)
            work._real_done.set()

    def submit(self, operation: Callable[[torch.Tensor], None], tensor: torch.Tensor,
               tag=None, nbytes: int | None = None) -> DelayedWork:
        """Run ``operation(tensor)`` (in place) on the communication thread; return at once.

        The link charges ``nbytes`` (default: the tensor's bytes) at ``beta``."""
        if self._closed:
            raise RuntimeError("this DelayedComm is closed; create a new one.")
        work = DelayedWork(tensor, tag, nbytes)
        self._queue.put((work, operation))
        return work

    def all_reduce(self, tensor: torch.Tensor, op=dist.ReduceOp.SUM, tag=None) -> DelayedWork:
        """Asynchronous all-reduce of ``tensor`` (in place) through the emulated link.

        ``op=ReduceOp.AVG`` averages (gloo computes the sum, then divides by the world size).
        """
        group = self.group
        return self.submit(lambda t: dist.all_reduce(t, op=op, group=group), tensor, tag)

    def send(self, tensor: torch.Tensor, dst: int, tag=None) -> DelayedWork:
        """Asynchronous send; the matching :meth:`recv` delivers ``alpha + bytes/beta`` late."""
        group = self.group
        return self.submit(lambda t: dist.send(t, dst=dst, group=group), tensor, tag)

    def recv(self, tensor: torch.Tensor, src: int, tag=None) -> DelayedWork:
        """Asynchronous receive into ``tensor``; :meth:`DelayedWork.wait` returns it when
        the emulated link has delivered it."""
        group = self.group
        return self.submit(lambda t: dist.recv(t, src=src, group=group), tensor, tag)

    def close(self, timeout: float = 30.0) -> None:
        """Finish the real operations already submitted (not their emulated delays), stop."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join(timeout)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        # On an error the peers may never join our pending operations; the thread is a
        # daemon and dies with the process, so do not hold the error back for long.
        self.close(timeout=30.0 if exc_type is None else 1.0)


def _summarize_link(results) -> str:
    from ..i18n import gettext as tr
    line = tr("alpha={alpha} ms: model {model} ms, measured {measured} ms (real all-reduce "
              "{real} ms)")
    return "\n".join(line.format(alpha=f"{r['alpha_ms']:g}", model=f"{r['model_ms']:.2f}",
                                 measured=f"{r['measured_ms']:.2f}", real=f"{r['real_ms']:.2f}")
                     for r in results[0])


def _check_measure(alphas_ms, nbytes, bandwidth_mbps, repeats) -> None:
    for alpha_ms in alphas_ms:
        positive_number("alphas_ms", alpha_ms, "pass latencies in ms, e.g. (0.0, 10.0).",
                        zero=True)
    positive_int("nbytes", nbytes, "pass the message size in bytes, at least 4 (one float).",
                 minimum=4)
    positive_number("bandwidth_mbps", bandwidth_mbps,
                    "pass megabits per second, or math.inf for an unlimited link.", inf=True)
    positive_int("repeats", repeats, "pass how many times to time each latency, e.g. 3.")


@experiment("latency_link", summarize=_summarize_link)
@runtime.cpu_by_design(runtime.EMULATED)
@preflight(_check_measure)
def measure_link(*, alphas_ms=(0.0, 1.0, 10.0, 50.0), nbytes: int = 100_000,
                 bandwidth_mbps: float = math.inf, repeats: int = 3) -> list[dict]:
    """Time one delayed all-reduce of ``nbytes`` per latency (median of ``repeats``), on
    this rank: from submission to the data in hand, next to ``alpha + bytes/beta``."""
    _check_measure(alphas_ms, nbytes, bandwidth_mbps, repeats)
    beta = bandwidth_mbps * 1e6 / 8
    # On the CPU, like the gloo group it rides: the emulated link is the lesson.
    group, x, out = dist.new_group(backend="gloo"), torch.zeros(nbytes // 4, device="cpu"), []
    for alpha_ms in alphas_ms:
        with DelayedComm(alpha_ms / 1e3, beta, group=group) as comm:
            total, real = [], []
            for _ in range(repeats):
                dist.barrier()  # default group: start together, the link idle
                work = comm.all_reduce(x.clone())
                work.wait()
                total.append(work.consumed_at - work.submitted_at)
                real.append(work.real_done_at - work.submitted_at)
        model_s = link_delay(x.numel() * 4, alpha_ms / 1e3, beta)
        out.append({"alpha_ms": alpha_ms, "model_ms": 1e3 * model_s,
                    "measured_ms": 1e3 * statistics.median(total),
                    "real_ms": 1e3 * statistics.median(real)})
    return out
