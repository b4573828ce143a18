"""The latency-bandwidth (alpha-beta) cost model of collectives, fitted on this machine.

Taught in notebook 02 (``notebooks/02_parameter_server_vs_allreduce.ipynb``); the
hybrid-parallelism planner reuses :func:`predict_time`.

A message of n bytes costs ``alpha + n / beta``: alpha (seconds) is the latency paid per
message however small, beta (bytes/s) the bandwidth. Each rank has one port: it can
send one message and receive one message at a time, so a round in which the busiest
rank handles k messages of n bytes in one direction costs ``k * alpha + k * n / beta``
(Hockney's model with a single port). Summed over rounds, every all-reduce is
``T(n) = a * alpha + b * n / beta`` for a tensor of n bytes, with (a, b) from
:func:`coefficients` (Thakur, Rabenseifner & Gropp 2005 for the tree, recursive
doubling and recursive halving/doubling; Patarasuk & Yuan 2009 for the ring).
Computation (the additions) is left out; on a CPU it is not free, and notebook 02 shows
where that shows.

Recursive doubling against Rabenseifner's recursive halving/doubling (N = 2^k), the
switch MPICH makes by message size::

    T_rd(n)  =   log2 N * alpha +  log2 N       * n / beta
    T_rhd(n) = 2 log2 N * alpha + 2 (N-1)/N     * n / beta
    n*       =   log2 N * alpha * beta / (log2 N - 2 (N-1)/N)

Below n* recursive doubling wins (half the rounds), above it Rabenseifner's (fewer
bytes); at N = 2 both send one tensor and recursive doubling always wins
(:func:`rd_rhd_crossover_bytes`). At N = 4, n* = 4 alpha beta.
"""
from __future__ import annotations

import math
import time

import numpy as np
import torch
import torch.distributed as dist

from . import ALL_REDUCE_ALGORITHMS
from .. import runtime
from ..experiments import experiment
from ..validation import one_of, positive_int, positive_number, preflight

__all__ = ["fit_alpha_beta", "fit_from_collectives", "coefficients", "predict_time",
           "crossover_bytes", "rd_rhd_crossover_bytes", "measured_crossover",
           "predict_from_traffic", "ping_pong", "time_all_reduce", "ALGORITHMS",
           "MPICH_ALLREDUCE_SHORT_MSG_SIZE"]

ALGORITHMS = ("parameter_server", "naive", "tree", "ring", "recursive_doubling",
              "recursive_halving_doubling", "reduce_scatter+all_gather")

# MPICH's default MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE (bytes): its all-reduce runs
# recursive doubling for messages up to this size and Rabenseifner's reduce-scatter +
# all-gather above it (a fact of MPICH's source, not derived here; notebooks 01 and 02).
MPICH_ALLREDUCE_SHORT_MSG_SIZE = 2048


