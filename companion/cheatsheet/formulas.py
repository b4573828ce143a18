"""The cheat-sheet's closed forms, sections 1-8: each beside the package function it
must agree with (``tests/test_cheatsheet.py`` holds them against it). Sections 9-12 are in
:mod:`.rules` and :mod:`.scaling`.

Used by ``notebooks/cheatsheet.ipynb``; see :mod:`companion.cheatsheet` for why a
formula the package implements is written out again here.
"""
from __future__ import annotations

import math

import torch

from ..collectives import costmodel
from ..collectives.accounting import ring_bytes
from ..compression import OneBit, PowerSGD, TernGrad, payload_bytes
from ..compression.sparse import encode_topk
from ..dga.model import modeled_step_times
from ..pipeline import bubble_fraction, peak_activations, simulate
from ..pipeline.simulate import formula_text
from ..sequence_parallel.ring import attention_bytes
from ..validation import fraction, one_of, positive_int, positive_number
from .tables import _


__all__ = ["ALL_REDUCE_FORMULAS", "all_reduce_closed_form", "all_reduce_table",
           "zero_closed_form", "zero_traffic_closed_form", "SCHEDULES", "bubble_table",
           "TP_COLLECTIVES_PER_LAYER", "tp_bytes_per_layer", "activation_closed_form",
           "attention_bytes", "COMPRESSION_FORMULAS", "compressed_bytes", "measured_bytes",
           "dga_step_time", "modeled_step_time", "mfu"]

# --- 1. Collectives under the alpha-beta model (notebooks 01 and 02) -------------------
# algorithm -> (a, b) of T(n) = a alpha + b n / beta, as text, for N a power of two.
ALL_REDUCE_FORMULAS = {
    "parameter_server": ("2(N-1)", "2(N-1)"),
    "naive": ("N-1", "N-1"),
    "tree": ("2 log2 N", "2 log2 N"),
    "ring": ("2(N-1)", "2(N-1)/N"),
    "recursive_halving_doubling": ("2 log2 N", "2(N-1)/N"),
    "reduce_scatter+all_gather": ("2(N-1)", "2(N-1)/N"),
    "recursive_doubling": ("log2 N", "log2 N"),  # MPICH's, for short messages
}


def _log2_exact(n: int) -> int:
    if not isinstance(n, int) or n < 2 or n & (n - 1):
        raise ValueError(f"the closed forms are written for N a power of two >= 2, got {n!r}.")
    return n.bit_length() - 1


def all_reduce_closed_form(algorithm: str, world_size: int) -> tuple[float, float]:
    """``(a, b)`` of ``ALL_REDUCE_FORMULAS[algorithm]`` evaluated at N = ``world_size``."""
    n, lg = world_size, _log2_exact(world_size)
    forms = {"parameter_server": (2 * (n - 1), 2 * (n - 1)), "naive": (n - 1, n - 1),
             "tree": (2 * lg, 2 * lg), "ring": (2 * (n - 1), 2 * (n - 1) / n),
             "recursive_halving_doubling": (2 * lg, 2 * (n - 1) / n),
             "reduce_scatter+all_gather": (2 * (n - 1), 2 * (n - 1) / n),
             "recursive_doubling": (lg, lg)}
    if algorithm not in forms:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {sorted(forms)}.")
    return tuple(float(x) for x in forms[algorithm])


def all_reduce_table(world_size: int, nbytes: float, alpha: float, beta: float) -> list[dict]:
    """One row per algorithm the package has (``costmodel.ALGORITHMS``): the formula, the
    package's (a, b) and predicted seconds."""
    rows = []
    for name in costmodel.ALGORITHMS:
        a, b = costmodel.coefficients(name, world_size)
        rows.append({"algorithm": name, "a": a, "b": b,
                     "formula": ALL_REDUCE_FORMULAS.get(name, ("?", "?")),
                     "seconds": costmodel.predict_time(name, nbytes, world_size, alpha, beta)})
    return rows


# --- 2. Sixteen bytes per parameter and ZeRO (notebook 03) ------------------------------
def _zero_args(psi, n, stage) -> None:
    positive_number("psi", psi, "the number of parameters, e.g. psi=7.5e9")
    positive_int("n", n, "the data-parallel degree, e.g. n=64")
    one_of("stage", stage, (0, 1, 2, 3), "ZeRO stages are 0 (plain DP) to 3")


def zero_closed_form(psi: float, n: int, stage: int, k: float = 12) -> float:
    """Bytes per GPU of mixed-precision Adam (2 + 2 + K bytes per parameter) under ZeRO."""
    _zero_args(psi, n, stage)
    return {0: (2 + 2 + k) * psi, 1: (2 + 2) * psi + k * psi / n,
            2: 2 * psi + (2 + k) * psi / n, 3: (2 + 2 + k) * psi / n}[stage]


