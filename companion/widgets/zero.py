"""The ZeRO memory calculator of notebook 03 (``notebooks/03_zero_memory.ipynb``), drawn
from :mod:`companion.data_parallel.memory`; its activation-memory calculator, shared with
notebook 05, is :mod:`companion.widgets.activations`.

:func:`zero_memory` returns an ipywidgets ``VBox`` that draws once on creation; its controls
are attributes of the box (``box.params_b``, ``box.gpus``, ...), the figure is the PNG in
``box.image`` and the numbers are in ``box.text``, so a test can change a control and see
the output change; ``box.output`` shows invalid input.

Units follow the course's convention (:mod:`companion.units`): GB = 10^9 bytes, the unit
of the ZeRO paper and the lectures. A GPU's memory is typed as its label says ("80 GB");
vendors' labels are close to GiB (an "80 GB" A100 has 80 GiB = 85.9 GB), which notebook
03 points out.
"""
from __future__ import annotations

import ipywidgets as W

from ..data_parallel import memory as M
from ..units import GB
from ..i18n import gettext as tr
from ._base import guarded, png_into, pre_html
from ..validation import one_of, positive_int, positive_number

__all__ = ["zero_memory"]

_PARTS = ("params", "grads", "optimizer")
_PART_LABELS = {"params": "weights", "grads": "gradients", "optimizer": "optimizer state"}
def _stage_names() -> list[str]:
    return [tr("DDP (stage 0)"), "ZeRO-1", "ZeRO-2", "ZeRO-3 / FSDP"]


_GPUS = {"A100 / H100 80 GB": 80, "H200 141 GB": 141, "V100 32 GB": 32, "RTX 4090 24 GB": 24}


def _check(params_b, gpus, stage, precision, optimizer, gpu_memory_gb):
    # The text boxes clamp at 0 and the dropdowns refuse unknown values with a trait
    # error; checking here names the argument instead.
    positive_number("params_b", params_b, "pass the model size in billions, e.g. 7.5.")
    positive_int("gpus", gpus, "pass the number of GPUs, e.g. 64.")
    one_of("stage", stage, (0, 1, 2, 3), "ZeRO stages are 0 (DDP) to 3 (FSDP).")
    one_of("precision", precision, M.PRECISIONS)
    one_of("optimizer", optimizer, M.OPTIMIZERS)
    positive_number("gpu_memory_gb", gpu_memory_gb, "pass the GPU's memory in GB, e.g. 80.")


def _presets() -> dict:
    """Model name -> parameter count (None: type the size)."""
    presets = {"custom": None, "ZeRO paper 7.5B": 7.5e9}
    presets.update({name: M.transformer_params(**cfg) for name, cfg in M.MODEL_CONFIGS.items()})
    return presets


def _preset_label(name: str) -> str:
    return {"custom": tr("custom"), "ZeRO paper 7.5B": tr("ZeRO paper 7.5B")}.get(name, name)


def _make_controls(params_b, gpus, stage, precision, optimizer, gpu_memory_gb, presets):
    """The controls, by the name of the box attribute each becomes."""
    return {
        # option values stay English (the callbacks look them up); only the labels translate
        "preset": W.Dropdown(options=[(_preset_label(p), p) for p in presets],
                             value="ZeRO paper 7.5B"
                             if params_b == 7.5 else "custom", description=tr("model")),
        "params_b": W.BoundedFloatText(value=params_b, min=0, max=1e6, step=0.1,
                                       description=tr("params (B)")),
        "gpus": W.BoundedIntText(value=gpus, min=0, max=1_000_000, description=tr("GPUs (N)")),
        "stage": W.Dropdown(options=[(name, i) for i, name in enumerate(_stage_names())],
                            value=stage, description=tr("stage")),
        "precision": W.Dropdown(options=list(M.PRECISIONS), value=precision,
                                description=tr("precision")),
        "optimizer": W.Dropdown(options=list(M.OPTIMIZERS), value=optimizer,
                                description=tr("optimizer")),
        "gpu": W.Dropdown(options=[(tr("custom"), "custom")] + [(g, g) for g in _GPUS],
                          value="custom", description=tr("GPU")),
        "gpu_memory_gb": W.BoundedFloatText(value=gpu_memory_gb, min=0, max=1e5,
                                            description=tr("GPU GB")),
    }


