"""The FSDP x TP roofline explorer of notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``).

Pick a model (``companion.planner.MODELS``), a chip (``companion.hardware``), a cluster
size, a batch and the FSDP degree X (TP is Y = N / X); the figure shows, for one layer,
communication time over compute time against tokens per device, both axes logarithmic:

* the x axis is tokens per device divided by the chip's ``C / W`` (FSDP's critical
  tokens, :func:`companion.roofline.dp_critical_tokens`), so pure FSDP is the line
  ``1 / x`` on every cluster and a CPU measurement can be drawn on the same axes;
* above 1 (shaded) communication cannot hide under compute: communication-bound;
* curves: pure FSDP, FSDP x TP at the chosen X, and the best power-of-two split at every
  batch; markers: the chosen batch, the planner's choice (if given) and the measured
  CPU point (if given).

Links: ``roofline.fsdp_tp_bandwidths``, one placement model: TP groups of adjacent GPUs
on NVLink while Y fits in a node, an FSDP group with one NIC per member in each node
once the cluster spans nodes (so across nodes TP does not speed FSDP up). The "best"
curve is the split of least communication on those links.
"""
from __future__ import annotations

import ipywidgets as W
import matplotlib.pyplot as plt
import numpy as np

from .. import hardware, planner, roofline
from ..validation import positive_int, positive_number
from ._base import guarded, showing
from ..i18n import gettext as tr

__all__ = ["roofline_explorer"]

_DEVICES = [2 ** i for i in range(3, 15)]


def _links(chip: str, devices: int, y: int) -> tuple[float, float]:
    return roofline.fsdp_tp_bandwidths(chip, devices, y)


def _best_x(batch, spec, chip, devices) -> int:
    return roofline.fsdp_tp_best_on(chip, batch, spec.hidden, spec.ffn, devices)[0]


def _ratio(batch, model, chip, devices, x):
    y = devices // x
    w_fsdp, w_tp = _links(chip, devices, y)
    t = roofline.layer_times("fsdp_tp", batch, model.hidden, model.ffn,
                             hardware.accelerator(chip).flops, w_tp, x=x, y=y,
                             mx=w_fsdp / w_tp)
    return t["comm"] / t["compute"], t


def _check(model, chip, devices, batch_tokens, measured_point):
    if model not in planner.MODELS:
        raise ValueError(f"model={model!r}: choose one of {sorted(planner.MODELS)}.")
    hardware.accelerator(chip)
    positive_int("devices", devices, "pick a power of two such as 1024.")
    if devices not in _DEVICES:
        raise ValueError(f"devices={devices}: pick a power of two from 8 to {_DEVICES[-1]}.")
    positive_number("batch_tokens", batch_tokens, "pass the global batch in tokens, e.g. 2**20.")
    if measured_point is not None:
        if not (isinstance(measured_point, tuple) and len(measured_point) == 2):
            raise ValueError("measured_point: pass (tokens per rank / (C/W), comm / compute).")
        for v in measured_point:
            positive_number("measured_point", v, "both coordinates are positive numbers.")


