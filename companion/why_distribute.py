"""Why training must be distributed: L19 p.6-10 recomputed from model sizes and token counts.

For the opening of the course, notebook 00 section 0; notebook 11 section 1 reuses TSM's
scaling on Summit to ask what the network costs. Every number the lecture gives
is recomputed here and set beside the notes' value with what it assumes:

* **p.6**: GPT-3's training compute is ``6 N D`` FLOPs (forward 2, backward 4 per
  parameter and token; Kaplan et al. 2020): 6 x 175e9 x 300e9 = 3.15e23, the GPT-3
  paper's Table D.1 says 3.14e23. Divided by one GPU's sustained FLOP/s that is the
  single-GPU time in GPU-hours and GPU-years (365.25 days).
* **p.8**: a job of ``g`` GPU-days ideally takes ``g / n`` days on ``n`` GPUs (perfect
  linear scaling, no communication).
* **p.10**: TSM on Summit, 1 node (6 GPUs) against 256 nodes (1,536 GPUs): speed-up
  ``t_1 / t_n`` and scaling efficiency = speed-up / (n / 1).

:func:`lecture_numbers` returns the table; :func:`disagreements` the sentences a
notebook should print where the arithmetic and the notes part ways;
:func:`plot_compute_growth` draws the shipped ``training_compute.csv`` against one GPU's peak
(``companion.hardware``).
"""
from __future__ import annotations

import csv
import io

import numpy as np

from . import hardware
from .data import _check, _read
from .i18n import gettext as tr
from .validation import fraction, positive_int, positive_number

__all__ = ["training_flops", "gpu_time", "ideal_time", "scaling", "lecture_numbers",
           "disagreements", "load_training_compute", "doubling_time_years",
           "plot_compute_growth", "GPT3_PARAMS", "GPT3_TOKENS", "NOTES", "TSM_PAPER"]

YEAR = 365.25 * 24 * 3600.0
GPT3_PARAMS, GPT3_TOKENS = 175e9, 300e9   # Brown et al. 2020, Table 2.1 and section 2.2
GPT3_REPORTED_FLOPS = 3.14e23               # Brown et al. 2020, Table D.1
# The notes' figures (L19 p.6, p.8, p.10; /work seeds 002 and 000).
NOTES = {"gpt3_gpu_hours": 3.1e6, "gpt3_gpu_years": 355, "resnet50_gpu_hours": 31,
         "job_gpu_days": 10, "job_gpus": 1024, "job_minutes": 14,
         "tsm_1_node_s": 49 * 3600 + 50 * 60, "tsm_256_nodes_s": 14 * 60,
         "tsm_gpus_per_node": 6}
# The Summit run's own times, from its paper's abstract: Lin, Gan & Han 2019, "Training
# Kinetics in 15 Minutes" (arXiv 1910.00932); the notes round them to 49 h 50 min / 14 min.
TSM_PAPER = {"1_node_s": 49 * 3600 + 55 * 60, "256_nodes_s": 14 * 60 + 13,
             "source": "arXiv 1910.00932"}
# Lambda's "Demystifying GPT-3" (2020) priced GPT-3 on a V100 it credited with 28 TFLOP/s.
LAMBDA_V100_FLOPS = 28e12
LAMBDA_SOURCE = "https://lambdalabs.com/blog/demystifying-gpt-3"
# ResNet-50: 3.8e9 multiply-adds per 224x224 image (He et al. 2015, Table 1, which calls
# them FLOPs), 1,281,167 ImageNet training images, 90 epochs.
RESNET50_MACS, IMAGENET_TRAIN, RESNET_EPOCHS = 3.8e9, 1_281_167, 90


def training_flops(params: float, tokens: float) -> float:
    """``6 N D``: training FLOPs of a dense transformer (notebook 00)."""
    positive_number("params", params, "pass the parameter count, e.g. 175e9.")
    positive_number("tokens", tokens, "pass the training tokens, e.g. 300e9.")
    return 6.0 * params * tokens