def zero_traffic_closed_form(psi: float, n: int, stage: int, e: int = 2) -> float:
    """Bytes one rank sends per step (ring collectives): 2 or 3 times (N-1)/N of 2 Psi."""
    _zero_args(psi, n, stage)
    return (3 if stage == 3 else 2) * (n - 1) / n * e * psi


# --- 3. Pipeline bubbles (notebook 04) ---------------------------------------------------
# (schedule, model chunks per rank) in the order notebook 04 teaches them: sections 1-6,
# then section 8's four schedules with two chunks per rank.
SCHEDULES = (("naive", 1), ("gpipe", 1), ("1f1b", 1), ("interleaved", 2), ("zb-h1", 1),
             ("looped-bfs", 2), ("interleaved-zb", 2), ("zb-v", 2), ("dualpipev", 2))


def bubble_table(stages: int, microbatches: int, chunks: int = 2, costs=None) -> list[dict]:
    """Closed form (``pipeline.bubble_fraction``) next to the simulator, per schedule of
    ``SCHEDULES`` (interleaved 1F1B, looped BFS and interleaved zero bubble with
    ``chunks``), at ``costs`` (``pipeline.OpCosts``; default F = B = W = 1), with the peak
    activations a stage holds: simulated, and ``pipeline.peak_activations``' closed form.
    Where a closed form does not hold (too few micro-batches, unequal costs outside its
    range) its entry is ``None`` and ``why`` says which rule; a schedule that cannot be
    built at this size (ZB-V and DualPipeV need ``m >= 2p``, the interleaved ones ``m`` a
    multiple of ``p``) has no row."""
    positive_int("chunks", chunks, "pass the model chunks per rank, e.g. chunks=2.", minimum=2)
    rows = []
    for name, v in SCHEDULES:
        v = chunks if name in ("interleaved", "looped-bfs", "interleaved-zb") else v
        m = 1 if name == "naive" else microbatches
        try:
            timeline = simulate(name, stages, m, chunks=v, costs=costs)
        except ValueError:
            if name in ("naive", "gpipe"):   # these run at every size: the sizes are wrong
                raise
            continue
        row = {"schedule": name, "m": m, "v": v, "formula": formula_text(name),
               "closed_form": None, "simulated": timeline.bubble_fraction,
               "peak_activations": max(timeline.peak_activations()),
               "peak_closed_form": None, "why": ""}
        try:
            row["closed_form"] = bubble_fraction(stages, m, name, chunks=v, costs=costs)
        except ValueError as err:
            row["why"] = str(err)
        if name != "interleaved" and costs is None:  # the peaks' closed forms are at F = B = W
            try:
                row["peak_closed_form"] = max(peak_activations(stages, m, name))
            except ValueError as err:
                row["why"] = row["why"] or str(err)
        rows.append(row)
    return rows


# --- 4. Tensor and sequence parallelism (notebook 05) ------------------------------------
TP_COLLECTIVES_PER_LAYER = {  # Megatron-LM / Megatron-SP, one transformer layer, per rank
    "tp": {"forward": {"all_reduce": 2}, "backward": {"all_reduce": 2}},
    "tp+sp": {"forward": {"all_gather": 2, "reduce_scatter": 2},
              "backward": {"all_gather": 2, "reduce_scatter": 2}},
}


def tp_bytes_per_layer(b: int, s: int, h: int, t: int, e: int = 2,
                       sequence_parallel: bool = False) -> float:
    """Bytes one rank sends per layer in forward (backward: the same), ring collectives:
    ``4 (t-1)/t b s h e`` with or without sequence parallelism."""
    for name, value in (("b", b), ("s", s), ("h", h), ("t", t), ("e", e)):
        positive_int(name, value, "sizes are whole numbers >= 1")
    payload = b * s * h * e
    if sequence_parallel:
        return 2 * (ring_bytes("all_gather", payload, t)
                    + ring_bytes("reduce_scatter", payload, t))
    return 2 * ring_bytes("all_reduce", payload, t)


def activation_closed_form(s: int, b: int, h: int, a: int, t: int = 1, mode: str = "tp") -> float:
    """Korthikanti et al. 2022, bytes per layer: ``mode`` is "tp" (t = 1: no parallelism),
    "tp+sp", "tp+sp+selective" or "full" (only the layer's input is kept)."""
    for name, value in (("s", s), ("b", b), ("h", h), ("a", a), ("t", t)):
        positive_int(name, value, "sizes are whole numbers >= 1")
    one_of("mode", mode, ("tp", "tp+sp", "tp+sp+selective", "full"))
    sbh, attention = s * b * h, 5 * a * s / h
    forms = {"tp": sbh * (10 + 24 / t + attention / t), "tp+sp": sbh * (34 + attention) / t,
             "tp+sp+selective": 34 * sbh / t, "full": 2 * sbh}
    return forms[mode]