def _numbers(spec, chip, n, b, x) -> tuple[dict, dict]:
    """(what ``box.values`` holds, the curves against tokens per device) for model
    ``spec`` on ``n`` chips, global batch ``b`` tokens, FSDP degree ``x``."""
    w_fsdp, _ = _links(chip, n, 1)
    alpha = roofline.dp_critical_tokens(hardware.accelerator(chip).flops, w_fsdp)
    per = np.geomspace(8, 2e5, 120)
    curves = {"per": per, "alpha": alpha,
              "fsdp": [_ratio(p * n, spec, chip, n, n)[0] for p in per],
              "mine": [_ratio(p * n, spec, chip, n, x)[0] for p in per],
              "best": [_ratio(p * n, spec, chip, n, _best_x(p * n, spec, chip, n))[0]
                       for p in per]}
    ratio, t = _ratio(b, spec, chip, n, x)
    values = {"ratio": ratio, "bound": t["bound"], "compute_s": t["compute"],
              "comm_s": t["comm"], "tokens_per_device": b / n, "critical_tokens": alpha,
              "best": (_best_x(b, spec, chip, n), n // _best_x(b, spec, chip, n)), "x": x,
              "y": n // x}
    return values, curves


def _readout(spec, chip, n, b, values) -> str:
    x, y, (bx, by), alpha = values["x"], values["y"], values["best"], values["critical_tokens"]
    # values["bound"] stays the rule's English word ("compute" or "communication"); only
    # what is shown is translated, and one whole sentence each way.
    bound = tr("compute-bound") if values["bound"] == "compute" else tr("communication-bound")
    return tr("<b>{model}</b> on {n} x {chip}: {tokens} tokens per device "
              "(FSDP alone needs {alpha}). X = {x}, Y = {y}: per layer "
              "compute {compute} ms, communication "
              "{comm} ms &rarr; <b>{bound}</b>. "
              "Least communication: X = {bx}, Y = {by}.").format(
        model=spec.name, n=f"{n:,}", chip=chip, tokens=f"{b / n:,.0f}", alpha=f"{alpha:,.0f}",
        x=x, y=y, compute=f"{values['compute_s'] * 1e3:.3g}",
        comm=f"{values['comm_s'] * 1e3:.3g}", bound=bound, bx=bx, by=by)


def _draw(ax, spec, chip, n, b, values, curves, planner_choice, measured_point):
    x, y, alpha = values["x"], values["y"], curves["alpha"]
    xs = curves["per"] / alpha
    ax.axhspan(1, 1e4, color="#F4C7C3", alpha=0.5, label=tr("communication-bound"))
    ax.plot(xs, curves["fsdp"], label=tr("pure FSDP (X = N)"))
    ax.plot(xs, curves["best"], "--", label=tr("best FSDP x TP split"))
    ax.plot(xs, curves["mine"], label=tr("your split X = {x}, Y = {y}").format(x=x, y=y))
    ax.plot([b / n / alpha], [values["ratio"]], "o", color="black", label=tr("your batch"))
    pc = planner_choice or {}
    if pc and (pc.get("model"), pc.get("chip"), pc.get("devices")) == (spec.name, chip, n):
        r = _ratio(pc["batch_tokens"], spec, chip, n, pc["x"])[0]
        ax.plot([pc["batch_tokens"] / n / alpha], [r], "*", ms=14, color="#2C7BB6",
                label=tr("planner: X = {x}, Y = {y}").format(x=pc["x"], y=pc["y"]))
    if measured_point:
        ax.plot(*measured_point, "D", color="#D7191C", label=tr("measured on this CPU"))
    ax.set(xscale="log", yscale="log", ylim=(1e-2, 1e2),
           xlabel=tr("tokens per device / (C / W)  (1 = FSDP's critical tokens)"),
           ylabel=tr("communication / compute (one layer)"))
    ax.axhline(1, color="black", lw=0.8)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(f"{spec.name}, {n:,} x {chip}")


def roofline_explorer(model: str = "Llama-3 70B", chip: str = "H100", devices: int = 1024,
                      batch_tokens: float = 2 ** 20, planner_choice: dict | None = None,
                      measured_point: tuple[float, float] | None = None):
    """The explorer (see the module docstring). ``planner_choice``: ``dict(model=, chip=,
    devices=, batch_tokens=, x=, y=)`` drawn when those match the controls;
    ``measured_point``: ``(tokens per rank / (C/W), comm / compute)`` measured on this
    CPU. ``.values`` holds the numbers last drawn."""
    _check(model, chip, devices, batch_tokens, measured_point)
    m_dd = W.Dropdown(options=sorted(planner.MODELS), value=model, description=tr("model"))
    c_dd = W.Dropdown(options=sorted(hardware.ACCELERATORS), value=chip, description=tr("chip"))
    n_dd = W.Dropdown(options=_DEVICES, value=devices, description=tr("devices N"))
    b_sl = W.FloatLogSlider(value=batch_tokens, base=2, min=13, max=27, step=0.5,
                            description=tr("batch (tok)"), readout_format=".3g")
    x_dd = W.Dropdown(options=[], description=tr("FSDP X"))
    text, out = W.HTML(), W.Output()
    box = W.VBox([W.HBox([m_dd, c_dd]), W.HBox([n_dd, x_dd]), b_sl, text, out])
    box.values, quiet = {}, [False]

    def _x_options():
        # Changing the options fires value changes; one redraw follows, not several.
        n = n_dd.value
        opts = [2 ** i for i in range(n.bit_length()) if 2 ** i <= n]
        keep = x_dd.value if x_dd.value in opts else n
        quiet[0] = True
        try:
            x_dd.options, x_dd.value = opts, keep
        finally:
            quiet[0] = False

    @guarded(out)
    def redraw(change=None):
        if quiet[0]:
            return
        spec, chip_, n, b = planner.MODELS[m_dd.value], c_dd.value, n_dd.value, b_sl.value
        box.values, curves = _numbers(spec, chip_, n, b, x_dd.value)
        text.value = _readout(spec, chip_, n, b, box.values)
        with showing(out):
            fig, ax = plt.subplots(figsize=(8, 4.2))
            _draw(ax, spec, chip_, n, b, box.values, curves, planner_choice, measured_point)
            plt.show()
            plt.close(fig)

    for control in (m_dd, c_dd, b_sl, x_dd):
        control.observe(redraw, names="value")
    n_dd.observe(lambda change: (_x_options(), redraw()), names="value")
    _x_options()
    box.model, box.chip, box.devices, box.batch, box.fsdp = m_dd, c_dd, n_dd, b_sl, x_dd
    box.text, box.output = text, out
    redraw()
    return box