def gpu_time(flops: float, gpu: str = "A100", utilization: float = 0.5,
             peak_flops: float | None = None) -> dict:
    """Seconds, GPU-hours and GPU-years for ``flops`` on one GPU running at
    ``utilization`` of its dense 16-bit peak (``companion.hardware``), or of
    ``peak_flops`` when given."""
    positive_number("flops", flops, "pass a FLOP count, e.g. 3.15e23.")
    fraction("utilization", utilization, "pass the share of peak sustained, e.g. 0.5.")
    if peak_flops is None:
        peak_flops = hardware.accelerator(gpu).flops
    positive_number("peak_flops", peak_flops, "pass FLOP/s, e.g. 312e12.")
    seconds = flops / (peak_flops * utilization)
    return {"seconds": seconds, "gpu_hours": seconds / 3600, "gpu_years": seconds / YEAR,
            "flops_per_s": peak_flops * utilization}


def ideal_time(gpu_seconds: float, gpus: int) -> float:
    """Wall-clock seconds of ``gpu_seconds`` of work on ``gpus`` GPUs with perfect
    linear scaling (L19 p.8's "ideal")."""
    positive_number("gpu_seconds", gpu_seconds, "pass the single-GPU time in seconds.")
    positive_int("gpus", gpus, "pass the number of GPUs, e.g. 1024.")
    return gpu_seconds / gpus


def scaling(t_small: float, t_large: float, units_small: int, units_large: int) -> dict:
    """Speed-up ``t_small / t_large``, the ideal ``units_large / units_small`` and the
    scaling efficiency (their ratio), e.g. TSM on 1 and 256 Summit nodes (L19 p.10)."""
    positive_number("t_small", t_small, "pass the time on the smaller system, seconds.")
    positive_number("t_large", t_large, "pass the time on the larger system, seconds.")
    positive_int("units_small", units_small, "pass the smaller node or GPU count.")
    positive_int("units_large", units_large, "pass the larger node or GPU count.")
    speedup, ideal = t_small / t_large, units_large / units_small
    return {"speedup": speedup, "ideal": ideal, "efficiency": speedup / ideal}


def lecture_numbers(utilization: float = 0.5) -> list[dict]:
    """L19 p.6-10 as rows ``{"page", "quantity", "notes", "recomputed", "assumes",
    "label"}``: ``quantity`` is the English key, ``label`` what it reads as in the current
    language, ``assumes`` is in that language too."""
    fraction("utilization", utilization, "pass the share of peak sustained, e.g. 0.5.")
    flops = training_flops(GPT3_PARAMS, GPT3_TOKENS)
    a100 = gpu_time(flops, "A100", utilization)
    a100_peak = gpu_time(flops, "A100", 1.0)
    v100 = gpu_time(GPT3_REPORTED_FLOPS, peak_flops=LAMBDA_V100_FLOPS, utilization=1.0)
    resnet = 3 * 2 * RESNET50_MACS * IMAGENET_TRAIN * RESNET_EPOCHS
    resnet_peak_h = gpu_time(resnet, "A100", 1.0)["gpu_hours"]
    job = NOTES["job_gpu_days"] * 86400
    tsm = scaling(NOTES["tsm_1_node_s"], NOTES["tsm_256_nodes_s"], 1, 256)
    pct = f"{utilization:.0%}"
    rows = [
        dict(page="p.6", quantity="GPT-3 training FLOPs", notes=None, recomputed=flops,
             assumes=tr("6 x {params:.3g} params x {tokens:.3g} tokens (paper: 3.14e23)").format(
                 params=GPT3_PARAMS, tokens=GPT3_TOKENS)),
        dict(page="p.6", quantity="GPT-3 GPU-years, one GPU", notes=NOTES["gpt3_gpu_years"],
             recomputed=v100["gpu_years"], assumes=tr("3.14e23 FLOPs at 28 TFLOP/s (Lambda's V100)")),
        dict(page="p.6", quantity="GPT-3 GPU-hours, one GPU", notes=NOTES["gpt3_gpu_hours"],
             recomputed=v100["gpu_hours"], assumes=tr("the same, in hours")),
        dict(page="p.6", quantity="GPT-3 GPU-years on an A100", notes=NOTES["gpt3_gpu_years"],
             recomputed=a100["gpu_years"],
             assumes=tr("A100 at {pct} of its 312 TFLOP/s dense bf16 peak").format(pct=pct)),
        dict(page="p.6", quantity="GPT-3 GPU-years on an A100 at peak", notes=None,
             recomputed=a100_peak["gpu_years"], assumes=tr("A100 at 100% of peak (a floor)")),
        dict(page="p.6", quantity="ResNet-50 GPU-hours on an A100", notes=NOTES["resnet50_gpu_hours"],
             recomputed=resnet_peak_h,
             assumes=tr("3 x 2 x 3.8e9 FLOPs x 1.28M images x 90 epochs at peak")),
        dict(page="p.8", quantity="10 GPU-days on 1,024 GPUs, minutes", notes=NOTES["job_minutes"],
             recomputed=ideal_time(job, NOTES["job_gpus"]) / 60, assumes=tr("perfect linear scaling")),
        dict(page="p.8", quantity="GPT-3 on 1,024 A100s, days", notes=None,
             recomputed=ideal_time(a100["seconds"], 1024) / 86400,
             assumes=tr("A100 at {pct} of peak, perfect scaling").format(pct=pct)),
        dict(page="p.10", quantity="TSM speed-up, 1 -> 256 Summit nodes", notes=None,
             recomputed=tsm["speedup"], assumes=tr("49 h 50 min / 14 min")),
        dict(page="p.10", quantity="TSM scaling efficiency", notes=None,
             recomputed=tsm["efficiency"], assumes=tr("speed-up / 256 (6 GPUs per node both times)")),
    ]
    labels = _quantity_labels()
    return [dict(row, label=labels[row["quantity"]]) for row in rows]