def fit_alpha_beta(nbytes, seconds) -> tuple[float, float]:
    """Fit ``seconds = alpha + nbytes / beta``; returns ``(alpha [s], beta [bytes/s])``.

    Least squares on *relative* error (each point weighted by 1/seconds): the sizes span
    orders of magnitude, and unweighted residuals would let the largest messages decide
    alone, leaving alpha to noise.
    """
    n = np.asarray(nbytes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    if n.shape != t.shape or n.ndim != 1:
        raise ValueError("nbytes and seconds must be 1-D sequences of the same length.")
    if len(np.unique(n)) < 2:
        raise ValueError("need timings for at least two different message sizes to fit "
                         "alpha and beta; measure more sizes.")
    if (n < 0).any() or (t <= 0).any():
        raise ValueError("message sizes must be >= 0 bytes and times > 0 seconds.")
    design = np.stack([np.ones_like(n), n], axis=1) / t[:, None]
    (alpha, slope), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    if slope <= 0:
        raise ValueError("time does not grow with message size in these measurements; "
                         "measure larger messages (>= 1 MB) so bandwidth shows.")
    return max(float(alpha), 0.0), float(1.0 / slope)


def fit_from_collectives(seconds: dict, world_size: int) -> tuple[float, float]:
    """Fit one (alpha, beta) to measured all-reduces: ``{(algorithm, nbytes): seconds}``.

    Each measurement is ``a * alpha + b * nbytes / beta`` with the algorithm's known
    (a, b) from :func:`coefficients`, so all algorithms and sizes constrain the same two
    numbers (relative least squares, as in :func:`fit_alpha_beta`). Alpha then measures
    what one round really costs here, scheduling of ranks on shared cores included.
    """
    rows, times = [], []
    for (algorithm, nbytes), t in seconds.items():
        if algorithm not in ALGORITHMS:
            continue  # e.g. "torch": its schedule is gloo's, not one of ours
        a, b = coefficients(algorithm, world_size)
        rows.append((a / t, b * nbytes / t))
        times.append(t)
    if len(rows) < 2:
        raise ValueError("need at least two timings of this package's algorithms to fit.")
    (alpha, slope), *_ = np.linalg.lstsq(np.array(rows), np.ones(len(rows)), rcond=None)
    if slope <= 0:
        raise ValueError("time does not grow with message size in these measurements; "
                         "measure larger messages (>= 1 MB) so bandwidth shows.")
    return max(float(alpha), 0.0), float(1.0 / slope)


def measured_crossover(sizes, first_seconds, second_seconds,
                       stays: bool = False) -> float | None:
    """Smallest size where ``second`` becomes faster than ``first`` (interpolated on log
    axes between the two measured sizes around the switch); None if it never does.

    ``stays=True``: the switch after which ``second`` is faster at every larger measured
    size, so that one noisy point among the small sizes (timings on shared cores) does
    not count as the crossover."""
    sizes = np.asarray(sizes, dtype=float)
    ratio = np.log(np.asarray(second_seconds, dtype=float) / np.asarray(first_seconds, dtype=float))
    order = range(len(sizes) - 1, 0, -1) if stays else range(1, len(sizes))
    if stays and (len(ratio) == 0 or ratio[-1] > 0):
        return None
    for i in order:
        if ratio[i - 1] > 0 >= ratio[i]:
            x0, x1 = np.log(sizes[i - 1]), np.log(sizes[i])
            return float(np.exp(x0 + (x1 - x0) * ratio[i - 1] / (ratio[i - 1] - ratio[i])))
    return None


def coefficients(algorithm: str, world_size: int) -> tuple[float, float]:
    """``(a, b)`` with ``T(n) = a * alpha + b * n / beta`` for an all-reduce of n bytes."""
    n = world_size
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"world_size must be an integer >= 1, got {world_size!r}.")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {ALGORITHMS}.")
    if n == 1:
        return 0.0, 0.0
    log2 = math.ceil(math.log2(n))
    if algorithm == "parameter_server":  # push, pull: the server handles N-1 messages in each
        return 2.0 * (n - 1), 2.0 * (n - 1)
    if algorithm == "naive":  # one round, but every rank sends (and receives) N-1 tensors
        return float(n - 1), float(n - 1)
    if algorithm == "tree":  # binomial reduce then broadcast, a whole tensor per round
        return 2.0 * log2, 2.0 * log2
    if algorithm in ("ring", "reduce_scatter+all_gather"):
        return 2.0 * (n - 1), 2.0 * (n - 1) / n
    p = 1 << (n.bit_length() - 1)  # both recursive algorithms run on the largest power of two
    if algorithm == "recursive_doubling":  # log2 p rounds, a whole tensor each
        a, b = math.log2(p), math.log2(p)
    else:  # recursive halving/doubling: 2 log2 p rounds, (p-1)/p of the tensor per phase
        a, b = 2.0 * math.log2(p), 2.0 * (p - 1) / p
    if p != n:  # fold the extra ranks in and out: one whole tensor each way
        a, b = a + 2.0, b + 2.0
    return a, b


def predict_time(algorithm: str, nbytes: float, world_size: int, alpha: float,
                 beta: float) -> float:
    """Predicted seconds for ``algorithm`` to all-reduce ``nbytes`` on ``world_size`` ranks."""
    positive_number("nbytes", nbytes, "pass the message size in bytes.", zero=True)
    positive_number("alpha", alpha, "pass the per-message latency in seconds.", zero=True)
    positive_number("beta", beta, "pass the bandwidth in bytes/s, e.g. 1e9.")
    a, b = coefficients(algorithm, world_size)
    return a * alpha + b * nbytes / beta


def crossover_bytes(first: str, second: str, world_size: int, alpha: float,
                    beta: float) -> float | None:
    """Message size where ``first`` and ``second`` take equal time (None if they never cross)."""
    a1, b1 = coefficients(first, world_size)
    a2, b2 = coefficients(second, world_size)
    if b1 == b2:
        return None
    n = (a2 - a1) * alpha * beta / (b1 - b2)
    return n if n > 0 else None