# --- 5. Attention across ranks: Ulysses vs ring (notebook 06) -----------------------------
# attention_bytes, imported above: notebook 06's formula lives with ring attention
# (companion.sequence_parallel.ring), where the planner charges CP with it too.


# --- 6. Gradient compression (notebook 07) -----------------------------------------------
# Bytes on the wire for one n x m fp32 gradient matrix. The formulas with words in them
# are marked, so markdown_table shows them in the reader's language.
COMPRESSION_FORMULAS = {
    "dense": "4nm",
    "dgc": _("8 ceil(d nm)  (int32 index + fp32 value per kept entry)"),
    "powersgd": _("4 r (n + m)  (P is n x r, Q is m x r)"),
    "onebit": _("nm/8 + 8m  (a sign bit per entry, two fp32 means per column)"),
    "terngrad": _("nm/4 + 4  (2 bits per entry, one fp32 scale)"),
}


def _compression_args(method, n, m, density, rank) -> None:
    one_of("method", method, tuple(COMPRESSION_FORMULAS))
    positive_int("n", n, "rows of the gradient matrix")
    positive_int("m", m, "columns of the gradient matrix")
    fraction("density", density, "the kept fraction, e.g. density=0.001")
    positive_int("rank", rank, "PowerSGD's rank, e.g. rank=4")


def compressed_bytes(method: str, n: int, m: int, density: float = 0.001, rank: int = 4) -> int:
    """Closed form of ``COMPRESSION_FORMULAS[method]``."""
    _compression_args(method, n, m, density, rank)
    numel = n * m
    forms = {"dense": 4 * numel, "dgc": 8 * math.ceil(density * numel),
             "powersgd": 4 * min(rank, n, m) * (n + m), "onebit": math.ceil(numel / 8) + 8 * m,
             "terngrad": math.ceil(numel / 4) + 4}
    return forms[method]


def measured_bytes(method: str, n: int, m: int, density: float = 0.001, rank: int = 4,
                   seed: int = 0) -> int:
    """The same, measured: the package's codec encodes a random n x m gradient and
    ``payload_bytes`` counts what it would send (one process, no ranks needed)."""
    _compression_args(method, n, m, density, rank)
    g = torch.randn(n, m, generator=torch.Generator().manual_seed(seed))
    if method == "dense":
        return g.numel() * g.element_size()
    if method == "dgc":
        return payload_bytes(encode_topk(g, density))
    if method == "powersgd":
        codec = PowerSGD([g], rank=rank, seed=seed)
        codec.exchange([g], 0)
        return codec.last_bytes
    codec = {"onebit": OneBit, "terngrad": TernGrad}[method]()
    return payload_bytes(codec.encode(g))


# --- 7. Latency: synchronous SGD, FedAvg, DGA (notebook 08) ------------------------------
def dga_step_time(algorithm: str, compute: float, latency: float, delay: int = 0,
                  local_steps: int = 1) -> float:
    """Steady-state seconds per step: sync ``C + L``, FedAvg ``C + L/K``, DGA
    ``max(C, (C + L)/(D + 1))``."""
    one_of("algorithm", algorithm, ("sync", "fedavg", "dga"))
    positive_number("compute", compute, "seconds of compute per step", zero=True)
    positive_number("latency", latency, "seconds of network latency", zero=True)
    positive_int("delay", delay, "DGA's delay D in steps, >= 0", minimum=0)
    positive_int("local_steps", local_steps, "FedAvg's K, >= 1")
    c, lat = compute, latency
    return {"sync": c + lat, "fedavg": c + lat / local_steps,
            "dga": max(c, (c + lat) / (delay + 1))}[algorithm]


def modeled_step_time(algorithm: str, compute: float, latency: float, delay: int = 0,
                      local_steps: int = 1) -> float:
    """The same read off ``latency.modeled_step_times`` (the step-by-step schedule):
    the mean step over a late window of whole periods of (D + 1) K steps."""
    window = 8 * (delay + 1) * local_steps
    times = modeled_step_times(algorithm, 3 * window, compute, latency, delay, local_steps)
    return (times[-1][2] - times[-1 - window][2]) / window


# --- 8. The planner (notebook 09) --------------------------------------------------------
def mfu(num_params: float, tokens: float, step_time: float, gpus: int,
        peak_flops: float) -> float:
    """Model FLOPs utilisation: ``6 N tokens / (step time x GPUs x peak FLOP/s)``."""
    for name, value in (("num_params", num_params), ("tokens", tokens),
                        ("step_time", step_time), ("peak_flops", peak_flops)):
        positive_number(name, value, "a positive number")
    positive_int("gpus", gpus, "the number of GPUs, e.g. gpus=1024")
    return 6.0 * num_params * tokens / (step_time * gpus * peak_flops)