def _quantity_labels() -> dict:
    """What a row's ``quantity`` (its English key, which notebooks look rows up by) reads
    as in the current language."""
    return {"GPT-3 training FLOPs": tr("GPT-3 training FLOPs"),
            "GPT-3 GPU-years, one GPU": tr("GPT-3 GPU-years, one GPU"),
            "GPT-3 GPU-hours, one GPU": tr("GPT-3 GPU-hours, one GPU"),
            "GPT-3 GPU-years on an A100": tr("GPT-3 GPU-years on an A100"),
            "GPT-3 GPU-years on an A100 at peak": tr("GPT-3 GPU-years on an A100 at peak"),
            "ResNet-50 GPU-hours on an A100": tr("ResNet-50 GPU-hours on an A100"),
            "10 GPU-days on 1,024 GPUs, minutes": tr("10 GPU-days on 1,024 GPUs, minutes"),
            "GPT-3 on 1,024 A100s, days": tr("GPT-3 on 1,024 A100s, days"),
            "TSM speed-up, 1 -> 256 Summit nodes": tr("TSM speed-up, 1 -> 256 Summit nodes"),
            "TSM scaling efficiency": tr("TSM scaling efficiency")}


def disagreements(utilization: float = 0.5) -> list[str]:
    """Where the arithmetic and the notes part ways, one sentence each (computed)."""
    rows = {r["quantity"]: r for r in lecture_numbers(utilization)}
    v100 = rows["GPT-3 GPU-years, one GPU"]["recomputed"]
    a100 = rows["GPT-3 GPU-years on an A100"]["recomputed"]
    peak = rows["GPT-3 GPU-years on an A100 at peak"]["recomputed"]
    hours_as_years = NOTES["gpt3_gpu_hours"] * 3600 / YEAR
    resnet = rows["ResNet-50 GPU-hours on an A100"]["recomputed"]
    return [
        tr("L19 p.6 (as the notes put it) sets GPT-3 at 355 GPU-years on an A100. 3.14e23 FLOPs "
           "at 28 TFLOP/s give {v100:.0f} years: that is the V100 figure of Lambda's "
           "'Demystifying GPT-3' ({source}). On an A100 at {pct:.0%} of its "
           "312 TFLOP/s bf16 peak it is {a100:.0f} GPU-years ({peak:.0f} at 100% of peak).").format(
            v100=v100, source=LAMBDA_SOURCE, pct=utilization, a100=a100, peak=peak),
        tr("3.1 million GPU-hours is {years:.0f} years, not 355: the slide rounds the "
           "hours (355 years is {hours:.2f} million).").format(
            years=hours_as_years, hours=NOTES["gpt3_gpu_years"] * YEAR / 3600 / 1e6),
        tr("ResNet-50's 31 A100-hours is ~{ratio:.0f}x its FLOP count at peak ({peak:.1f} h): "
           "a measured run's time, at {share:.0%} of the bf16 peak, not arithmetic.").format(
            ratio=NOTES["resnet50_gpu_hours"] / resnet, peak=resnet,
            share=resnet / NOTES["resnet50_gpu_hours"]),
        tr("The 14 minutes (10 GPU-days on 1,024 GPUs) is exact arithmetic that assumes perfect "
           "scaling; TSM on Summit reached {efficiency:.0%} of it at 256 nodes with the notes' "
           "rounded times, {paper:.0%} with the paper's own ({source}).").format(
            efficiency=rows["TSM scaling efficiency"]["recomputed"],
            paper=scaling(TSM_PAPER["1_node_s"], TSM_PAPER["256_nodes_s"], 1, 256)["efficiency"],
            source=TSM_PAPER["source"]),
    ]