def rd_rhd_crossover_bytes(world_size: int, alpha: float, beta: float) -> float | None:
    """The size n* above which Rabenseifner's recursive halving/doubling beats recursive
    doubling: ``log2 p * alpha * beta / (log2 p - 2 (p-1)/p)`` with p = 2^floor(log2 N)
    (the folding of extra ranks costs both the same). None for N < 4 (p <= 2), where
    both send the same bytes and recursive doubling is never slower. MPICH makes this switch at a fixed 2048 bytes
    (``MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE``); the model says where it belongs on a
    machine with this alpha and beta."""
    positive_int("world_size", world_size, "pass the number of ranks, e.g. 4.")
    positive_number("alpha", alpha, "pass the per-message latency in seconds.", zero=True)
    positive_number("beta", beta, "pass the bandwidth in bytes/s, e.g. 1e9.")
    return crossover_bytes("recursive_doubling", "recursive_halving_doubling", world_size,
                           alpha, beta)


def predict_from_traffic(traffics, alpha: float, beta: float) -> float:
    """The same model read off a recorded run: per round, alpha times the most messages
    any rank sent (or received) in it, plus the most bytes any rank sent (or received)
    over beta. It equals :func:`predict_time` for this package's algorithms (a test
    checks it), which ties the formulas to what was really sent."""
    messages: dict[int, int] = {}
    volume: dict[int, int] = {}
    for t in traffics:
        count: dict[tuple, int] = {}
        size: dict[tuple, int] = {}
        for m in t.log:
            count[(m.step, m.op)] = count.get((m.step, m.op), 0) + 1
            size[(m.step, m.op)] = size.get((m.step, m.op), 0) + m.bytes
        for (step, _), k in count.items():
            messages[step] = max(messages.get(step, 0), k)
            volume[step] = max(volume.get(step, 0), size[(step, _)])
    return sum(alpha * messages[s] + volume[s] / beta for s in messages)


def _best_seconds(fn, repeats: int) -> float:
    # The fastest of several runs: other processes on the machine can only add time.
    times = []
    for _ in range(repeats):
        dist.barrier()
        start = time.perf_counter()
        fn()
        # A host clock reading, so a host tensor; the collective ends when its last rank does.
        elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64, device="cpu")
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        times.append(elapsed.item())
    return float(min(times))


def _check_sizes(sizes, repeats) -> None:
    for nbytes in sizes:
        positive_int("sizes", nbytes, "pass message sizes in bytes, e.g. sizes=(1024, 65536).")
    positive_int("repeats", repeats, "pass how many times to time each size, e.g. 5.")


def _check_timing(algorithms, sizes, repeats) -> None:
    for name in algorithms:
        one_of("algorithms", name, ALL_REDUCE_ALGORITHMS)
    _check_sizes(sizes, repeats)


@experiment("collectives_ping_pong",
            summarize=lambda res: "\n".join(f"{n:>10} B  {t * 1e6:9.1f} us" for n, t in res[0]))
@runtime.cpu_by_design(runtime.LOOPBACK)
@preflight(_check_sizes)
def ping_pong(sizes=(1024, 65536, 1 << 20), repeats: int = 5):
    """One-way time of a message between ranks 0 and 1 (half a round trip), per size."""
    _check_sizes(sizes, repeats)
    r = dist.get_rank()
    out = []
    for nbytes in sizes:
        buf = torch.zeros(max(int(nbytes) // 4, 1), device="cpu")
        def trip():  # noqa: E306
            if r == 0:
                dist.send(buf, 1)
                dist.recv(buf, 1)
            elif r == 1:
                dist.recv(buf, 0)
                dist.send(buf, 0)
        trip()  # warm-up: the first message on a pair sets up its connection
        out.append((buf.numel() * 4, _best_seconds(trip, repeats) / 2))
    return out


@experiment("collectives_timing")
@runtime.cpu_by_design(runtime.LOOPBACK)
@preflight(_check_timing)
def time_all_reduce(algorithms=ALGORITHMS, sizes=(1024, 1 << 20), repeats: int = 3,
                    builtin: bool = True):
    """Best-of-``repeats`` seconds of each all-reduce algorithm (and dist.all_reduce) per size.

    The algorithms take turns within each repeat, so a burst of load from other
    processes slows all of them rather than whichever happened to run at that moment.
    """
    _check_timing(algorithms, sizes, repeats)
    out = {}
    for nbytes in sizes:
        x = torch.randn(max(int(nbytes) // 4, 1), device="cpu")
        y = x.clone()
        runs = {name: (lambda fn=ALL_REDUCE_ALGORITHMS[name]: fn(x)) for name in algorithms}
        if builtin:
            runs["torch"] = lambda: dist.all_reduce(y)
        for run in runs.values():
            run()  # warm-up: first use of a pair of ranks sets up its connection
        for _ in range(repeats):
            for name, run in runs.items():
                t = _best_seconds(run, 1)
                key = (name, x.numel() * 4)
                out[key] = min(out.get(key, t), t)
    return out