def _figure(rows, v, num):
    """Stacked bars of weights, gradients and optimizer state per stage, against the GPU's
    memory; ``rows``: zero_memory_per_gpu of stages 0-3, ``v``: the controls' values."""
    import matplotlib.pyplot as plt
    from ..plotting import OKABE_ITO

    limit, chosen = v["gpu_memory_gb"] * GB, v["stage"]
    fig, ax = plt.subplots(figsize=(9, 4.2))
    bottom = [0.0] * 4
    for part, color in zip(_PARTS, OKABE_ITO):
        heights = [r[part] / GB for r in rows]
        ax.bar(range(4), heights, bottom=bottom, color=color, label=tr(_PART_LABELS[part]))
        bottom = [b + height for b, height in zip(bottom, heights)]
    for s, r in enumerate(rows):
        fits = r["total"] <= limit
        ax.text(s, r["total"] / GB, f"{r['total'] / GB:,.1f} GB\n"
                + (tr("fits") if fits else tr("does not fit")), ha="center", va="bottom",
                color="black" if fits else OKABE_ITO[3],
                fontweight="bold" if s == chosen else "normal")
    ax.axhline(v["gpu_memory_gb"], color="black", linestyle="--",
               label=tr("GPU memory {gb} GB").format(gb=f"{v['gpu_memory_gb']:g}"))
    ax.set_xticks(range(4), [("> " if s == chosen else "") + name
                             for s, name in enumerate(_stage_names())])
    ax.set_ylabel(tr("model states per GPU (GB)"))
    ax.set_ylim(0, max(max(bottom), v["gpu_memory_gb"]) * 1.3)
    ax.set_title(tr("{billions}B parameters on N = {n} GPUs, {precision} {optimizer}").format(
        billions=f"{num / 1e9:,.2f}", n=v["gpus"], precision=v["precision"],
        optimizer=v["optimizer"]))
    ax.legend(loc="upper right", fontsize=10)
    return fig


def _summary(rows, v) -> list[str]:
    """Bytes per parameter, the chosen stage's verdict, and the largest model per stage."""
    kw = dict(precision=v["precision"], optimizer=v["optimizer"])
    limit, per, chosen = v["gpu_memory_gb"] * GB, M.bytes_per_param(**kw), rows[v["stage"]]
    fits = tr("fits") if chosen["total"] <= limit else tr("does not fit")
    lines = [tr("{params} + {grads} + {optimizer} = {total} bytes per parameter before "
                "sharding.").format(**per, total=sum(per.values())),
             tr("{stage}: {gb} GB per GPU ({fits} in {limit} GB).").format(
                 stage=_stage_names()[v["stage"]], gb=f"{chosen['total'] / GB:,.2f}",
                 fits=fits, limit=f"{v['gpu_memory_gb']:g}"),
             tr("Largest model that fits (weights + gradients + optimizer state only):")]
    for s, name in enumerate(_stage_names()):
        biggest = M.max_params_that_fit(limit, v["gpus"], s, **kw)
        lines.append(f"  {name:>14}: " + tr("{billions}B parameters").format(
            billions=f"{biggest / 1e9:,.1f}"))
    return lines


def zero_memory(params_b: float = 7.5, gpus: int = 64, stage: int = 3,
                precision: str = "mixed", optimizer: str = "adam",
                gpu_memory_gb: float = 80.0) -> W.VBox:
    """Bytes per GPU of weights, gradients and optimizer state for ZeRO stages 0-3.

    Stacked bars per stage for the chosen model, GPU count, precision and optimizer, a
    line at the GPU's memory, each bar marked fits / does not fit; below, the largest
    model each stage fits. Activations are not included (see
    :func:`companion.widgets.activations.activation_memory`).
    """
    _check(params_b, gpus, stage, precision, optimizer, gpu_memory_gb)
    presets = _presets()
    c = _make_controls(params_b, gpus, stage, precision, optimizer, gpu_memory_gb, presets)
    image, text, output = W.Image(format="png"), W.HTML(), W.Output()

    @guarded(output)
    def on_preset(change):
        if presets.get(c["preset"].value):
            c["params_b"].value = round(presets[c["preset"].value] / 1e9, 3)

    @guarded(output)
    def on_gpu(change):
        if c["gpu"].value in _GPUS:
            c["gpu_memory_gb"].value = _GPUS[c["gpu"].value]

    @guarded(output)
    def redraw(change=None):
        v = {name: control.value for name, control in c.items()}
        if v["params_b"] <= 0 or v["gpus"] <= 0 or v["gpu_memory_gb"] <= 0:
            raise ValueError(tr("model size, GPU count and GPU memory must be positive; "
                                "type a number above zero."))
        num = int(round(v["params_b"] * 1e9))
        rows = [M.zero_memory_per_gpu(num, v["gpus"], s, precision=v["precision"],
                                      optimizer=v["optimizer"]) for s in range(4)]
        png_into(image, output, lambda: _figure(rows, v, num))
        text.value = pre_html(_summary(rows, v))

    c["preset"].observe(on_preset, "value")
    c["gpu"].observe(on_gpu, "value")
    for name in ("params_b", "gpus", "stage", "precision", "optimizer", "gpu_memory_gb"):
        c[name].observe(redraw, "value")
    box = W.VBox([W.HBox([c["preset"], c["params_b"], c["gpus"]]),
                  W.HBox([c["stage"], c["precision"], c["optimizer"]]),
                  W.HBox([c["gpu"], c["gpu_memory_gb"]]), output, image, text])
    for name, control in c.items():
        setattr(box, name, control)
    box.output, box.image, box.text = output, image, text
    redraw()
    return box