def load_training_compute() -> list[dict]:
    """The shipped ``training_compute.csv``, checksum-verified: one row per model with its
    date (fractional year), parameters, tokens, training FLOPs (reported, or 6 N D
    where the paper gives N and D only), basis and source."""
    payload = _read("training_compute.csv")
    _check("training_compute.csv", payload)
    rows = []
    for r in csv.DictReader(io.StringIO(payload.decode("utf-8"))):
        year, month = (int(x) for x in r["date"].split("-"))
        flop = float(r["training_flop"]) if r["training_flop"] else training_flops(
            float(r["params"]), float(r["tokens"]))
        rows.append({"model": r["model"], "year": year + (month - 0.5) / 12,
                     "params": float(r["params"]),
                     "tokens": float(r["tokens"]) if r["tokens"] else None,
                     "flop": flop, "basis": r["basis"], "source": r["source"]})
    return rows


def doubling_time_years(years, values) -> float:
    """Least-squares doubling time of ``values`` over ``years`` (a straight line on a
    log2 axis)."""
    x, y = np.asarray(years, dtype=float), np.asarray(values, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 2 or len(np.unique(x)) < 2:
        raise ValueError("years and values must be 1-D, equally long, with two or more years.")
    if (y <= 0).any():
        raise ValueError("values must be positive to fit a doubling time.")
    slope = np.polyfit(x, np.log2(y), 1)[0]
    if slope <= 0:
        raise ValueError("values do not grow over these years; no doubling time.")
    return float(1.0 / slope)


def plot_compute_growth(ax=None):
    """Training compute of notable models against one GPU's peak FLOP/s, both relative
    to their first point, on a log axis; returns ``(ax, {"compute": years, "gpu":
    years})``, the two doubling times."""
    import matplotlib.pyplot as plt

    models, gpus = load_training_compute(), hardware.peak_flops_by_year()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.5))
    mx = [m["year"] for m in models]
    my = [m["flop"] for m in models]
    gx = [g[1] + 0.5 for g in gpus]
    gy = [g[2] for g in gpus]
    dt = {"compute": doubling_time_years(mx, my), "gpu": doubling_time_years(gx, gy)}
    ax.semilogy(mx, np.array(my) / my[0], "o", label=tr("training FLOPs (doubles every {months} months)").format(
                    months=f"{12 * dt['compute']:.0f}"))
    # Models of the same year crowd each other: alternate their labels above and below.
    for k, (m, x, y) in enumerate(sorted(zip(models, mx, my), key=lambda t: t[1])):
        ax.annotate(m["model"], (x, y / my[0]), fontsize=8, textcoords="offset points",
                    xytext=(3, 4 if k % 2 else -11))
    ax.semilogy(gx, np.array(gy) / gy[0], "s--", label=tr("one GPU's peak FLOP/s (doubles every {months} months)").format(
                    months=f"{12 * dt['gpu']:.0f}"))
    for g, x, y in zip(gpus, gx, gy):
        ax.annotate(g[0], (x, y / gy[0]), fontsize=8, xytext=(3, -10), textcoords="offset points")
    ax.set(xlabel=tr("year"), ylabel=tr("growth since the first point (log)"),
           title=tr("Training compute outgrows one GPU"))
    ax.legend(fontsize=9)
    return ax, dt
