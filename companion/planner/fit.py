"""Will it fit? The planner's memory model beside torch's measurement, per GPU.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``, "Will it fit?")::

    python -m companion fit "Llama-3 70B" --gpus 64 --tp 8 --seq 8192 \\
        --micro-batch 1 --recompute selective --gpu H100

prints one row per memory component, the prediction
(:func:`~companion.planner.memory_model.predict_memory`) beside torch's measurement on
``gpus`` fake ranks (:func:`~companion.planner.torch_memory.measure_memory`), then one
line: ``fits on H100 (80 GB): yes - predicted 61.2 GB, measured 63.0 GB per GPU``. The
verdict takes the larger of the two, and GB are 10^9 bytes (``companion.units``).
The CUDA context and the caching allocator's fragmentation, a few GB on a real GPU, are
in neither number.
"""
from __future__ import annotations

import argparse
import dataclasses

from ..hardware import ACCELERATORS
from ..i18n import _
from .memory_model import RECOMPUTE, ROWS, Layout, predict_memory
from .presets import MODELS

__all__ = ["FitReport", "fit", "format_report"]

_ROW_NAMES = {"params": "parameters (fp32, sharded)", "grads": "gradients (fp32, sharded)",
              "optimizer": "AdamW states (fp32)", "gathered": "gathered weights (bf16)",
              "activations": "activations", "temporaries": "loss and gradient buffers"}


@dataclasses.dataclass(frozen=True)
class FitReport:
    """The prediction and (when taken) the measurement, bytes by row, for one layout."""

    model: str
    layout: Layout
    gpu: str
    capacity: float
    predicted: dict
    measured: dict | None

    @property
    def peak(self) -> float:
        """The larger of the two peaks: what the verdict is judged on."""
        return max(self.predicted["peak"], (self.measured or self.predicted)["peak"])

    @property
    def fits(self) -> bool:
        return self.peak <= self.capacity


def fit(model: str, gpus: int, *, tp: int = 1, pp: int = 1, cp: int = 1, zero: int = 3,
        seq: int = 8192, micro_batch: int = 1, recompute: str = "selective",
        gpu: str = "H100", precision: str = "bf16", measure: bool = True) -> FitReport:
    """Predict (and measure, unless ``measure=False``) one layout's memory per GPU."""
    if model not in MODELS:
        raise ValueError(f"model={model!r} is not a preset; known: {sorted(MODELS)}.")
    if gpu not in ACCELERATORS:
        raise ValueError(f"gpu={gpu!r} is unknown; known: {sorted(ACCELERATORS)}.")
    spec = MODELS[model]
    layout = Layout(gpus=gpus, tp=tp, pp=pp, cp=cp, zero=zero, seq=seq,
                    micro_batch=micro_batch, recompute=recompute, precision=precision)
    layout.check(spec)  # every ValueError before anything is built
    predicted = predict_memory(spec, layout)
    measured = None
    if measure:
        from .torch_memory import measure_memory
        measured = measure_memory(spec, layout)
    return FitReport(model, layout, gpu, ACCELERATORS[gpu].hbm.value, predicted, measured)


def _gb(x: float) -> str:
    return f"{x / 1e9:.1f}"


def format_report(report: FitReport) -> str:
    """The table and the verdict line, as ``python -m companion fit`` prints them."""
    if not isinstance(report, FitReport):
        raise TypeError(f"report: pass what fit() returns, got {type(report).__name__}.")
    lay = report.layout
    head = _("{model} on {gpus} GPUs: TP {tp}, PP {pp}, CP {cp}, DP {dp}, ZeRO-{zero}; "
             "sequence {seq}, micro-batch {mb}, recompute {rc}, {precision}").format(
        model=report.model, gpus=lay.gpus, tp=lay.tp, pp=lay.pp, cp=lay.cp, dp=lay.dp,
        zero=lay.zero, seq=lay.seq, mb=lay.micro_batch, rc=lay.recompute,
        precision=lay.precision)
    m = report.measured
    cols = (_("component"), _("predicted GB"), _("measured GB") if m else "")
    lines = [head, "", f"{cols[0]:<30} {cols[1]:>13} {cols[2]:>13}"]
    for row in ROWS + ("peak",):
        label = _("peak per GPU") if row == "peak" else _(_ROW_NAMES[row])
        meas = _gb(m[row]) if m else ""
        lines.append(f"{label:<30} {_gb(report.predicted[row]):>13} {meas:>13}")
    capacity = f"{report.capacity / 1e9:g}"
    verdict = _("yes") if report.fits else _("no")
    if m:
        tail = _("predicted {p} GB, measured {m} GB per GPU").format(
            p=_gb(report.predicted["peak"]), m=_gb(m["peak"]))
    else:
        tail = _("predicted {p} GB per GPU (not measured)").format(
            p=_gb(report.predicted["peak"]))
    lines += ["", _("fits on {gpu} ({capacity} GB): {verdict} - {tail}").format(
        gpu=report.gpu, capacity=capacity, verdict=verdict, tail=tail)]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``fit`` subcommand's options (``python -m companion fit --help``)."""
    parser.add_argument("model", help=_("a built-in model: {models}").format(
        models=", ".join(sorted(MODELS))))
    parser.add_argument("--gpus", type=int, required=True, help=_("GPUs in the job"))
    for name, what in (("tp", _("tensor-parallel degree")), ("pp", _("pipeline stages")),
                       ("cp", _("context-parallel degree"))):
        parser.add_argument(f"--{name}", type=int, default=1, help=what)
    parser.add_argument("--zero", type=int, default=3, help=_("0 (nothing sharded) or 3 (FSDP)"))
    parser.add_argument("--seq", type=int, default=8192, help=_("tokens per sequence"))
    parser.add_argument("--micro-batch", type=int, default=1, help=_("sequences per micro-batch"))
    parser.add_argument("--recompute", default="selective", choices=RECOMPUTE,
                        help=_("activation recomputation"))
    parser.add_argument("--gpu", default="H100", help=_("one of {gpus}").format(
        gpus=", ".join(ACCELERATORS)))
    parser.add_argument("--precision", default="bf16", choices=("bf16", "fp32"))
    parser.add_argument("--no-measure", action="store_true",
                        help=_("print the prediction only (no torch run)"))


def main(args: argparse.Namespace) -> int:
    """Run the ``fit`` subcommand (exit status 0 whether or not it fits: "no" is an answer)."""
    report = fit(args.model, args.gpus, tp=args.tp, pp=args.pp, cp=args.cp, zero=args.zero,
                 seq=args.seq, micro_batch=args.micro_batch, recompute=args.recompute,
                 gpu=args.gpu, precision=args.precision, measure=not args.no_measure)
    print(format_report(report))
    return 0
